// fill and arange for every storage dtype.
//
// The only subtlety is that integer targets take the f64 value directly
// (truncated) rather than through f32, so fill(int32, 16777217) is exact;
// bool targets store value != 0 (NaN -> true) and u8 wraps.

import { BOOL, F32, I32, I64, U8, storeF, storeI } from "./dtype";

// @ts-ignore: decorator
@inline function put(dt: i32, out: usize, i: i32, v: f64): void {
  if (dt == I32 || dt == U8) storeI(dt, out, i, <i64><i32>v);
  else if (dt == I64) storeI(dt, out, i, <i64>v);
  else storeF(dt, out, i, v);
}

/** out[0..n) = value, stored as dtype dt. */
export function fill(dt: i32, out: usize, n: i32, value: f64): void {
  if (n <= 0) return;
  put(dt, out, 0, value);
  if (dt == U8 || dt == BOOL) {
    memory.fill(out, load<u8>(out), <usize>n);
  } else if (dt == F32 || dt == I32) {
    const v = load<u32>(out);
    const vv = i32x4.splat(v);
    const n4 = n & ~3;
    let i = 0;
    for (; i < n4; i += 4) v128.store(out + (<usize>i << 2), vv);
    for (; i < n; i++) store<u32>(out + (<usize>i << 2), v);
  } else if (dt == I64) {
    const v = load<u64>(out);
    for (let i = 1; i < n; i++) store<u64>(out + (<usize>i << 3), v);
  } else {
    const v = load<u16>(out);
    for (let i = 1; i < n; i++) store<u16>(out + (<usize>i << 1), v);
  }
}

/** out[i] = start + i * step (computed in f64), stored as dtype dt. */
export function arange(dt: i32, out: usize, n: i32, start: f64, step: f64): void {
  for (let i = 0; i < n; i++) put(dt, out, i, start + <f64>i * step);
}
