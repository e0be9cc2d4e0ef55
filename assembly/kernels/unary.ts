// Elementwise unary ops over strided views, with dtype conversion on store.
//
// The hard part is accuracy. The scalar path evaluates every float op in f64 on the f32-valued
// input and rounds once to f32 on store, so its results are (nearly always) the correctly rounded
// f32 values. Unit-stride f32 -> f32 rows take f32x4 SIMD: the cheap ops (neg, abs, sqrt, relu,
// sign, reciprocal, square, copy) bit-identical to the scalar path (relu keeps NaN), and exp, log, tanh,
// sigmoid, silu, erf and gelu from vmath.ts, f32 formulas within a few ulp as PyTorch's vectorised
// kernels are (bounds in test/unit/wasm-vmath.test.ts); a row's tail goes through the same vector
// code (`tail4`), so a result does not depend on where it falls in its row. Integer-class inputs
// use i64 arithmetic for the "int ok" ops (exact for int64, the low bits for int32 and uint8, which
// wrap as PyTorch's do) and fall back to the float path for the rest. `unaryPart` is a chunk of
// the op for the cpu pool (iter.ts: chunkOf).
//
// sign follows (x > 0) - (x < 0), so sign(NaN) = 0 (PyTorch's CPU kernel
// does the same).

import { F32, isFloat, loadF, loadI, storeF, storeI } from "./dtype";
import { beginAt, chunkFirst, chunkLast, chunkOf, nextRow, normalize, off0, rowLen, rowStride } from "./iter";
import { erf, erfc } from "./special";
import { erf4, exp4, gelu4, log4, sigmoid4, tanh4 } from "./vmath";

const SQRT1_2: f64 = 0.7071067811865476;
const SQRT_2_OVER_PI: f64 = 0.7978845608028654;

/** Float-class op on one value (f64 carrying an f32). */
export function unaryF(op: i32, x: f64, s0: f64, s1: f64, s2: f64): f64 {
  switch (op) {
    case 0: return -x;
    case 1: return Math.abs(x);
    case 2: return Math.exp(x);
    case 3: return Math.expm1(x);
    case 4: return Math.log(x);
    case 5: return Math.log1p(x);
    case 6: return Math.sqrt(x);
    case 7: return 1 / Math.sqrt(x);
    case 8: return Math.sin(x);
    case 9: return Math.cos(x);
    case 10: return Math.tanh(x);
    case 11: return 1 / (1 + Math.exp(-x));
    case 12: return max<f64>(x, 0);
    case 13: return 0.5 * x * erfc(-x * SQRT1_2);
    case 14: return 0.5 * x * (1 + Math.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)));
    case 15: return x / (1 + Math.exp(-x));
    case 16: {
      const bx = s0 * x;
      return bx > s1 ? x : Math.log1p(Math.exp(bx)) / s0;
    }
    case 17: return erf(x);
    case 18: return Math.floor(x);
    case 19: return Math.ceil(x);
    case 20: return nearest<f64>(x);
    case 21: return <f64>(<i32>(x > 0) - <i32>(x < 0));
    case 22: return 1 / x;
    case 23: {
      if (isNaN(x)) return x;
      let y = x;
      if (!isNaN(s0) && y < s0) y = s0;
      if (!isNaN(s1) && y > s1) y = s1;
      return y;
    }
    case 24: return isNaN(x) ? s0 : x == Infinity ? s1 : x == -Infinity ? s2 : x;
    case 25: return x == 0 ? 1 : 0;
    case 26: return isNaN(x) ? 1 : 0;
    case 27: return x == Infinity || x == -Infinity ? 1 : 0;
    case 28: return x * x;
    case 30: return trunc<f64>(x);
    case 31: return Math.log2(x);
    case 32: return Math.tan(x);
    default: return x;
  }
}

/** True for the ops that have an exact integer form. */
// @ts-ignore: decorator
@inline function intOk(op: i32): bool {
  return op <= 1 || op == 12 || (op >= 18 && op <= 21) || (op >= 23 && op <= 30) || op == 33;
}

