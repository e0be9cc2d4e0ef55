// Direct tests of build/webtorch.wasm against plain-JS references.
//
// The hard part is independent references: f16/bf16 rounding is checked
// against a nearest-value search over the target format (not bit tricks), erf
// against Simpson integration, and matmul against a naive f64 loop. Tensors are
// bump-allocated above heapBase() and the allocator is reset before each test.
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { arena, loadKernels } from './wasm.js';

interface Kernels {
  memory: WebAssembly.Memory;
  heapBase(): number;
  scratch(): number;
  copy(srcDt: number, dstDt: number, src: number, dst: number, p: number): void;
  copyStrided(srcDt: number, dstDt: number, src: number, dst: number, p: number): void;
  unary(op: number, dt: number, outDt: number, a: number, out: number, p: number, s0: number, s1: number, s2: number): void;
  binary(op: number, dt: number, outDt: number, a: number, b: number, out: number, p: number, alpha: number): number;
  where(dt: number, c: number, a: number, b: number, out: number, p: number): void;
  reduce(op: number, dt: number, outDt: number, a: number, out: number, outer: number, inner: number): void;
  matmul(dt: number, a: number, b: number, out: number, p: number, ws: number): void;
  matmulPart(dt: number, a: number, b: number, out: number, p: number, ws: number, part: number, parts: number): void;
  matmulWorkspaceBytes(M: number, N: number, K: number): number;
  fill(dt: number, out: number, n: number, value: number): void;
  arange(dt: number, out: number, n: number, start: number, step: number): void;
  copyChecked(srcDt: number, dstDt: number, src: number, dst: number, p: number): number;
}

const F32 = 0, I32 = 1, U8 = 2, BOOL = 3, F16 = 4, BF16 = 5;
const SIZE = [4, 4, 1, 1, 2, 2];
let k: Kernels;
const heap = arena(() => k);

beforeAll(async () => {
  k = await loadKernels<Kernels>();
});
beforeEach(() => heap.reset());

// ---- memory helpers -------------------------------------------------------
const alloc = (bytes: number): number => heap.alloc(bytes);
function view(dt: number, ptr: number, n: number): Float32Array | Int32Array | Uint8Array | Uint16Array {
  const b = k.memory.buffer;
  if (dt === F32) return new Float32Array(b, ptr, n);
  if (dt === I32) return new Int32Array(b, ptr, n);
  if (dt === U8 || dt === BOOL) return new Uint8Array(b, ptr, n);
  return new Uint16Array(b, ptr, n);
}
/** Writes values (raw codes for f16/bf16) and returns the pointer. */
function put(dt: number, values: ArrayLike<number>): number {
  const p = alloc(values.length * SIZE[dt]);
  view(dt, p, values.length).set(Array.from(values));
  return p;
}
function get(dt: number, ptr: number, n: number): number[] { return Array.from(view(dt, ptr, n)); }
function out(dt: number, n: number, garbage = 0x5a): number {
  const p = alloc(n * SIZE[dt]);
  new Uint8Array(k.memory.buffer, p, n * SIZE[dt]).fill(garbage);
  return p;
}
function desc(words: number[]): number {
  new Int32Array(k.memory.buffer, k.scratch(), words.length).set(words);
  return k.scratch();
}
const numel = (shape: number[]) => shape.reduce((a, b) => a * b, 1);
const contig = (shape: number[]) => shape.map((_, i) => numel(shape.slice(i + 1)));
/** [r, n, shape, (strides, offset) per operand]. */
function sdesc(shape: number[], ...ops: [number[], number][]): number {
  return desc([shape.length, numel(shape), ...shape, ...ops.flatMap(([s, o]) => [...s, o])]);
}
/** Row-major gather of a strided view, the JS reference for every kernel. */
function gather<T>(src: ArrayLike<T>, shape: number[], strides: number[], offset: number): T[] {
  const res: T[] = [];
  const n = numel(shape);
  for (let i = 0; i < n; i++) {
    let rem = i, at = offset;
    for (let d = shape.length - 1; d >= 0; d--) { at += (rem % shape[d]) * strides[d]; rem = Math.floor(rem / shape[d]); }
    res.push(src[at]);
  }
  return res;
}

function close(got: number, ref: number, rel: number, abs: number): boolean {
  if (Number.isNaN(ref)) return Number.isNaN(got);
  if (!Number.isFinite(ref)) return got === ref;
  return Math.abs(got - ref) <= rel * Math.abs(ref) + abs;
}
function expectAll(got: number[], ref: number[], rel = 0, abs = 0, label = ''): void {
  expect(got.length).toBe(ref.length);
  for (let i = 0; i < ref.length; i++) {
    if (!close(got[i], ref[i], rel, abs)) {
      throw new Error(`${label} [${i}]: got ${got[i]}, expected ${ref[i]}`);
    }
  }
}
const f = Math.fround;

// ---- independent f16 / bf16 / erf references --------------------------------
function halfValue(h: number): number {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, m = h & 1023;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * 2 ** (e - 15) * (1 + m / 1024);
}
/** Nearest half code by search; ties to the even code. */
function refHalf(x: number): number {
  if (Number.isNaN(x)) return -1;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a >= 65520) return sign | 0x7c00;
  let lo = 0, hi = 0x7bff;
  while (hi - lo > 1) { const mid = (lo + hi) >> 1; if (halfValue(mid) <= a) lo = mid; else hi = mid; }
  const dl = a - halfValue(lo), dh = halfValue(hi) - a;
  return sign | (dl < dh ? lo : dh < dl ? hi : (lo & 1 ? hi : lo));
}
const bits = (x: number) => new Uint32Array(new Float32Array([x]).buffer)[0];
const fromBits = (u: number) => new Float32Array(new Uint32Array([u >>> 0]).buffer)[0];
function refBf16(x: number): number {
  if (Number.isNaN(x)) return -1;
  const lo = bits(x) >>> 16, hi = lo + 1;
  if (!Number.isFinite(x)) return lo;
  const a = fromBits(lo << 16);
  const b = (hi & 0x7fff) === 0x7f80 ? Math.sign(x) * 2 ** 128 : fromBits(hi << 16); // Inf sits at 2^128
  const dl = Math.abs(x - a), dh = Math.abs(b - x);
  return dl < dh ? lo : dh < dl ? hi : (lo & 1 ? hi : lo);
}
function erfRef(x: number): number {
  if (Math.abs(x) > 6) return Math.sign(x);
  const n = 4000, h = x / n;
  let s = 1 + Math.exp(-x * x);
  for (let i = 1; i < n; i++) s += (i % 2 ? 4 : 2) * Math.exp(-((i * h) ** 2));
  return (s * h) / 3 * 2 / Math.sqrt(Math.PI);
}

