// Row normalisations of a contiguous f32 [outer, inner] block, one row at a time: softmax,
// log-softmax and layer norm, and the input gradients of all three. The `softmax` and `rowGrad`
// commands of the cpu device (ts/worker/cpu/rows.ts); the GPU's are wgsl/softmax.ts.
//
// The hard part is the passes. Composed from the table's ops these read and write the block
// five to seven times; here a row is read two or three times while it is still in cache, and
// written once. The arithmetic is f32x4 (exp from vmath.ts: `expNeg4` for x − max, whose results
// below 2^-126 are 0, a difference under any tolerance), the sums of each row f64 (two f64x2
// accumulators; softmax's sum of exponentials adds blocks of 64 terms in f32 lanes first), so a
// long row's sum does not drift. Max propagates NaN (wasm's f32x4.max
// does), so a row holding NaN gives NaN throughout, as in PyTorch. Rows are independent, so
// `rowNormPart` splits them across the cpu pool's threads.
//
// Descriptor (i32 words at p): [kind, x, out, outer, inner, w, b, eps (f32 bits), g].
// kind: 0 softmax, 1 log-softmax, 2 layer norm (w, b optional: 0), 3 softmax's gradient
// (x is the output y, g the incoming gradient: y·(g − Σ g·y)), 4 log-softmax's (x is y:
// g − exp(y)·Σ g), 5 layer norm's input gradient (x the input, w optional:
// rstd·(gy − mean(gy) − x̂·mean(gy·x̂)), gy = g·w).

import { exp4, expNeg4 } from "./vmath";

const SOFTMAX = 0;
const LOG_SOFTMAX = 1;
const LAYER_NORM = 2;
const SOFTMAX_GRAD = 3;
const LOG_SOFTMAX_GRAD = 4;
const LAYER_NORM_GRAD = 5;

/** Lanes 0..n-1 of a v128 from memory (n < 4), the rest `fill`. */
// @ts-ignore: decorator
@inline function loadTail(p: usize, n: i32, fill: f32): v128 {
  let v = f32x4.splat(fill);
  v = f32x4.replace_lane(v, 0, load<f32>(p));
  if (n > 1) v = f32x4.replace_lane(v, 1, load<f32>(p, 4));
  if (n > 2) v = f32x4.replace_lane(v, 2, load<f32>(p, 8));
  return v;
}

/** Stores lanes 0..n-1 of v (n < 4). */
// @ts-ignore: decorator
@inline function storeTail(p: usize, n: i32, v: v128): void {
  store<f32>(p, f32x4.extract_lane(v, 0));
  if (n > 1) store<f32>(p, f32x4.extract_lane(v, 1), 4);
  if (n > 2) store<f32>(p, f32x4.extract_lane(v, 2), 8);
}

/** Adds the four f32 lanes of v into the two f64x2 accumulators. */
// @ts-ignore: decorator
@inline function acc64(s: v128, v: v128): v128 {
  return f64x2.add(f64x2.add(s, f64x2.promote_low_f32x4(v)), f64x2.promote_low_f32x4(v128.shuffle<i32>(v, v, 2, 3, 0, 1)));
}

// @ts-ignore: decorator
@inline function hsum64(s: v128): f64 {
  return f64x2.extract_lane(s, 0) + f64x2.extract_lane(s, 1);
}

