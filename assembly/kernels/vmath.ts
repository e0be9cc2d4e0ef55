// Vectorised f32 transcendentals (four lanes per v128), for the map kernels and the row kernels.
//
// The hard part is accuracy at SIMD speed. The scalar path (unary.ts) evaluates in f64 and
// rounds once; these work in f32, as PyTorch's vectorised CPU kernels do (Sleef's ≤ 1 ulp exp
// composed into the same formulas): exp within 1 ulp, log and tanh 2, sigmoid 2.5
// (test/unit/wasm-vmath.test.ts sweeps them densely against Math.* and bounds the worst ulp):
// - exp: n = round(x·log2 e), r = x − n·ln2 in two parts (Cody–Waite: n·LN2_HI is exact), the
//   degree-7 Taylor polynomial of e^r on |r| ≤ ln2/2, then 2^n as two power-of-two factors so
//   results in the subnormal range round once, in the last multiply.
// - expm1 (for tanh): the same reduction, keeping e^r − 1 apart from 1 so small results keep
//   their relative accuracy.
// - log: x = 2^e·m with m in [√½, √2), then log m = 2·atanh(s), s = (m − 1)/(m + 1), an odd series
//   in s (|s| ≤ 0.172); subnormal inputs are scaled by 2^23 first.
// - tanh(x) = u / (u + 2) with u = expm1(2|x|), sign restored; sigmoid from e = exp(−|x|) as
//   1/(1 + e) or e/(1 + e) by sign, so neither side overflows and tiny results keep their bits.
// Special values follow IEEE and PyTorch: NaN in, NaN out; exp(−inf) = 0, log(0) = −inf,
// log(x < 0) = NaN, tanh(±inf) = ±1, sigmoid(±inf) = 1, 0.

const LOG2E: f32 = 1.44269504;
// ln 2 split so that n·LN2_HI is exact for |n| < 2^8.
const LN2_HI: f32 = 0.693145751953125;
const LN2_LO: f32 = 1.428606765330187e-6;
const LN2: f32 = 0.6931471805599453;
const SQRT2: f32 = 1.4142135623730951;

// @ts-ignore: decorator
@inline function splat(x: f32): v128 {
  return f32x4.splat(x);
}

/** 1.5·2^23: adding it rounds |v| < 2^22 to an integer, held in the low bits of the sum's bits. */
const MAGIC: f32 = 12582912.0;
const MAGIC_BITS: i32 = 0x4b400000;

/** The reduction shared by exp and expm1: returns r = x − n·ln2; `t` holds n + MAGIC. */
// @ts-ignore: decorator
@inline function reduce(x: v128, t: v128): v128 {
  const n = f32x4.sub(t, splat(MAGIC));
  const r = f32x4.sub(x, f32x4.mul(n, splat(LN2_HI)));
  return f32x4.sub(r, f32x4.mul(n, splat(LN2_LO)));
}

/** n + MAGIC for n = round(x·log2 e), |x| < 2^21. */
// @ts-ignore: decorator
@inline function magicN(x: v128): v128 {
  return f32x4.add(f32x4.mul(x, splat(LOG2E)), splat(MAGIC));
}

/** e^r − 1 on |r| ≤ ln2/2: r + r²/2 + … + r⁷/7! (Horner). */
// @ts-ignore: decorator
@inline function expm1Poly(r: v128): v128 {
  let p = splat(1.0 / 5040.0);
  p = f32x4.add(f32x4.mul(p, r), splat(1.0 / 720.0));
  p = f32x4.add(f32x4.mul(p, r), splat(1.0 / 120.0));
  p = f32x4.add(f32x4.mul(p, r), splat(1.0 / 24.0));
  p = f32x4.add(f32x4.mul(p, r), splat(1.0 / 6.0));
  p = f32x4.add(f32x4.mul(p, r), splat(0.5));
  p = f32x4.mul(f32x4.mul(p, r), r);
  return f32x4.add(p, r);
}

/** 2^n for i32 lanes n in [-126, 127]. */
// @ts-ignore: decorator
@inline function pow2(n: v128): v128 {
  return i32x4.shl(i32x4.add(n, i32x4.splat(127)), 23);
}

