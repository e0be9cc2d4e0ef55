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
// - expNeg4, for the softmax rows only (x − max ≤ 0): degree 5 and one power-of-two factor,
//   subnormal results flushed to 0 (XNNPACK's softmax does the same); within a few ulp.
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
/** MAGIC + 127: the sum's low bits are then n + 127, an exponent field's value (`expNeg4`). */
const MAGIC_BIASED: f32 = 12583039.0;

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

// ---- erf and gelu ----
//
// erf(x) = x·A(x²) for |x| < 1; beyond, 1 − erfc(|x|) with the sign of x. erfc(a) for a ≥ 0.5 is
// e^(−a²)·g(1/a)/a, where g(v) = a·erfc(a)·e^(a²) is smooth in v = 1/a: two polynomials in v, on
// a in [0.5, 2.5) and [2.5, 10] (beyond 10, erfc is 0 in f32), fitted by weighted least squares
// on Chebyshev nodes in float64, then checked in f32 Horner form (under 1.2e-7 relative).
// e^(−a²) takes a as hi + lo, hi with 12 significant bits, so hi² is exact and the square's
// rounding does not grow with a² in the tail. gelu(x) = x·Φ(x) goes through erfc where 1 + erf
// would cancel: 0.5·x·erfc(−u) for u = x/√2 ≤ −0.5, x·(1 − 0.5·erfc(u)) for u ≥ 0.5, and
// 0.5·x·(1 + u·A(u²)) between.

// @ts-ignore: decorator
@inline function poly8(w: v128, c0: f32, c1: f32, c2: f32, c3: f32, c4: f32, c5: f32, c6: f32, c7: f32): v128 {
  let p = f32x4.splat(c7);
  p = f32x4.add(f32x4.mul(p, w), f32x4.splat(c6));
  p = f32x4.add(f32x4.mul(p, w), f32x4.splat(c5));
  p = f32x4.add(f32x4.mul(p, w), f32x4.splat(c4));
  p = f32x4.add(f32x4.mul(p, w), f32x4.splat(c3));
  p = f32x4.add(f32x4.mul(p, w), f32x4.splat(c2));
  p = f32x4.add(f32x4.mul(p, w), f32x4.splat(c1));
  return f32x4.add(f32x4.mul(p, w), f32x4.splat(c0));
}

/** erf(x)/x as a polynomial in t = x² on [0, 1]. */
// @ts-ignore: decorator
@inline function erfSmall(t: v128): v128 {
  return poly8(t, 1.12837923, -0.376126379, 0.112837821, -0.0268653929, 0.00522092311, -0.000848250755, 0.000112546411, -9.63499133e-06);
}

/** erfc(a) for lanes a ≥ 0.5 (NaN stays NaN, +inf gives 0). */
// @ts-ignore: decorator
@inline function erfcPos4(a: v128): v128 {
  const ac = f32x4.pmin(a, splat(10));
  const v = f32x4.div(splat(1), ac);
  // g on a in [0.5, 2.5): degree 12 in v − 1.2
  const w1 = f32x4.sub(v, splat(1.2));
  let g1 = poly8(w1, -0.00110294053, 0.000762024662, -0.000185760277, -0.000607554219, 0.000424977305, 0, 0, 0);
  g1 = f32x4.add(f32x4.mul(g1, w1), splat(0.00248902943));
  g1 = f32x4.add(f32x4.mul(g1, w1), splat(-0.00485394523));
  g1 = f32x4.add(f32x4.mul(g1, w1), splat(0.00723358523));
  g1 = f32x4.add(f32x4.mul(g1, w1), splat(-0.00737503823));
  g1 = f32x4.add(f32x4.mul(g1, w1), splat(-0.00156543625));
  g1 = f32x4.add(f32x4.mul(g1, w1), splat(0.0370760299));
  g1 = f32x4.add(f32x4.mul(g1, w1), splat(-0.139657795));
  g1 = f32x4.add(f32x4.mul(g1, w1), splat(0.398170918));
  // g on a in [2.5, 10]: degree 8 in v − 0.25
  const w2 = f32x4.sub(v, splat(0.25));
  let g2 = poly8(w2, -0.119446941, -0.167786181, 0.219520301, -0.0280898847, -0.273941576, 0.411710292, -0.0267948955, -0.74796319);
  g2 = f32x4.add(f32x4.mul(g2, w2), splat(0.547997832));
  const g = v128.bitselect(g1, g2, f32x4.gt(v, splat(0.4)));
  // e^(−a²) with a = hi + lo: a² = hi² + lo·(a + hi), hi² exact.
  const hi = v128.and(ac, i32x4.splat(0xfffff000));
  const lo = f32x4.sub(ac, hi);
  const e = f32x4.mul(exp4(f32x4.neg(f32x4.mul(hi, hi))), exp4(f32x4.neg(f32x4.mul(lo, f32x4.add(ac, hi)))));
  const r = f32x4.mul(f32x4.mul(e, g), v);
  return v128.bitselect(splat(0), r, f32x4.gt(a, splat(10)));
}