/** Integer-class op on one value (only called when intOk(op)); wraps like PyTorch's int64. */
export function unaryI(op: i32, x: i64, s0: f64, s1: f64): i64 {
  switch (op) {
    case 0: return -x;
    case 1: return x < 0 ? -x : x;
    case 12: return x > 0 ? x : 0;
    case 21: return <i64>(x > 0) - <i64>(x < 0);
    case 23: {
      let y = x;
      if (!isNaN(s0) && <f64>y < s0) y = <i64>Math.ceil(s0);
      if (!isNaN(s1) && <f64>y > s1) y = <i64>Math.floor(s1);
      return y;
    }
    case 25: return <i64>(x == 0);
    case 26: return 0;
    case 27: return 0;
    case 28: return x * x;
    case 33: return ~x; // bitwise_not (integer dtypes only: on bool the API runs logical_not)
    default: return x;
  }
}

/** The f32x4 form of op on one vector (only for ops where hasSimd). */
// @ts-ignore: decorator
@inline function vec(op: i32, v: v128): v128 {
  switch (op) {
    case 0: return f32x4.neg(v);
    case 1: return f32x4.abs(v);
    case 6: return f32x4.sqrt(v);
    // relu: pmax(v, 0) is v < 0 ? 0 : v (one instruction on x86, where max's NaN and ±0 rules take
    // several), which keeps NaN and -0; adding +0 turns -0 into +0, as max(v, 0) did
    case 12: return f32x4.add(f32x4.pmax(v, f32x4.splat(0)), f32x4.splat(0));
    case 22: return f32x4.div(f32x4.splat(1), v);
    case 28: return f32x4.mul(v, v);
    // sign: (v > 0) − (v < 0) as 1.0 masks; NaN and ±0 give +0, as the scalar form
    case 21: return f32x4.sub(v128.and(f32x4.gt(v, f32x4.splat(0)), f32x4.splat(1)), v128.and(f32x4.lt(v, f32x4.splat(0)), f32x4.splat(1)));
    case 2: return exp4(v);
    case 4: return log4(v);
    case 10: return tanh4(v);
    case 11: return sigmoid4(v);
    case 14: return geluTanh4(v);
    case 15: return f32x4.mul(v, sigmoid4(v));
    case 13: return gelu4(v);
    case 17: return erf4(v);
    default: return v;
  }
}

/** The f32x4 loop of one op; inlined where `op` is a constant, so that no switch runs per vector. */
// @ts-ignore: decorator
@inline function simdLoop(op: i32, pa: usize, po: usize, n4: i32): void {
  for (let i = 0; i < n4; i += 4) {
    const at = <usize>i << 2;
    v128.store(po + at, vec(op, v128.load(pa + at)));
  }
}

/** The f32x4 part of a row (a multiple of 4 elements); returns how many elements it did. */
function simdRow(op: i32, pa: usize, po: usize, len: i32): i32 {
  const n4 = len & ~3;
  // one loop per op: a switch inside the loop cost a jump table per vector (relu 2^20 ran at
  // about half tfjs-wasm's speed)
  switch (op) {
    case 0: simdLoop(0, pa, po, n4); break;
    case 1: simdLoop(1, pa, po, n4); break;
    case 6: simdLoop(6, pa, po, n4); break;
    case 12: simdLoop(12, pa, po, n4); break;
    case 22: simdLoop(22, pa, po, n4); break;
    case 28: simdLoop(28, pa, po, n4); break;
    case 21: simdLoop(21, pa, po, n4); break;
    case 2: simdLoop(2, pa, po, n4); break;
    case 4: simdLoop(4, pa, po, n4); break;
    case 10: simdLoop(10, pa, po, n4); break;
    case 11: simdLoop(11, pa, po, n4); break;
    case 14: simdLoop(14, pa, po, n4); break;
    case 15: simdLoop(15, pa, po, n4); break;
    case 13: simdLoop(13, pa, po, n4); break;
    case 17: simdLoop(17, pa, po, n4); break;
    default: simdLoop(op, pa, po, n4);
  }
  return n4;
}

/**
 * 0.5·x·(1 + tanh(u)), u = √(2/π)·(x + 0.044715·x³), in f32 lanes as x·sigmoid(2u), which is the
 * same function without the cancellation of 1 + tanh(u) for negative x.
 */
// @ts-ignore: decorator
@inline function geluTanh4(x: v128): v128 {
  const x3 = f32x4.mul(f32x4.mul(x, x), x);
  const u = f32x4.mul(f32x4.splat(<f32>(2 * SQRT_2_OVER_PI)), f32x4.add(x, f32x4.mul(f32x4.splat(0.044715), x3)));
  return f32x4.mul(x, sigmoid4(u));
}

/**
 * Ops with an f32x4 form. The cheap ones are bit-identical to the scalar path; exp, log, tanh,
 * sigmoid, erf, gelu (both forms) and silu come from vmath.ts (a few ulp: the bounds are in
 * test/unit/wasm-vmath.test.ts); a row's tail goes through the same functions (`tail4`).
 */
