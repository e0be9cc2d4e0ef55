/**
 * The reduction family: a contiguous [outer, inner] block reduces to [outer].
 *
 * The facade moves the reduced dims last and makes the input contiguous, so one kernel serves
 * every `dim` argument. Three forms. Where the device has subgroups, one subgroup reduces one row
 * (`subgroupRowMain`): each invocation folds a strided slice, then a butterfly of subgroup
 * shuffles, with no workgroup memory and no barrier. Without subgroups, one workgroup reduces one
 * row, with a tree in workgroup memory. Barriers are what lavapipe (a CPU adapter) pays for: it
 * runs a workgroup's invocations as SIMD loops and makes each barrier a switch between them, so
 * the tree cost it more than the reading (softmax of 256×1024 rows: 14.5 ms as a 256-wide tree,
 * 1.9 ms a subgroup per row). Short rows (`SHORT_ROW` elements or fewer: max-pool windows) take
 * one invocation each. Max/min propagate NaN; argmax/argmin treat NaN as the
 * extreme and break ties towards the lower index, as PyTorch does. NaN tests look at the bits,
 * since shader compilers may fold `x != x` away. Results are written in the
 * 32-bit compute type (indices as i32); the worker casts packed outputs afterwards.
 * Integer sums and products (which give int64) and every reduction of int64 run in 64 bits
 * (`reduce64Shader`: the tree form, over `vec2<u32>` values; wgsl/int64.ts).
 */
import { StorageCode } from '../ts/dtype.js';
import { ReduceOp } from '../ts/ir/ops.js';
import { computeType, load, slotBindings } from './dtype.js';
import { I64_PRELUDE, loadI64, reduce64Body } from './int64.js';


/** Invocations per workgroup of the reduction kernels. */
export const RWG = 64;

/** Rows of at most this many elements are reduced one per invocation (`reduceShader(…, 'short')`). */
export const SHORT_ROW = 32;

/** How a row kernel lays rows over invocations (see the note at the top). */
export type RowForm = 'short' | 'subgroup' | 'tree';

/**
 * WGSL of a reduction reading slot `inSlot`; params are [outer, inner, input offset, output
 * offset, rows per workgroup]. `short`: one invocation per row (dispatch `outer` invocations in
 * workgroups of `RWG`); `subgroup`: see `subgroupRowMain`; `tree`: one workgroup per row.
 */
