/**
 * The index family's WGSL: gather (index_select, gather, take, embedding, sort/topk values),
 * scatter and scatter_add, cumulative sums and products, a stable sort, and one_hot.
 *
 * Index range errors. Index values live on the device, so they are checked in the kernel:
 * a bad index is never used as an address (the element reads as 0 or the write is skipped),
 * and the first one is recorded in a 4-word error buffer `E` that every checking kernel binds
 * after its storages: E[0] is the failing dispatch's code (claimed with a compare-exchange, so
 * only the first failure is kept) and E[1], E[2] the bad value's low and high words. Indices
 * are int64 (two words; the facade widens int32 ones): an index whose high word is not the sign
 * of its low word is out of range whatever the size. The worker registers each checking
 * dispatch's message under its code and reads `E` back at the next `read`/`sync`, where it
 * throws the message naming the op; the cpu worker raises the same message from its kernels.
 * This is CUDA's device-side assert, without killing the device.
 *
 * Scatter writes land on arbitrary elements, so they go to 32-bit words only: packed outputs
 * (uint8, bool, float16, bfloat16) are scattered into a 32-bit scratch copy that is cast back
 * afterwards; int64 is scattered in place, two words per element (`scatter64`). scatter_add accumulates with atomics: `atomicAdd` for integers and a
 * compare-exchange loop on the f32 bits for floats, so float sums are not deterministic in
 * their rounding order (as with CUDA's atomicAdd); float16/bfloat16 sums are rounded once.
 *
 * Sort is a bitonic network over (key, index) pairs padded to a power of two per line, where
 * the key is the value's bits mapped to an order-preserving u32 (NaN largest, -0 equal to 0;
 * int64 keys take two words) and the original index breaks ties, which makes the unstable
 * network a stable sort. Blocks
 * of 512 pairs sort in workgroup memory; longer lines add global merge steps.
 */
import { StorageCode } from '../ts/dtype.js';
import { computeType, elementsPerWord, load, loadWide, slotBindings } from './dtype.js';
import { I64_PRELUDE } from './int64.js';

/** Workgroup size of the index kernels. */
export const IWG = 256;
/** Pairs a workgroup sorts in workgroup memory. */
export const SORT_BLOCK = 512;

/** Params word where view `k` (offset, then 8 strides) starts. */
const viewBase = (k: number) => 10 + k * 9;

/**
 * The params block shared by the strided kernels: [0] n, [1..9) shape, [9] output offset,
 * views at 10 + 9k (offset, strides), then `extra` words (i32 or f32 bits).
 */
export function indexParams(n: number, shape: number[], outOffset: number, views: { offset: number; strides: number[] }[], extra: number[] = []): ArrayBuffer {
  const words = new Int32Array(10 + views.length * 9 + extra.length);
  words[0] = n;
  shape.forEach((s, d) => (words[1 + d] = s));
  words[9] = outOffset;
  views.forEach((v, k) => {
    words[viewBase(k)] = v.offset;
    v.strides.forEach((s, d) => (words[viewBase(k) + 1 + d] = s));
  });
  words.set(extra, 10 + views.length * 9);
  return words.buffer;
}

/** The bits of `v` as a params word of a kernel computing in `t`. */
export function scalarWord(v: number, t: 'f32' | 'i32'): number {
  if (t === 'i32') return v | 0;
  const f = new Float32Array([v]);
  return new Int32Array(f.buffer)[0];
}

/** Word index of an extra params word of a kernel with `views` views. */
const extra = (views: number, j: number) => 10 + views * 9 + j;

/** `fn name(i)`: the storage index of element `i` (row-major over the params shape) in view `k`. */
function offsetFn(name: string, k: number, rank: number): string {
  const b = viewBase(k);
  let body = `  var r = i;\n  var o = P[${b}u];\n`;
  for (let d = rank - 1; d >= 0; d--) {
    body += d > 0 ? `  o += (r % P[${1 + d}u]) * P[${b + 1 + d}u]; r = r / P[${1 + d}u];\n` : `  o += r * P[${b + 1}u];\n`;
  }
  return `fn ${name}(i: u32) -> u32 {\n${rank ? body : `  var o = P[${b}u];\n`}  return o;\n}\n`;
}