// @ts-ignore: decorator
@inline function hasSimd(op: i32): bool {
  return op == 0 || op == 1 || op == 6 || op == 12 || op == 21 || op == 22 || op == 28 || op == 29 || transcendental(op);
}

/** The vmath ops, whose scalar form would differ in the last bit: a row's tail goes through the vector form too. */
// @ts-ignore: decorator
@inline function transcendental(op: i32): bool {
  return op == 2 || op == 4 || op == 10 || op == 11 || op == 13 || op == 14 || op == 15 || op == 17;
}

/** The last len − i (< 4) elements of a contiguous row through the vector form; returns len. */
function tail4(op: i32, pa: usize, po: usize, i: i32, len: i32): i32 {
  const t = len - i;
  if (t <= 0) return len;
  const at = <usize>i << 2;
  let v = f32x4.splat(1);
  v = f32x4.replace_lane(v, 0, load<f32>(pa + at));
  if (t > 1) v = f32x4.replace_lane(v, 1, load<f32>(pa + at, 4));
  if (t > 2) v = f32x4.replace_lane(v, 2, load<f32>(pa + at, 8));
  const o = po + (<usize>i << 2);
  const y = vec(op, v);
  store<f32>(o, f32x4.extract_lane(y, 0));
  if (t > 1) store<f32>(o, f32x4.extract_lane(y, 1), 4);
  if (t > 2) store<f32>(o, f32x4.extract_lane(y, 2), 8);
  return len;
}

/**
 * out = op(a), contiguous out. p: [r, n, shape[r], aStrides[r], aOffset].
 * s0..s2 are op parameters (softplus beta/threshold, clamp bounds, nan_to_num).
 */
export function unary(
  op: i32, dt: i32, outDt: i32, a: usize, out: usize, p: usize,
  s0: f64, s1: f64, s2: f64
): void {
  const d = normalize(p, 1);
  const n = load<i32>(d, 4);
  if (n <= 0) return;
  unaryRows(op, dt, outDt, a, out, d, s0, s1, s2, 0, 0, n / rowLen(d));
}

/**
 * Chunk `part` of `parts` of a unary op (the cpu pool's form; ws is unused). args (at q):
 * [op, dt, outDt, a, out, p, -, -] as i32 words, then s0, s1, s2 as f64.
 */
export function unaryPart(q: usize, ws: usize, part: i32, parts: i32): void {
  const d = normalize(<usize>load<u32>(q, 20), 1);
  if (load<i32>(d, 4) <= 0) return;
  const o = chunkOf(d, 1, part, parts);
  if (o < 0) return;
  unaryRows(load<i32>(q), load<i32>(q, 4), load<i32>(q, 8), <usize>load<u32>(q, 12), <usize>load<u32>(q, 16), d,
    load<f64>(q, 32), load<f64>(q, 40), load<f64>(q, 48), o, chunkFirst, chunkLast);
}

/** Rows [r0, r1) of normalised descriptor d, the first output element being o0. */
function unaryRows(
  op: i32, dt: i32, outDt: i32, a: usize, out: usize, d: usize,
  s0: f64, s1: f64, s2: f64, o0: i32, r0: i32, r1: i32
): void {
  const len = rowLen(d);
  const sa = rowStride(d, 0);
  const floatClass = isFloat(dt);
  const useInt = !floatClass && intOk(op);
  const simd = dt == F32 && outDt == F32 && sa == 1 && hasSimd(op);
  beginAt(d, 1, r0);
  let o = o0;
  for (let row = r0; row < r1; row++) {
    let i = 0;
    if (simd) {
      const pa = a + (<usize>off0 << 2);
      const po = out + (<usize>o << 2);
      if (op == 29) {
        memory.copy(po, pa, <usize>len << 2);
        i = len;
      } else {
        i = simdRow(op, pa, po, len);
        if (transcendental(op)) i = tail4(op, pa, po, i, len);
      }
    }
    if (useInt) {
      for (; i < len; i++) storeI(outDt, out, o + i, unaryI(op, loadI(dt, a, off0 + i * sa), s0, s1));
    } else {
      for (; i < len; i++) storeF(outDt, out, o + i, unaryF(op, loadF(dt, a, off0 + i * sa), s0, s1, s2));
    }
    o += len;
    nextRow(d, 1);
  }
}
