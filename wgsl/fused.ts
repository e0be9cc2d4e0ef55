/**
 * Fused elementwise kernels (ts/worker/gpu/fuse.ts): a chain of float32 elementwise ops over
 * operands of one shape (contiguous, or strided such as a broadcast bias), as one kernel. Each invocation loads its element of every
 * input once, computes the chain's steps as WGSL `let`s (each step is the op's expression from
 * the op table with its operands substituted), and stores the last.
 *
 * Params: P[0] = n, P[1] = the output's element offset, P[2 + j] = input j's element offset.
 * Bindings as every map kernel's (wgsl/dtype.ts `slotBindings`): the output's buffer first.
 */
import { slotBindings } from './dtype.js';
import { MAX_X, WG } from './elementwise.js';

/**
 * One fused kernel: its inputs' binding slots and strides (null: contiguous) over `shape`, and its
 * steps (WGSL expressions over `a<j>` and `t<k>`).
 */
export interface FusedKernel {
  slots: number;
  inputSlots: number[];
  inputStrides: (number[] | null)[];
  shape: number[];
  steps: string[];
  prelude: string;
}

/** The element offset of element `w` of a strided input `j` (a broadcast operand: strides 0), its shape and strides baked in. */
function offsetFn(j: number, shape: number[], strides: number[]): string {
  let body = `  var r = w;\n  var o = P[${2 + j}u];\n`;
  for (let d = shape.length - 1; d >= 0; d--) {
    if (strides[d] !== 0) body += `  o += (r % ${shape[d]}u) * ${strides[d]}u;\n`;
    if (d > 0) body += `  r = r / ${shape[d]}u;\n`;
  }
  return `fn off${j}(w: u32) -> u32 {\n${body}  return o;\n}\n`;
}

/** WGSL source of a fused kernel. */
export function fusedShader(k: FusedKernel): string {
  const loads = k.inputSlots.map((s, j) => `  let a${j} = bitcast<f32>(rd${s}(${k.inputStrides[j] ? `off${j}(w)` : `P[${2 + j}u] + w`}));`).join('\n');
  const offsets = k.inputStrides.map((st, j) => (st ? offsetFn(j, k.shape, st) : '')).join('');
  const steps = k.steps.map((e, i) => `  let t${i} = ${e};`).join('\n');
  return `${slotBindings(k.slots)}${k.prelude}
${offsets}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let n = P[0];
  let w = (wid.y * nwg.x + wid.x) * ${WG}u + li;
  if (w >= n) { return; }
${loads}
${steps}
  S0[P[1] + w] = bitcast<u32>(t${k.steps.length - 1});
}
`;
}

/** The grid of a fused kernel over `n` elements. */
export function fusedGrid(n: number): [number, number, number] {
  const groups = Math.max(1, Math.ceil(n / WG));
  return groups <= MAX_X ? [groups, 1, 1] : [MAX_X, Math.ceil(groups / MAX_X), 1];
}
