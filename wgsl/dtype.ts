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

/**
 * An expression loading element `e` (a u32 expression) in the dtype's compute type, through
 * `read`, the name of a WGSL function returning word `i` of the storage (see `slotBindings`).
 */
export function load(read: string, dt: StorageCode, e: string): string {
  switch (dt) {
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
 * slots are read-only. Each slot gets a reader `rdK(i)` that returns word `i`.
 */
export function slotBindings(slots: number, atomicOut = false): string {
  let out = `@group(0) @binding(0) var<storage, read> P: array<u32>;\n`;
  out += `@group(0) @binding(1) var<storage, read_write> S0: array<${atomicOut ? 'atomic<u32>' : 'u32'}>;\n`;
  out += `fn rd0(i: u32) -> u32 { return ${atomicOut ? 'atomicLoad(&S0[i])' : 'S0[i]'}; }\n`;
  for (let k = 1; k < slots; k++) {
    out += `@group(0) @binding(${k + 1}) var<storage, read> S${k}: array<u32>;\nfn rd${k}(i: u32) -> u32 { return S${k}[i]; }\n`;
  }
  return out;
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
