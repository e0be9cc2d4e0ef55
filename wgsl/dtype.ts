/**
 * How WGSL kernels read and write each storage dtype.
 *
 * Every storage is bound as `array<u32>`, so one bind-group shape serves every dtype. 8-bit
 * dtypes pack four elements to a word and 16-bit dtypes two; a kernel whose output is packed
 * runs one invocation per output word and assembles the word from its elements, so no two
 * invocations ever write the same word. int64 takes two words per element (wgsl/int64.ts).
 * Values are computed in three classes: f32 (f32, f16, bf16), i32 (i32, u8, bool) and i64
 * (int64, a `vec2<u32>`). Every kernel that reads int64 has a 64-bit path (`loadWide`); `load`
 * of int64 narrows it to i32 through `narrow_ck`, which records a device-side error for a value
 * that does not fit (the kernel must bind the error buffer): a kernel without a 64-bit path
 * would raise, never truncate. None uses it today.
 */
import { StorageCode } from '../ts/dtype.js';
import { loadI64, loadI64Fn } from './int64.js';

/** Elements per 32-bit word (0.5 for int64, two words per element). */
export const elementsPerWord = (dt: StorageCode): number =>
  dt === StorageCode.U8 || dt === StorageCode.Bool ? 4 : dt === StorageCode.F16 || dt === StorageCode.BF16 ? 2 : dt === StorageCode.I64 ? 0.5 : 1;

/** Invocations a kernel writing `n` elements of `dt` runs: one per word, or per element for int64. */
export const invocationsFor = (n: number, dt: StorageCode): number => (dt === StorageCode.I64 ? n : Math.ceil(n / elementsPerWord(dt)));

/** The 32-bit WGSL type a kernel without a 64-bit path computes a dtype in (int64 narrowed to i32). */
export const computeType = (dt: StorageCode): 'f32' | 'i32' =>
  dt === StorageCode.F32 || dt === StorageCode.F16 || dt === StorageCode.BF16 ? 'f32' : 'i32';

/** A value class: the WGSL type name of each. */
export type ValueClass = 'f32' | 'i32' | 'i64';
export const wgslType = (c: ValueClass): string => (c === 'i64' ? 'vec2<u32>' : c);

/** The class a dtype's values are computed in by kernels with a 64-bit path. */
export const valueClass = (dt: StorageCode): ValueClass => (dt === StorageCode.I64 ? 'i64' : computeType(dt));

/**
 * An expression loading element `e` in the dtype's full class (`valueClass`): int64 as a
 * `vec2<u32>`, every other dtype as `load` does.
 */
export function loadWide(read: string, dt: StorageCode, e: string): string {
  return dt === StorageCode.I64 ? loadI64(read, e) : load(read, dt, e);
}

/**
 * An expression loading element `e` (a u32 expression) in the dtype's 32-bit compute type, through
 * `read`, the name of a WGSL function returning word `i` of the storage (see `slotBindings`).
 * int64 is narrowed through `narrow_ck` (see the note at the top).
 */
export function load(read: string, dt: StorageCode, e: string): string {
  switch (dt) {
    case StorageCode.I64: return `narrow_ck(${loadI64(read, e)})`;
    case StorageCode.F32: return `bitcast<f32>(${read}(${e}))`;
    case StorageCode.I32: return `bitcast<i32>(${read}(${e}))`;
    case StorageCode.U8:
    case StorageCode.Bool: return `i32((${read}((${e}) >> 2u) >> (((${e}) & 3u) * 8u)) & 0xffu)`;
    case StorageCode.F16: return `unpack2x16float(${read}((${e}) >> 1u))[(${e}) & 1u]`;
    case StorageCode.BF16: return `bitcast<f32>(((${read}((${e}) >> 1u) >> (((${e}) & 1u) * 16u)) & 0xffffu) << 16u)`;
  }
}

/**
 * Bindings of a kernel's storages, one per distinct segment buffer. A caching allocator puts
 * several tensors in one segment, and WebGPU forbids binding a buffer twice in one dispatch when
 * one binding is writable, so operands in the same segment share a binding. Slot 0 is the
 * output's segment (`read_write`, or `atomic<u32>` words for scattered packed writes); other
 * slots are read-only. Each slot gets a reader `rdK(i)` that returns word `i`, and `ld64_rdK(e)`
 * that returns int64 element `e` as a `vec2<u32>`.
 */
