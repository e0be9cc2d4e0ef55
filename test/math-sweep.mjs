/**
 * Dense sweeps of the float32 transcendentals (sin, cos, exp, expm1, log, log1p, sigmoid, tanh)
 * on a device, against JavaScript's Math in float64: the worst error of each op in units in the
 * last place of the float32 result, and every special value that comes out wrong. Node
 * (test/backend/transcendentals.test.ts, lavapipe) and the browser (test/browser/browser.test.ts,
 * SwiftShader) run the same sweep; plain JavaScript so a page can import it as it is.
 *
 * The inputs: evenly spaced grids (sin and cos over [-20, 20] and out to the end of the Cody–Waite
 * range, 8200; exp's range; log's [0.5, 2]; small arguments), float32 neighbours of multiples of
 * pi/2 up to 2^17 (where sin or cos is tiny), pseudo-random bit patterns over every finite float32
 * (a fixed xorshift, so a failure reproduces) and the special values. A result that is
 * subnormal may be flushed to zero (WGSL allows it), so below the smallest normal the error is
 * measured in units of the smallest normal.
 */

const f = Math.fround;
const F = new Float32Array(1), U = new Uint32Array(F.buffer);

/** The units in the last place of a float32 at `v`; below the smallest normal, the smallest normal (a flushed result is 1 off). */
function ulp(v) {
  F[0] = Math.abs(v);
  const e = (U[0] >>> 23) - 127;
  return e < -126 ? 2 ** -126 : 2 ** (e - 23);
}

/** Every op of the sweep, its reference in float64. */
export const MATH_OPS = {
  sin: Math.sin, cos: Math.cos, exp: Math.exp, expm1: Math.expm1, log: Math.log, log1p: Math.log1p,
  sigmoid: (x) => 1 / (1 + Math.exp(-x)), tanh: Math.tanh,
};

/**
 * The worst error each op may have, in ulps: a few, far tighter than the goldens' 1e-5 relative.
 * sigmoid and tanh divide once, and WGSL lets a division be 2.5 ulp off.
 */
export const MATH_ULP_BOUNDS = { sin: 3, cos: 3, exp: 2, expm1: 2, log: 2, log1p: 3, sigmoid: 4, tanh: 4 };

/** The special values: each op's result for them must be exactly the reference's where that is 0, ±inf or NaN. */
export const SPECIALS = [0, -0, Infinity, -Infinity, NaN, -NaN, 1, -1, -2, 0.5, -0.5, 1e-40, -1e-40, 2 ** -149, 2 ** -126, 3.4028234663852886e38, -3.4028234663852886e38,
  8192, -8192, 8191.999, 88.72283935546875, 88.72284698486328, 89, -87.5, -103.9, -104, -200, 1e-8, -1e-8, -0.99999994, -1.0000001, 1e30];

const grid = (lo, hi, n) => Float32Array.from({ length: n + 1 }, (_, i) => lo + ((hi - lo) * i) / n);

/** `n` pseudo-random finite float32 bit patterns and their negatives (xorshift32 from a fixed seed). */
function randomBits(n) {
  const out = new Float32Array(2 * n), u = new Uint32Array(out.buffer);
  let s = 0x9e3779b9;
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
    const b = (s >>> 0) % 0x7f800000;
    u[2 * i] = b;
    u[2 * i + 1] = (b | 0x80000000) >>> 0;
  }
  return out;
}

/** The float32 nearest k·pi/2 and its neighbours, for k up to 2^17. */
function nearHalfPi() {
  const out = new Float32Array(3 * 2 ** 17), u = new Uint32Array(out.buffer);
  for (let k = 0; k < 2 ** 17; k++) {
    out[3 * k] = (k * Math.PI) / 2;
    u[3 * k + 1] = u[3 * k] + 1;
    u[3 * k + 2] = Math.max(u[3 * k], 1) - 1;
  }
  return out;
}

/** The inputs of each op (besides the specials and the random bits, which every op takes). */
export function sweepInputs(scale = 1) {
  const n = Math.round(2 ** 19 * scale);
  const trig = [grid(-20, 20, n), grid(-8200, 8200, n), nearHalfPi()];
  const small = grid(-1 / 64, 1 / 64, n / 4);
  const expRange = grid(-105, 90, n);
  return {
    sin: trig, cos: trig,
    exp: [expRange, grid(-1, 1, n / 4)], expm1: [expRange, grid(-1, 1, n / 4), small],
    log: [grid(0, 2, n), grid(0, 1e6, n / 4)], log1p: [grid(-1, 2, n), small, grid(0, 1e6, n / 4)],
    sigmoid: [grid(-110, 110, n), small], tanh: [grid(-20, 20, n), small],
  };
}

/**
 * Runs the sweep on `device`: per op, the worst error in ulps (`worst`, at input `at`, with what
 * came out and the reference), how many inputs ran, and the special values that came out wrong.
 * @param {typeof import('../dist/webtorch.js')} torch
 * @param {string} device
 * @param {number} [scale] the grids' density (1: 2^19 points a grid)
 */
export async function mathSweep(torch, device, scale = 1) {
  if (device !== 'cpu') await torch.gpu.init();
  const inputs = sweepInputs(scale), bits = randomBits(Math.round(2 ** 18 * scale)), specials = Float32Array.from(SPECIALS);
  const report = {};
  for (const [op, ref] of Object.entries(MATH_OPS)) {
    const parts = [...inputs[op], bits, specials], len = parts.reduce((s, p) => s + p.length, 0);
    const xs = new Float32Array(len);
    parts.reduce((at, p) => (xs.set(p, at), at + p.length), 0);
    const x = torch.tensor(xs, { device }), y = x[op]();
    const got = await y.data();
    x.dispose();
    y.dispose();
    const r = { ran: len, worst: 0, at: 0, got: 0, want: 0, wrongSpecials: [] };
    for (let i = 0; i < len; i++) {
      const w = ref(xs[i]), g = got[i];
      if (Number.isNaN(w) || !Number.isFinite(w) || w === 0 || !Number.isFinite(g)) {
        if (!(Number.isNaN(w) ? Number.isNaN(g) : Object.is(g, f(w)))) r.wrongSpecials.push({ x: xs[i], got: g, want: w });
        continue;
      }
      const e = Math.abs(g - w) / ulp(w);
      if (e > r.worst) Object.assign(r, { worst: e, at: xs[i], got: g, want: w });
    }
    r.wrongSpecials = r.wrongSpecials.slice(0, 5);
    report[op] = r;
  }
  return report;
}