// ---- copy -------------------------------------------------------------------
describe('copy / copyStrided', () => {
  it('f32 -> f16 rounds to nearest even across normal, subnormal and overflow ranges', () => {
    const xs = [0, -0, 1, -1, 65504, 65519, 65520, 1e5, -65520, 1e-8, 2 ** -25, 3e-8, 5.96e-8, 2 ** -24 * 1.5,
      2 ** -24 * 2.5, 6.1e-5, 2 ** -14, 1 / 3, 0.1, 2049, 2051, Infinity, -Infinity, NaN, 1 + 2 ** -11, 1 + 3 * 2 ** -11];
    const rnd = lcg(11);
    for (let i = 0; i < 400; i++) xs.push(f((rnd() - 0.5) * 2 ** (rnd() * 44 - 26)));
    const src = put(F32, xs.map(f));
    const dst = out(F16, xs.length);
    k.copy(F32, F16, src, dst, sdesc([xs.length], [[1], 0]));
    const got = get(F16, dst, xs.length);
    xs.forEach((x, i) => {
      const ref = refHalf(f(x));
      if (ref < 0) expect((got[i] & 0x7c00) === 0x7c00 && (got[i] & 0x3ff) !== 0).toBe(true);
      else if (got[i] !== ref) throw new Error(`f16(${x}): got ${got[i].toString(16)}, expected ${ref.toString(16)}`);
    });
    expect(got.slice(4, 8)).toEqual([0x7bff, 0x7bff, 0x7c00, 0x7c00]);
    expect(got[9]).toBe(0);
  });

  it('f16 -> f32 is exact for every half code', () => {
    const codes = Array.from({ length: 65536 }, (_, i) => i);
    const src = put(F16, codes);
    const dst = out(F32, codes.length);
    k.copy(F16, F32, src, dst, sdesc([codes.length], [[1], 0]));
    expectAll(get(F32, dst, codes.length), codes.map(halfValue), 0, 0, 'f16->f32');
  });

  it('f32 <-> bf16 rounds to nearest even and keeps NaN', () => {
    const xs = [0, -0, 1, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 3.4028234663852886e38, 1e-40, Infinity, -Infinity, NaN, 65504, 1e-8];
    const rnd = lcg(13);
    for (let i = 0; i < 400; i++) xs.push(f((rnd() - 0.5) * 2 ** (rnd() * 200 - 100)));
    const src = put(F32, xs.map(f));
    const mid = out(BF16, xs.length);
    k.copy(F32, BF16, src, mid, sdesc([xs.length], [[1], 0]));
    const got = get(BF16, mid, xs.length);
    xs.forEach((x, i) => {
      const ref = refBf16(f(x));
      if (ref < 0) expect((got[i] & 0x7f80) === 0x7f80 && (got[i] & 0x7f) !== 0).toBe(true);
      else if (got[i] !== ref) throw new Error(`bf16(${x}): got ${got[i].toString(16)}, expected ${ref.toString(16)}`);
    });
    expect(got[5]).toBe(0x7f80); // FLT_MAX rounds up to Inf
    const back = out(F32, xs.length);
    k.copy(BF16, F32, mid, back, sdesc([xs.length], [[1], 0]));
    expectAll(get(F32, back, xs.length), got.map((h) => fromBits(h << 16)), 0, 0, 'bf16->f32');
  });

  it('f16 <-> bf16 goes through exact f32', () => {
    const src = put(F16, [0x3c00, 0x7bff, 0x0001, 0x7e00, 0xfc00, 0x3555]);
    const dst = out(BF16, 6);
    k.copy(F16, BF16, src, dst, sdesc([6], [[1], 0]));
    expect(get(BF16, dst, 6).map((h, i) => (i === 3 ? Number.isNaN(fromBits(h << 16)) : h)))
      .toEqual([0x3f80, refBf16(65504), refBf16(2 ** -24), true, 0xff80, refBf16(halfValue(0x3555))]);
  });

  it('integer, u8 and bool conversions', () => {
    const xs = [-2.7, 2.7, -0, 0.5, NaN, 300, -1, 255.9, 1e3];
    const src = put(F32, xs);
    const toI = out(I32, xs.length), toU = out(U8, xs.length), toB = out(BOOL, xs.length);
    const d = sdesc([xs.length], [[1], 0]);
    k.copy(F32, I32, src, toI, d);
    k.copy(F32, U8, src, toU, d);
    k.copy(F32, BOOL, src, toB, d);
    expect(get(I32, toI, 9).filter((_, i) => i !== 4)).toEqual([-2, 2, 0, 0, 300, -1, 255, 1000]);
    expect(get(U8, toU, 9).filter((_, i) => i !== 4)).toEqual([254, 2, 0, 0, 44, 255, 255, 232]);
    expect(get(BOOL, toB, 9)).toEqual([1, 1, 0, 1, 1, 1, 1, 1, 1]);
    const ints = put(I32, [256, -1, 7, 16777217, 0]);
    const u = out(U8, 5), fl = out(F32, 5), b = out(BOOL, 5);
    const d5 = sdesc([5], [[1], 0]);
    k.copy(I32, U8, ints, u, d5);
    k.copy(I32, F32, ints, fl, d5);
    k.copy(I32, BOOL, ints, b, d5);
    expect(get(U8, u, 5)).toEqual([0, 255, 7, 1, 0]);
    expect(get(F32, fl, 5)).toEqual([256, -1, 7, 16777216, 0]);
    expect(get(BOOL, b, 5)).toEqual([1, 1, 1, 1, 0]);
    const raw = put(BOOL, [0, 1, 2, 255]);
    const bb = out(BOOL, 4), bi = out(I32, 4), bf = out(F32, 4);
    const d4 = sdesc([4], [[1], 0]);
    k.copy(BOOL, BOOL, raw, bb, d4);
    k.copy(BOOL, I32, raw, bi, d4);
    k.copy(U8, F32, raw, bf, d4);
    expect(get(BOOL, bb, 4)).toEqual([0, 1, 1, 1]);
    expect(get(I32, bi, 4)).toEqual([0, 1, 1, 1]);
    expect(get(F32, bf, 4)).toEqual([0, 1, 2, 255]);
  });

  it('gathers transposed, sliced, broadcast and rank-0 views', () => {
    const data = Array.from({ length: 60 }, (_, i) => i * 1.5 - 7);
    const src = put(F32, data);
    const cases: [number[], number[], number][] = [
      [[4, 3], [1, 4], 0], [[3, 4, 5], [20, 5, 1], 0], [[5, 4, 3], [1, 5, 20], 0], [[2, 3], [10, 2], 7],
      [[3, 4], [0, 1], 2], [[], [], 9], [[2, 1, 3, 1, 2], [30, 99, 5, 99, 1], 3], [[0, 3], [3, 1], 0], [[1, 1, 1, 2, 2, 2, 2, 2], [0, 0, 0, 16, 8, 4, 2, 1], 1],
    ];
    for (const [shape, strides, off] of cases) {
      const n = numel(shape);
      const dst = out(F32, n + 1);
      k.copy(F32, F32, src, dst, sdesc(shape, [strides, off]));
      expectAll(get(F32, dst, n), gather(data, shape, strides, off), 0, 0, `copy ${shape}`);
      expect(get(U8, dst + 4 * n, 4)).toEqual([0x5a, 0x5a, 0x5a, 0x5a]);
      const dh = out(F16, n);
      k.copy(F32, F16, src, dh, sdesc(shape, [strides, off]));
      expect(get(F16, dh, n)).toEqual(gather(data, shape, strides, off).map(refHalf));
    }
  });

  it('copyStrided scatters into a transposed destination with conversion', () => {
    const data = Array.from({ length: 12 }, (_, i) => i + 0.25);
    const src = put(F32, data);
    const dst = out(F32, 20, 0);
    new Float32Array(k.memory.buffer, dst, 20).fill(-1);
    k.copyStrided(F32, F32, src, dst, sdesc([3, 4], [[4, 1], 0], [[1, 4], 2]));
    const ref = new Array(20).fill(-1);
    for (let i = 0; i < 3; i++) for (let j = 0; j < 4; j++) ref[2 + i + 4 * j] = data[i * 4 + j];
    expect(get(F32, dst, 20)).toEqual(ref);
    const di = out(I32, 12, 0);
    k.copyStrided(F32, I32, src, di, sdesc([3, 4], [[1, 3], 0], [[4, 1], 0]));
    expect(get(I32, di, 12)).toEqual(gather(data, [3, 4], [1, 3], 0).map(Math.trunc));
  });
});