export function reduceShader(op: ReduceOp, dt: StorageCode, inSlot: number, slots: number, form: RowForm = 'tree'): string {
  const t = computeType(dt);
  const zero = t === 'f32' ? '0.0' : '0i', one = t === 'f32' ? '1.0' : '1i';
  const isArg = op === ReduceOp.ArgMax || op === ReduceOp.ArgMin;
  const outT = op === ReduceOp.All || op === ReduceOp.Any ? 'i32' : isArg ? 'i32' : t;
  const nan = (v: string) => (t === 'f32' ? `((bitcast<u32>(${v}) & 0x7fffffffu) > 0x7f800000u)` : 'false');
  const init = {
    [ReduceOp.Sum]: zero, [ReduceOp.Mean]: zero, [ReduceOp.SumSq]: zero, [ReduceOp.Prod]: one,
    [ReduceOp.Max]: 'x', [ReduceOp.Min]: 'x', [ReduceOp.ArgMax]: 'x', [ReduceOp.ArgMin]: 'x',
    [ReduceOp.All]: '1i', [ReduceOp.Any]: '0i',
  }[op];
  const pick = (gt: string) =>
    `fn better(va: ${t}, ia: i32, vb: ${t}, ib: i32) -> bool {
  if (${nan('va')}) { return !${nan('vb')} || ia < ib; }
  if (${nan('vb')}) { return false; }
  return va ${gt} vb || (va == vb && ia < ib);
}`;
  const comb = {
    [ReduceOp.Sum]: 'a + b', [ReduceOp.Mean]: 'a + b', [ReduceOp.SumSq]: 'a + b', [ReduceOp.Prod]: 'a * b',
    [ReduceOp.Max]: t === 'f32' ? `select(select(max(a, b), b, ${nan('b')}), a, ${nan('a')})` : 'max(a, b)',
    [ReduceOp.Min]: t === 'f32' ? `select(select(min(a, b), b, ${nan('b')}), a, ${nan('a')})` : 'min(a, b)',
    [ReduceOp.All]: 'a & b', [ReduceOp.Any]: 'a | b',
  } as Record<number, string>;
  const elem = op === ReduceOp.SumSq ? 'x * x' : op === ReduceOp.All || op === ReduceOp.Any ? (t === 'f32' ? 'select(0i, 1i, (bitcast<u32>(x) & 0x7fffffffu) != 0u)' : 'select(0i, 1i, x != 0i)') : 'x';
  const accT = isArg ? t : outT;
  const elemV = elem, initV = init;
  const guard = (_v: string) => '';
  const val = (v: string) => v;
  const src = load(`rd${inSlot}`, dt, 'base + k');
  // One invocation's fold of the row's elements start, start + stride, …
  const serial = (start: string, stride: string) => isArg
    ? `  var acc: ${t} = ${load(`rd${inSlot}`, dt, 'base')};
  var idx: i32 = 0;
  if (${start} < inner) { acc = ${load(`rd${inSlot}`, dt, `base + ${start}`)}; idx = i32(${start}); }
  for (var k = ${start} + ${stride}; k < inner; k += ${stride}) {
    let x = ${src};
    if (better(x, i32(k), acc, idx)) { acc = x; idx = i32(k); }
  }`
    : `  var acc: ${accT} = ${op === ReduceOp.Max || op === ReduceOp.Min ? load(`rd${inSlot}`, dt, 'base') : initV};
  for (var k = ${start}; k < inner; k += ${stride}) {
    let x = ${src};
    let b = ${elemV};
    let a = acc;
    acc = ${comb[op]};
  }`;
  const betterFn = isArg ? pick(op === ReduceOp.ArgMax ? '>' : '<') : '';
  const result = isArg ? 'idx' : op === ReduceOp.Mean ? 'acc / f32(inner)' : 'acc';
  if (form === 'short') {
    return `${slotBindings(slots)}${betterFn}
${rowMain(RWG, `${serial('0u', '1u')}
  ${guard('acc')}S0[P[3] + row] = bitcast<u32>(${val(result)});`, true)}`;
  }
  if (form === 'subgroup') {
    const step = isArg
      ? `let vb = subgroupShuffleXor(acc, o);
    let ib = subgroupShuffleXor(idx, o);
    if (better(vb, ib, acc, idx)) { acc = vb; idx = ib; }`
      : `let a = acc;
    let b = subgroupShuffleXor(acc, o);
    acc = ${comb[op]};`;
    return `${SUBGROUPS}${slotBindings(slots)}${betterFn}
${subgroupRowMain(`${serial('lane', 'sgs')}
  for (var o = sgs >> 1u; o > 0u; o = o >> 1u) {
    ${step}
  }
  if (lane == 0u) { ${guard('acc')}S0[P[3] + row] = bitcast<u32>(${val(result)}); }`)}`;
  }
  const fold = isArg
    ? `${serial('li', `${RWG}u`)}
  SV[li] = acc; SI[li] = idx;
  workgroupBarrier();
  for (var s = ${RWG / 2}u; s > 0u; s = s >> 1u) {
    if (li < s && better(SV[li + s], SI[li + s], SV[li], SI[li])) { SV[li] = SV[li + s]; SI[li] = SI[li + s]; }
    workgroupBarrier();
  }
  if (li == 0u) { S0[P[3] + row] = bitcast<u32>(SI[0]); }`
    : `${serial('li', `${RWG}u`)}
  SV[li] = acc;
  workgroupBarrier();
  for (var s = ${RWG / 2}u; s > 0u; s = s >> 1u) {
    if (li < s) { let a = SV[li]; let b = SV[li + s]; SV[li] = ${comb[op]}; }
    workgroupBarrier();
  }
  if (li == 0u) { ${guard('SV[0]')}S0[P[3] + row] = bitcast<u32>(${op === ReduceOp.Mean ? `SV[0] / f32(inner)` : val('SV[0]')}); }`;
  return `${slotBindings(slots)}var<workgroup> SV: array<${accT}, ${RWG}>;
${isArg ? `var<workgroup> SI: array<i32, ${RWG}>;\n${betterFn}` : betterFn}
${rowMain(RWG, fold)}`;
}

/**
 * A reduction in 64 bits of an integer dtype `dt` (int64 read as two words, narrower integers
 * sign-extended): one workgroup per row. Sum, prod, max and min write an int64; argmax/argmin
 * the i32 index and all/any 0 or 1 (one word; the worker widens or packs them).
 */