/** The row's max (NaN if it holds one). */
function rowMax(x: usize, len: i32): f32 {
  // pmax (one instruction on x86; f32x4.max's NaN rule takes several) with the NaN lanes seen
  // apart: a row holding NaN still has NaN for its max. Four chains of pmax: one waits on each
  // pmax (softmax 256×1024 on one thread: 306 → 283 µs, interleaved)
  let m = f32x4.splat(-Infinity), nan = i32x4.splat(0);
  let m1 = m, m2 = m, m3 = m, nan1 = nan;
  const n4 = len & ~3;
  let i = 0;
  for (; i + 16 <= n4; i += 16) {
    const at = x + (<usize>i << 2);
    const v0 = v128.load(at), v1 = v128.load(at, 16), v2 = v128.load(at, 32), v3 = v128.load(at, 48);
    m = f32x4.pmax(m, v0);
    m1 = f32x4.pmax(m1, v1);
    m2 = f32x4.pmax(m2, v2);
    m3 = f32x4.pmax(m3, v3);
    nan = v128.or(nan, v128.or(f32x4.ne(v0, v0), f32x4.ne(v1, v1)));
    nan1 = v128.or(nan1, v128.or(f32x4.ne(v2, v2), f32x4.ne(v3, v3)));
  }
  for (; i < n4; i += 4) {
    const v = v128.load(x + (<usize>i << 2));
    m = f32x4.pmax(m, v);
    nan = v128.or(nan, f32x4.ne(v, v));
  }
  m = f32x4.pmax(f32x4.pmax(m, m1), f32x4.pmax(m2, m3));
  nan = v128.or(nan, nan1);
  if (n4 < len) {
    const v = loadTail(x + (<usize>n4 << 2), len - n4, -Infinity);
    m = f32x4.pmax(m, v);
    nan = v128.or(nan, f32x4.ne(v, v));
  }
  if (v128.any_true(nan)) return NaN;
  return max(max(f32x4.extract_lane(m, 0), f32x4.extract_lane(m, 1)), max(f32x4.extract_lane(m, 2), f32x4.extract_lane(m, 3)));
}

/** Σ exp(x − m) over the row; writes the terms to `out` when it is not 0. */
function expSum(x: usize, out: usize, len: i32, m: f32): f64 {
  const mv = f32x4.splat(m);
  let s = f64x2.splat(0);
  const n4 = len & ~3;
  // f32 lanes sum 16 vectors at a time (each term ≤ 1: a block's rounding stays near 1e-6 of it,
  // under the goldens' 1e-5), then the block goes into the f64 sums; promoting every vector to f64
  // took about a third of the pass
  for (let i = 0; i < n4; ) {
    const end = min(n4, i + 64);
    let blk = f32x4.splat(0);
    for (; i < end; i += 4) {
      const at = <usize>i << 2;
      const e = expNeg4(f32x4.sub(v128.load(x + at), mv));
      if (out) v128.store(out + at, e);
      blk = f32x4.add(blk, e);
    }
    s = acc64(s, blk);
  }
  if (n4 < len) {
    const t = len - n4, at = <usize>n4 << 2;
    // The padding lanes are -inf: exp gives 0 and the sum is unchanged.
    const e = expNeg4(f32x4.sub(loadTail(x + at, t, -Infinity), mv));
    if (out) storeTail(out + at, t, e);
    s = acc64(s, e);
  }
  return hsum64(s);
}

/** Σ a·b over the row (b = 0: Σ a). */
function dot(a: usize, b: usize, len: i32): f64 {
  let s = f64x2.splat(0);
  const n4 = len & ~3;
  for (let i = 0; i < n4; i += 4) {
    const at = <usize>i << 2;
    const v = v128.load(a + at);
    s = acc64(s, b ? f32x4.mul(v, v128.load(b + at)) : v);
  }
  let r = hsum64(s);
  for (let i = n4; i < len; i++) {
    const at = <usize>i << 2;
    r += <f64>(b ? load<f32>(a + at) * load<f32>(b + at) : load<f32>(a + at));
  }
  return r;
}

/** out = (x + c)·k, times w and plus b where given (0: none), over the row. */
function affineRow(x: usize, out: usize, len: i32, c: f32, k: f32, w: usize, b: usize): void {
  const cv = f32x4.splat(c), kv = f32x4.splat(k);
  const n4 = len & ~3;
  let i = 0;
  if (!w && !b) {
    // a layer norm without weights: no branch per vector
    for (; i < n4; i += 4) {
      const at = <usize>i << 2;
      v128.store(out + at, f32x4.mul(f32x4.add(v128.load(x + at), cv), kv));
    }
  }
  for (; i < n4; i += 4) {
    const at = <usize>i << 2;
    let y = f32x4.mul(f32x4.add(v128.load(x + at), cv), kv);
    if (w) y = f32x4.mul(y, v128.load(w + at));
    if (b) y = f32x4.add(y, v128.load(b + at));
    v128.store(out + at, y);
  }
  for (; i < len; i++) {
    const at = <usize>i << 2;
    let y = (load<f32>(x + at) + c) * k;
    if (w) y *= load<f32>(w + at);
    if (b) y += load<f32>(b + at);
    store<f32>(out + at, y);
  }
}

