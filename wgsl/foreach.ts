/**
 * The multi-tensor kernels behind `clipGradNorm_` and `clipGradValue_`: PyTorch's `_foreach_norm`
 * (the `foreachNorm` command; float32, float16 and bfloat16, widened to f32 as they are read),
 * `_foreach_mul_` by a device scalar (`foreachMul`) and the clamps (`foreachClamp`), each over a
 * table of tensors whose segments are bound once (S0..S{k-1}), as wgsl/optim.ts binds its
 * parameters. (The in-place kernels take float32 only: two 16-bit tensors may share a word.)
 *
 * Note [a norm over many tensors in two passes]: WGSL has no f32 atomics, so no workgroup can add
 * into a tensor's norm. The first pass gives each workgroup `NORM_CHUNK` elements of one tensor
 * (its entry found by binary search over the entries' first workgroups) and writes the chunk's
 * Σ|x|^p, or max |x|, into its own slot of a partials buffer (the worker's kept scratch); each
 * tensor's chunks have consecutive slots. The second pass gives each tensor one workgroup, which
 * combines the tensor's slots and writes the norm (the root taken there). Both passes are fixed
 * trees, so a norm is the same bits on every run. Max propagates NaN by testing bits (the
 * reductions' rule, wgsl/reduce.ts); sums propagate it by arithmetic.
 */
import { StorageCode } from '../ts/dtype.js';
import { WG } from './elementwise.js';
import { findEntry, segmentAccess } from './segments.js';

/** Elements one workgroup of the first pass reduces (16 per invocation). */
export const NORM_CHUNK = WG * 16;
/** First pass: params header words (entries, workgroups, 2 spare). */
export const NORM_HEADER_WORDS = 4;
/** First pass: words per entry (first workgroup, count, slot, offset in elements, first partial slot, storage code). */
export const NORM_ENTRY_WORDS = 6;
/** Second pass: params header words (tensors, the output's offset, 1/p as f32 bits, spare). */
export const FINISH_HEADER_WORDS = 4;
/** `foreachMul`: params header words (entries, units, the scalar's slot and offset); `foreachClamp`: (entries, units, lo, hi). */
export const MUL_HEADER_WORDS = 4;
/** `foreachMul`: words per entry (first unit, count, slot, offset). */
export const MUL_ENTRY_WORDS = 4;

/** How a norm's order is computed: 1, 2, Infinity, or any other p. */
export type NormKind = 'l1' | 'l2' | 'inf' | 'p';
/** The kind of order `ord`. */
export const normKind = (ord: number): NormKind => (ord === Infinity ? 'inf' : ord === 1 ? 'l1' : ord === 2 ? 'l2' : 'p');

const isNan = (v: string) => `((bitcast<u32>(${v}) & 0x7fffffffu) > 0x7f800000u)`;

/** The combine of two partial results of `kind` (NaN-propagating max for inf). */
const combine = (kind: NormKind) => (kind === 'inf'
  ? `fn comb(a: f32, b: f32) -> f32 { return select(select(max(a, b), b, ${isNan('b')}), a, ${isNan('a')}); }`
  : 'fn comb(a: f32, b: f32) -> f32 { return a + b; }');

/** One element's term: |x|, x², |x|^p (0 for 0), |x| for the max. */
function term(kind: NormKind): string {
  const body = kind === 'l2' ? 'x * x' : kind === 'p' ? 'select(pow(abs(x), p), 0.0, x == 0.0)' : 'abs(x)';
  return `fn term(x: f32, p: f32) -> f32 { return ${body}; }`;
}

/** A workgroup's tree over `acc` (every invocation calls it: it holds barriers). */
const TREE = `  workgroupBarrier();
  for (var s = ${WG / 2}u; s > 0u; s = s >> 1u) {
    if (li < s) { acc[li] = comb(acc[li], acc[li + s]); }
    workgroupBarrier();
  }`;

