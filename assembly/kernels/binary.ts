// Elementwise binary ops (with broadcasting) and where().
//
// The hard part is matching PyTorch's edge semantics while staying fast:
// float ops run in f64 on f32 inputs and round once (so +,-,*,/ are correctly
// rounded f32 results); integer ops run in i64 (exact for int64; int32 and
// uint8 keep the low bits, wrapping as PyTorch's do); integer division and
// remainder never hit wasm's traps (b = 0 gives 0 and is reported: binary()
// returns 1, and the host raises PyTorch's ZeroDivisionError; MIN / -1 wraps); maximum/minimum propagate NaN (wasm's
// f32x4.max/min and f64.max/min already do). Rows whose inner strides are 0 or
// 1 on both sides (contiguous, scalar-broadcast, or bias-style row broadcast)
// take an f32x4 / i32x4 path.

import { BOOL, F32, I32, I64, elemShift, isFloat, loadF, loadI, storeF, storeI } from "./dtype";
import { begin, beginAt, chunkFirst, chunkLast, chunkOf, nextRow, normalize, off0, off1, off2, rowLen, rowStride, stridesAt } from "./iter";
import { erfc, powC, powI } from "./special";

/**
 * Float-class op on one pair. alpha is an f32 value: add/sub round alpha * y
 * to f32 before adding, exactly like the f32x4 path.
 */
export function binaryF(op: i32, x: f64, y: f64, alpha: f64): f64 {
  switch (op) {
    case 0: return x + <f64><f32>(alpha * y);
    case 1: return x - <f64><f32>(alpha * y);
    case 2: return x * y;
    case 3: return x / y;
    case 4: return floorDivF(x, y);
    case 5: return trunc<f64>(x / y);
    case 6: return powC(x, y);
    case 7: return max<f64>(x, y);
    case 8: return min<f64>(x, y);
    case 9: {
      let m = x % y;
      if (m != 0 && (m < 0) != (y < 0)) m += y;
      return m;
    }
    case 10: return Math.atan2(x, y);
    case 11: return <f64>(x == y);
    case 12: return <f64>(x != y);
    case 13: return <f64>(x < y);
    case 14: return <f64>(x <= y);
    case 15: return <f64>(x > y);
    case 16: return <f64>(x >= y);
    case 17: return <f64>((x != 0) & (y != 0));
    case 18: return <f64>((x != 0) | (y != 0));
    case 19: return <f64>((x != 0) ^ (y != 0));
    case 20: return <f64>(<i32>x & <i32>y);
    case 21: return <f64>(<i32>x | <i32>y);
    case 22: return <f64>(<i32>x ^ <i32>y);
    case 23: return geluGrad(x, y);
    case 24: return geluTanhGrad(x, y);
    default: return NaN;
  }
}

/** gelu_backward: g·(Φ(x) + x·φ(x)), Φ through erfc so that it keeps its relative accuracy for large -x. */
function geluGrad(g: f64, x: f64): f64 {
  return g * (0.5 * erfc(-x * 0.7071067811865476) + x * Math.exp(-0.5 * x * x) * 0.3989422804014327);
}

/** gelu_backward with approximate='tanh' (PyTorch's formula). */
function geluTanhGrad(g: f64, x: f64): f64 {
  const t = Math.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x));
  return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608028654 * (1 + 0.134145 * x * x));
}

/**
 * PyTorch's floating floor division (div_floor): through fmod, so ±Inf / finite is NaN and the
 * quotient is exact where floor(x / y) would round first; a zero divisor gives x / y.
 */
function floorDivF(x: f64, y: f64): f64 {
  if (y == 0) return x / y;
  const mod = x % y;
  let div = (x - mod) / y;
  if (mod != 0 && (y < 0) != (mod < 0)) div -= 1;
  if (div == 0) return copysign<f64>(0, x / y);
  let q = Math.floor(div);
  if (div - q > 0.5) q += 1;
  return q;
}

/** Set when an integer floor/trunc division or remainder met a zero divisor. */
let zeroDivisor: bool = false;