/** The error buffer binding and `fail(code, v)`, which keeps the first failure. */
export function errorBinding(slots: number): string {
  return `@group(0) @binding(${slots + 1}) var<storage, read_write> E: array<atomic<u32>>;
fn fail64(code: u32, lo: u32, hi: u32) {
  loop {
    let r = atomicCompareExchangeWeak(&E[0], 0u, code);
    if (r.exchanged) { atomicStore(&E[1], lo); atomicStore(&E[2], hi); break; }
    if (r.old_value != 0u) { break; }
  }
}
fn fail(code: u32, v: i32) { fail64(code, bitcast<u32>(v), select(0u, 0xffffffffu, v < 0i)); }
`;
}

/** `fn index(i)`: the index at `offI(i)` in slot `slot`, checked; -1 after recording a failure. Params from word `at`: size, wrap, code. */
function indexFn(slot: number, at: number): string {
  return `fn index(i: u32) -> i32 {
  let at = 2u * offI(i);
  let lo = rd${slot}(at);
  let hi = rd${slot}(at + 1u);
  let raw = bitcast<i32>(lo);
  let size = bitcast<i32>(P[${at}u]);
  var v = raw;
  if (v < 0 && P[${at + 1}u] != 0u) { v += size; }
  if (hi != select(0u, 0xffffffffu, raw < 0i) || v < 0 || v >= size) { fail64(P[${at + 2}u], lo, hi); return -1; }
  return v;
}
`;
}

/** The raw bits of element `e` of a `dt` storage read through `rd`, in the low bits. */
function rawBits(rd: string, dt: StorageCode, e: string): string {
  const epw = elementsPerWord(dt);
  if (epw === 1) return `${rd}(${e})`;
  const w = 32 / epw;
  return `((${rd}((${e}) / ${epw}u) >> (((${e}) % ${epw}u) * ${w}u)) & ${epw === 2 ? '0xffffu' : '0xffu'})`;
}

const MAIN = `@compute @workgroup_size(${IWG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let n = P[0];
  let w = (wid.y * nwg.x + wid.x) * ${IWG}u + li;`;

/**
 * Gather: out[i] = x[offX(i) + index(i) * dimStride] over a rank-`rank` output, copying the
 * element's bits. Views: 0 x, 1 index; extras: dimStride, size, wrap, code. A packed output
 * runs one invocation per word.
 */
export function gatherShader(rank: number, dt: StorageCode, xSlot: number, iSlot: number, slots: number): string {
  const epw = elementsPerWord(dt);
  const ex = extra(2, 0);
  if (dt === StorageCode.I64) {
    return `${slotBindings(slots)}${errorBinding(slots)}${offsetFn('offX', 0, rank)}${offsetFn('offI', 1, rank)}
${indexFn(iSlot, ex + 1)}${MAIN}
  if (w >= n) { return; }
  let v = index(w);
  var lo = 0u;
  var hi = 0u;
  if (v >= 0) {
    let e = offX(w) + u32(v) * P[${ex}u];
    lo = rd${xSlot}(2u * e);
    hi = rd${xSlot}(2u * e + 1u);
  }
  S0[2u * (P[9] + w)] = lo;
  S0[2u * (P[9] + w) + 1u] = hi;
}
`;
  }
  const store = epw === 1
    ? `  if (w >= n) { return; }\n  S0[P[9] + w] = elem(w);`
    : `  if (w * ${epw}u >= n) { return; }
  var word = 0u;
  for (var j = 0u; j < ${epw}u; j++) {
    let i = w * ${epw}u + j;
    if (i < n) { word |= elem(i) << (j * ${32 / epw}u); }
  }
  S0[P[9] / ${epw}u + w] = word;`;
  return `${slotBindings(slots)}${errorBinding(slots)}${offsetFn('offX', 0, rank)}${offsetFn('offI', 1, rank)}
${indexFn(iSlot, ex + 1)}fn elem(i: u32) -> u32 {
  let v = index(i);
  if (v < 0) { return 0u; }
  let e = offX(i) + u32(v) * P[${ex}u];
  return ${rawBits(`rd${xSlot}`, dt, 'e')};
}
${MAIN}
${store}
}
`;
}

/**
 * Scatter into a 32-bit target (slot 0) holding values in `dt`'s compute type, over the index's
 * shape: target[offD(i) + index(i) * dimStride] = src(i), or += with `add`. Views: 0 dst, 1
 * index, 2 src (absent when `srcSlot` is -1: the value is the scalar word). Extras: dimStride,
 * size, wrap, code, scalar.
 */
