/**
 * 16-bit floats in the vec4 kernels (the matmul tiles and the map kernels' vec4 path): four
 * elements move as one 8-byte word and compute as a `vec4<f32>`.
 *
 * Why this file: a kernel binds each segment buffer once (see `slotBindings`), and one binding
 * may hold operands of several dtypes (the caching allocator puts tensors side by side), so the
 * binding's WGSL type is chosen per slot from every dtype that uses it (`slotKind`):
 * - `f4`: `array<vec4<f32>>`, f32 only (the matmul kernels' binding, as before);
 * - `w4`: `array<vec4<u32>>`, every user 32-bit: four elements per 16-byte word;
 * - `w2`: `array<vec2<u32>>`, a 16-bit user: four 16-bit elements per word, a 32-bit vec4 in two.
 *   float16 unpacks with `unpack2x16float`, bfloat16 by shifting; stores pack, rounding to nearest
 *   even as PyTorch does (float16 through `f16_round`, wgsl/dtype.ts, not `pack2x16float`, whose
 *   rounding and out-of-range results WGSL leaves to the implementation);
 * - `h4`: `array<vec4<f16>>`, float16 only, where the adapter has `shader-f16` and it is on
 *   (`WEBTORCH_F16` unset or `native`): loads and stores are f16 vectors converted to f32.
 * The arithmetic stays float32 in every case, as PyTorch's kernels compute half in float ("opmath")
 * and its matmuls accumulate in float; only the loads and stores are 16-bit.
 * A vector index `q` addresses elements 4q..4q+3 in every kind, so element offsets must be
 * multiples of 4 (the callers check it).
 */
import { StorageCode } from '../ts/dtype.js';
import { F16_ROUND, computeType, elementsPerWord, load } from './dtype.js';

/** How a slot is bound (see the file's note). */
export type SlotKind = 'f4' | 'w4' | 'w2' | 'h4';

/** The directive a shader with an `h4` slot starts with. */
export const ENABLE_F16 = 'enable f16;\n';

/** Whether a dtype can use the vec4 kernels: 32-bit or a 16-bit float (not 8-bit, not int64). */
export const vec4Dtype = (dt: StorageCode): boolean => elementsPerWord(dt) === 1 || dt === StorageCode.F16 || dt === StorageCode.BF16;

/** The kind of a slot used by dtypes `dts` (`native`: float16 may use f16 types; `f32Vec`: an f32-only slot binds `vec4<f32>`). */
export function slotKind(dts: StorageCode[], native: boolean, f32Vec = false): SlotKind {
  if (dts.every((d) => elementsPerWord(d) === 1)) return f32Vec && dts.every((d) => d === StorageCode.F32) ? 'f4' : 'w4';
  return native && dts.every((d) => d === StorageCode.F16) ? 'h4' : 'w2';
}

const ELEM: Record<SlotKind, string> = { f4: 'vec4<f32>', w4: 'vec4<u32>', w2: 'vec2<u32>', h4: 'vec4<f16>' };

/** Whether any slot needs `enable f16;`. */
export const needsF16 = (kinds: SlotKind[]): boolean => kinds.includes('h4');

/**
 * The bindings (params at 0, slot k at k + 1; slot 0 read_write) and, for each slot, `wdK(i)`, the
 * 32-bit word `i` of the slot (for strided loads through `load`; not for `h4` slots).
 */
export function vecBindings(kinds: SlotKind[]): string {
  let out = `@group(0) @binding(0) var<storage, read> P: array<u32>;\n`;
  kinds.forEach((kind, k) => {
    out += `@group(0) @binding(${k + 1}) var<storage, ${k === 0 ? 'read_write' : 'read'}> S${k}: array<${ELEM[kind]}>;\n`;
    if (kind === 'w4') out += `fn wd${k}(i: u32) -> u32 { return S${k}[i >> 2u][i & 3u]; }\n`;
    if (kind === 'w2') out += `fn wd${k}(i: u32) -> u32 { return S${k}[i >> 1u][i & 1u]; }\n`;
    if (kind === 'f4') out += `fn wd${k}(i: u32) -> u32 { return bitcast<u32>(S${k}[i >> 2u][i & 3u]); }\n`;
  });
  return out;
}

/** The WGSL type of four values of `dt` in its compute type. */
export const vecType = (dt: StorageCode): string => `vec4<${computeType(dt)}>`;

/** An expression: elements 4q..4q+3 of `dt` in slot `slot` (of `kind`) as `vecType(dt)`. */
export function loadVec(dt: StorageCode, kind: SlotKind, slot: number, q: string): string {
  const s = `S${slot}`;
  if (kind === 'f4') return `${s}[${q}]`;
  if (kind === 'h4') return `vec4<f32>(${s}[${q}])`;
  if (kind === 'w4') return `bitcast<${vecType(dt)}>(${s}[${q}])`;
  // w2
  if (dt === StorageCode.F16) return `unpack4xf16(${s}[${q}])`;
  if (dt === StorageCode.BF16) return `unpack4xbf16(${s}[${q}])`;
  return `bitcast<${vecType(dt)}>(vec4<u32>(${s}[2u * (${q})], ${s}[2u * (${q}) + 1u]))`;
}

/** A statement storing `v` (a `vecType(dt)`) as elements 4q..4q+3 of `dt` in slot 0 (of `kind`). */
export function storeVec(dt: StorageCode, kind: SlotKind, q: string, v: string): string {
  if (kind === 'f4') return `S0[${q}] = ${v};`;
  if (kind === 'h4') return `S0[${q}] = vec4<f16>(${v});`;
  if (kind === 'w4') return `S0[${q}] = bitcast<vec4<u32>>(${v});`;
  if (dt === StorageCode.F16) return `S0[${q}] = pack4xf16(${v});`;
  if (dt === StorageCode.BF16) return `S0[${q}] = pack4xbf16(${v});`;
  return `{ let u = bitcast<vec4<u32>>(${v}); S0[2u * (${q})] = u.xy; S0[2u * (${q}) + 1u] = u.zw; }`;
}

/** An expression: element `e` of `dt` in slot `slot` (of `kind`), in its compute type (a strided lane). */
export function loadLane(dt: StorageCode, kind: SlotKind, slot: number, e: string): string {
  return kind === 'h4' ? `f32(S${slot}[(${e}) >> 2u][(${e}) & 3u])` : load(`wd${slot}`, dt, e);
}

/** The helper functions `loadVec`/`storeVec` call on `w2` slots (unused ones cost nothing). */
export const HALF_HELPERS = `${F16_ROUND}fn unpack4xf16(w: vec2<u32>) -> vec4<f32> { return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)); }
fn unpack4xbf16(w: vec2<u32>) -> vec4<f32> { return bitcast<vec4<f32>>(vec4<u32>(w.x << 16u, w.x & 0xffff0000u, w.y << 16u, w.y & 0xffff0000u)); }
fn pack4xf16(v: vec4<f32>) -> vec2<u32> { return vec2<u32>(f16_round(v.x) | (f16_round(v.y) << 16u), f16_round(v.z) | (f16_round(v.w) << 16u)); }
fn bf16_round(v: f32) -> u32 {
  let x = bitcast<u32>(v);
  if ((x & 0x7fffffffu) > 0x7f800000u) { return 0x7fc0u; }
  return ((x + 0x7fffu + ((x >> 16u) & 1u)) >> 16u) & 0xffffu;
}
fn pack4xbf16(v: vec4<f32>) -> vec2<u32> { return vec2<u32>(bf16_round(v.x) | (bf16_round(v.y) << 16u), bf16_round(v.z) | (bf16_round(v.w) << 16u)); }
`;