// ---- unary --------------------------------------------------------------------
const roundEven = (x: number) => (Math.abs(x % 1) === 0.5 ? 2 * Math.round(x / 2) : Math.round(x));
const clampRef = (x: number, lo: number, hi: number) => {
  if (Number.isNaN(x)) return x;
  if (!Number.isNaN(lo) && x < lo) x = lo;
  if (!Number.isNaN(hi) && x > hi) x = hi;
  return x;
};
const UNARY: Record<number, (x: number, s0: number, s1: number, s2: number) => number> = {
  0: (x) => -x, 1: Math.abs, 2: Math.exp, 3: Math.expm1, 4: Math.log, 5: Math.log1p, 6: Math.sqrt,
  7: (x) => 1 / Math.sqrt(x), 8: Math.sin, 9: Math.cos, 10: Math.tanh, 11: (x) => 1 / (1 + Math.exp(-x)),
  12: (x) => (Number.isNaN(x) ? x : Math.max(x, 0)),
  13: (x) => 0.5 * x * (1 + erfRef(x * Math.SQRT1_2)),
  14: (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3))),
  15: (x) => x / (1 + Math.exp(-x)),
  16: (x, b, t) => (b * x > t ? x : Math.log1p(Math.exp(b * x)) / b),
  17: erfRef, 18: Math.floor, 19: Math.ceil, 20: roundEven, 21: (x) => +(x > 0) - +(x < 0), 22: (x) => 1 / x,
  23: clampRef,
  24: (x, nan, pos, neg) => (Number.isNaN(x) ? nan : x === Infinity ? pos : x === -Infinity ? neg : x),
  25: (x) => +(x === 0), 26: (x) => +Number.isNaN(x), 27: (x) => +(Math.abs(x) === Infinity),
  28: (x) => x * x, 29: (x) => x, 30: Math.trunc, 31: Math.log2, 32: Math.tan,
};
const EXACT_UNARY = new Set([0, 1, 6, 7, 12, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30]);
const BOOL_OUT = new Set([25, 26, 27]);
const XS = [-10, -3.5, -2.5, -1.5, -1, -0.5, -0.3, -0, 0, 0.25, 0.5, 0.7, 1, 1.5, 2.5, 3, 4.2, 9.5, 20, 1e-3, -1e-3,
  NaN, Infinity, -Infinity, 5.5, -7.25, 0.125].map(f);

describe('unary', () => {
  const params: Record<number, [number, number, number][]> = {
    16: [[2, 5, 0], [1, 20, 0]], 23: [[-1, 2, 0], [NaN, 2, 0], [-1, NaN, 0], [3, 1, 0]], 24: [[0, 100, -100], [-5, 1e30, -1e30]],
  };
  for (let op = 0; op <= 32; op++) {
    it(`op ${op} on f32, contiguous (SIMD + tail) and transposed`, () => {
      const outDt = BOOL_OUT.has(op) ? BOOL : F32;
      const [rel, abs] = EXACT_UNARY.has(op) ? [0, 0] : [1e-6, 1e-7];
      for (const [s0, s1, s2] of params[op] ?? [[0, 0, 0]]) {
        const ref = (x: number) => (outDt === BOOL ? UNARY[op](x, s0, s1, s2) : f(UNARY[op](x, s0, s1, s2)));
        const a = put(F32, XS);
        const o = out(outDt, XS.length);
        k.unary(op, F32, outDt, a, o, sdesc([XS.length], [[1], 0]), s0, s1, s2);
        expectAll(get(outDt, o, XS.length), XS.map(ref), rel, abs, `unary ${op} contiguous`);
        const o2 = out(outDt, 20);
        k.unary(op, F32, outDt, a, o2, sdesc([4, 5], [[1, 4], 1]), s0, s1, s2);
        expectAll(get(outDt, o2, 20), gather(XS, [4, 5], [1, 4], 1).map(ref), rel, abs, `unary ${op} transposed`);
      }
    });
  }

  it('erf and gelu match known values', () => {
    const xs = [0.5, 1, 2, 3, -4, 6];
    const a = put(F32, xs);
    const o = out(F32, xs.length);
    k.unary(17, F32, F32, a, o, sdesc([xs.length], [[1], 0]), 0, 0, 0);
    expectAll(get(F32, o, 6), [0.5204998778130465, 0.8427007929497149, 0.9953222650189527, 0.9999779095030014,
      -0.9999999845827421, 1].map(f), 0, 0, 'erf');
    k.unary(13, F32, F32, a, o, sdesc([xs.length], [[1], 0]), 0, 0, 0);
    // gelu(-4) = -4·Φ(-4): the vector form (vmath.ts) is within a few ulp (here 1.36e-11 each), not correctly rounded.
    expect(Math.abs(get(F32, o, 6)[4] - -4 * 3.167124183311992e-5)).toBeLessThan(4e-11);
  });

  it('int-ok ops on i32 and u8 use exact integer arithmetic', () => {
    const xs = [-7, -3, -1, 0, 1, 2, 5, 100, 46341, -2147483647];
    const a = put(I32, xs);
    const d = sdesc([xs.length], [[1], 0]);
    const IREF: Record<number, (x: number) => number> = {
      0: (x) => -x | 0, 1: (x) => Math.abs(x) | 0, 12: (x) => Math.max(x, 0), 18: (x) => x, 19: (x) => x, 20: (x) => x,
      21: (x) => Math.sign(x), 23: (x) => Math.min(Math.max(x, -2), 3), 24: (x) => x, 28: (x) => Math.imul(x, x),
      29: (x) => x, 30: (x) => x,
    };
    for (const [opS, ref] of Object.entries(IREF)) {
      const op = Number(opS);
      const o = out(I32, xs.length);
      k.unary(op, I32, I32, a, o, d, -2, 3, 0);
      expect(get(I32, o, xs.length), `int op ${op}`).toEqual(xs.map(ref));
    }
    const ob = out(BOOL, xs.length);
    k.unary(25, I32, BOOL, a, ob, d, 0, 0, 0);
    expect(get(BOOL, ob, xs.length)).toEqual(xs.map((x) => +(x === 0)));
    k.unary(26, I32, BOOL, a, ob, d, 0, 0, 0);
    expect(get(BOOL, ob, xs.length)).toEqual(xs.map(() => 0));
    const of = out(F32, xs.length);
    k.unary(29, I32, F32, a, of, d, 0, 0, 0);
    expect(get(F32, of, xs.length)).toEqual(xs.map(f));
    const fl = put(F32, [-2.7, 2.7, 1e3, -0.5]);
    const oi = out(I32, 4);
    k.unary(29, F32, I32, fl, oi, sdesc([4], [[1], 0]), 0, 0, 0);
    expect(get(I32, oi, 4)).toEqual([-2, 2, 1000, 0]);
    const u = put(U8, [0, 5, 255, 16]);
    const ou = out(U8, 4);
    k.unary(0, U8, U8, u, ou, sdesc([4], [[1], 0]), 0, 0, 0);
    expect(get(U8, ou, 4)).toEqual([0, 251, 1, 240]);
    k.unary(28, U8, U8, u, ou, sdesc([4], [[1], 0]), 0, 0, 0);
    expect(get(U8, ou, 4)).toEqual([0, 25, 1, 0]);
  });

  it('f16 and bf16 inputs compute in f32 and round on store', () => {
    const codes = [0x3c00, 0x4000, 0xbc00, 0x3555, 0x4900, 0x0001, 0x7bff];
    const a = put(F16, codes);
    const o = out(F16, codes.length);
    k.unary(2, F16, F16, a, o, sdesc([codes.length], [[1], 0]), 0, 0, 0);
    expect(get(F16, o, codes.length)).toEqual(codes.map((c) => refHalf(f(Math.exp(halfValue(c))))));
    const bcodes = [0x3f80, 0x4000, 0x4080, 0x3eaa];
    const ab = put(BF16, bcodes);
    const ob = out(BF16, 4);
    k.unary(6, BF16, BF16, ab, ob, sdesc([4], [[1], 0]), 0, 0, 0);
    expect(get(BF16, ob, 4)).toEqual(bcodes.map((c) => refBf16(f(Math.sqrt(fromBits(c << 16))))));
  });
});

