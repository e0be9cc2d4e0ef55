// The index family: gather, scatter (set and add), cumulative sum/product,
// a stable sort's indices, and one_hot.
//
// The hard part is that index values are data: every index is checked
// against its dim's size before it becomes an address, and a kernel that
// meets a bad one stops, remembers it (badIndex()) and returns 1, so the host
// reports the op's error instead of touching memory out of bounds. Index
// tensors are int64 (the host casts int32 indices first); positions written
// (sort, one_hot) are int64 too.
//
// Sort packs (order-preserving key << 32 | position) into u64s, so plain u64
// order is the stable order; NaN maps to the largest key and -0 to +0, as in
// PyTorch. Descending flips the key, leaving ties in their original order.

import { I64, isFloat, elemShift, loadF, loadI, storeF, storeI } from "./dtype";
import { begin, nextRow, normalize, off0, off1, off2, rowLen, rowStride } from "./iter";

let bad: i64 = 0;

/** The first out-of-range index met by the last kernel that returned 1. */
export function badIndex(): i64 {
  return bad;
}

/** Records `v` as the bad index of a kernel about to return 1 (the loss kernels' targets: loss.ts). */
export function noteBad(v: i64): void {
  bad = v;
}

/** The int64 index at element i of idx. */
// @ts-ignore: decorator
@inline function idxAt(idx: usize, i: i32): i64 {
  return load<i64>(idx + (<usize>i << 3));
}

/** v, or v + size when `wrap` allows negatives; -1 (and `bad` set) when out of range. */
// @ts-ignore: decorator
@inline function checked(v: i64, size: i32, wrap: bool): i32 {
  const w = v < 0 && wrap ? v + <i64>size : v;
  if (w < 0 || w >= <i64>size) {
    bad = v;
    return -1;
  }
  return <i32>w;
}

/**
 * out[i] = x[offX(i) + idx[offI(i)] * dimStride], bits copied, out contiguous.
 * p: [r, n, shape[r], xStrides[r], xOffset, idxStrides[r], idxOffset].
 * Returns 1 on an index outside [0, size) ([-size, size) with wrap).
 */
export function gather(dt: i32, x: usize, idx: usize, out: usize, p: usize, dimStride: i32, size: i32, wrap: i32): i32 {
  const d = normalize(p, 2);
  const n = load<i32>(d, 4);
  if (n <= 0) return 0;
  const len = rowLen(d), sx = rowStride(d, 0), si = rowStride(d, 1);
  const sh = elemShift(dt);
  const rows = n / len;
  let o = out;
  begin(d, 2);
  for (let row = 0; row < rows; row++) {
    for (let k = 0; k < len; k++) {
      const v = checked(idxAt(idx, off1 + k * si), size, wrap != 0);
      if (v < 0) return 1;
      const src = x + (<usize>(off0 + k * sx + v * dimStride) << sh);
      if (sh == 3) store<u64>(o, load<u64>(src));
      else if (sh == 2) store<u32>(o, load<u32>(src));
      else if (sh == 1) store<u16>(o, load<u16>(src));
      else store<u8>(o, load<u8>(src));
      o += <usize>1 << sh;
    }
    nextRow(d, 2);
  }
  return 0;
}

/**
 * Over the index's shape: out[offD(i) + idx[offI(i)] * dimStride] = src[offS(i)] (or
 * `value` when src is 0), or += with `add`. Floats add in f64 and round once per
 * element, as PyTorch's CPU kernel does.
 * p: [r, n, shape[r], dstStrides[r], dstOffset, idxStrides[r], idxOffset, (srcStrides[r], srcOffset)].
 */
