// Reductions over the inner axis of a contiguous [outer, inner] block.
//
// The hard part is f32 accuracy and NaN semantics. Float sums (sum, mean,
// sum of squares) and products accumulate in f64; for f32 storage the sum
// loop promotes f32x4 lanes into f64x2 accumulators, so SIMD costs no
// accuracy. max/min use f32x4.max/min, which propagate NaN like PyTorch;
// argmax/argmin return the first NaN if there is one, else the first extreme.
// Integer sums and products accumulate in i64 and give int64, wrapping only past int64's range,
// as PyTorch's do.

import { F32, I64, isFloat, loadF, loadI, storeF, storeI } from "./dtype";

function sumF32(p: usize, len: i32, squares: bool): f64 {
  let s0 = f64x2.splat(0);
  let s1 = f64x2.splat(0);
  let s2 = f64x2.splat(0);
  let s3 = f64x2.splat(0);
  const n8 = len & ~7;
  let i = 0;
  for (; i < n8; i += 8) {
    const u = v128.load(p + (<usize>i << 2));
    const v = v128.load(p + (<usize>i << 2), 16);
    let u0 = f64x2.promote_low_f32x4(u);
    let u1 = f64x2.promote_low_f32x4(v128.shuffle<f32>(u, u, 2, 3, 0, 1));
    let v0 = f64x2.promote_low_f32x4(v);
    let v1 = f64x2.promote_low_f32x4(v128.shuffle<f32>(v, v, 2, 3, 0, 1));
    if (squares) {
      u0 = f64x2.mul(u0, u0); u1 = f64x2.mul(u1, u1);
      v0 = f64x2.mul(v0, v0); v1 = f64x2.mul(v1, v1);
    }
    s0 = f64x2.add(s0, u0);
    s1 = f64x2.add(s1, u1);
    s2 = f64x2.add(s2, v0);
    s3 = f64x2.add(s3, v1);
  }
  const t = f64x2.add(f64x2.add(s0, s1), f64x2.add(s2, s3));
  let s = f64x2.extract_lane(t, 0) + f64x2.extract_lane(t, 1);
  for (; i < len; i++) {
    const x = <f64>load<f32>(p + (<usize>i << 2));
    s += squares ? x * x : x;
  }
  return s;
}

function extremeF32(p: usize, len: i32, isMax: bool): f32 {
  let acc = f32x4.splat(load<f32>(p));
  const n4 = len & ~3;
  let i = 0;
  for (; i < n4; i += 4) {
    const v = v128.load(p + (<usize>i << 2));
    acc = isMax ? f32x4.max(acc, v) : f32x4.min(acc, v);
  }
  const x0 = f32x4.extract_lane(acc, 0), x1 = f32x4.extract_lane(acc, 1);
  const x2 = f32x4.extract_lane(acc, 2), x3 = f32x4.extract_lane(acc, 3);
  let m = isMax ? max<f32>(max<f32>(x0, x1), max<f32>(x2, x3)) : min<f32>(min<f32>(x0, x1), min<f32>(x2, x3));
  for (; i < len; i++) {
    const x = load<f32>(p + (<usize>i << 2));
    m = isMax ? max<f32>(m, x) : min<f32>(m, x);
  }
  return m;
}

function reduceRowF(op: i32, dt: i32, a: usize, base: i32, len: i32): f64 {
  if (dt == F32 && (op == 0 || op == 8 || op == 9)) {
    const s = sumF32(a + (<usize>base << 2), len, op == 9);
    return op == 8 ? s / <f64>len : s;
  }
  if ((op == 2 || op == 3) && dt == F32) return <f64>extremeF32(a + (<usize>base << 2), len, op == 2);
  let acc: f64 = op == 1 || op == 6 ? 1 : 0;
  if (op == 2 || op == 3) acc = loadF(dt, a, base);
  for (let i = 0; i < len; i++) {
    const x = loadF(dt, a, base + i);
    switch (op) {
      case 1: acc *= x; break;
      case 2: acc = max<f64>(acc, x); break;
      case 3: acc = min<f64>(acc, x); break;
      case 6: if (x == 0) return 0; break;
      case 7: if (x != 0) return 1; break;
      case 9: acc += x * x; break;
      default: acc += x;
    }
  }
  return op == 8 ? acc / <f64>len : acc;
}