// ---- binary -------------------------------------------------------------------
const cpow = (x: number, y: number) => (y === 0 || x === 1 || (x === -1 && Math.abs(y) === Infinity) ? 1 : Math.pow(x, y));
const pyMod = (x: number, y: number) => { let m = x % y; if (m !== 0 && (m < 0) !== (y < 0)) m += y; return m; };
/** PyTorch's div_floor on floats: through fmod, so ±Inf / finite is NaN. */
const floorDiv = (x: number, y: number) => {
  if (y === 0) return x / y;
  const m = x % y;
  let d = (x - m) / y;
  if (m !== 0 && (y < 0) !== (m < 0)) d -= 1;
  if (d === 0) return x / y < 0 ? -0 : 0;
  let q = Math.floor(d);
  if (d - q > 0.5) q += 1;
  return q;
};
const BINARY_F: Record<number, (x: number, y: number, al: number) => number> = {
  0: (x, y, al) => x + f(al * y), 1: (x, y, al) => x - f(al * y), 2: (x, y) => x * y, 3: (x, y) => x / y,
  4: floorDiv, 5: (x, y) => Math.trunc(x / y), 6: cpow,
  7: (x, y) => (Number.isNaN(x) || Number.isNaN(y) ? NaN : Math.max(x, y)),
  8: (x, y) => (Number.isNaN(x) || Number.isNaN(y) ? NaN : Math.min(x, y)),
  9: (x, y) => f(pyMod(x, y)), 10: Math.atan2,
  11: (x, y) => +(x === y), 12: (x, y) => +(x !== y), 13: (x, y) => +(x < y), 14: (x, y) => +(x <= y),
  15: (x, y) => +(x > y), 16: (x, y) => +(x >= y),
  17: (x, y) => +(x !== 0 && y !== 0), 18: (x, y) => +(x !== 0 || y !== 0), 19: (x, y) => +((x !== 0) !== (y !== 0)),
};
const POOL = [-3, -2.5, -1, -0.5, 0, 0.5, 1, 2, 3.7, 7, 1e10, -1e-3, NaN, Infinity, -Infinity, 2.5, -0].map(f);
function lcg(seed: number) { return () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32; }

