/**
 * Fused elementwise kernels (ts/worker/gpu/fuse.ts): a chain of float32 elementwise ops over
 * contiguous operands of one size, as one kernel. Each invocation loads its element of every
 * input once, computes the chain's steps as WGSL `let`s (each step is the op's expression from
 * the op table with its operands substituted), and stores the last.
 *
 * Params: P[0] = n, P[1] = the output's element offset, P[2 + j] = input j's element offset.
 * Bindings as every map kernel's (wgsl/dtype.ts `slotBindings`): the output's buffer first.
 */
import { slotBindings } from './dtype.js';
import { MAX_X, WG } from './elementwise.js';

/** One fused kernel: its inputs' binding slots, and its steps (WGSL expressions over `a<j>` and `t<k>`). */
export interface FusedKernel {
  slots: number;
  inputSlots: number[];
  steps: string[];
  prelude: string;
}

/** WGSL source of a fused kernel. */
export function fusedShader(k: FusedKernel): string {
  const loads = k.inputSlots.map((s, j) => `  let a${j} = bitcast<f32>(rd${s}(P[${2 + j}u] + w));`).join('\n');
  const steps = k.steps.map((e, i) => `  let t${i} = ${e};`).join('\n');
  return `${slotBindings(k.slots)}${k.prelude}
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