export function scatter(dt: i32, add: i32, out: usize, idx: usize, src: usize, p: usize, dimStride: i32, size: i32, value: f64): i32 {
  const nops = src != 0 ? 3 : 2;
  const d = normalize(p, nops);
  const n = load<i32>(d, 4);
  if (n <= 0) return 0;
  const len = rowLen(d), sd = rowStride(d, 0), si = rowStride(d, 1), ss = src != 0 ? rowStride(d, 2) : 0;
  const rows = n / len;
  const float = isFloat(dt);
  begin(d, nops);
  for (let row = 0; row < rows; row++) {
    for (let k = 0; k < len; k++) {
      const v = checked(idxAt(idx, off1 + k * si), size, false);
      if (v < 0) return 1;
      const t = off0 + k * sd + v * dimStride;
      if (float) {
        let val = src != 0 ? loadF(dt, src, off2 + k * ss) : value;
        if (add) val += loadF(dt, out, t);
        storeF(dt, out, t, val);
      } else {
        let val = src != 0 ? loadI(dt, src, off2 + k * ss) : <i64>value;
        if (add) val += loadI(dt, out, t);
        storeI(dt, out, t, val);
      }
    }
    nextRow(d, nops);
  }
  return 0;
}

/**
 * Running sums (prod 0) or products (prod 1) along lines of length `len`: the lines are
 * the elements of p's view (x's shape without the dim), and line l is written to the
 * contiguous out at (l / inner) * len * inner + l % inner, with step `inner`. Floats
 * accumulate in f64, integers in i64 (int64 out, wrapping only past int64, as PyTorch's).
 * p: [r, n, shape[r], xStrides[r], xOffset].
 */
export function cumulative(prod: i32, dt: i32, outDt: i32, x: usize, out: usize, p: usize, len: i32, dimStride: i32, inner: i32): void {
  const d = normalize(p, 1);
  const n = load<i32>(d, 4);
  if (n <= 0 || len <= 0) return;
  const rl = rowLen(d), sx = rowStride(d, 0);
  const rows = n / rl;
  const float = isFloat(dt);
  let line = 0;
  begin(d, 1);
  for (let row = 0; row < rows; row++) {
    for (let k = 0; k < rl; k++) {
      const base = off0 + k * sx;
      const ob = (line / inner) * len * inner + line % inner;
      if (float) {
        let acc: f64 = prod ? 1 : 0;
        for (let q = 0; q < len; q++) {
          const v = loadF(dt, x, base + q * dimStride);
          acc = prod ? acc * v : acc + v;
          storeF(outDt, out, ob + q * inner, acc);
        }
      } else {
        let acc: i64 = prod ? 1 : 0;
        for (let q = 0; q < len; q++) {
          const v = loadI(dt, x, base + q * dimStride);
          acc = prod ? acc * v : acc + v;
          storeI(outDt, out, ob + q * inner, acc);
        }
      }
      line++;
    }
    nextRow(d, 1);
  }
}

/** An order-preserving u32 of a float: NaN largest, -0 equal to +0. */
// @ts-ignore: decorator
@inline function floatKey(v: f32): u32 {
  let b = reinterpret<u32>(v);
  if ((b & 0x7fffffff) > 0x7f800000) return 0xffffffff;
  if (b == 0x80000000) b = 0;
  return (b & 0x80000000) != 0 ? ~b : b | 0x80000000;
}

// @ts-ignore: decorator
@inline function at64(p: usize, i: i32): usize {
  return p + (<usize>i << 3);
}

/** Sorts n u64s at a (b is as large a buffer); returns whichever holds the result. */
function sortU64(a: usize, b: usize, n: i32): usize {
  const RUN = 16;
  for (let lo = 0; lo < n; lo += RUN) {
    const hi = min(lo + RUN, n);
    for (let i = lo + 1; i < hi; i++) {
      const v = load<u64>(at64(a, i));
      let j = i - 1;
      while (j >= lo && load<u64>(at64(a, j)) > v) {
        store<u64>(at64(a, j + 1), load<u64>(at64(a, j)));
        j--;
      }
      store<u64>(at64(a, j + 1), v);
    }
  }
  let src = a, dst = b;
  for (let width = RUN; width < n; width <<= 1) {
    for (let lo = 0; lo < n; lo += width << 1) {
      const mid = min(lo + width, n), hi = min(lo + (width << 1), n);
      let i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        const x = load<u64>(at64(src, i)), y = load<u64>(at64(src, j));
        if (y < x) { store<u64>(at64(dst, k), y); j++; } else { store<u64>(at64(dst, k), x); i++; }
        k++;
      }
      while (i < mid) store<u64>(at64(dst, k++), load<u64>(at64(src, i++)));
      while (j < hi) store<u64>(at64(dst, k++), load<u64>(at64(src, j++)));
    }
    const t = src;
    src = dst;
    dst = t;
  }
  return src;
}