describe('binary', () => {
  const rnd = lcg(7);
  const A = Array.from({ length: 64 }, () => POOL[Math.floor(rnd() * POOL.length)]);
  const B = Array.from({ length: 64 }, () => POOL[Math.floor(rnd() * POOL.length)]);
  // [shape, aStrides, aOffset, bStrides, bOffset]
  const layouts: [string, number[], number[], number, number[], number][] = [
    ['contiguous', [6, 7], [7, 1], 0, [7, 1], 1],
    ['row broadcast', [6, 7], [7, 1], 2, [0, 1], 5],
    ['scalar b', [6, 7], [7, 1], 0, [0, 0], 3],
    ['scalar a', [6, 7], [0, 0], 4, [7, 1], 0],
    ['transposed a', [6, 7], [1, 6], 0, [7, 1], 0],
    ['column broadcast', [5, 3, 4], [12, 4, 1], 0, [3, 1, 0], 2],
    ['long 1-D', [61], [1], 3, [1], 0],
  ];
  for (let op = 0; op <= 19; op++) {
    it(`op ${op} on f32 with broadcasting and transposition`, () => {
      const cmp = op >= 11;
      const outDt = cmp ? BOOL : F32;
      const [rel, abs] = op === 6 || op === 10 ? [1e-6, 1e-7] : [0, 0];
      const a = put(F32, A), b = put(F32, B);
      for (const alpha of op <= 1 ? [1, 0.3, -2] : [1]) {
        for (const [name, shape, as, ao, bs, bo] of layouts) {
          const n = numel(shape);
          const o = out(outDt, n);
          k.binary(op, F32, outDt, a, b, o, sdesc(shape, [as, ao], [bs, bo]), alpha);
          const ga = gather(A, shape, as, ao), gb = gather(B, shape, bs, bo);
          const ref = ga.map((x, i) => (cmp ? BINARY_F[op](x, gb[i], f(alpha)) : f(BINARY_F[op](x, gb[i], f(alpha)))));
          expectAll(get(outDt, o, n), ref, rel, abs, `binary ${op} ${name} alpha=${alpha}`);
        }
      }
    });
  }

  it('integer ops: wrapping, floor/trunc division, python remainder, bitwise', () => {
    const P = [-7, -3, -1, 0, 1, 2, 3, 5, 8, -2147483648, 2147483647];
    const IREF: Record<number, (x: number, y: number) => number> = {
      0: (x, y) => (x + Math.imul(3, y)) | 0, 1: (x, y) => (x - Math.imul(3, y)) | 0, 2: (x, y) => Math.imul(x, y),
      4: (x, y) => (y === 0 ? 0 : Math.floor(x / y) | 0), 5: (x, y) => (y === 0 ? 0 : Math.trunc(x / y) | 0),
      7: Math.max, 8: Math.min, 9: (x, y) => (y === 0 ? 0 : pyMod(x, y) | 0),
      11: (x, y) => +(x === y), 12: (x, y) => +(x !== y), 13: (x, y) => +(x < y), 14: (x, y) => +(x <= y),
      15: (x, y) => +(x > y), 16: (x, y) => +(x >= y), 17: (x, y) => +(x !== 0 && y !== 0),
      18: (x, y) => +(x !== 0 || y !== 0), 19: (x, y) => +((x !== 0) !== (y !== 0)),
      20: (x, y) => x & y, 21: (x, y) => x | y, 22: (x, y) => x ^ y,
    };
    const n = P.length;
    const a = put(I32, P), b = put(I32, P);
    const flatA = put(I32, P.flatMap((x) => P.map(() => x))), flatB = put(I32, P.flatMap(() => P));
    for (const [opS, fn] of Object.entries(IREF)) {
      const op = Number(opS);
      const ref = P.flatMap((x) => P.map((y) => fn(x, y)));
      const outDt = op >= 11 && op <= 19 ? BOOL : I32;
      const o = out(outDt, n * n);
      k.binary(op, I32, outDt, a, b, o, sdesc([n, n], [[1, 0], 0], [[0, 1], 0]), 3);
      expect(get(outDt, o, n * n), `int op ${op} broadcast`).toEqual(ref);
      k.binary(op, I32, outDt, flatA, flatB, o, sdesc([n * n], [[1], 0], [[1], 0]), 3);
      expect(get(outDt, o, n * n), `int op ${op} contiguous`).toEqual(ref);
    }
    const bases = [-3, -2, -1, 0, 1, 2, 3], exps = [-2, -1, 0, 1, 2, 5, 12, 31];
    const pa = put(I32, bases), pe = put(I32, exps);
    const o = out(I32, bases.length * exps.length);
    k.binary(6, I32, I32, pa, pe, o, sdesc([bases.length, exps.length], [[1, 0], 0], [[0, 1], 0]), 1);
    expect(get(I32, o, bases.length * exps.length)).toEqual(bases.flatMap((x) => exps.map((e) =>
      e < 0 ? (x === 1 ? 1 : x === -1 ? (e % 2 ? -1 : 1) : 0) : Number(BigInt.asIntN(32, BigInt(x) ** BigInt(e))))));
    const od = out(F32, 4);
    k.binary(3, I32, F32, put(I32, [7, -7, 1, 0]), put(I32, [2, 2, 3, 0]), od, sdesc([4], [[1], 0], [[1], 0]), 1);
    expectAll(get(F32, od, 4), [3.5, -3.5, f(1 / 3), NaN]);
    const ou = out(U8, 4);
    k.binary(0, U8, U8, put(U8, [250, 1, 2, 3]), put(U8, [10, 255, 2, 3]), ou, sdesc([4], [[1], 0], [[1], 0]), 1);
    expect(get(U8, ou, 4)).toEqual([4, 0, 4, 6]);
  });

  it('where selects raw elements with broadcasting', () => {
    const cond = put(BOOL, [1, 0, 0, 1]);
    const a = put(F32, Array.from({ length: 12 }, (_, i) => i + 0.5));
    const b = put(F32, [-1]);
    const o = out(F32, 12);
    k.where(F32, cond, a, b, o, sdesc([3, 4], [[0, 1], 0], [[4, 1], 0], [[0, 0], 0]));
    expect(get(F32, o, 12)).toEqual(Array.from({ length: 12 }, (_, i) => ([0, 3].includes(i % 4) ? i + 0.5 : -1)));
    const ah = put(F16, [1, 2, 3, 4, 5, 6]), bh = put(F16, [7, 8, 9, 10, 11, 12]);
    const oh = out(F16, 6);
    k.where(F16, put(BOOL, [1, 0, 1]), ah, bh, oh, sdesc([2, 3], [[0, 1], 0], [[1, 2], 0], [[3, 1], 0]));
    expect(get(F16, oh, 6)).toEqual([1, 8, 5, 2, 11, 6]);
    const ou = out(U8, 3);
    k.where(U8, put(BOOL, [0, 1, 0]), put(U8, [1, 2, 3]), put(U8, [4, 5, 6]), ou, sdesc([3], [[1], 0], [[1], 0], [[1], 0]));
    expect(get(U8, ou, 3)).toEqual([4, 2, 6]);
  });

  it('where over 32-bit rows with a broadcast value (a stride 0) takes the vector path with each element\'s bits', () => {
    const n = 10, c = Array.from({ length: 3 * n }, (_, i) => +(i % 3 !== 1));
    const A = Array.from({ length: 3 * n }, (_, i) => i + 0.5), B = [NaN, -0, 7.25];
    const o = out(F32, 3 * n);
    k.where(F32, put(BOOL, c), put(F32, A), put(F32, B), o, sdesc([3, n], [[n, 1], 0], [[n, 1], 0], [[1, 0], 0]));
    get(F32, o, 3 * n).forEach((v, i) => expect(Object.is(v, c[i] ? A[i] : B[Math.floor(i / n)]), `element ${i}: ${v}`).toBe(true));
  });

  it('where with a gradient broadcast over short rows (max pooling\'s backward): rank 2 (rows a multiple of 4: one loop over them all) and rank 3 after merging, tails', () => {
    for (const len of [4, 5, 8, 9, 12]) {
      // [3, 2, len]: c contiguous, a one value per (i, j) laid out [i, j] (rank 2 after merging) or transposed (rank 3), b a scalar
      const n = 6 * len, c = Array.from({ length: n }, (_, i) => +((i * 5) % 3 === 0));
      const A = [1.5, -0, NaN, 4, -Infinity, 6.25], B = [-3.5];
      for (const as of [[2, 1, 0], [1, 3, 0]]) {
        const o = out(F32, n);
        k.where(F32, put(BOOL, c), put(F32, A), put(F32, B), o, sdesc([3, 2, len], [[2 * len, len, 1], 0], [as, 0], [[0, 0, 0], 0]));
        const ga = gather(A, [3, 2, len], as, 0);
        get(F32, o, n).forEach((v, i) => expect(Object.is(v, c[i] ? ga[i] : B[0]), `len ${len} strides ${as} element ${i}: ${v}`).toBe(true));
      }
    }
  });

  it('where over contiguous 32-bit rows (four at a time, then the tail) keeps each element\'s bits', () => {
    for (const [dt, n] of [[F32, 11], [F32, 3], [I32, 13], [F32, 64]] as const) {
      const c = Array.from({ length: 2 * n }, (_, i) => +((i * 7) % 3 === 0));
      const A = Array.from({ length: 2 * n }, (_, i) => (dt === F32 ? [NaN, -0, 1.5, -Infinity][i % 4] : i * 1000 - 7));
      const B = Array.from({ length: 2 * n }, (_, i) => (dt === F32 ? -i - 0.25 : -i));
      const o = out(dt, 2 * n);
      k.where(dt, put(BOOL, c), put(dt, A), put(dt, B), o, sdesc([2, n], [[n, 1], 0], [[n, 1], 0], [[n, 1], 0]));
      const got = get(dt, o, 2 * n);
      got.forEach((v, i) => expect(Object.is(v, c[i] ? A[i] : B[i]), `${dt} n=${n} element ${i}: ${v}`).toBe(true));
    }
  });
});

// ---- reduce -------------------------------------------------------------------
/** argmax (4) or argmin (5) of f32 rows into int64 places, as max and min with indices write them. */
function runArg64(op: number, rows: number[][]): number[] {
  const a = put(F32, rows.flat()), o = alloc(rows.length * 8);
  k.reduce(op, F32, 6 /* int64 */, a, o, rows.length, rows[0].length);
  return Array.from(new BigInt64Array(k.memory.buffer, o, rows.length), Number);
}
function runReduce(op: number, dt: number, outDt: number, rows: number[][]): number[] {
  const inner = rows[0]?.length ?? 0;
  const a = put(dt, rows.flat());
  const o = out(outDt, rows.length);
  k.reduce(op, dt, outDt, a, o, rows.length, inner);
  return get(outDt, o, rows.length);
}