/** erf x for each lane. */
// @ts-ignore: decorator
@inline export function erf4(x: v128): v128 {
  const sign = i32x4.splat(0x80000000);
  const a = v128.andnot(x, sign);
  const small = f32x4.mul(x, erfSmall(f32x4.mul(x, x)));
  const big = v128.or(f32x4.sub(splat(1), erfcPos4(f32x4.pmax(a, splat(1)))), v128.and(x, sign));
  return v128.bitselect(small, big, f32x4.lt(a, splat(1)));
}

/** gelu x = x·Φ(x) (the erf form) for each lane. */
// @ts-ignore: decorator
@inline export function gelu4(x: v128): v128 {
  const u = f32x4.mul(x, splat(0.70710678118654752));
  const au = f32x4.abs(u);
  const half = f32x4.mul(splat(0.5), x);
  const mid = f32x4.mul(half, f32x4.add(splat(1), f32x4.mul(u, erfSmall(f32x4.mul(u, u)))));
  const ec = erfcPos4(f32x4.pmax(au, splat(0.5)));
  const tail = v128.bitselect(f32x4.mul(half, ec), f32x4.mul(x, f32x4.sub(splat(1), f32x4.mul(splat(0.5), ec))), f32x4.lt(u, splat(0)));
  return v128.bitselect(mid, tail, f32x4.lt(au, splat(0.5)));
}

/**
 * e^x for lanes x ≤ 0 (a softmax row minus its max): a degree-5 polynomial (fitted as the others,
 * within 2.6 ulp on the reduced range) and one power-of-two factor; results that would be
 * subnormal (x < −87.33) are 0, as XNNPACK's softmax makes them. About a third fewer
 * instructions than `exp4`, for the row kernels, where a few ulp disappear in the row's sum.
 */
// @ts-ignore: decorator
@inline export function expNeg4(x: v128): v128 {
  // The magic number carries the exponent bias: t's low bits are n + 127, so 2^n is t's bits
  // shifted into the exponent field, one instruction (n + 127 is in 1..127 for x ≥ −87.33).
  const t = f32x4.add(f32x4.mul(x, splat(LOG2E)), splat(MAGIC_BIASED));
  const n = f32x4.sub(t, splat(MAGIC_BIASED));
  const r = f32x4.sub(f32x4.sub(x, f32x4.mul(n, splat(LN2_HI))), f32x4.mul(n, splat(LN2_LO)));
  let p = splat(0.00828578323);
  p = f32x4.add(f32x4.mul(p, r), splat(0.0418731682));
  p = f32x4.add(f32x4.mul(p, r), splat(0.166675016));
  p = f32x4.add(f32x4.mul(p, r), splat(0.49999395));
  p = f32x4.add(f32x4.mul(p, r), splat(0.999999881));
  p = f32x4.add(f32x4.mul(p, r), splat(1));
  // the flush as an andnot (a bitselect against 0 takes three x64 instructions)
  return v128.andnot(f32x4.mul(p, i32x4.shl(t, 23)), f32x4.lt(x, splat(-87.33)));
}