export function scatterIndexShader(rank: number, dt: StorageCode, add: boolean, iSlot: number, srcSlot: number, slots: number): string {
  const t = computeType(dt);
  const views = 3;
  const ex = extra(views, 0);
  if (dt === StorageCode.I64) return scatter64(rank, add, iSlot, srcSlot, slots);
  const value = srcSlot >= 0 ? load(`rd${srcSlot}`, dt, 'offS(i)') : `bitcast<${t}>(P[${ex + 4}u])`;
  const write = !add
    ? `  S0[d] = bitcast<u32>(v);`
    : t === 'i32'
      ? `  atomicAdd(&S0[d], bitcast<u32>(v));`
      : `  var old = atomicLoad(&S0[d]);
  loop {
    let r = atomicCompareExchangeWeak(&S0[d], old, bitcast<u32>(bitcast<f32>(old) + v));
    if (r.exchanged) { break; }
    old = r.old_value;
  }`;
  return `${slotBindings(slots, add)}${errorBinding(slots)}${offsetFn('offD', 0, rank)}${offsetFn('offI', 1, rank)}${srcSlot >= 0 ? offsetFn('offS', 2, rank) : ''}
${indexFn(iSlot, ex + 1)}${MAIN}
  let i = w;
  if (i >= n) { return; }
  let k = index(i);
  if (k < 0) { return; }
  let d = offD(i) + u32(k) * P[${ex}u];
  let v: ${t} = ${value};
${write}
}
`;
}

/**
 * Scatter of int64 straight into the int64 target: two words per element; scatter_add adds the
 * low words with `atomicAdd` and carries into the high word (the total is exact whatever the
 * order, since every carry is added once). Extras as `scatterIndexShader`, the scalar's low and
 * high words last. Writes (not adds) of one element from two sources may mix their words, as
 * such writes are unordered in PyTorch too.
 */
function scatter64(rank: number, add: boolean, iSlot: number, srcSlot: number, slots: number): string {
  const ex = extra(3, 0);
  const value = srcSlot >= 0 ? `vec2<u32>(rd${srcSlot}(2u * offS(i)), rd${srcSlot}(2u * offS(i) + 1u))` : `vec2<u32>(P[${ex + 4}u], P[${ex + 5}u])`;
  const write = add
    ? `  let old = atomicAdd(&S0[2u * d], v.x);
  atomicAdd(&S0[2u * d + 1u], v.y + select(0u, 1u, old + v.x < old));`
    : `  atomicStore(&S0[2u * d], v.x);
  atomicStore(&S0[2u * d + 1u], v.y);`;
  return `${slotBindings(slots, true)}${errorBinding(slots)}${offsetFn('offD', 0, rank)}${offsetFn('offI', 1, rank)}${srcSlot >= 0 ? offsetFn('offS', 2, rank) : ''}
${indexFn(iSlot, ex + 1)}${MAIN}
  let i = w;
  if (i >= n) { return; }
  let k = index(i);
  if (k < 0) { return; }
  let d = offD(i) + u32(k) * P[${ex}u];
  let v = ${value};
${write}
}
`;
}

/**
 * Cumulative sum or product along lines: one invocation per line (the params shape is x's
 * shape without the dim), writing the running value into a contiguous target: f32 for floats,
 * int64 (two words) for integers. View 0 is x; extras: len, dimStride, inner.
 */
export function cumulativeShader(rank: number, dt: StorageCode, prod: boolean, xSlot: number, slots: number): string {
  const t = computeType(dt);
  const ex = extra(1, 0);
  if (t === 'i32') {
    // integers: int64 running values (two words per output element; wgsl/int64.ts)
    const x = dt === StorageCode.I64 ? loadWide(`rd${xSlot}`, dt, 'xb + p * step') : `i64_from_i32(${load(`rd${xSlot}`, dt, 'xb + p * step')})`;
    return `${slotBindings(slots)}${I64_PRELUDE}${offsetFn('offX', 0, rank)}
${MAIN}
  if (w >= n) { return; }
  let len = P[${ex}u];
  let step = P[${ex + 1}u];
  let inner = P[${ex + 2}u];
  let xb = offX(w);
  let ob = P[9] + (w / inner) * len * inner + w % inner;
  var acc = vec2<u32>(${prod ? '1u' : '0u'}, 0u);
  for (var p = 0u; p < len; p++) {
    acc = ${prod ? 'i64_mul' : 'i64_add'}(acc, ${x});
    S0[2u * (ob + p * inner)] = acc.x;
    S0[2u * (ob + p * inner) + 1u] = acc.y;
  }
}
`;
  }
  const init = prod ? '1.0' : '0.0';
  const step = `acc = acc ${prod ? '*' : '+'} ${load(`rd${xSlot}`, dt, 'xb + p * step')};`;
  return `${slotBindings(slots)}${offsetFn('offX', 0, rank)}
${MAIN}
  if (w >= n) { return; }
  let len = P[${ex}u];
  let step = P[${ex + 1}u];
  let inner = P[${ex + 2}u];
  let xb = offX(w);
  let ob = P[9] + (w / inner) * len * inner + w % inner;
  var acc: ${t} = ${init};
  for (var p = 0u; p < len; p++) {
    ${step}
    S0[ob + p * inner] = bitcast<u32>(acc);
  }
}
`;
}