describe('reduce', () => {
  const rnd = lcg(3);
  const big = [0, 1, 2].map(() => Array.from({ length: 1001 }, () => f((rnd() - 0.5) * 100)));
  const sum = (r: number[]) => r.reduce((s, x) => s + x, 0);

  it('f32 sum / mean / sum of squares accumulate accurately', () => {
    expectAll(runReduce(0, F32, F32, big), big.map((r) => f(sum(r))), 1e-6, 0, 'sum');
    expectAll(runReduce(8, F32, F32, big), big.map((r) => f(sum(r) / r.length)), 1e-6, 0, 'mean');
    expectAll(runReduce(9, F32, F32, big), big.map((r) => f(sum(r.map((x) => x * x)))), 1e-6, 0, 'sumsq');
    const cancel = [[f(1e8), 1, f(-1e8), 1, 1, 1, 1, 1, 1]];
    expect(runReduce(0, F32, F32, cancel)).toEqual([7]);
    expect(runReduce(1, F32, F32, [[1.5, -2, 0.25, 4], [3, 3, 3, 3]])).toEqual([-3, 81]);
  });

  it('max / min / argmax / argmin incl. ties and NaN', () => {
    expect(runReduce(2, F32, F32, big)).toEqual(big.map((r) => f(Math.max(...r))));
    expect(runReduce(3, F32, F32, big)).toEqual(big.map((r) => f(Math.min(...r))));
    expect(runReduce(4, F32, I32, big)).toEqual(big.map((r) => r.indexOf(Math.max(...r))));
    expect(runReduce(5, F32, I32, big)).toEqual(big.map((r) => r.indexOf(Math.min(...r))));
    const rows = [[1, 5, 5, 2, -1, -1], [1, NaN, 5, NaN, -3, 0], [NaN, 1, 2, 3, 4, 5], [0, 0, 0, 0, 0, 0]];
    expectAll(runReduce(2, F32, F32, rows), [5, NaN, NaN, 0]);
    expectAll(runReduce(3, F32, F32, rows), [-1, NaN, NaN, 0]);
    expect(runReduce(4, F32, I32, rows)).toEqual([1, 1, 0, 0]);
    expect(runReduce(5, F32, I32, rows)).toEqual([4, 1, 0, 0]);
    const late = Array.from({ length: 37 }, (_, i) => i);
    late[35] = NaN;
    expectAll(runReduce(2, F32, F32, [late]), [NaN]);
    expectAll(runReduce(3, F32, F32, [late]), [NaN]);
  });

  it('short f32 rows (16 and fewer: a pooling window) take their own loop, with the same ties, NaN and int64 places', () => {
    const rows = [[1, 5, 5, 2], [1, NaN, 5, NaN], [NaN, 1, 2, 3], [0, 0, 0, 0], [-0, 0, -1, -2], [-3, -1, -1, -7]];
    expectAll(runReduce(2, F32, F32, rows), [5, NaN, NaN, 0, 0, -1]);
    expectAll(runReduce(3, F32, F32, rows), [1, NaN, NaN, 0, -2, -7]);
    expect(runArg64(4, rows)).toEqual([1, 1, 0, 0, 0, 1]);
    expect(runArg64(5, rows)).toEqual([0, 1, 0, 0, 3, 3]);
    // +0 is above -0 for max, as the general path's wasm max has it
    expect(Object.is(runReduce(2, F32, F32, [[-0, 0]])[0], 0)).toBe(true);
    const sixteen = Array.from({ length: 16 }, (_, i) => (i * 5) % 16), seventeen = [...sixteen, 99];
    expect(runArg64(4, [sixteen])).toEqual([sixteen.indexOf(15)]);
    expect(runArg64(4, [seventeen])).toEqual([16]);
  });

  it('all / any on floats (NaN is true), ints and bools', () => {
    const rows = [[1, 2, 3], [1, 0, 2], [0, 0, 0], [0, NaN, 0], [NaN, -0, 0]];
    expect(runReduce(6, F32, BOOL, rows)).toEqual([1, 0, 0, 0, 0]);
    expect(runReduce(7, F32, BOOL, rows)).toEqual([1, 1, 0, 1, 1]);
    const bools = [[1, 1, 1], [0, 1, 0], [0, 0, 0]];
    expect(runReduce(6, BOOL, BOOL, bools)).toEqual([1, 0, 0]);
    expect(runReduce(7, BOOL, BOOL, bools)).toEqual([1, 1, 0]);
    expect(runReduce(7, I32, BOOL, [[0, 0, -5], [0, 0, 0]])).toEqual([1, 0]);
  });

  it('inner = 0 gives the identities', () => {
    const o = out(F32, 2), oi = out(I32, 2), ob = out(BOOL, 2), top = alloc(0); // an empty input
    k.reduce(0, F32, F32, top, o, 2, 0);
    expect(get(F32, o, 2)).toEqual([0, 0]);
    k.reduce(1, F32, F32, top, o, 2, 0);
    expect(get(F32, o, 2)).toEqual([1, 1]);
    k.reduce(0, I32, I32, top, oi, 2, 0);
    expect(get(I32, oi, 2)).toEqual([0, 0]);
    k.reduce(1, I32, I32, top, oi, 2, 0);
    expect(get(I32, oi, 2)).toEqual([1, 1]);
    k.reduce(6, F32, BOOL, top, ob, 2, 0);
    expect(get(BOOL, ob, 2)).toEqual([1, 1]);
    k.reduce(7, F32, BOOL, top, ob, 2, 0);
    expect(get(BOOL, ob, 2)).toEqual([0, 0]);
  });

  it('integer class wraps in i32; f16 computes in f32', () => {
    expect(runReduce(0, I32, I32, [[2147483647, 1], [5, -7]])).toEqual([-2147483648, -2]);
    expect(runReduce(1, I32, I32, [[65536, 65536], [-3, 4]])).toEqual([0, -12]);
    expect(runReduce(2, I32, I32, [[-5, 9, 9, 3]])).toEqual([9]);
    expect(runReduce(3, I32, I32, [[-5, 9, -5, 3]])).toEqual([-5]);
    expect(runReduce(4, I32, I32, [[-5, 9, 9, 3]])).toEqual([1]);
    expect(runReduce(5, I32, I32, [[4, -5, 9, -5]])).toEqual([1]);
    expect(runReduce(9, I32, I32, [[3, 4, -5]])).toEqual([50]);
    expect(runReduce(0, U8, I32, [[200, 100, 255]])).toEqual([555]);
    expect(runReduce(0, BOOL, I32, [[1, 1, 0, 1]])).toEqual([3]);
    const halves = [0x3c00, 0x4000, 0x3800]; // 1, 2, 0.5
    expect(runReduce(0, F16, F16, [halves])).toEqual([refHalf(3.5)]);
    expect(runReduce(0, F16, F32, [halves])).toEqual([3.5]);
    expect(runReduce(8, F16, F32, [halves])).toEqual([f(3.5 / 3)]);
    expect(runReduce(2, BF16, BF16, [[0x3f80, 0x4040, 0xc000]])).toEqual([0x4040]);
  });
});

// ---- matmul -------------------------------------------------------------------
interface MM { Bt: number; M: number; N: number; K: number; aT?: boolean; bT?: boolean; aB0?: boolean; bB0?: boolean; bCS2?: boolean; parts?: number }
/**
 * Checks matmul against a naive f64 loop. With `parts`, runs matmulPart for each part in turn, each
 * into its own output full of garbage, and checks that every element is written by exactly one part.
 */