export function reduce64Shader(op: ReduceOp, dt: StorageCode, inSlot: number, slots: number): string {
  const elem = (k: string) => (dt === StorageCode.I64 ? loadI64(`rd${inSlot}`, `base + ${k}`) : `i64_from_i32(${load(`rd${inSlot}`, dt, `base + ${k}`)})`);
  const { decls, body } = reduce64Body(op, elem, RWG);
  return `${slotBindings(slots)}${I64_PRELUDE}${decls}
${rowMain(RWG, body)}`;
}

/**
 * The entry point of a row kernel over a contiguous [outer, inner] block, with `row`, `inner`
 * and the row's first element `base` in scope: one workgroup of `wg` invocations per row (and
 * `li`, the invocation's index in it), or, with `perInvocation`, one invocation per row in
 * workgroups of `wg` (dispatch `outer` invocations). Params begin [outer, inner, input offset,
 * output offset].
 */
export function rowMain(wg: number, body: string, perInvocation = false): string {
  return `@compute @workgroup_size(${wg})
fn main(@builtin(${perInvocation ? 'global_invocation_id) gid' : 'workgroup_id) wid'}: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let row = ${perInvocation ? `gid.y * nwg.x * ${wg}u + gid.x` : 'wid.y * nwg.x + wid.x'};
  let outer = P[0];
  let inner = P[1];
  if (row >= outer) { return; }
  let base = P[2] + row * inner;
${body}
}
`;
}

/** Invocations per workgroup of the subgroup row kernels. */
export const SUBGROUP_WG = 64;

/**
 * The preamble of a subgroup row kernel. Rows are whole subgroups, which WGSL's uniformity
 * analysis cannot see (it knows only workgroup-uniform values), hence the diagnostic.
 */
export const SUBGROUPS = 'enable subgroups;\ndiagnostic(off, subgroup_uniformity);\n';

/**
 * The entry point of a row kernel in which each subgroup takes whole rows of a contiguous
 * [outer, inner] block: workgroups of `SUBGROUP_WG` take P[4] consecutive rows each (dispatch
 * ⌈outer / P[4]⌉ workgroups), their subgroups the rows in turn, whatever the subgroup size. In
 * scope: `row`, `inner`, `base`, `lane` (the index in the subgroup) and `sgs` (its size).
 */
export function subgroupRowMain(body: string): string {
  return `@compute @workgroup_size(${SUBGROUP_WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32,
    @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sgs: u32) {
  let outer = P[0];
  let inner = P[1];
  let first = (wid.y * nwg.x + wid.x) * P[4];
  let last = min(first + P[4], outer);
  for (var row = first + li / sgs; row < last; row += ${SUBGROUP_WG}u / sgs) {
    let base = P[2] + row * inner;
${body.replace(/^/gm, '  ')}
  }
}
`;
}

/** What `rowForm` weighs: the device, and `WEBTORCH_ROWS` (`tree` or `subgroup`) for A/B runs. */
export interface RowDevice {
  subgroups: boolean;
  /** A CPU adapter (lavapipe), where barriers cost most. */
  cpu: boolean;
  /** The smallest subgroup size the adapter reports. */
  subgroupMinSize: number;
  forced?: string;
}

/**
 * The form for `outer` rows of `inner` elements: rows of at most `SHORT_ROW` one invocation each
 * (where the kernel has that form), else a subgroup per row on a CPU adapter with subgroups
 * (lavapipe, where workgroup barriers are dear: softmax 2.5×, layer norm 5× tfjs-webgpu), else the
 * tree. On the H100 the subgroup form was slower than the tree (`sum(-1)` 4096² 902 against 1,378
 * GB/s, softmax 8192×4096 968 against 1,568), so a GPU keeps the tree unless `WEBTORCH_ROWS=subgroup`.
 * Also the rows per workgroup (params word 4) for the subgroup form.
 */
export function rowForm(outer: number, inner: number, d: RowDevice, short: boolean): { form: RowForm; rows: number } {
  const rows = Math.max(1, Math.floor(SUBGROUP_WG / Math.max(1, d.subgroupMinSize)));
  if (short && inner <= SHORT_ROW) return { form: 'short', rows };
  const sub = d.subgroups && d.forced !== 'tree' && (d.forced === 'subgroup' || d.cpu);
  return { form: sub ? 'subgroup' : 'tree', rows };
}

/** The `RowDevice` of a WebGPU device and its adapter's info. */
export const rowDevice = (features: ReadonlySet<string>, info: GPUAdapterInfo | undefined, forced?: string): RowDevice =>
  ({ subgroups: features.has('subgroups'), cpu: info?.isFallbackAdapter ?? false, subgroupMinSize: info?.subgroupMinSize ?? 32, forced });
