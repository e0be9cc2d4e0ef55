/**
 * GradScaler's fused check (the `ampUnscale` command, PyTorch's
 * `_amp_foreach_non_finite_check_and_unscale_`): one kernel over a table of gradients.
 *
 * Each gradient's segment is bound once (S0..S{k-1}, read_write u32 words); the params hold a
 * header and one entry per gradient: (slot, dtype, offset in elements, count, first work unit).
 * A work unit is one 32-bit word: one f32 element, or the one or two 16-bit elements of a word
 * that belong to the gradient. An invocation finds its entry by binary search over the first
 * units, reads its word, tests each element's bits for inf/NaN (exponent all ones) before
 * unscaling, and writes back the finite ones times invScale (f16 and bf16 round to nearest
 * even in integer arithmetic, as the map kernels do). An invocation that met a non-finite value
 * stores 1.0 into the flag: a plain store of the same value from many invocations, as PyTorch's
 * CUDA kernel does.
 *
 * The hard part is 16-bit gradients that share a word with another gradient: two invocations
 * would rewrite the same word. The worker (ts/worker/gpu/amp.ts) never puts two such entries in
 * one dispatch.
 */
import { StorageCode } from '../ts/dtype.js';
import { F16_ROUND } from './dtype.js';
import { WG } from './elementwise.js';
import { findEntry, segmentAccess } from './segments.js';

/** Params header words: entries, total units, invScale (slot, word), found (slot, word), 2 spare. */
export const AMP_HEADER_WORDS = 8;
/** Params words per entry: slot, dtype, offset (elements), count (elements), first unit. */
export const AMP_ENTRY_WORDS = 5;

/** Elements of `dt` in one 32-bit word (1 for f32, 2 for f16 and bf16). */
export const ampPerWord = (dt: StorageCode): number => (dt === StorageCode.F32 ? 1 : 2);

/** Work units (words) of a gradient of `count` elements starting at element `offset`. */
export function ampUnits(dt: StorageCode, offset: number, count: number): number {
  if (count === 0) return 0;
  const e = ampPerWord(dt);
  return Math.floor((offset + count - 1) / e) - Math.floor(offset / e) + 1;
}

/** The `ampUnscale` kernel over `slots` bindings of gradient (and scale, flag) segments. */
export function ampShader(slots: number): string {
  const H = AMP_HEADER_WORDS, E = AMP_ENTRY_WORDS;
  return `@group(0) @binding(0) var<storage, read> P: array<u32>;
${segmentAccess(slots, 'u32')}
${F16_ROUND}
fn bf16_round(v: f32) -> u32 {
  let x = bitcast<u32>(v);
  if ((x & 0x7fffffffu) > 0x7f800000u) { return (x >> 16u) | 0x40u; }
  return ((x + 0x7fffu + ((x >> 16u) & 1u)) >> 16u) & 0xffffu;
}
fn f16_value(h: u32) -> f32 {
  let s = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1fu;
  let m = h & 0x3ffu;
  if (e == 0u) {
    let v = f32(m) * 5.9604644775390625e-8;
    return select(v, -v, s != 0u);
  }
  return bitcast<f32>(s | ((e + 112u) << 23u) | (m << 13u));
}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let w = (wid.y * nwg.x + wid.x) * ${WG}u + li;
  if (w >= P[1]) { return; }
  ${findEntry('w', 'P[0]', H, E, 4)}
  let b = ${H}u + lo * ${E}u;
  let slot = P[b];
  let dt = P[b + 1u];
  let off = P[b + 2u];
  let end = off + P[b + 3u];
  let j = w - P[b + 4u];
  let inv = bitcast<f32>(ld(P[2], P[3]));
  var bad = false;
  if (dt == ${StorageCode.F32}u) {
    let i = off + j;
    let x = ld(slot, i);
    if ((x & 0x7f800000u) == 0x7f800000u) { bad = true; } else { st(slot, i, bitcast<u32>(bitcast<f32>(x) * inv)); }
  } else {
    let wi = off / 2u + j;
    let x = ld(slot, wi);
    var y = x;
    for (var h = 0u; h < 2u; h++) {
      let e = wi * 2u + h;
      if (e >= off && e < end) {
        let sh = h * 16u;
        let v = (x >> sh) & 0xffffu;
        let isF16 = dt == ${StorageCode.F16}u;
        let expo = select(0x7f80u, 0x7c00u, isF16);
        if ((v & expo) == expo) {
          bad = true;
        } else {
          var r: u32;
          if (isF16) { r = f16_round(f16_value(v) * inv); } else { r = bf16_round(bitcast<f32>(v << 16u) * inv); }
          y = (y & ~(0xffffu << sh)) | (r << sh);
        }
      }
    }
    if (y != x) { st(slot, wi, y); }
  }
  if (bad) { st(P[4], P[5], 0x3f800000u); }
}
`;
}

/** A gradient as the planner sees it: its segment, dtype, first element and element count. */
export interface AmpEntry {
  id: number;
  dt: StorageCode;
  offset: number;
  n: number;
}

/**
 * Splits the gradients into the fewest dispatches the bindings allow, in order: a dispatch binds
 * at most `room` segments (maxStorageBuffersPerShaderStage less the params binding), `fixed` (the
 * scale's and the flag's segments) in every one; and no two 16-bit gradients that share a word
 * (one's last word is the other's first) go into the same dispatch. Zero-size gradients are
 * dropped. Returns each dispatch's segments (fixed first) and entries.
 */
export function planAmp<E extends AmpEntry>(entries: E[], fixed: number[], room: number): { segments: number[]; entries: E[] }[] {
  const base = [...new Set(fixed)];
  if (room < base.length + 1) throw new RangeError(`ampUnscale: ${room} storage bindings cannot hold the scale, the flag and a gradient`);
  const plan: { segments: number[]; entries: E[] }[] = [];
  let pending = entries.filter((e) => e.n > 0);
  while (pending.length) {
    const segments = base.slice(), words = new Set<string>(), taken: E[] = [], later: E[] = [];
    for (const e of pending) {
      const ends = e.dt === StorageCode.F32 ? [] : [`${e.id}:${Math.floor(e.offset / 2)}`, `${e.id}:${Math.floor((e.offset + e.n - 1) / 2)}`];
      const newSegment = !segments.includes(e.id);
      if ((newSegment && segments.length >= room) || ends.some((w) => words.has(w))) {
        later.push(e);
        continue;
      }
      if (newSegment) segments.push(e.id);
      for (const w of ends) words.add(w);
      taken.push(e);
    }
    plan.push({ segments, entries: taken });
    pending = later;
  }
  return plan;
}