function checkMatmul({ Bt, M, N, K, aT = false, bT = false, aB0 = false, bB0 = false, bCS2 = false, parts = 0 }: MM): void {
  const rnd = lcg(M * 131 + N * 17 + K);
  const aOff = 3, bOff = 5;
  const aLen = aOff + (aB0 ? 1 : Bt) * M * K, bCols = bCS2 ? 2 * N : N, bLen = bOff + (bB0 ? 1 : Bt) * K * bCols;
  const A = Array.from({ length: aLen }, () => f(rnd() * 2 - 1));
  const B = Array.from({ length: bLen }, () => f(rnd() * 2 - 1));
  const [aRS, aCS] = aT ? [1, M] : [K, 1];
  const [bRS, bCS] = bT ? [1, K] : [bCols, bCS2 ? 2 : 1];
  const aBS = aB0 ? 0 : M * K, bBS = bB0 ? 0 : K * bCols;
  const a = put(F32, A), b = put(F32, B);
  const o = out(F32, Bt * M * N, 0x7f);
  const ws = alloc(k.matmulWorkspaceBytes(M, N, K));
  const p = desc([Bt, M, N, K, aBS, aRS, aCS, aOff, bBS, bRS, bCS, bOff]);
  let got: number[];
  if (!parts) {
    k.matmul(F32, a, b, o, p, ws);
    got = get(F32, o, Bt * M * N);
  } else {
    const garbage = get(F32, o, 1)[0];
    got = new Array(Bt * M * N).fill(garbage);
    const writers = new Array(Bt * M * N).fill(0);
    for (let part = 0; part < parts; part++) {
      const po = out(F32, Bt * M * N, 0x7f);
      k.matmulPart(F32, a, b, po, p, ws, part, parts);
      get(F32, po, Bt * M * N).forEach((v, i) => {
        if (Object.is(v, garbage)) return;
        writers[i]++;
        got[i] = v;
      });
    }
    const bad = writers.findIndex((w) => w !== 1);
    if (bad >= 0) throw new Error(`matmulPart ${JSON.stringify({ Bt, M, N, K, parts })}: element ${bad} written by ${writers[bad]} parts`);
  }
  for (let bi = 0; bi < Bt; bi++) {
    for (let i = 0; i < M; i++) {
      for (let j = 0; j < N; j++) {
        let s = 0, mag = 0;
        for (let kk = 0; kk < K; kk++) {
          const x = A[aOff + bi * aBS + i * aRS + kk * aCS] * B[bOff + bi * bBS + kk * bRS + j * bCS];
          s += x; mag += Math.abs(x);
        }
        const g = got[(bi * M + i) * N + j];
        if (!(Math.abs(g - s) <= 1e-6 * mag + 1e-7 * (K + 1))) {
          throw new Error(`matmul ${JSON.stringify({ Bt, M, N, K, aT, bT, aB0, bB0 })} [${bi},${i},${j}]: got ${g}, expected ${s}`);
        }
      }
    }
  }
}

describe('matmul', () => {
  const cases: MM[] = [
    { Bt: 1, M: 1, N: 1, K: 1 }, { Bt: 1, M: 3, N: 5, K: 7 }, { Bt: 1, M: 64, N: 64, K: 64 }, { Bt: 1, M: 65, N: 33, K: 17 },
    { Bt: 2, M: 7, N: 9, K: 5, bT: true }, { Bt: 1, M: 65, N: 33, K: 17, aT: true, bT: true },
    { Bt: 3, M: 6, N: 10, K: 4, aB0: true }, { Bt: 3, M: 5, N: 8, K: 6, bB0: true }, { Bt: 2, M: 4, N: 11, K: 3, bCS2: true },
    { Bt: 1, M: 9, N: 530, K: 300 }, { Bt: 1, M: 2, N: 3, K: 600, bT: true },
    // column-major B in full strips, 4 k at a time: two K blocks whose lengths (256, 46) leave k tails of 0 and 2, a partial last strip
    { Bt: 2, M: 9, N: 17, K: 302, bT: true }, { Bt: 1, M: 4, N: 16, K: 7, bT: true, aT: true },
    // few rows, a row-major B read in place (full strips), only the ragged strip packed: two N blocks, two K blocks
    { Bt: 2, M: 16, N: 603, K: 260 }, { Bt: 1, M: 17, N: 24, K: 9 }, { Bt: 2, M: 13, N: 37, K: 20, aT: true, aB0: true },
  ];
  for (const c of cases) it(`matches a naive loop: ${JSON.stringify(c)}`, () => checkMatmul(c));

  // The parts of the helper threads: row bands across batches (ragged: M not a multiple of 4,
  // bands that straddle batches), column bands (few rows, many columns), transposed and broadcast
  // operands, more parts than rows or columns.
  const split: MM[] = [
    { Bt: 1, M: 130, N: 37, K: 70, parts: 2 }, { Bt: 1, M: 131, N: 45, K: 300, parts: 3 }, { Bt: 3, M: 45, N: 20, K: 33, parts: 4 },
    { Bt: 5, M: 7, N: 9, K: 5, parts: 3 }, { Bt: 1, M: 9, N: 530, K: 300, parts: 2 }, { Bt: 2, M: 5, N: 203, K: 17, parts: 3, bT: true },
    { Bt: 1, M: 150, N: 70, K: 40, parts: 2, aT: true, bT: true }, { Bt: 3, M: 33, N: 24, K: 6, parts: 2, aB0: true },
    { Bt: 2, M: 3, N: 70, K: 8, parts: 4, bB0: true, bCS2: true }, { Bt: 1, M: 2, N: 3, K: 4, parts: 4 }, { Bt: 1, M: 1, N: 1, K: 1, parts: 3 },
    { Bt: 2, M: 3, N: 4, K: 0, parts: 3 }, { Bt: 3, M: 13, N: 37, K: 20, parts: 3 }, { Bt: 1, M: 8, N: 61, K: 30, parts: 2 },
  ];
  for (const c of split) it(`matmulPart: the parts cover the output once: ${JSON.stringify(c)}`, () => checkMatmul(c));

  it('K = 0 writes zeros; workspace size covers one packed block', () => {
    const o = out(F32, 2 * 3 * 4, 0x7f), top = alloc(0); // empty operands
    k.matmul(F32, top, top, o, desc([2, 3, 4, 0, 0, 0, 1, 0, 0, 4, 1, 0]), 0);
    expect(get(F32, o, 24)).toEqual(new Array(24).fill(0));
    expect(k.matmulWorkspaceBytes(3, 5, 7)).toBe(7 * 8 * 4 + 128);
    expect(k.matmulWorkspaceBytes(3, 5, 0)).toBe(0);
  });
});

// ---- fill / arange ------------------------------------------------------------
describe('fill / arange', () => {
  it('fill stores the value in every dtype', () => {
    const cases: [number, number, number][] = [
      [F32, 1.5, 1.5], [F32, 0.1, f(0.1)], [I32, 16777217, 16777217], [I32, -2.9, -2], [U8, 300, 44], [U8, -1, 255],
      [BOOL, NaN, 1], [BOOL, 0, 0], [BOOL, -0.5, 1], [F16, 65504, 0x7bff], [F16, 1e-8, 0], [BF16, 1 + 2 ** -8, 0x3f80], [BF16, 1 + 3 * 2 ** -8, 0x3f82],
    ];
    for (const [dt, value, expected] of cases) {
      for (const n of [1, 7, 37]) {
        const o = out(dt, n + 1, 0x33);
        k.fill(dt, o, n, value);
        expect(get(dt, o, n), `fill ${dt} ${value}`).toEqual(new Array(n).fill(expected));
        expect(get(U8, o + n * SIZE[dt], SIZE[dt])).toEqual(new Array(SIZE[dt]).fill(0x33));
      }
    }
  });

  it('arange computes start + i * step in f64, then stores', () => {
    const o = out(F32, 10);
    k.arange(F32, o, 10, 0, 0.1);
    expect(get(F32, o, 10)).toEqual(Array.from({ length: 10 }, (_, i) => f(i * 0.1)));
    const oi = out(I32, 6);
    k.arange(I32, oi, 6, 5, -2);
    expect(get(I32, oi, 6)).toEqual([5, 3, 1, -1, -3, -5]);
    const oh = out(F16, 5);
    k.arange(F16, oh, 5, -1, 0.5);
    expect(get(F16, oh, 5)).toEqual([-1, -0.5, 0, 0.5, 1].map(refHalf));
    const ou = out(U8, 4);
    k.arange(U8, ou, 4, 254, 1);
    expect(get(U8, ou, 4)).toEqual([254, 255, 0, 1]);
    k.arange(F32, o, 0, 1, 1);
  });
});