/** The first pass over `slots` bindings of segments, for norms of `kind`; the partials are binding slots + 1. */
export function normPartialShader(slots: number, kind: NormKind): string {
  let decl = '', ld = '';
  for (let k = 0; k < slots; k++) {
    decl += `@group(0) @binding(${k + 1}) var<storage, read> S${k}: array<u32>;\n`;
    ld += `    case ${k}u: { return S${k}[i]; }\n`;
  }
  const H = NORM_HEADER_WORDS, E = NORM_ENTRY_WORDS;
  return `@group(0) @binding(0) var<storage, read> P: array<u32>;
${decl}@group(0) @binding(${slots + 1}) var<storage, read_write> R: array<f32>;
var<workgroup> acc: array<f32, ${WG}>;
fn ldw(s: u32, i: u32) -> u32 {
  switch s {
${ld}    default: { return 0u; }
  }
}
// element i of a float32, float16 or bfloat16 run (16-bit: the low half of a word first)
fn ld(s: u32, i: u32, dt: u32) -> f32 {
  if (dt == ${StorageCode.F32}u) { return bitcast<f32>(ldw(s, i)); }
  let h = (ldw(s, i >> 1u) >> ((i & 1u) * 16u)) & 0xffffu;
  if (dt == ${StorageCode.BF16}u) { return bitcast<f32>(h << 16u); }
  let sg = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1fu;
  let m = h & 0x3ffu;
  if (e == 0u) { return bitcast<f32>(sg | bitcast<u32>(f32(m) * 5.9604644775390625e-8)); }
  if (e == 31u) { return bitcast<f32>(sg | 0x7f800000u | (m << 13u)); }
  return bitcast<f32>(sg | ((e + 112u) << 23u) | (m << 13u));
}
${combine(kind)}
${term(kind)}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let g = wid.y * nwg.x + wid.x;
  if (g >= P[1]) { return; }
  ${findEntry('g', 'P[0]', H, E)}
  let e = ${H}u + lo * ${E}u;
  let j = g - P[e];
  let end = min(j * ${NORM_CHUNK}u + ${NORM_CHUNK}u, P[e + 1u]);
  let slot = P[e + 2u];
  let off = P[e + 3u];
  let dt = P[e + 5u];
  let p = bitcast<f32>(P[2]);
  var a = 0.0;
  for (var i = j * ${NORM_CHUNK}u + li; i < end; i = i + ${WG}u) { a = comb(a, term(ld(slot, off + i, dt), p)); }
  acc[li] = a;
${TREE}
  if (li == 0u) { R[P[e + 4u] + j] = acc[0]; }
}
`;
}

/** The second pass: one workgroup per tensor combines its partials (P: header, then (first slot, count) per tensor) and writes its norm into O. */
export function normFinishShader(kind: NormKind): string {
  const H = FINISH_HEADER_WORDS;
  const root = kind === 'l2' ? 'sqrt(s)' : kind === 'p' ? 'select(pow(s, bitcast<f32>(P[2])), 0.0, s == 0.0)' : 's';
  return `@group(0) @binding(0) var<storage, read> P: array<u32>;
@group(0) @binding(1) var<storage, read> R: array<f32>;
@group(0) @binding(2) var<storage, read_write> O: array<f32>;
var<workgroup> acc: array<f32, ${WG}>;
${combine(kind)}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let t = wid.y * nwg.x + wid.x;
  if (t >= P[0]) { return; }
  let base = P[${H}u + 2u * t];
  let count = P[${H}u + 2u * t + 1u];
  var a = 0.0;
  for (var i = li; i < count; i = i + ${WG}u) { a = comb(a, R[base + i]); }
  acc[li] = a;
${TREE}
  if (li == 0u) {
    let s = acc[0];
    O[P[1] + t] = ${root};
  }
}
`;
}

/**
 * `foreachMul` over `slots` bindings: every element of every entry times the scalar (one element
 * an invocation); with `clamp`, `foreachClamp`: every element clamped to [lo, hi] (header words 2
 * and 3, f32 bits), NaN kept.
 */
export function mulShader(slots: number, clamp = false): string {
  const H = MUL_HEADER_WORDS, E = MUL_ENTRY_WORDS;
  return `@group(0) @binding(0) var<storage, read> P: array<u32>;
${segmentAccess(slots, 'f32')}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let w = (wid.y * nwg.x + wid.x) * ${WG}u + li;
  if (w >= P[1]) { return; }
  ${findEntry('w', 'P[0]', H, E)}
  let e = ${H}u + lo * ${E}u;
  let i = P[e + 3u] + w - P[e];
  let slot = P[e + 2u];
  ${clamp ? `let x = ld(slot, i);
  if (!${isNan('x')}) { st(slot, i, min(max(x, bitcast<f32>(P[2])), bitcast<f32>(P[3]))); }` : 'st(slot, i, ld(slot, i) * ld(P[2], P[3]));'}
}
`;
}