function reduceRowI(op: i32, dt: i32, a: usize, base: i32, len: i32): i64 {
  let acc: i64 = op == 1 || op == 6 ? 1 : 0;
  if (op == 2 || op == 3) acc = loadI(dt, a, base);
  for (let i = 0; i < len; i++) {
    const x = loadI(dt, a, base + i);
    switch (op) {
      case 1: acc *= x; break;
      case 2: acc = max<i64>(acc, x); break;
      case 3: acc = min<i64>(acc, x); break;
      case 6: if (x == 0) return 0; break;
      case 7: if (x != 0) return 1; break;
      case 9: acc += x * x; break;
      default: acc += x;
    }
  }
  return acc;
}

/**
 * max, min (f32 out) or argmax, argmin (int64 out) of `outer` contiguous f32 rows of `len` ≤ 16,
 * with the general path's NaN rules: a NaN wins the max and min, and its place the arg.
 */
function shortExtremes(op: i32, a: usize, out: usize, outer: i32, len: i32): void {
  const isMax = op == 2 || op == 4, arg = op >= 4;
  let p = a;
  for (let o = 0; o < outer; o++) {
    if (arg) {
      // as argRow: the first NaN's place, else the first extreme's
      let best = load<f32>(p), at = 0;
      if (!isNaN(best)) {
        for (let i = 1; i < len; i++) {
          const x = load<f32>(p + (<usize>i << 2));
          if (isNaN(x)) { at = i; break; }
          if (isMax ? x > best : x < best) { best = x; at = i; }
        }
      }
      store<i64>(out + (<usize>o << 3), <i64>at);
    } else {
      // as reduceRowF: wasm's max and min (NaN wins, +0 above -0)
      let m = load<f32>(p);
      for (let i = 1; i < len; i++) {
        const x = load<f32>(p + (<usize>i << 2));
        m = isMax ? max<f32>(m, x) : min<f32>(m, x);
      }
      store<f32>(out + (<usize>o << 2), m);
    }
    p += <usize>len << 2;
  }
}

function argRow(isMax: bool, dt: i32, a: usize, base: i32, len: i32): i32 {
  if (isFloat(dt)) {
    let best = loadF(dt, a, base);
    if (isNaN(best)) return 0;
    let at = 0;
    for (let i = 1; i < len; i++) {
      const x = loadF(dt, a, base + i);
      if (isNaN(x)) return i;
      if (isMax ? x > best : x < best) { best = x; at = i; }
    }
    return at;
  }
  let best = loadI(dt, a, base);
  let at = 0;
  for (let i = 1; i < len; i++) {
    const x = loadI(dt, a, base + i);
    if (isMax ? x > best : x < best) { best = x; at = i; }
  }
  return at;
}

/**
 * out[o] = reduce(a[o, 0..inner)) for a contiguous [outer, inner] block.
 * op: 0 sum, 1 prod, 2 max, 3 min, 4 argmax, 5 argmin, 6 all, 7 any, 8 mean,
 * 9 sum of squares. arg* write the index (int64 out); all/any write 0/1.
 */
export function reduce(op: i32, dt: i32, outDt: i32, a: usize, out: usize, outer: i32, inner: i32): void {
  if (dt == F32 && inner > 0 && inner <= 16 && op >= 2 && op <= 5 && (op >= 4 ? outDt == I64 : outDt == F32)) {
    // short f32 rows (a pooling window's max and argmax): one plain loop, no dtype dispatch per element
    shortExtremes(op, a, out, outer, inner);
    return;
  }
  const floatClass = isFloat(dt);
  for (let o = 0; o < outer; o++) {
    const base = o * inner;
    if (op == 4 || op == 5) {
      storeI(outDt, out, o, <i64>argRow(op == 4, dt, a, base, inner));
    } else if (floatClass || op == 8) {
      storeF(outDt, out, o, reduceRowF(op, dt, a, base, inner));
    } else {
      storeI(outDt, out, o, reduceRowI(op, dt, a, base, inner));
    }
  }
}
