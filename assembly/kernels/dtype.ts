// Storage-type load/store helpers shared by every kernel.
//
// The hard part is the narrow float formats: f32 -> f16 must round to nearest
// even across the normal, subnormal and overflow ranges (65520 and above is
// already a tie-or-more toward infinity), and NaN must never collapse to Inf.
// Float compute values travel as f64 but are rounded to f32 before any store,
// so storing to an integer type truncates the f32 value, as PyTorch does.
// Integer compute values travel as i64, so int64 is exact and narrower integer
// stores keep their low bits (int32 and uint8 wrap as PyTorch's do).

/** dtype code: 32-bit float. */
export const F32: i32 = 0;
/** dtype code: 32-bit signed int. */
export const I32: i32 = 1;
/** dtype code: uint8. */
export const U8: i32 = 2;
/** dtype code: bool, one byte holding 0 or 1. */
export const BOOL: i32 = 3;
/** dtype code: IEEE half. */
export const F16: i32 = 4;
/** dtype code: bfloat16 (upper half of an f32). */
export const BF16: i32 = 5;
/** dtype code: 64-bit signed int. */
export const I64: i32 = 6;

/** log2 of the element size, for address arithmetic. */
// @ts-ignore: decorator
@inline export function elemShift(dt: i32): usize {
  return dt == I64 ? 3 : dt <= I32 ? 2 : dt <= BOOL ? 0 : 1;
}

/** True when the dtype computes in f32 (f32, f16, bf16). */
// @ts-ignore: decorator
@inline export function isFloat(dt: i32): bool {
  return dt == F32 || dt == F16 || dt == BF16;
}

/** Converts IEEE half bits to f32 (exact). */
export function f16ToF32(h: u32): f32 {
  const sign = (h & 0x8000) << 16;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e == 0) {
    const v = <f32>m * 5.9604644775390625e-8; // m * 2^-24, exact
    return sign ? -v : v;
  }
  if (e == 31) return reinterpret<f32>(sign | 0x7f800000 | (m << 13));
  return reinterpret<f32>(sign | ((e + 112) << 23) | (m << 13));
}

/** Rounds an f32 to IEEE half bits, nearest-even; NaN stays a (quiet) NaN. */
export function f32ToF16(f: f32): u32 {
  const x = reinterpret<u32>(f);
  const sign = (x >> 16) & 0x8000;
  const ax = x & 0x7fffffff;
  if (ax >= 0x7f800000) {
    return ax > 0x7f800000 ? sign | 0x7e00 | ((ax >> 13) & 0x3ff) : sign | 0x7c00;
  }
  if (ax >= 0x477ff000) return sign | 0x7c00; // >= 65520 rounds to Inf
  if (ax >= 0x38800000) { // normal half range (>= 2^-14)
    const base = ax - (112 << 23);
    let h = base >> 13;
    const rem = base & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1) != 0)) h++;
    return sign | h;
  }
  if (ax <= 0x33000000) return sign; // <= 2^-25: zero (the tie goes to even 0)
  const e = <i32>(ax >> 23) - 127; // -25 .. -15
  const m = (ax & 0x7fffff) | 0x800000;
  const shift = <u32>(-(e + 1)); // units of 2^-24
  let h = m >> shift;
  const rem = m & ((1 << shift) - 1);
  const half = <u32>1 << (shift - 1);
  if (rem > half || (rem == half && (h & 1) != 0)) h++;
  return sign | h;
}

/** bfloat16 bits to f32 (exact). */
// @ts-ignore: decorator
@inline export function bf16ToF32(h: u32): f32 {
  return reinterpret<f32>(h << 16);
}

/** Rounds an f32 to bfloat16 bits, nearest-even; NaN stays NaN. */
export function f32ToBf16(f: f32): u32 {
  const x = reinterpret<u32>(f);
  if ((x & 0x7fffffff) > 0x7f800000) return (x >> 16) | 0x40;
  return (x + 0x7fff + ((x >> 16) & 1)) >> 16;
}

/** Loads element i of a dtype-dt array as its float compute value. */
export function loadF(dt: i32, base: usize, i: i32): f64 {
  switch (dt) {
    case F32: return <f64>load<f32>(base + (<usize>i << 2));
    case I32: return <f64><f32>load<i32>(base + (<usize>i << 2));
    case I64: return <f64><f32>load<i64>(base + (<usize>i << 3));
    case U8: return <f64>load<u8>(base + <usize>i);
    case BOOL: return load<u8>(base + <usize>i) != 0 ? 1.0 : 0.0;
    case F16: return <f64>f16ToF32(load<u16>(base + (<usize>i << 1)));
    default: return <f64>bf16ToF32(load<u16>(base + (<usize>i << 1)));
  }
}

/** Loads element i as its integer compute value (floats truncate toward zero). */
export function loadI(dt: i32, base: usize, i: i32): i64 {
  switch (dt) {
    case I32: return <i64>load<i32>(base + (<usize>i << 2));
    case I64: return load<i64>(base + (<usize>i << 3));
    case U8: return <i64>load<u8>(base + <usize>i);
    case BOOL: return <i64>(load<u8>(base + <usize>i) != 0);
    case F32: return <i64>load<f32>(base + (<usize>i << 2));
    case F16: return <i64>f16ToF32(load<u16>(base + (<usize>i << 1)));
    default: return <i64>bf16ToF32(load<u16>(base + (<usize>i << 1)));
  }
}

/** Stores a float compute value (rounded to f32 first) as dtype dt. */
export function storeF(dt: i32, base: usize, i: i32, v: f64): void {
  const f = <f32>v;
  switch (dt) {
    case F32: store<f32>(base + (<usize>i << 2), f); break;
    case I32: store<i32>(base + (<usize>i << 2), <i32>f); break;
    case I64: store<i64>(base + (<usize>i << 3), <i64>f); break;
    case U8: store<u8>(base + <usize>i, <u8>(<i32>f & 0xff)); break;
    case BOOL: store<u8>(base + <usize>i, <u8>(f != 0)); break;
    case F16: store<u16>(base + (<usize>i << 1), <u16>f32ToF16(f)); break;
    default: store<u16>(base + (<usize>i << 1), <u16>f32ToBf16(f));
  }
}

/** Stores an integer compute value as dtype dt (int32 and u8 keep the low bits, bool is != 0). */
export function storeI(dt: i32, base: usize, i: i32, v: i64): void {
  switch (dt) {
    case I32: store<i32>(base + (<usize>i << 2), <i32>v); break;
    case I64: store<i64>(base + (<usize>i << 3), v); break;
    case U8: store<u8>(base + <usize>i, <u8>(v & 0xff)); break;
    case BOOL: store<u8>(base + <usize>i, <u8>(v != 0)); break;
    case F32: store<f32>(base + (<usize>i << 2), <f32>v); break;
    case F16: store<u16>(base + (<usize>i << 1), <u16>f32ToF16(<f32>v)); break;
    default: store<u16>(base + (<usize>i << 1), <u16>f32ToBf16(<f32>v));
  }
}