/** Stable merge sort of the positions 0..n) at a by the int64 keys at key (b is as large); returns whichever holds the result. */
function sortByI64(a: usize, b: usize, key: usize, n: i32): usize {
  let src = a, dst = b;
  for (let width = 1; width < n; width <<= 1) {
    for (let lo = 0; lo < n; lo += width << 1) {
      const mid = min(lo + width, n), hi = min(lo + (width << 1), n);
      let i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        const pi = load<i32>(src + (<usize>i << 2)), pj = load<i32>(src + (<usize>j << 2));
        if (load<i64>(key + (<usize>pj << 3)) < load<i64>(key + (<usize>pi << 3))) { store<i32>(dst + (<usize>k << 2), pj); j++; }
        else { store<i32>(dst + (<usize>k << 2), pi); i++; }
        k++;
      }
      while (i < mid) store<i32>(dst + (<usize>(k++) << 2), load<i32>(src + (<usize>(i++) << 2)));
      while (j < hi) store<i32>(dst + (<usize>(k++) << 2), load<i32>(src + (<usize>(j++) << 2)));
    }
    const t = src;
    src = dst;
    dst = t;
  }
  return src;
}

/** Bytes of workspace sortIndices needs for lines of length len. */
export function sortWorkspaceBytes(len: i32): i32 {
  return len << 4; // (key, position) u64 pairs twice, or int64 keys and two position arrays
}

/**
 * The stable sort order (int64 positions) of every line of the contiguous
 * [outer, len, inner] block x, into out of the same layout.
 */
export function sortIndices(dt: i32, descending: i32, x: usize, out: usize, outer: i32, len: i32, inner: i32, ws: usize): void {
  const a = ws, b = ws + (<usize>len << 3);
  const float = isFloat(dt);
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      const base = o * len * inner + i;
      if (dt == I64) {
        // 64-bit keys do not fit the packed pairs: sort positions by the keys (flipped when descending)
        const pa = b, pb = b + (<usize>len << 2);
        for (let q = 0; q < len; q++) {
          const v = load<i64>(x + (<usize>(base + q * inner) << 3));
          store<i64>(a + (<usize>q << 3), descending ? ~v : v);
          store<i32>(pa + (<usize>q << 2), q);
        }
        const s = sortByI64(pa, pb, a, len);
        for (let q = 0; q < len; q++) store<i64>(out + (<usize>(base + q * inner) << 3), <i64>load<i32>(s + (<usize>q << 2)));
        continue;
      }
      for (let q = 0; q < len; q++) {
        let key: u32 = float ? floatKey(<f32>loadF(dt, x, base + q * inner)) : <u32>loadI(dt, x, base + q * inner) ^ 0x80000000;
        if (descending) key = ~key;
        store<u64>(at64(a, q), (<u64>key << 32) | <u64>q);
      }
      const s = sortU64(a, b, len);
      for (let q = 0; q < len; q++) {
        store<i64>(out + (<usize>(base + q * inner) << 3), <i64>(load<u64>(at64(s, q)) & 0xffffffff));
      }
    }
  }
}

/** out[j, c] = idx[j] == c over n × classes (int64 idx and out); returns 1 on a class outside [0, classes). */
export function oneHot(idx: usize, out: usize, n: i32, classes: i32): i32 {
  memory.fill(out, 0, <usize>n * <usize>classes << 3);
  for (let j = 0; j < n; j++) {
    const v = idxAt(idx, j);
    if (v < 0 || v >= <i64>classes) {
      bad = v;
      return 1;
    }
    store<i64>(out + (<usize>(j * classes + <i32>v) << 3), 1);
  }
  return 0;
}