/**
 * Integer-class op on one pair, in i64 (wrapping). Division by zero yields 0 for floor/trunc
 * division and remainder, and sets `zeroDivisor`; MIN / -1 wraps to MIN.
 */
export function binaryI(op: i32, x: i64, y: i64, alpha: i64): i64 {
  switch (op) {
    case 0: return x + alpha * y;
    case 1: return x - alpha * y;
    case 2: return x * y;
    case 4: {
      if (y == 0) {
        zeroDivisor = true;
        return 0;
      }
      if (y == -1) return -x;
      const q = x / y;
      return (x % y != 0 && (x < 0) != (y < 0)) ? q - 1 : q;
    }
    case 5: {
      if (y == 0) {
        zeroDivisor = true;
        return 0;
      }
      return y == -1 ? -x : x / y;
    }
    case 6: return powI(x, y);
    case 7: return max<i64>(x, y);
    case 8: return min<i64>(x, y);
    case 9: {
      if (y == 0) {
        zeroDivisor = true;
        return 0;
      }
      if (y == -1) return 0;
      const m = x % y;
      return (m != 0 && (m < 0) != (y < 0)) ? m + y : m;
    }
    case 11: return <i64>(x == y);
    case 12: return <i64>(x != y);
    case 13: return <i64>(x < y);
    case 14: return <i64>(x <= y);
    case 15: return <i64>(x > y);
    case 16: return <i64>(x >= y);
    case 17: return <i64>((x != 0) & (y != 0));
    case 18: return <i64>((x != 0) | (y != 0));
    case 19: return <i64>((x != 0) ^ (y != 0));
    case 20: return x & y;
    case 21: return x | y;
    default: return x ^ y;
  }
}

// @ts-ignore: decorator
@inline function vload(p: usize, i: i32, s: i32, splat: v128): v128 {
  return s != 0 ? v128.load(p + (<usize>i << 2)) : splat;
}

/** Op 0, 1, 2, 3, 7 or 8 on f32x4 lanes (y already scaled by alpha). */
// @ts-ignore: decorator
@inline function arith4(op: i32, x: v128, y: v128): v128 {
  switch (op) {
    case 0: return f32x4.add(x, y);
    case 1: return f32x4.sub(x, y);
    case 2: return f32x4.mul(x, y);
    case 3: return f32x4.div(x, y);
    case 7: return f32x4.max(x, y);
    default: return f32x4.min(x, y);
  }
}

/** The f32x4 loop of one op over two unit-stride rows (alpha 1); inlined where `op` is a constant. */
// @ts-ignore: decorator
@inline function unitLoopF32(op: i32, pa: usize, pb: usize, po: usize, n4: i32): void {
  for (let i = 0; i < n4; i += 4) {
    const at = <usize>i << 2;
    v128.store(po + at, arith4(op, v128.load(pa + at), v128.load(pb + at)));
  }
}

/** f32x4 row for ops 0,1,2,3,7,8; strides are 0 or 1. Returns elements done. */
function simdRowF32(op: i32, pa: usize, sa: i32, pb: usize, sb: i32, po: usize, len: i32, alpha: f32): i32 {
  const n4 = len & ~3;
  if (sa == 1 && sb == 1 && alpha == 1) {
    // both rows contiguous, no alpha: one loop per op, no branch per vector (a*b+c 2^20 ran at
    // 0.86× tfjs-wasm with the op switch and the stride selects inside the loop)
    switch (op) {
      case 0: unitLoopF32(0, pa, pb, po, n4); break;
      case 1: unitLoopF32(1, pa, pb, po, n4); break;
      case 2: unitLoopF32(2, pa, pb, po, n4); break;
      case 3: unitLoopF32(3, pa, pb, po, n4); break;
      case 7: unitLoopF32(7, pa, pb, po, n4); break;
      default: unitLoopF32(8, pa, pb, po, n4);
    }
    return n4;
  }
  const ka = f32x4.splat(load<f32>(pa));
  const kb = f32x4.splat(load<f32>(pb));
  const al = f32x4.splat(alpha);
  const unit = alpha == 1;
  let i = 0;
  for (; i < n4; i += 4) {
    const x = vload(pa, i, sa, ka);
    const y = vload(pb, i, sb, kb);
    // alpha scales the second operand of add and sub only
    v128.store(po + (<usize>i << 2), arith4(op, x, unit || op > 1 ? y : f32x4.mul(al, y)));
  }
  return i;
}