/** e^x for each lane. */
// @ts-ignore: decorator
@inline export function exp4(x: v128): v128 {
  // Outside [-104, 89] the result is 0 or inf in f32; clamping keeps 2^n's factors normal.
  // pmax/pmin with x first keep a NaN x (and are one instruction each on x64).
  const xc = f32x4.pmin(f32x4.pmax(x, splat(-104)), splat(89));
  const t = magicN(xc);
  const p = f32x4.add(expm1Poly(reduce(xc, t)), splat(1));
  // 2^n = 2^h · 2^(n − h) with h = n >> 1: each factor normal, one rounding at the end.
  const n = i32x4.sub(t, i32x4.splat(MAGIC_BITS));
  const h = i32x4.shr_s(n, 1);
  return f32x4.mul(f32x4.mul(p, pow2(h)), pow2(i32x4.sub(n, h)));
}

/** e^x − 1 for each lane, with relative accuracy near 0 (used for x ≥ 0 up to 20 by tanh). */
// @ts-ignore: decorator
@inline export function expm1Pos4(x: v128): v128 {
  const t = magicN(x);
  const q = expm1Poly(reduce(x, t));
  const s = pow2(i32x4.sub(t, i32x4.splat(MAGIC_BITS)));
  // 2^n·(1 + q) − 1 = 2^n·q + (2^n − 1); exact for n = 0.
  return f32x4.add(f32x4.mul(s, q), f32x4.sub(s, splat(1)));
}

/** ln x for each lane. */
// @ts-ignore: decorator
@inline export function log4(x: v128): v128 {
  // Subnormals: scale into the normal range and take 23 off the exponent.
  const tiny = f32x4.lt(x, splat(1.17549435e-38));
  const xs = v128.bitselect(f32x4.mul(x, splat(8388608.0)), x, tiny);
  let e = i32x4.sub(i32x4.shr_u(xs, 23), i32x4.splat(127));
  e = i32x4.sub(e, v128.and(tiny, i32x4.splat(23)));
  let m = v128.or(v128.and(xs, i32x4.splat(0x7fffff)), i32x4.splat(0x3f800000));
  const big = f32x4.gt(m, splat(SQRT2));
  m = v128.bitselect(f32x4.mul(m, splat(0.5)), m, big);
  e = i32x4.sub(e, big); // big is -1 where true
  const ef = f32x4.convert_i32x4_s(e);
  const s = f32x4.div(f32x4.sub(m, splat(1)), f32x4.add(m, splat(1)));
  const s2 = f32x4.mul(s, s);
  // 2s·(1 + s²/3 + s⁴/5 + s⁶/7 + s⁸/9)
  let p = splat(1.0 / 9.0);
  p = f32x4.add(f32x4.mul(p, s2), splat(1.0 / 7.0));
  p = f32x4.add(f32x4.mul(p, s2), splat(1.0 / 5.0));
  p = f32x4.add(f32x4.mul(p, s2), splat(1.0 / 3.0));
  const s2x = f32x4.add(s, s);
  const logm = f32x4.add(s2x, f32x4.mul(f32x4.mul(s2x, s2), p));
  let y = f32x4.add(f32x4.mul(ef, splat(LN2_HI)), f32x4.add(f32x4.mul(ef, splat(LN2_LO)), logm));
  // Specials: +inf and NaN pass through, 0 gives -inf, negatives give NaN.
  y = v128.bitselect(x, y, v128.or(f32x4.eq(x, splat(Infinity)), f32x4.ne(x, x)));
  y = v128.bitselect(splat(-Infinity), y, f32x4.eq(x, splat(0)));
  return v128.bitselect(splat(NaN), y, f32x4.lt(x, splat(0)));
}

/** tanh x for each lane. */
// @ts-ignore: decorator
@inline export function tanh4(x: v128): v128 {
  const sign = i32x4.splat(0x80000000);
  const a = v128.andnot(x, sign);
  // tanh(10) is 1 in f32; the clamp keeps expm1 finite (NaN passes through min).
  const u = expm1Pos4(f32x4.pmin(f32x4.add(a, a), splat(20)));
  const t = f32x4.div(u, f32x4.add(u, splat(2)));
  return v128.or(t, v128.and(x, sign));
}

/** 1 / (1 + e^-x) for each lane: one division, of 1 or e = e^-|x| (x < 0) by 1 + e. */
// @ts-ignore: decorator
@inline export function sigmoid4(x: v128): v128 {
  const e = exp4(f32x4.neg(f32x4.abs(x)));
  const num = v128.bitselect(e, f32x4.splat(1), f32x4.lt(x, f32x4.splat(0)));
  return f32x4.div(num, f32x4.add(f32x4.splat(1), e));
}

/** ln 2, for log2 = log · (1 / ln 2). */
export const INV_LN2: f32 = 1.0 / LN2;
