/**
 * The float32 math the elementwise expressions call (ts/ops/table.ts's `WGSL_PRELUDE`, shared by
 * the map kernels and the fused chains): sin, cos, exp, expm1, log, log1p, sigmoid and tanh, and
 * the bit tests they decide special values with.
 *
 * The hard part is relying on no more than WGSL promises, which is little:
 * - WGSL's `sin` and `cos` are accurate only to an absolute error of 2^-11 on [-pi, pi] and
 *   promise nothing outside it; `exp`, `log` and `tanh` lose relative accuracy near 0 and for
 *   large arguments. SwiftShader (Chromium's WebGPU when it has no GPU) is that loose, so the
 *   builtins are not used: each function reduces its argument and evaluates a polynomial in f32
 *   adds and multiplies, which WGSL rounds correctly (a compiler fusing them into FMAs only makes
 *   them more accurate), and divides only by numbers between 1 and 2.
 * - WGSL leaves the results for inf, NaN and out-of-range arguments to the implementation, and
 *   shader compilers assume finite math: NVIDIA's folds `x != x` to false and turns
 *   compare-selects into min/max, SwiftShader's `log(0)` is a large negative number and its
 *   `exp(NaN)` is inf. So special values are decided from the bits (`bitcast<u32>`), never by a
 *   float comparison, and chosen with `select` after the arithmetic; the arithmetic itself runs on
 *   clamped finite arguments, so what it does with inf or NaN never matters.
 * - sin and cos reduce x to r = x - k·pi/2 with |r| <= pi/4. Below 2^13 in magnitude that is
 *   Cody–Waite: pi/2 in four float32 parts, the first three with few enough significant bits that
 *   k times each is exact, so r keeps its bits even next to a multiple of pi/2. Beyond, where k
 *   no longer fits, it is Payne–Hanek in integers: the 24-bit mantissa times the bits of 2/pi
 *   that matter at its exponent (a branch only such arguments take). Then Cephes' polynomials
 *   for sin and cos on [-pi/4, pi/4], and the quadrant picks and signs them.
 * - exp and expm1 reduce by ln 2 the same way (Cody–Waite in two parts), evaluate e^r - 1 by a
 *   Taylor polynomial and scale by 2^k built from the exponent bits, as two factors so neither
 *   overflows; expm1 keeps e^r - 1 apart from 1 so small results keep their relative accuracy.
 *   log takes x = 2^e·m from the bits (subnormals normalised by integer shifts, so a GPU that
 *   flushes them cannot turn them into log 0), m in [sqrt(1/2), sqrt(2)), and Cephes' log(1 + z)
 *   polynomial, which log1p also takes directly for small x. sigmoid and tanh are built on exp
 *   and expm1 of -|x|, so nothing overflows and only numbers in [1, 2] are divided by.
 * The results match PyTorch's special values: exp(-inf) = 0, log(0) = -inf, log(x < 0) = NaN,
 * log1p(-1) = -inf, sin(inf) = NaN, sigmoid(±inf) = 1 and 0, tanh(±inf) = ±1, NaN in gives NaN.
 * The accuracy is checked against Math.* over dense sweeps on a device in
 * test/backend/transcendentals.test.ts.
 */

