// The vectorised transcendentals of build/webtorch.wasm (assembly/kernels/vmath.ts) through the
// `unary` kernel, swept densely against float64 Math.*: the worst error in ulps of the f32 result
// is bounded per function (exp 1, log and tanh 2, sigmoid and erf 2.5, silu 3.5, gelu's tails
// more: see each case; each rounding step of the
// f32 formula adds up to half an ulp; PyTorch's vectorised CPU kernels compose Sleef's ≤ 1 ulp
// exp into the same formulas), over every binade of log's domain, exp's whole finite range with its
// subnormal results, and tanh, sigmoid, silu and the tanh form of gelu on the ranges where they
// are not constant. Each sweep's length is not a multiple of 4, so the tails (the same vector
// code on a padded vector) are in it, and so are contiguous and strided rows.
import { beforeAll, describe, expect, it } from 'vitest';
import { loadKernels } from './wasm.js';

interface Kernels {
  memory: WebAssembly.Memory;
  heapBase(): number;
  scratch(): number;
  unary(op: number, dt: number, outDt: number, a: number, out: number, p: number, s0: number, s1: number, s2: number): void;
}

let k: Kernels;
beforeAll(async () => {
  k = await loadKernels<Kernels>();
});

const f = Math.fround;

/** The distance between f32 neighbours at |v| (the subnormal spacing below 2^-126). */
function ulp(v: number): number {
  const a = Math.abs(f(v));
  if (a < 2 ** -126) return 2 ** -149;
  if (!Number.isFinite(a)) return Infinity;
  return 2 ** (Math.floor(Math.log2(a)) - 23);
}

/** Runs unary `op` over xs (contiguous, then every other element as a strided view) and returns both outputs. */
function run(op: number, xs: Float32Array): [Float32Array, Float32Array] {
  const n = xs.length, base = (k.heapBase() + 63) & ~63;
  const need = base + 16 * n + 65536;
  if (need > k.memory.buffer.byteLength) k.memory.grow(Math.ceil((need - k.memory.buffer.byteLength) / 65536));
  const a = base, o = base + 4 * n + 64, o2 = o + 4 * n + 64;
  new Float32Array(k.memory.buffer, a, n).set(xs);
  const d = new Int32Array(k.memory.buffer, k.scratch(), 8);
  d.set([1, n, n, 1, 0]);
  k.unary(op, 0, 0, a, o, k.scratch(), 0, 0, 0);
  const half = n >> 1;
  d.set([1, half, half, 2, 1]);
  k.unary(op, 0, 0, a, o2, k.scratch(), 0, 0, 0);
  return [new Float32Array(k.memory.buffer, o, n).slice(), new Float32Array(k.memory.buffer, o2, half).slice()];
}

/** The worst error in ulps of `ref` (float64) over the sweep; NaN and infinities must match exactly. */
function worstUlp(op: number, xs: Float32Array, ref: (x: number) => number): number {
  const [got, strided] = run(op, xs);
  let worst = 0;
  const one = (x: number, g: number, where: string) => {
    const r = ref(x), rf = f(r);
    if (Number.isNaN(r) || !Number.isFinite(rf)) {
      if (!Object.is(g, rf) && !(Number.isNaN(g) && Number.isNaN(rf))) throw new Error(`op ${op} ${where} at ${x}: got ${g}, expected ${rf}`);
      return;
    }
    const e = Math.abs(g - r) / ulp(rf);
    if (!(e <= 1e9)) throw new Error(`op ${op} ${where} at ${x}: got ${g}, expected ${r}`);
    worst = Math.max(worst, e);
  };
  for (let i = 0; i < xs.length; i++) one(xs[i], got[i], 'contiguous');
  for (let i = 0; i < strided.length; i++) one(xs[2 * i + 1], strided[i], 'strided');
  return worst;
}

/** n + 3 values evenly spaced over [lo, hi] (n + 3: a tail), then `extra`. */
function sweep(lo: number, hi: number, n: number, extra: number[] = []): Float32Array {
  const xs = new Float32Array(n + 3 + extra.length);
  for (let i = 0; i < n + 3; i++) xs[i] = lo + ((hi - lo) * i) / (n + 2);
  xs.set(extra, n + 3);
  return xs;
}

/** Every `step`-th positive f32 bit pattern from the smallest subnormal up to +inf, then `extra`. */
function binades(step: number, extra: number[]): Float32Array {
  const bits: number[] = [];
  for (let b = 1; b < 0x7f800000; b += step) bits.push(b);
  const xs = new Float32Array(new Uint32Array(bits).buffer);
  return Float32Array.from([...xs, ...extra]);
}