/** Sort params: [0] total pairs, [1] padded line length, [2] len, [3] inner, [4] x offset, [5] k, [6] j, [7] out offset, [8] n out. */
export function sortParams(total: number, padded: number, len: number, inner: number, xOffset: number, k = 0, j = 0, outOffset = 0, n = 0): ArrayBuffer {
  return new Uint32Array([total, padded, len, inner, xOffset, k, j, outOffset, n]).buffer;
}

const SORT_HEAD = `fn less(ka: u32, ia: u32, kb: u32, ib: u32) -> bool { return ka < kb || (ka == kb && ia < ib); }
@compute @workgroup_size(${IWG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let total = P[0];
  let padded = P[1];
  let blk = wid.y * nwg.x + wid.x;
  let w = blk * ${IWG}u + li;`;

/** Comparison of 64-bit keys (high word, low word), the original index breaking ties. */
const LESS2 = `fn less2(ka: u32, la: u32, ia: u32, kb: u32, lb: u32, ib: u32) -> bool {
  return ka < kb || (ka == kb && (la < lb || (la == lb && ia < ib)));
}
`;

/**
 * Sort step 1: the keys and indices of every padded line into a scratch target (keys at
 * [0, total), indices at [total, 2 total); int64 keys take two words, the high one (sign
 * flipped) at [0, total) and the low one at [2 total, 3 total)); padding sorts after everything.
 */
export function sortInitShader(dt: StorageCode, descending: boolean, xSlot: number, slots: number): string {
  const at = 'P[4] + (line / inner) * P[2] * inner + p * inner + line % inner';
  if (dt === StorageCode.I64) {
    return `${slotBindings(slots)}${SORT_HEAD}
  if (w >= total) { return; }
  let p = w % padded;
  var key = 0xffffffffu;
  var low = 0xffffffffu;
  var id = 0xffffffffu;
  if (p < P[2]) {
    let line = w / padded;
    let inner = P[3];
    let v = ${loadWide(`rd${xSlot}`, dt, at)};
    key = ${descending ? '~(v.y ^ 0x80000000u)' : 'v.y ^ 0x80000000u'};
    low = ${descending ? '~v.x' : 'v.x'};
    id = p;
  }
  S0[w] = key;
  S0[total + w] = id;
  S0[2u * total + w] = low;
}
`;
  }
  const key = computeType(dt) === 'f32'
    ? `var b = bitcast<u32>(v);
    if ((b & 0x7fffffffu) > 0x7f800000u) { b = 0xffffffffu; }
    else {
      if (b == 0x80000000u) { b = 0u; }
      b = select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
    }`
    : `let b = bitcast<u32>(v) ^ 0x80000000u;`;
  return `${slotBindings(slots)}${SORT_HEAD}
  if (w >= total) { return; }
  let p = w % padded;
  var key = 0xffffffffu;
  var id = 0xffffffffu;
  if (p < P[2]) {
    let line = w / padded;
    let inner = P[3];
    let v = ${load(`rd${xSlot}`, dt, at)};
    ${key}
    key = ${descending ? '~b' : 'b'};
    id = p;
  }
  S0[w] = key;
  S0[total + w] = id;
}
`;
}

/**
 * Sort in workgroup memory over blocks of SORT_BLOCK pairs: `merge` false runs every step
 * with k up to min(padded, block); `merge` true runs the steps j < block of stage k = P[5].
 * `wide`: 64-bit keys (see `sortInitShader`).
 */