/** The WGSL functions (nan_f, inf_f, the bit tests and the transcendentals). */
export const MATH_WGSL = `
var<private> NAN_BITS: u32 = 0x7fc00000u;
var<private> INF_BITS: u32 = 0x7f800000u;
fn nan_f() -> f32 { return bitcast<f32>(NAN_BITS); }
fn inf_f() -> f32 { return bitcast<f32>(INF_BITS); }
fn isnan_f(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn nz_f(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) != 0u; }
fn isinf_f(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }
fn neg_bit(x: f32) -> bool { return (bitcast<u32>(x) >> 31u) == 1u; }
// 2^k for k in [-126, 127]
fn pow2_f(k: i32) -> f32 { return bitcast<f32>(u32(k + 127) << 23u); }
// (low, high) words of a * b
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
  let al = a & 0xffffu; let ah = a >> 16u; let bl = b & 0xffffu; let bh = b >> 16u;
  let lh = al * bh; let hl = ah * bl;
  let cross = ((al * bl) >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
  return vec2<u32>(a * b, ah * bh + (lh >> 16u) + (hl >> 16u) + (cross >> 16u));
}
// Payne–Hanek for |x| >= 2^13, finite (a: the bits of |x|): (bits of r, k mod 4) with |x| = k·pi/2 + r
fn trig_reduce_large(a: u32) -> vec2<u32> {
  // the bits of 2/pi after a zero word (bits of 2/pi before the first one do not count at any exponent here)
  var T = array<u32, 8>(0u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u, 0x3c439041u, 0xfe5163abu);
  let m = (a & 0x7fffffu) | 0x800000u;
  // |x| = m·2^(e - 23): the bits of 2/pi worth m·2^(e - 23)·2^-j for j <= e - 25 only add multiples of 4,
  // so a 96-bit window starting at j = e - 24 (table bit e + 7) gives |x|·2/pi mod 4 as m·W / 2^94
  let p = (a >> 23u) - 120u;
  let i = min(p >> 5u, 4u); let sh = p & 31u;
  let w0 = select((T[i] << sh) | (T[i + 1u] >> (32u - sh)), T[i], sh == 0u);
  let w1 = select((T[i + 1u] << sh) | (T[i + 2u] >> (32u - sh)), T[i + 1u], sh == 0u);
  let w2 = select((T[i + 2u] << sh) | (T[i + 3u] >> (32u - sh)), T[i + 2u], sh == 0u);
  // m·W mod 2^96 in three words r0 r1 r2: the top two bits are k mod 4, the rest the fraction
  let q2 = mul_wide(m, w2); let q1 = mul_wide(m, w1);
  let r1 = q2.y + q1.x;
  let r0 = q1.y + m * w0 + select(0u, 1u, r1 < q1.x);
  var hi = (r0 << 2u) | (r1 >> 30u); var lo = (r1 << 2u) | (q2.x >> 30u);
  // a fraction of 1/2 or more is the next k less a fraction: negate the 64-bit two's complement
  let neg = hi >> 31u;
  let k = ((r0 >> 30u) + neg) & 3u;
  hi ^= 0u - neg; lo ^= 0u - neg; lo += neg;
  hi += select(0u, 1u, neg == 1u && lo == 0u);
  // normalise the 64-bit fraction to its top 32 bits, convert and scale by pi/2
  let hz = hi == 0u;
  let h = select(hi, lo, hz); let l = select(lo, 0u, hz);
  let z = countLeadingZeros(h);
  let top = select((h << z) | (l >> (32u - z)), h, z == 0u);
  let f = f32(top) * pow2_f(-32 - i32(z + select(0u, 32u, hz)));
  let r = f * 1.5707963267948966;
  return vec2<u32>(bitcast<u32>(select(r, -r, neg == 1u)), k);
}
// (sin x, cos x)
fn sincos_f(x: f32) -> vec2<f32> {
  let u = bitcast<u32>(x); let a = u & 0x7fffffffu;
  // Cody–Waite: k·(each of the first three parts) is exact for |k| < 2^13
  let k = round(x * 0.6366197723675814);
  var r = (((x - k * 1.5703125) - k * 4.837512969970703125e-4) - k * 7.549533620476723e-8) - k * 2.5633440682570896e-12;
  var q = u32(i32(k));
  if (a >= 0x46000000u && a < 0x7f800000u) {
    let b = trig_reduce_large(a);
    let n = (u >> 31u) == 1u;
    r = select(bitcast<f32>(b.x), -bitcast<f32>(b.x), n);
    q = select(b.y, 4u - b.y, n);
  }
  let z = r * r;
  let s = ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
  let c = ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z - 0.5 * z + 1.0;
  let odd = (q & 1u) == 1u;
  var sv = select(s, c, odd);
  var cv = select(c, s, odd);
  sv = select(sv, -sv, (q & 2u) != 0u);
  cv = select(cv, -cv, ((q + 1u) & 2u) != 0u);
  // sin x = x below 2^-12 (keeps -0 and subnormals); inf and NaN give NaN
  sv = select(sv, x, a < 0x39800000u);
  return select(vec2<f32>(sv, cv), vec2<f32>(nan_f()), a >= 0x7f800000u);
}
fn sin_f(x: f32) -> f32 { return sincos_f(x).x; }
fn cos_f(x: f32) -> f32 { return sincos_f(x).y; }
// e^r - 1 for |r| <= ln2/2: degree-7 Taylor, r kept apart
fn expm1_poly(r: f32) -> f32 {
  let p = (((((1.0 / 5040.0 * r + 1.0 / 720.0) * r + 1.0 / 120.0) * r + 1.0 / 24.0) * r + 1.0 / 6.0) * r + 0.5);
  return p * r * r + r;
}
// r = y - k·ln2 with k = round(y·log2 e), |y| < 2^7: (k, r); k·LN2_HI is exact
fn exp_reduce(y: f32) -> vec2<f32> {
  let k = round(y * 1.4426950408889634);
  return vec2<f32>(k, (y - k * 0.693145751953125) - k * 1.428606765330187e-6);
}
fn exp_f(x: f32) -> f32 {
  let kr = exp_reduce(clamp(x, -104.0, 89.0));
  let n = i32(kr.x); let h = n >> 1u;
  let v = (expm1_poly(kr.y) + 1.0) * pow2_f(h) * pow2_f(n - h);
  return select(select(v, inf_f(), x > 88.72283935546875), x, isnan_f(x));
}
fn expm1_f(x: f32) -> f32 {
  let kr = exp_reduce(clamp(x, -30.0, 89.0));
  let q = expm1_poly(kr.y);
  let n = i32(kr.x); let h = n >> 1u;
  // 2^n (1 + q) - 1 = 2^n q + (2^n - 1), exact for n = 0; from n = 64 the 1 does not show and 2^n is two factors
  let s = pow2_f(min(n, 63));
  let v = select((q + 1.0) * pow2_f(h) * pow2_f(n - h), s * q + (s - 1.0), n < 64);
  let a = bitcast<u32>(x) & 0x7fffffffu;
  return select(select(v, inf_f(), x > 88.72283935546875), x, a < 0x33000000u || a > 0x7f800000u);
}
// log(1 + z) for z in [sqrt(1/2) - 1, sqrt(2) - 1] (Cephes logf)
fn log1p_core(z: f32) -> f32 {
  var p = 7.0376836292e-2;
  p = p * z - 1.1514610310e-1;
  p = p * z + 1.1676998740e-1;
  p = p * z - 1.2420140846e-1;
  p = p * z + 1.4249322787e-1;
  p = p * z - 1.6668057665e-1;
  p = p * z + 2.0000714765e-1;
  p = p * z - 2.4999993993e-1;
  p = p * z + 3.3333331174e-1;
  let z2 = z * z;
  return z + (z2 * z * p - 0.5 * z2);
}
// log x for the bits u of a positive finite x: x = 2^e·m with m in [sqrt(1/2), sqrt(2))
fn log_bits(u: u32) -> f32 {
  let ex = u >> 23u;
  let mant0 = u & 0x7fffffu;
  // a subnormal's leading bit moves up to bit 23
  let sh = countLeadingZeros(mant0) - 8u;
  let sub = ex == 0u;
  let mant = select(mant0, (mant0 << sh) & 0x7fffffu, sub);
  let big = mant > 0x3504f3u;
  let e = select(i32(ex) - 127, -126 - i32(sh), sub) + select(0, 1, big);
  let m = bitcast<f32>(mant | select(0x3f800000u, 0x3f000000u, big));
  let ef = f32(e);
  return ef * 0.693145751953125 + (ef * 1.428606765330187e-6 + log1p_core(m - 1.0));
}
fn log_f(x: f32) -> f32 {
  let u = bitcast<u32>(x); let a = u & 0x7fffffffu;
  var v = select(log_bits(u), inf_f(), u == 0x7f800000u);
  v = select(v, -inf_f(), a == 0u);
  return select(v, nan_f(), u > 0x80000000u || a > 0x7f800000u);
}
fn log1p_f(x: f32) -> f32 {
  let u = bitcast<u32>(x); let a = u & 0x7fffffffu;
  // small x: the core on x itself; else log(1 + x), exact for x in [-1, -1/2] and a relative 2^-24 off beyond
  var v = select(log_f(1.0 + x), log1p_core(x), u <= 0x3ed413ccu || (u >= 0x80000000u && u <= 0xbe95f619u));
  // tiny x, +inf and NaN give x; -1 gives -inf, below -1 NaN
  v = select(v, x, a < 0x33000000u || (a >= 0x7f800000u && u != 0xff800000u));
  v = select(v, -inf_f(), u == 0xbf800000u);
  return select(v, nan_f(), u > 0xbf800000u && a <= 0x7f800000u);
}
// 1 / (1 + e^-x) from t = e^-|x|: 1 / (1 + t) or t / (1 + t) by the sign
fn sigmoid_f(x: f32) -> f32 {
  let t = exp_f(-abs(x));
  let p = 1.0 / (1.0 + t);
  return select(select(p, t * p, neg_bit(x)), x, isnan_f(x));
}
// tanh |x| = -t / (t + 2) with t = e^(-2|x|) - 1 in [-1, 0], the sign of x put back
fn tanh_f(x: f32) -> f32 {
  let a = bitcast<u32>(x) & 0x7fffffffu;
  let t = expm1_f(-2.0 * bitcast<f32>(a));
  let v = bitcast<u32>(-t / (t + 2.0)) | (bitcast<u32>(x) & 0x80000000u);
  return select(bitcast<f32>(v), x, a < 0x39800000u || a > 0x7f800000u);
}
`;