export function slotBindings(slots: number, atomicOut = false): string {
  let out = `@group(0) @binding(0) var<storage, read> P: array<u32>;\n`;
  out += `@group(0) @binding(1) var<storage, read_write> S0: array<${atomicOut ? 'atomic<u32>' : 'u32'}>;\n`;
  out += `fn rd0(i: u32) -> u32 { return ${atomicOut ? 'atomicLoad(&S0[i])' : 'S0[i]'}; }\n${loadI64Fn('rd0')}`;
  for (let k = 1; k < slots; k++) {
    out += `@group(0) @binding(${k + 1}) var<storage, read> S${k}: array<u32>;\nfn rd${k}(i: u32) -> u32 { return S${k}[i]; }\n${loadI64Fn(`rd${k}`)}`;
  }
  return out;
}

/**
 * An expression converting `v` from class `from` to the class of `to` (`valueClass`): int64 to
 * f32 rounds to nearest, f32 to int64 truncates, int64 to a 32-bit integer keeps the low word
 * (PyTorch's wrapping cast), i32 to int64 sign-extends.
 */
export function convert(v: string, from: ValueClass, to: StorageCode): string {
  const t = valueClass(to);
  if (to === StorageCode.Bool) {
    return from === 'f32' ? `select(0i, 1i, (bitcast<u32>(${v}) & 0x7fffffffu) != 0u)` : from === 'i64' ? `select(0i, 1i, i64_nz(${v}))` : `select(0i, 1i, ${v} != 0i)`;
  }
  if (t === from) return v;
  if (from === 'i64') return t === 'f32' ? `i64_to_f32(${v})` : `bitcast<i32>((${v}).x)`;
  if (t === 'i64') return from === 'f32' ? `f32_to_i64(${v})` : `i64_from_i32(${v})`;
  return `${t}(${v})`;
}

/** An expression giving the u32 bits of compute value `v` for a dtype, in the low bits of a word. */
export function bits(v: string, dt: StorageCode): string {
  switch (dt) {
    case StorageCode.I64: throw new Error('int64 is two words: store it with storeI64');
    case StorageCode.F32: case StorageCode.I32: return `bitcast<u32>(${v})`;
    case StorageCode.U8: case StorageCode.Bool: return `(u32(${v}) & 0xffu)`;
    case StorageCode.F16: return `f16_round(${v})`;
    case StorageCode.BF16: return `bf16_bits(${v})`;
  }
}

/**
 * `f16_round(v)`: the float16 bits of `v` (low 16 bits), rounded to nearest even with overflow to
 * ±inf, NaN to a quiet NaN, and subnormals exact: PyTorch's conversion, in integer arithmetic.
 * WGSL's `pack2x16float` leaves values outside float16's finite range indeterminate (SwiftShader
 * gives NaN) and does not fix the rounding, so the kernels without `shader-f16` round here.
 */
export const F16_ROUND = `fn f16_round(v: f32) -> u32 {
  let x = bitcast<u32>(v);
  let s = (x >> 16u) & 0x8000u;
  let a = x & 0x7fffffffu;
  if (a > 0x7f800000u) { return s | 0x7e00u; }
  if (a >= 0x477ff000u) { return s | 0x7c00u; }
  if (a >= 0x38800000u) {
    let r = a - 0x38000000u;
    return s | ((r + 0xfffu + ((r >> 13u) & 1u)) >> 13u);
  }
  let e = a >> 23u;
  if (e < 102u) { return s; }
  let m = (a & 0x7fffffu) | 0x800000u;
  let sh = 126u - e;
  let q = m >> sh;
  let rem = m & ((1u << sh) - 1u);
  let hv = 1u << (sh - 1u);
  return s | (q + select(0u, 1u, rem > hv || (rem == hv && (q & 1u) == 1u)));
}
`;

/** Helper functions a kernel that stores `dt` needs. */
export function helpers(dt: StorageCode): string {
  if (dt === StorageCode.F16) return F16_ROUND;
  return dt === StorageCode.BF16
    ? `fn bf16_bits(v: f32) -> u32 {
  let x = bitcast<u32>(v);
  // NaN by the bits: \`v != v\` is folded away by compilers that assume no NaN, and NVIDIA's NaN
  // 0x7fffffff then rounded to 0x8000 (-0)
  if ((x & 0x7fffffffu) > 0x7f800000u) { return 0x7fc0u; }
  return ((x + 0x7fffu + ((x >> 16u) & 1u)) >> 16u) & 0xffffu;
}
`
    : '';
}
