/**
 * Side-by-side kernels (ts/worker/gpu/fuse-side.ts): independent fused elementwise units (each a
 * chain of wgsl/fused.ts, or one op) in one dispatch, each over its own range of workgroups. An
 * optimizer's update of every parameter is one such dispatch instead of one per parameter.
 *
 * Each unit's body is a block of its own (its `let`s named as in wgsl/fused.ts do not clash), so
 * the steps need no renaming. Bindings: P (params), then one slot per distinct buffer, read_write
 * where a unit writes it. Params, per unit u at word 6·u·… (see `sideParams`): its first
 * workgroup, its element count, its output's element offset, then its inputs' element offsets.
 */
import { MAX_X, WG } from './elementwise.js';
import { stridedOffsetFn } from './fused.js';

/** One unit: its output's slot, its inputs' slots and strides (null: contiguous) over `shape`, its steps. */
export interface SideUnit {
  outSlot: number;
  inputSlots: number[];
  inputStrides: (number[] | null)[];
  shape: number[];
  steps: string[];
}

/** The params words of unit `u` start at `base[u]`: [first workgroup, n, output offset, input offsets…]. */
export function sideBases(units: { inputs: number }[]): number[] {
  const base: number[] = [];
  let at = 0;
  for (const u of units) base.push(at), (at += 3 + u.inputs);
  return base;
}

/** WGSL source of a side-by-side kernel over `slots` buffers (`written[k]`: a unit writes slot k). */
export function sideBySideShader(units: SideUnit[], slots: number, written: boolean[], prelude: string): string {
  let code = `@group(0) @binding(0) var<storage, read> P: array<u32>;\n`;
  for (let k = 0; k < slots; k++) {
    code += `@group(0) @binding(${k + 1}) var<storage, ${written[k] ? 'read_write' : 'read'}> S${k}: array<u32>;\n`;
  }
  const base = sideBases(units.map((u) => ({ inputs: u.inputSlots.length })));
  const bodies = units.map((u, i) => {
    const b = base[i];
    const loads = u.inputSlots.map((s, j) => {
      const st = u.inputStrides[j];
      if (!st) return `      let a${j} = bitcast<f32>(S${s}[P[${b + 3 + j}u] + w]);`;
      return `      let a${j} = bitcast<f32>(S${s}[off${i}_${j}(w)]);`;
    }).join('\n');
    const steps = u.steps.map((e, k) => `      let t${k} = ${e};`).join('\n');
    const next = i + 1 < units.length ? `g < P[${base[i + 1]}u]` : 'true';
    return `  ${i ? 'else ' : ''}if (${next}) {
    let w = (g - P[${b}u]) * ${WG}u + li;
    if (w < P[${b + 1}u]) {
${loads}
${steps}
      S${u.outSlot}[P[${b + 2}u] + w] = bitcast<u32>(t${u.steps.length - 1});
    }
  }`;
  }).join('\n');
  const offsets = units.flatMap((u, i) => u.inputStrides.map((st, j) => (st ? stridedOffsetFn(`off${i}_${j}`, base[i] + 3 + j, u.shape, st) : ''))).join('');
  return `${code}${prelude}
${offsets}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let g = wid.y * nwg.x + wid.x;
${bodies}
}
`;
}

/** The grid of `groups` workgroups in all. */
export function sideGrid(groups: number): [number, number, number] {
  return groups <= MAX_X ? [Math.max(1, groups), 1, 1] : [MAX_X, Math.ceil(groups / MAX_X), 1];
}

/** Workgroups for `n` elements. */
export const groupsFor = (n: number): number => Math.max(1, Math.ceil(n / WG));