const SPECIAL = [NaN, Infinity, -Infinity, 0, -0];
const sigmoid = (x: number) => (x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x)));
/** erf by Simpson's rule on the integrand (1,000 panels per unit, an independent reference); erfc's continued fraction past 3. */
function erfRef(x: number): number {
  if (Number.isNaN(x)) return x;
  const a = Math.abs(x);
  let r: number;
  if (a > 3) {
    let t = 0;
    for (let k = 60; k >= 1; k--) t = (k / 2) / (a + t);
    r = 1 - Math.exp(-a * a) / Math.sqrt(Math.PI) / (a + t);
  } else {
    const n = Math.max(2, 2 * Math.ceil(a * 500)), h = a / n;
    let s = 1 + Math.exp(-a * a);
    for (let i = 1; i < n; i++) s += (i % 2 ? 4 : 2) * Math.exp(-((i * h) ** 2));
    r = (2 / Math.sqrt(Math.PI)) * (h / 3) * s;
  }
  return x < 0 ? -r : r;
}
/** erfc for a ≥ 0 through the same pieces, for gelu's negative tail without cancellation. */
function erfcRef(a: number): number {
  if (a > 3) {
    let t = 0;
    for (let k = 60; k >= 1; k--) t = (k / 2) / (a + t);
    return Math.exp(-a * a) / Math.sqrt(Math.PI) / (a + t);
  }
  return 1 - erfRef(a);
}
const geluRef = (x: number) => (x < 0 ? 0.5 * x * erfcRef(-x * Math.SQRT1_2) : x * (1 - 0.5 * erfcRef(x * Math.SQRT1_2)));
const geluTanh = (x: number) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));

describe('vectorised transcendentals (vmath.ts), within a few ulp', () => {
  const cases: [string, number, Float32Array, (x: number) => number, number][] = [
    ['exp', 2, sweep(-105, 89.5, 400001, SPECIAL), Math.exp, 1.01],
    ['exp near 0', 2, sweep(-1e-3, 1e-3, 100001), Math.exp, 1.01],
    ['log', 4, binades(997, [...SPECIAL, -1, -1e-30, 1]), Math.log, 2],
    ['log near 1', 4, sweep(0.5, 2, 200001), Math.log, 2],
    ['tanh', 10, sweep(-12, 12, 400001, [...SPECIAL, 1e-30, -1e-30, 1e-40]), Math.tanh, 2],
    ['tanh near 0', 10, sweep(-1e-3, 1e-3, 100001), Math.tanh, 2],
    ['sigmoid', 11, sweep(-110, 110, 400001, SPECIAL), sigmoid, 2.5],
    // Below -87 sigmoid's f32 result is subnormal, with fewer bits than an ulp of x·sigmoid(x) needs.
    ['silu', 15, sweep(-87, 90, 400001, SPECIAL), (x) => x * sigmoid(x), 3.5],
    // x·sigmoid(2u): sigmoid's relative error grows with |2u| (its condition number), so the bound
    // is wider: u's own f32 roundings become about |2u| ulp of the result (≤ 48 ulp, 3e-6 relative, on [-5, 12]).
    // x·A(x²): A ≈ 1.128 is good to an ulp of its own, which is up to 2 ulp of a result whose mantissa is near 2.
    ['erf', 17, sweep(-6, 6, 400001, [...SPECIAL, 1e-30, -1e-30, 1e-40]), erfRef, 2.5],
    ['erf near 0', 17, sweep(-1e-3, 1e-3, 100001), erfRef, 2.5],
    // x·Φ(x): u = x/√2 is rounded to f32 first (as PyTorch does), which costs about 2u² ulp in the
    // negative tail (erfc's condition number): ≤ 20 ulp (1.2e-6 relative) on [-4, 12].
    ['gelu', 13, sweep(-4, 12, 400001, [NaN, Infinity]), geluRef, 20],
    ['gelu (tanh form)', 14, sweep(-5, 12, 400001, [NaN, Infinity, -Infinity]), geluTanh, 48],
  ];
  for (const [name, op, xs, ref, bound] of cases) {
    it(`${name}: worst error within ${bound} ulp over ${xs.length} values`, () => {
      const w = worstUlp(op, xs, ref);
      console.log(`vmath ${name}: worst ${w.toFixed(3)} ulp`);
      expect(w).toBeLessThanOrEqual(bound);
    });
  }
});
