// Strided gather/scatter with dtype conversion (contiguous(), .to(dtype), views).
//
// The hard part is only in choosing the row routine: same-dtype rows are raw
// element moves (memory.copy when both sides are unit-stride), while any
// conversion goes through the source's compute class so that int -> float is
// by value and float -> int truncates. bool -> bool still normalises to 0/1.

import { BOOL, elemShift, isFloat, loadF, loadI, storeF, storeI } from "./dtype";
import { begin, nextRow, normalize, off0, off1, rowLen, rowStride } from "./iter";

function copyRow(
  srcDt: i32, dstDt: i32, src: usize, si: i32, ss: i32,
  dst: usize, di: i32, ds: i32, len: i32
): void {
  if (srcDt == dstDt && srcDt != BOOL) {
    const sh = elemShift(srcDt);
    if (ss == 1 && ds == 1) {
      memory.copy(dst + (<usize>di << sh), src + (<usize>si << sh), <usize>len << sh);
      return;
    }
    let ps = src + (<usize>si << sh);
    let pd = dst + (<usize>di << sh);
    const stepS = <usize>ss << sh;
    const stepD = <usize>ds << sh;
    if (sh == 3) {
      for (let i = 0; i < len; i++) { store<u64>(pd, load<u64>(ps)); ps += stepS; pd += stepD; }
    } else if (sh == 2) {
      for (let i = 0; i < len; i++) { store<u32>(pd, load<u32>(ps)); ps += stepS; pd += stepD; }
    } else if (sh == 1) {
      for (let i = 0; i < len; i++) { store<u16>(pd, load<u16>(ps)); ps += stepS; pd += stepD; }
    } else {
      for (let i = 0; i < len; i++) { store<u8>(pd, load<u8>(ps)); ps += stepS; pd += stepD; }
    }
    return;
  }
  if (isFloat(srcDt) && checkRange) {
    for (let i = 0; i < len; i++) {
      const f = <f32>loadF(srcDt, src, si + i * ss);
      if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0)) outOfRange = true; // NaN fails both
      storeF(dstDt, dst, di + i * ds, <f64>f);
    }
  } else if (isFloat(srcDt)) {
    for (let i = 0; i < len; i++) storeF(dstDt, dst, di + i * ds, loadF(srcDt, src, si + i * ss));
  } else {
    for (let i = 0; i < len; i++) storeI(dstDt, dst, di + i * ds, loadI(srcDt, src, si + i * ss));
  }
}

/** copyChecked's mode: float -> int64 conversions check that the value fits in int64. */
let checkRange: bool = false;
/** Set when a checked conversion met NaN, an infinity or a value outside the int64 range. */
let outOfRange: bool = false;

/**
 * `copy` into an int64 destination from a float source: returns 1 when a value was NaN,
 * infinite or outside [-2^63, 2^63) (it is stored saturated).
 */
export function copyChecked(srcDt: i32, dstDt: i32, src: usize, dst: usize, p: usize): i32 {
  checkRange = true;
  outOfRange = false;
  copy(srcDt, dstDt, src, dst, p);
  checkRange = false;
  return outOfRange ? 1 : 0;
}

/**
 * Gathers a strided source into contiguous dst, converting srcDt -> dstDt.
 * p: [r, n, shape[r], srcStrides[r], srcOffset] (i32, in elements).
 */
export function copy(srcDt: i32, dstDt: i32, src: usize, dst: usize, p: usize): void {
  const d = normalize(p, 1);
  const n = load<i32>(d, 4);
  if (n <= 0) return;
  const len = rowLen(d);
  const ss = rowStride(d, 0);
  const rows = n / len;
  begin(d, 1);
  let o = 0;
  for (let row = 0; row < rows; row++) {
    copyRow(srcDt, dstDt, src, off0, ss, dst, o, 1, len);
    o += len;
    nextRow(d, 1);
  }
}

/**
 * Like copy, but scatters into a strided destination.
 * p: [r, n, shape[r], srcStrides[r], srcOffset, dstStrides[r], dstOffset].
 */
export function copyStrided(srcDt: i32, dstDt: i32, src: usize, dst: usize, p: usize): void {
  const d = normalize(p, 2);
  const n = load<i32>(d, 4);
  if (n <= 0) return;
  const len = rowLen(d);
  const ss = rowStride(d, 0);
  const ds = rowStride(d, 1);
  const rows = n / len;
  begin(d, 2);
  for (let row = 0; row < rows; row++) {
    copyRow(srcDt, dstDt, src, off0, ss, dst, off1, ds, len);
    nextRow(d, 2);
  }
}