/** x ·= k over the row, in place (softmax's last pass). */
function scaleRow(x: usize, len: i32, k: f32): void {
  const kv = f32x4.splat(k);
  const n4 = len & ~3;
  for (let i = 0; i < n4; i += 4) {
    const at = x + (<usize>i << 2);
    v128.store(at, f32x4.mul(v128.load(at), kv));
  }
  for (let i = n4; i < len; i++) {
    const at = x + (<usize>i << 2);
    store<f32>(at, load<f32>(at) * k);
  }
}

/** Mean and 1/sqrt(var + eps) of a row (two passes, f64 sums); returns the mean, `rstdOut` the other. */
let rstdOut: f32 = 0;
function moments(x: usize, len: i32, eps: f32): f32 {
  const mean = <f32>(dot(x, 0, len) / <f64>len);
  const mv = f32x4.splat(mean);
  let s = f64x2.splat(0);
  const n4 = len & ~3;
  for (let i = 0; i < n4; i += 4) {
    const d = f32x4.sub(v128.load(x + (<usize>i << 2)), mv);
    s = acc64(s, f32x4.mul(d, d));
  }
  let v = hsum64(s);
  for (let i = n4; i < len; i++) {
    const d = load<f32>(x + (<usize>i << 2)) - mean;
    v += <f64>(d * d);
  }
  rstdOut = <f32>(1 / Math.sqrt(v / <f64>len + <f64>eps));
  return mean;
}

function row(kind: i32, x: usize, out: usize, len: i32, w: usize, b: usize, eps: f32, g: usize): void {
  if (kind == SOFTMAX) {
    const m = rowMax(x, len);
    const sum = expSum(x, out, len, m);
    scaleRow(out, len, <f32>(1 / sum));
  } else if (kind == LOG_SOFTMAX) {
    const m = rowMax(x, len);
    const sum = expSum(x, 0, len, m);
    // (x − m) − log Σ, as PyTorch orders it: one add of −(m + log Σ) would round differently.
    const ls = <f32>Math.log(sum);
    const mv = f32x4.splat(m), lv = f32x4.splat(ls);
    const n4 = len & ~3;
    for (let i = 0; i < n4; i += 4) {
      const at = <usize>i << 2;
      v128.store(out + at, f32x4.sub(f32x4.sub(v128.load(x + at), mv), lv));
    }
    for (let i = n4; i < len; i++) {
      const at = <usize>i << 2;
      store<f32>(out + at, (load<f32>(x + at) - m) - ls);
    }
  } else if (kind == LAYER_NORM) {
    const mean = moments(x, len, eps);
    affineRow(x, out, len, -mean, rstdOut, w, b);
  } else if (kind == SOFTMAX_GRAD) {
    // y·(g − Σ g·y)
    const s = <f32>dot(g, x, len);
    const sv = f32x4.splat(s);
    const n4 = len & ~3;
    for (let i = 0; i < n4; i += 4) {
      const at = <usize>i << 2;
      v128.store(out + at, f32x4.mul(v128.load(x + at), f32x4.sub(v128.load(g + at), sv)));
    }
    for (let i = n4; i < len; i++) {
      const at = <usize>i << 2;
      store<f32>(out + at, load<f32>(x + at) * (load<f32>(g + at) - s));
    }
  } else if (kind == LOG_SOFTMAX_GRAD) {
    // g − exp(y)·Σ g
    const s = <f32>dot(g, 0, len);
    const sv = f32x4.splat(s);
    const n4 = len & ~3;
    for (let i = 0; i < n4; i += 4) {
      const at = <usize>i << 2;
      v128.store(out + at, f32x4.sub(v128.load(g + at), f32x4.mul(exp4(v128.load(x + at)), sv)));
    }
    if (n4 < len) {
      const t = len - n4, at = <usize>n4 << 2;
      const e = exp4(loadTail(x + at, t, 0));
      storeTail(out + at, t, f32x4.sub(loadTail(g + at, t, 0), f32x4.mul(e, sv)));
    }
  } else {
    layerNormGradRow(x, out, len, w, eps, g);
  }
}