export function sortLocalShader(merge: boolean, wide = false): string {
  const steps = merge
    ? `  let k = P[5];
  for (var j = ${SORT_BLOCK / 2}u; j > 0u; j = j >> 1u) { step(base, padded, total, k, j, li); workgroupBarrier(); }`
    : `  let kmax = min(padded, ${SORT_BLOCK}u);
  for (var k = 2u; k <= kmax; k = k << 1u) {
    for (var j = k >> 1u; j > 0u; j = j >> 1u) { step(base, padded, total, k, j, li); workgroupBarrier(); }
  }`;
  return `${slotBindings(1)}var<workgroup> SK: array<u32, ${SORT_BLOCK}>;
var<workgroup> SI: array<u32, ${SORT_BLOCK}>;
${wide ? `var<workgroup> SL: array<u32, ${SORT_BLOCK}>;
${LESS2}` : ''}fn step(base: u32, padded: u32, total: u32, k: u32, j: u32, t: u32) {
  let i = ((t & ~(j - 1u)) << 1u) | (t & (j - 1u));
  let l = i + j;
  if (base + l >= total) { return; }
  let up = ((base + i) & (padded - 1u) & k) == 0u;
  if (${wide ? 'less2(SK[l], SL[l], SI[l], SK[i], SL[i], SI[i])' : 'less(SK[l], SI[l], SK[i], SI[i])'} == up) {
    let k0 = SK[i]; SK[i] = SK[l]; SK[l] = k0;
    let i0 = SI[i]; SI[i] = SI[l]; SI[l] = i0;${wide ? '\n    let l0 = SL[i]; SL[i] = SL[l]; SL[l] = l0;' : ''}
  }
}
${SORT_HEAD}
  let base = blk * ${SORT_BLOCK}u;
  for (var t = li; t < ${SORT_BLOCK}u; t += ${IWG}u) {
    if (base + t < total) { SK[t] = S0[base + t]; SI[t] = S0[total + base + t];${wide ? ' SL[t] = S0[2u * total + base + t];' : ''} }
  }
  workgroupBarrier();
${steps}
  for (var t = li; t < ${SORT_BLOCK}u; t += ${IWG}u) {
    if (base + t < total) { S0[base + t] = SK[t]; S0[total + base + t] = SI[t];${wide ? ' S0[2u * total + base + t] = SL[t];' : ''} }
  }
}
`;
}

/** One global compare-exchange step (k = P[5], j = P[6]) over all pairs; `wide`: 64-bit keys. */
export function sortGlobalShader(wide = false): string {
  const L = (x: string) => `S0[2u * total + ${x}]`;
  return `${slotBindings(1)}${wide ? LESS2 : ''}${SORT_HEAD}
  if (w >= total / 2u) { return; }
  let j = P[6];
  let i = ((w & ~(j - 1u)) << 1u) | (w & (j - 1u));
  let l = i + j;
  let up = (i & (padded - 1u) & P[5]) == 0u;
  if (${wide ? `less2(S0[l], ${L('l')}, S0[total + l], S0[i], ${L('i')}, S0[total + i])` : 'less(S0[l], S0[total + l], S0[i], S0[total + i])'} == up) {
    let k0 = S0[i]; S0[i] = S0[l]; S0[l] = k0;
    let i0 = S0[total + i]; S0[total + i] = S0[total + l]; S0[total + l] = i0;${wide ? `
    let l0 = ${L('i')}; ${L('i')} = ${L('l')}; ${L('l')} = l0;` : ''}
  }
}
`;
}

/** The sorted indices from the scratch (slot 1) into the contiguous [outer, len, inner] output (slot 0). */
export function sortOutShader(): string {
  return `${slotBindings(2)}${SORT_HEAD}
  let n = P[8];
  if (w >= n) { return; }
  let len = P[2];
  let inner = P[3];
  let o = w / (len * inner);
  let r = w % (len * inner);
  let line = o * inner + r % inner;
  S0[P[7] + w] = rd1(total + line * padded + r / inner);
}
`;
}

/** one_hot: out[e] = idx[e / classes] == e % classes, int64 idx and out; params [n, classes, idx offset, out offset, code]. */
export function oneHotShader(iSlot: number, slots: number): string {
  return `${slotBindings(slots)}${errorBinding(slots)}${MAIN}
  if (w >= n) { return; }
  let c = P[1];
  let at = 2u * (P[2] + w / c);
  let lo = rd${iSlot}(at);
  let hi = rd${iSlot}(at + 1u);
  let v = bitcast<i32>(lo);
  S0[2u * (P[3] + w) + 1u] = 0u;
  if (hi != select(0u, 0xffffffffu, v < 0i) || v < 0 || v >= i32(c)) {
    if (w % c == 0u) { fail64(P[4], lo, hi); }
    S0[2u * (P[3] + w)] = 0u;
    return;
  }
  S0[2u * (P[3] + w)] = select(0u, 1u, u32(v) == w % c);
}
`;
}

/** The 32-bit dtype a kernel computing in `dt`'s class writes into a scratch target. */
export const wordDt = (dt: StorageCode): StorageCode => (dt === StorageCode.I64 ? StorageCode.I64 : computeType(dt) === 'f32' ? StorageCode.F32 : StorageCode.I32);
