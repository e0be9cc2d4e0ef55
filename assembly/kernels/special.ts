// Scalar math that AssemblyScript's Math lacks or gets "wrong" for PyTorch.
//
// erf/erfc: no library version exists, so two exactly-summable forms are used.
// For |x| < 2.5 the series erf(x) = 2/sqrt(pi) * e^(-x^2) * sum (2x^2)^n x / (2n+1)!!
// has only positive terms (no cancellation) and reaches ~1e-16 relative error.
// For |x| >= 2.5 the Laplace continued fraction
//   erfc(x) = e^(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
// converges to full f64 precision within 60 levels, evaluated back to front.
// gelu uses erfc so that x * Phi(x) keeps its relative accuracy for large -x.
//
// pow follows C (and PyTorch) rather than JS: pow(1, y) = 1 and pow(x, 0) = 1
// even for NaN, and pow(-1, +-Inf) = 1.

const TWO_OVER_SQRT_PI: f64 = 1.1283791670955126;
const INV_SQRT_PI: f64 = 0.5641895835477563;

function erfSeries(x: f64): f64 {
  const x2 = x * x;
  let term = x;
  let sum = x;
  const a = Math.abs(x);
  for (let n = 1; n < 200; n++) {
    term *= 2 * x2 / <f64>(2 * n + 1);
    sum += term;
    if (Math.abs(term) <= a * 1e-17 || Math.abs(term) <= Math.abs(sum) * 1e-17) break;
  }
  return TWO_OVER_SQRT_PI * Math.exp(-x2) * sum;
}

function erfcFraction(x: f64): f64 {
  let t: f64 = 0;
  for (let k = 60; k >= 1; k--) t = (<f64>k * 0.5) / (x + t);
  return Math.exp(-x * x) * INV_SQRT_PI / (x + t);
}

/** Complementary error function, f64, ~1e-15 relative error. */
export function erfc(x: f64): f64 {
  if (isNaN(x)) return x;
  if (x >= 2.5) return x > 27 ? 0 : erfcFraction(x);
  if (x <= -2.5) return x < -6 ? 2 : 2 - erfcFraction(-x);
  return 1 - erfSeries(x);
}

/** Error function, f64, ~1e-16 absolute error. */
export function erf(x: f64): f64 {
  if (isNaN(x)) return x;
  const a = Math.abs(x);
  if (a < 2.5) return erfSeries(x);
  const r = a > 6 ? 1.0 : 1 - erfcFraction(a);
  return x < 0 ? -r : r;
}

/** pow with C99 special cases (what PyTorch's std::pow gives). */
export function powC(x: f64, y: f64): f64 {
  if (y == 0 || x == 1) return 1;
  if (x == -1 && !isFinite(y) && !isNaN(y)) return 1;
  return Math.pow(x, y);
}

/** Integer power with wrap-around; negative exponents give 0 except for base +-1. */
export function powI(base: i64, e: i64): i64 {
  if (e < 0) {
    if (base == 1) return 1;
    if (base == -1) return (e & 1) != 0 ? -1 : 1;
    return 0;
  }
  let r: i64 = 1;
  let b = base;
  while (e != 0) {
    if ((e & 1) != 0) r *= b;
    b *= b;
    e >>>= 1;
  }
  return r;
}