/**
 * An f32 row with any strides for ops 0, 1, 2, 3, 7, 8, in f32 arithmetic: the same results as
 * the f64 path (an f32 sum, product or quotient computed in f64 and rounded once is the f32 one:
 * f64 has more than twice f32's precision), without its per-element dtype dispatch. The fold of
 * conv's gradient and other strided views take it.
 */
function stridedRowF32(op: i32, pa: usize, sa: i32, pb: usize, sb: i32, po: usize, len: i32, alpha: f32): i32 {
  const da = <isize>sa << 2, db = <isize>sb << 2;
  let x = pa, y = pb, z = po;
  for (let i = 0; i < len; i++) {
    const u = load<f32>(x), v = load<f32>(y);
    let r: f32;
    switch (op) {
      case 0: r = u + (alpha == 1 ? v : <f32>(alpha * v)); break;
      case 1: r = u - (alpha == 1 ? v : <f32>(alpha * v)); break;
      case 2: r = u * v; break;
      case 3: r = u / v; break;
      case 7: r = max<f32>(u, v); break;
      default: r = min<f32>(u, v);
    }
    store<f32>(z, r);
    x += da;
    y += db;
    z += 4;
  }
  return len;
}

/**
 * f32 comparisons (ops 11–16) into bool bytes, four at a time; strides are 0 or 1. f32x4's
 * comparisons treat NaN as the scalar ones do (only `!=` is true), and each lane's mask becomes
 * one byte.
 */
function simdRowCmp(op: i32, pa: usize, sa: i32, pb: usize, sb: i32, po: usize, len: i32): i32 {
  const n4 = len & ~3;
  const ka = f32x4.splat(load<f32>(pa));
  const kb = f32x4.splat(load<f32>(pb));
  const one = i32x4.splat(1);
  let i = 0;
  for (; i < n4; i += 4) {
    const x = vload(pa, i, sa, ka);
    const y = vload(pb, i, sb, kb);
    let m: v128;
    switch (op) {
      case 11: m = f32x4.eq(x, y); break;
      case 12: m = f32x4.ne(x, y); break;
      case 13: m = f32x4.lt(x, y); break;
      case 14: m = f32x4.le(x, y); break;
      case 15: m = f32x4.gt(x, y); break;
      default: m = f32x4.ge(x, y);
    }
    const b16 = i16x8.narrow_i32x4_u(v128.and(m, one), one);
    store<u32>(po + <usize>i, i32x4.extract_lane(i8x16.narrow_i16x8_u(b16, b16), 0));
  }
  return i;
}

/** i32x4 row for add/sub/mul (wrapping); strides are 0 or 1. */
function simdRowI32(op: i32, pa: usize, sa: i32, pb: usize, sb: i32, po: usize, len: i32, alpha: i32): i32 {
  const n4 = len & ~3;
  const ka = i32x4.splat(load<i32>(pa));
  const kb = i32x4.splat(load<i32>(pb));
  const al = i32x4.splat(alpha);
  let i = 0;
  for (; i < n4; i += 4) {
    const x = vload(pa, i, sa, ka);
    const y = vload(pb, i, sb, kb);
    let z: v128;
    if (op == 0) z = i32x4.add(x, i32x4.mul(al, y));
    else if (op == 1) z = i32x4.sub(x, i32x4.mul(al, y));
    else z = i32x4.mul(x, y);
    v128.store(po + (<usize>i << 2), z);
  }
  return i;
}

/** Comparison `op` (11–16) of two integers. */
// @ts-ignore: decorator
@inline function cmpI64(op: i32, x: i64, y: i64): bool {
  switch (op) {
    case 11: return x == y;
    case 12: return x != y;
    case 13: return x < y;
    case 14: return x <= y;
    case 15: return x > y;
    default: return x >= y;
  }
}