describe('int64 kernels (i64 storage, 8 bytes)', () => {
  const I64 = 6;
  const put64 = (v: bigint[]) => { const p = alloc(v.length * 8); new BigInt64Array(k.memory.buffer, p, v.length).set(v); return p; };
  const get64 = (p: number, n: number) => Array.from(new BigInt64Array(k.memory.buffer, p, n));
  const wrap = (v: bigint) => BigInt.asIntN(64, v);
  const A = [2n ** 62n - 1n, -(2n ** 40n) - 5n, 2n ** 31n, -1n, 2n ** 63n - 1n, -(2n ** 63n)];
  const B = [3n, -7n, 2n ** 32n + 1n, 2n, 1n, 3n];
  const fdiv = (x: bigint, y: bigint) => { const q = x / y; return (x % y !== 0n && (x < 0n) !== (y < 0n)) ? q - 1n : q; };
  const mod = (x: bigint, y: bigint) => { const r = x % y; return r !== 0n && (r < 0n) !== (y < 0n) ? r + y : r; };

  it.each([
    ['add', 0, (x: bigint, y: bigint) => wrap(x + y)], ['sub', 1, (x: bigint, y: bigint) => wrap(x - y)], ['mul', 2, (x: bigint, y: bigint) => wrap(x * y)],
    ['floor_divide', 4, fdiv], ['trunc_divide', 5, (x: bigint, y: bigint) => x / y], ['remainder', 9, mod],
    ['maximum', 7, (x: bigint, y: bigint) => (x > y ? x : y)], ['lt', 13, (x: bigint, y: bigint) => BigInt(x < y)],
  ] as const)('binary %s is exact in 64 bits and wraps past them', (_name, op, ref) => {
    const o = alloc(A.length * 8);
    expect(k.binary(op, I64, I64, put64(A), put64(B), o, sdesc([A.length], [[1], 0], [[1], 0]), 1)).toBe(0);
    expect(get64(o, A.length)).toEqual(A.map((x, i) => ref(x, B[i])));
  });

  it('integer comparisons into bool, int64 and int32, any strides: short broadcast rows (a pooling window), transposed, strided, odd lengths', () => {
    // values that agree in their low 32 bits but differ in int64, and the extremes
    const V = [0n, 1n, -1n, 2n ** 32n + 1n, 2n ** 32n, -(2n ** 63n), 2n ** 63n - 1n, 5n, -(2n ** 32n) - 1n, 7n, 3n, -2n, 1n];
    const a64 = put64(V), V32 = [0, 1, -1, 2147483647, -2147483648, 5, 3, -2, 7, 1, 1, 0, -1];
    const a32 = put(I32, V32);
    const REF: Record<number, (x: bigint, y: bigint) => boolean> = {
      11: (x, y) => x === y, 12: (x, y) => x !== y, 13: (x, y) => x < y, 14: (x, y) => x <= y, 15: (x, y) => x > y, 16: (x, y) => x >= y,
    };
    // [shape, aStrides, aOffset, bStrides, bOffset]: the window arange against the index (rank 2: every row in one call), its transpose, a stride-2 row, one odd row (rank 1)
    const layouts: [number[], number[], number, number[], number][] = [
      [[3, 4], [0, 1], 0, [1, 0], 5], [[4, 3], [1, 0], 2, [0, 1], 0], [[2, 5], [1, 2], 1, [5, 1], 0], [[13], [1], 0, [-1], 12], [[3, 3], [3, 1], 0, [0, 0], 3],
      [[2, 3, 2], [1, 4, 2], 0, [6, 2, 1], 0], // rank 3: rows one at a time
    ];
    for (const [op, ref] of Object.entries(REF)) {
      for (const [shape, as, ao, bs, bo] of layouts) {
        const n = numel(shape), o = out(BOOL, n);
        k.binary(Number(op), I64, BOOL, a64, a64, o, sdesc(shape, [as, ao], [bs, bo]), 1);
        const ga = gather(V, shape, as, ao), gb = gather(V, shape, bs, bo);
        expect(get(BOOL, o, n), `int64 op ${op} ${shape}`).toEqual(ga.map((x, i) => +ref(x, gb[i])));
        k.binary(Number(op), I32, BOOL, a32, a32, o, sdesc(shape, [as, ao], [bs, bo]), 1);
        const ha = gather(V32, shape, as, ao), hb = gather(V32, shape, bs, bo);
        expect(get(BOOL, o, n), `int32 op ${op} ${shape}`).toEqual(ha.map((x, i) => +ref(BigInt(x), BigInt(hb[i]))));
      }
    }
  });

  it('reduce sums, multiplies and finds extremes in 64 bits; argmax writes an int64 index', () => {
    const o = alloc(8 * 4);
    k.reduce(0, I64, I64, put64(A), o, 1, A.length);
    expect(get64(o, 1)).toEqual([wrap(A.reduce((x, y) => x + y))]);
    k.reduce(0, I32, I64, put(I32, [2147483647, 2147483647, 2]), o, 1, 3);
    expect(get64(o, 1)).toEqual([2n ** 32n]);
    k.reduce(2, I64, I64, put64(A), o, 1, A.length);
    expect(get64(o, 1)).toEqual([2n ** 63n - 1n]);
    k.reduce(4, I64, I64, put64(A), o, 1, A.length);
    expect(get64(o, 1)).toEqual([4n]);
  });

  it('casts: int64 -> f32 rounds once, int64 -> int32 keeps the low word, f32 -> int64 truncates and copyChecked flags NaN/Inf/out of range', () => {
    const n = A.length, of = alloc(4 * n), oi = alloc(4 * n), o64 = alloc(8 * 4);
    k.copy(I64, F32, put64(A), of, sdesc([n], [[1], 0]));
    expect(get(F32, of, n)).toEqual(A.map((x) => Math.fround(Number(x))));
    k.copy(I64, I32, put64(A), oi, sdesc([n], [[1], 0]));
    expect(get(I32, oi, n)).toEqual(A.map((x) => Number(BigInt.asIntN(32, x))));
    expect(k.copyChecked(F32, I64, put(F32, [3e12, -2.5, 2 ** 62, -(2 ** 63)]), o64, sdesc([4], [[1], 0]))).toBe(0);
    expect(get64(o64, 4)).toEqual([3000000053248n, -2n, 2n ** 62n, -(2n ** 63n)]);
    for (const bad of [NaN, Infinity, 2 ** 63]) expect(k.copyChecked(F32, I64, put(F32, [1, bad]), o64, sdesc([2], [[1], 0])), String(bad)).toBe(1);
  });
});