/** rstd·(gy − mean(gy) − x̂·mean(gy·x̂)), gy = g·w (w = 0: g), x̂ = (x − mean)·rstd. */
function layerNormGradRow(x: usize, out: usize, len: i32, w: usize, eps: f32, g: usize): void {
  const mean = moments(x, len, eps), rstd = rstdOut;
  const mv = f32x4.splat(mean), rv = f32x4.splat(rstd);
  let sg = f64x2.splat(0), sgx = f64x2.splat(0);
  const n4 = len & ~3;
  for (let i = 0; i < n4; i += 4) {
    const at = <usize>i << 2;
    let gy = v128.load(g + at);
    if (w) gy = f32x4.mul(gy, v128.load(w + at));
    const xh = f32x4.mul(f32x4.sub(v128.load(x + at), mv), rv);
    sg = acc64(sg, gy);
    sgx = acc64(sgx, f32x4.mul(gy, xh));
  }
  let a = hsum64(sg), c = hsum64(sgx);
  for (let i = n4; i < len; i++) {
    const at = <usize>i << 2;
    let gy = load<f32>(g + at);
    if (w) gy *= load<f32>(w + at);
    a += <f64>gy;
    c += <f64>(gy * ((load<f32>(x + at) - mean) * rstd));
  }
  const mg = <f32>(a / <f64>len), mgx = <f32>(c / <f64>len);
  const mgv = f32x4.splat(mg), mgxv = f32x4.splat(mgx);
  for (let i = 0; i < n4; i += 4) {
    const at = <usize>i << 2;
    let gy = v128.load(g + at);
    if (w) gy = f32x4.mul(gy, v128.load(w + at));
    const xh = f32x4.mul(f32x4.sub(v128.load(x + at), mv), rv);
    v128.store(out + at, f32x4.mul(rv, f32x4.sub(f32x4.sub(gy, mgv), f32x4.mul(xh, mgxv))));
  }
  for (let i = n4; i < len; i++) {
    const at = <usize>i << 2;
    let gy = load<f32>(g + at);
    if (w) gy *= load<f32>(w + at);
    const xh = (load<f32>(x + at) - mean) * rstd;
    store<f32>(out + at, rstd * ((gy - mg) - xh * mgx));
  }
}

/** Rows [first, last) of the descriptor's block. */
function rows(p: usize, first: i32, last: i32): void {
  const kind = load<i32>(p), x = <usize>load<u32>(p, 4), out = <usize>load<u32>(p, 8);
  const len = load<i32>(p, 16), w = <usize>load<u32>(p, 20), b = <usize>load<u32>(p, 24);
  const eps = load<f32>(p, 28), g = <usize>load<u32>(p, 32);
  for (let r = first; r < last; r++) {
    const at = <usize>r * <usize>len << 2;
    row(kind, x + at, out + at, len, w, b, eps, g ? g + at : 0);
  }
}

/** Every row of the block described at p (see the top of this file). */
export function rowNorm(p: usize): void {
  rows(p, 0, load<i32>(p, 12));
}

/** Part `part` of `parts` of the rows (the cpu pool's form: ws is unused). */
export function rowNormPart(p: usize, ws: usize, part: i32, parts: i32): void {
  const outer = load<i32>(p, 12);
  const per = (outer + parts - 1) / parts;
  const first = part * per;
  if (first < outer) rows(p, first, min(outer, first + per));
}