/**
 * One comparison's loop over `rows` rows of int32 (`wide` false) or int64 elements, any strides
 * (bytes; `ra`, `rb`: from one row to the next); inlined where `op` is a constant.
 */
// @ts-ignore: decorator
@inline function cmpLoopI(op: i32, wide: bool, pa: usize, da: usize, ra: usize, pb: usize, db: usize, rb: usize, po: usize, len: i32, rows: i32): void {
  for (let r = 0; r < rows; r++) {
    let x = pa, y = pb;
    for (let i = 0; i < len; i++) {
      const u = wide ? load<i64>(x) : <i64>load<i32>(x), v = wide ? load<i64>(y) : <i64>load<i32>(y);
      store<u8>(po + <usize>i, <u8>cmpI64(op, u, v));
      x += da;
      y += db;
    }
    pa += ra;
    pb += rb;
    po += <usize>len;
  }
}

/**
 * Integer comparisons (ops 11–16) of int32 or int64 rows into bool bytes, any strides: one loop
 * per op and width, without the general path's dtype dispatch per element (max(dim)'s gradient
 * compares an int64 arange with the saved indices: [N, C, oh, ow, window] against [.., 1], rows as
 * short as a pooling window, took 14 ns an element there). `rows` rows `ra` and `rb` elements
 * apart (a rank-2 view's rows in one call: the op's dispatch once, not per row of 4).
 */
function cmpRowsInt(op: i32, wide: bool, pa: usize, sa: i32, ra: i32, pb: usize, sb: i32, rb: i32, po: usize, len: i32, rows: i32): void {
  const sh: usize = wide ? 3 : 2;
  const da = <usize>(<isize>sa << sh), db = <usize>(<isize>sb << sh), rab = <usize>(<isize>ra << sh), rbb = <usize>(<isize>rb << sh);
  if (wide) {
    switch (op) {
      case 11: cmpLoopI(11, true, pa, da, rab, pb, db, rbb, po, len, rows); break;
      case 12: cmpLoopI(12, true, pa, da, rab, pb, db, rbb, po, len, rows); break;
      case 13: cmpLoopI(13, true, pa, da, rab, pb, db, rbb, po, len, rows); break;
      case 14: cmpLoopI(14, true, pa, da, rab, pb, db, rbb, po, len, rows); break;
      case 15: cmpLoopI(15, true, pa, da, rab, pb, db, rbb, po, len, rows); break;
      default: cmpLoopI(16, true, pa, da, rab, pb, db, rbb, po, len, rows);
    }
  } else {
    switch (op) {
      case 11: cmpLoopI(11, false, pa, da, rab, pb, db, rbb, po, len, rows); break;
      case 12: cmpLoopI(12, false, pa, da, rab, pb, db, rbb, po, len, rows); break;
      case 13: cmpLoopI(13, false, pa, da, rab, pb, db, rbb, po, len, rows); break;
      case 14: cmpLoopI(14, false, pa, da, rab, pb, db, rbb, po, len, rows); break;
      case 15: cmpLoopI(15, false, pa, da, rab, pb, db, rbb, po, len, rows); break;
      default: cmpLoopI(16, false, pa, da, rab, pb, db, rbb, po, len, rows);
    }
  }
}

/**
 * out = a (op) b with broadcasting; contiguous out.
 * p: [r, n, shape[r], aStrides[r], aOffset, bStrides[r], bOffset].
 * alpha scales b for add/sub (integer-class: truncated to i32).
 * Returns 1 when an integer division or remainder met a zero divisor (those elements are 0).
 */
export function binary(op: i32, dt: i32, outDt: i32, a: usize, b: usize, out: usize, p: usize, alpha: f64): i32 {
  const d = normalize(p, 2);
  const n = load<i32>(d, 4);
  if (n <= 0) return 0;
  zeroDivisor = false;
  binaryRows(op, dt, outDt, a, b, out, d, alpha, 0, 0, n / rowLen(d));
  return zeroDivisor ? 1 : 0;
}

/**
 * Chunk `part` of `parts` of a float binary op (the cpu pool's form; ws is unused; integer
 * division's zero-divisor flag is not collected, so the worker pools float ops only). args (at q):
 * [op, dt, outDt, a, b, out, p, -] as i32 words, then alpha as f64.
 */
