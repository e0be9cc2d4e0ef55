/**
 * How WGSL kernels read and write each storage dtype.
 *
 * Every storage is bound as `array<u32>`, so one bind-group shape serves every dtype. 8-bit
 * dtypes pack four elements to a word and 16-bit dtypes two; a kernel whose output is packed
 * runs one invocation per output word and assembles the word from its elements, so no two
 * invocations ever write the same word. Values are computed in two classes: f32 (f32, f16,
 * bf16) and i32 (i32, u8, bool).
 */
import { StorageCode } from '../ts/dtype.js';

/** Elements per 32-bit word. */
export const elementsPerWord = (dt: StorageCode): number =>
  dt === StorageCode.U8 || dt === StorageCode.Bool ? 4 : dt === StorageCode.F16 || dt === StorageCode.BF16 ? 2 : 1;

/** The WGSL type values of a storage dtype are computed in. */
export const computeType = (dt: StorageCode): 'f32' | 'i32' =>
  dt === StorageCode.F32 || dt === StorageCode.F16 || dt === StorageCode.BF16 ? 'f32' : 'i32';

/** An expression loading element `e` (a u32 expression) of `buf`, in the dtype's compute type. */
export function load(buf: string, dt: StorageCode, e: string): string {
  switch (dt) {
    case StorageCode.F32: return `bitcast<f32>(${buf}[${e}])`;
    case StorageCode.I32: return `bitcast<i32>(${buf}[${e}])`;
    case StorageCode.U8:
    case StorageCode.Bool: return `i32((${buf}[(${e}) >> 2u] >> (((${e}) & 3u) * 8u)) & 0xffu)`;
    case StorageCode.F16: return `unpack2x16float(${buf}[(${e}) >> 1u])[(${e}) & 1u]`;
    case StorageCode.BF16: return `bitcast<f32>(((${buf}[(${e}) >> 1u] >> (((${e}) & 1u) * 16u)) & 0xffffu) << 16u)`;
  }
}

/** An expression converting `v` from type `from` to the compute type of `to`. */
export function convert(v: string, from: 'f32' | 'i32', to: StorageCode): string {
  const t = computeType(to);
  if (to === StorageCode.Bool) return from === 'f32' ? `select(0i, 1i, (bitcast<u32>(${v}) & 0x7fffffffu) != 0u)` : `select(0i, 1i, ${v} != 0i)`;
  return t === from ? v : `${t}(${v})`;
}

/** An expression giving the u32 bits of compute value `v` for a dtype, in the low bits of a word. */
export function bits(v: string, dt: StorageCode): string {
  switch (dt) {
    case StorageCode.F32: case StorageCode.I32: return `bitcast<u32>(${v})`;
    case StorageCode.U8: case StorageCode.Bool: return `(u32(${v}) & 0xffu)`;
    case StorageCode.F16: return `(pack2x16float(vec2<f32>(${v}, 0.0)) & 0xffffu)`;
    case StorageCode.BF16: return `bf16_bits(${v})`;
  }
}

/** Helper functions a kernel that stores `dt` needs. */
export function helpers(dt: StorageCode): string {
  return dt === StorageCode.BF16
    ? `fn bf16_bits(v: f32) -> u32 {
  if (v != v) { return 0x7fc0u; }
  let x = bitcast<u32>(v);
  return ((x + 0x7fffu + ((x >> 16u) & 1u)) >> 16u) & 0xffffu;
}
`
    : '';
}