export function binaryPart(q: usize, ws: usize, part: i32, parts: i32): void {
  const d = normalize(<usize>load<u32>(q, 24), 2);
  if (load<i32>(d, 4) <= 0) return;
  const o = chunkOf(d, 2, part, parts);
  if (o < 0) return;
  binaryRows(load<i32>(q), load<i32>(q, 4), load<i32>(q, 8), <usize>load<u32>(q, 12), <usize>load<u32>(q, 16), <usize>load<u32>(q, 20), d,
    load<f64>(q, 32), o, chunkFirst, chunkLast);
}

/** Rows [r0, r1) of normalised descriptor d, the first output element being o0. */
function binaryRows(op: i32, dt: i32, outDt: i32, a: usize, b: usize, out: usize, d: usize, alpha: f64, o0: i32, r0: i32, r1: i32): void {
  const len = rowLen(d);
  const sa = rowStride(d, 0);
  const sb = rowStride(d, 1);
  const useInt = !isFloat(dt) && op != 3 && op != 10;
  const ia = <i64>alpha;
  const fa = <f32>alpha;
  const unitStrides = sa <= 1 && sb <= 1 && len >= 4;
  const simdF = unitStrides && dt == F32 && outDt == F32 && (op <= 3 || op == 7 || op == 8);
  const simdI = unitStrides && dt == I32 && outDt == I32 && op <= 2;
  const stridedF = !simdF && dt == F32 && outDt == F32 && (op <= 3 || op == 7 || op == 8);
  const simdCmp = unitStrides && dt == F32 && outDt == BOOL && op >= 11 && op <= 16;
  const intCmp = (dt == I32 || dt == I64) && outDt == BOOL && op >= 11 && op <= 16;
  const wide = dt == I64;
  beginAt(d, 2, r0);
  // rank 2 (one outer dim, as short broadcast rows often are): the next row is one stride on
  const rank2 = load<i32>(d) == 2;
  const oa = rank2 ? load<i32>(stridesAt(d, 2, 0)) : 0, ob = rank2 ? load<i32>(stridesAt(d, 2, 1)) : 0;
  let o = o0;
  if (intCmp && rank2) {
    const sh = elemShift(dt);
    cmpRowsInt(op, wide, a + (<usize>off0 << sh), sa, oa, b + (<usize>off1 << sh), sb, ob, out + <usize>o, len, r1 - r0);
    return;
  }
  for (let row = r0; row < r1; row++) {
    let i = 0;
    if (simdF) {
      i = simdRowF32(op, a + (<usize>off0 << 2), sa, b + (<usize>off1 << 2), sb, out + (<usize>o << 2), len, fa);
    } else if (simdCmp) {
      i = simdRowCmp(op, a + (<usize>off0 << 2), sa, b + (<usize>off1 << 2), sb, out + <usize>o, len);
    } else if (stridedF) {
      i = stridedRowF32(op, a + (<usize>off0 << 2), sa, b + (<usize>off1 << 2), sb, out + (<usize>o << 2), len, fa);
    } else if (intCmp) {
      cmpRowsInt(op, wide, a + (<usize>off0 << elemShift(dt)), sa, 0, b + (<usize>off1 << elemShift(dt)), sb, 0, out + <usize>o, len, 1);
      i = len;
    } else if (simdI) {
      i = simdRowI32(op, a + (<usize>off0 << 2), sa, b + (<usize>off1 << 2), sb, out + (<usize>o << 2), len, <i32>ia);
    }
    if (useInt) {
      for (; i < len; i++) {
        storeI(outDt, out, o + i, binaryI(op, loadI(dt, a, off0 + i * sa), loadI(dt, b, off1 + i * sb), ia));
      }
    } else {
      for (; i < len; i++) {
        storeF(outDt, out, o + i, binaryF(op, loadF(dt, a, off0 + i * sa), loadF(dt, b, off1 + i * sb), <f64>fa));
      }
    }
    o += len;
    if (rank2) {
      off0 += oa;
      off1 += ob;
    } else {
      nextRow(d, 2);
    }
  }
}

/**
 * out = c ? a : b, elementwise with broadcasting; raw element copy of dtype dt.
 * p: [r, n, shape[r], cStrides[r], cOffset, aStrides[r], aOffset, bStrides[r], bOffset].
 */
export function where(dt: i32, c: usize, a: usize, b: usize, out: usize, p: usize): void {
  const d = normalize(p, 3);
  const n = load<i32>(d, 4);
  if (n <= 0) return;
  const len = rowLen(d);
  const sc = rowStride(d, 0);
  const sa = rowStride(d, 1);
  const sb = rowStride(d, 2);
  const rows = n / len;
  const sh = elemShift(dt);
  begin(d, 3);
  // rank 2 (a gradient broadcast over a pooling window's short rows): the next row is one stride on
  const rank2 = load<i32>(d) == 2;
  const oc = rank2 ? load<i32>(stridesAt(d, 2, 0)) : 0, oa = rank2 ? load<i32>(stridesAt(d, 2, 1)) : 0, ob = rank2 ? load<i32>(stridesAt(d, 2, 2)) : 0;
  let o = 0;
  if (rank2 && sh == 2 && sc == 1 && sa == 0 && sb == 0 && (len & 3) == 0) {
    // one value of a and of b per row, rows a multiple of 4 long (max pooling's gradient spread
    // over a 2×2 window, or 0): every row in this one loop, the splats once per row
    let pc = c + <usize>off0, pa = a + (<usize>off1 << 2), pb = b + (<usize>off2 << 2), po = out;
    const dc = <usize>(<isize>oc), da = <usize>(<isize>oa << 2), db = <usize>(<isize>ob << 2), zero = i32x4.splat(0);
    for (let row = 0; row < rows; row++) {
      const ka = v128.load32_splat(pa), kb = v128.load32_splat(pb);
      for (let i = 0; i < len; i += 4) {
        const m = i32x4.ne(i32x4.extend_low_i16x8_u(i16x8.extend_low_i8x16_u(v128.load32_zero(pc + <usize>i))), zero);
        v128.store(po + (<usize>i << 2), v128.bitselect(ka, kb, m));
      }
      pc += dc;
      pa += da;
      pb += db;
      po += <usize>len << 2;
    }
    return;
  }
  for (let row = 0; row < rows; row++) {
    let i = 0;
    if (sh == 2 && sc == 1 && (sa == 0 || sa == 1) && (sb == 0 || sb == 1)) {
      // 32-bit values, the condition's row contiguous, the values' rows contiguous or one value
      // (a broadcast gradient, as max's backward has): four at a time, the bool bytes widened to
      // lane masks (the general loop below picks one element at a time through a dtype branch)
      const pc = c + <usize>off0, pa = a + (<usize>off1 << 2), pb = b + (<usize>off2 << 2), po = out + (<usize>o << 2);
      const ka = i32x4.splat(load<i32>(pa)), kb = i32x4.splat(load<i32>(pb));
      for (; i + 4 <= len; i += 4) {
        const m = i32x4.ne(i32x4.extend_low_i16x8_u(i16x8.extend_low_i8x16_u(v128.load32_zero(pc + <usize>i))), i32x4.splat(0));
        const at = <usize>i << 2;
        v128.store(po + at, v128.bitselect(vload(pa, i, sa, ka), vload(pb, i, sb, kb), m));
      }
    }
    for (; i < len; i++) {
      const pick = load<u8>(c + <usize>(off0 + i * sc)) != 0;
      const src = pick ? a + (<usize>(off1 + i * sa) << sh) : b + (<usize>(off2 + i * sb) << sh);
      const dst = out + (<usize>(o + i) << sh);
      if (sh == 3) store<u64>(dst, load<u64>(src));
      else if (sh == 2) store<u32>(dst, load<u32>(src));
      else if (sh == 1) store<u16>(dst, load<u16>(src));
      else store<u8>(dst, load<u8>(src));
    }
    o += len;
    if (rank2) {
      off0 += oc;
      off1 += oa;
      off2 += ob;
    } else {
      nextRow(d, 3);
    }
  }
}
