// The row kernels of build/webtorch.wasm (assembly/kernels/rownorm.ts): softmax, log-softmax,
// layer norm and their input gradients, against float64 references in plain JS, on row lengths
// that are and are not multiples of the vector width (1, 3, 4, 5, 7, 64, 1023), with and
// without layer norm's weight and bias, NaN and infinite rows, and the row split of the pool
// (`rowNormPart`: every part count gives the whole result).
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { arena, loadKernels } from './wasm.js';

interface Kernels {
  memory: WebAssembly.Memory;
  heapBase(): number;
  scratch(): number;
  rowNorm(p: number): void;
  rowNormPart(p: number, ws: number, part: number, parts: number): void;
}

let k: Kernels;
const heap = arena(() => k);
beforeAll(async () => {
  k = await loadKernels<Kernels>();
});
beforeEach(() => heap.reset());

/** Room for n 4-byte values. */
const alloc = (n: number): number => heap.alloc(n * 4);
function put(values: ArrayLike<number>): number {
  const p = alloc(values.length);
  new Float32Array(k.memory.buffer, p, values.length).set(Array.from(values));
  return p;
}
const get = (p: number, n: number) => Array.from(new Float32Array(k.memory.buffer, p, n));
function desc(kind: number, x: number, out: number, outer: number, inner: number, w = 0, b = 0, eps = 0, g = 0): number {
  const words = new Int32Array(k.memory.buffer, k.scratch(), 9);
  words.set([kind, x, out, outer, inner, w, b, 0, g]);
  new Float32Array(k.memory.buffer, k.scratch() + 28, 1)[0] = eps;
  return k.scratch();
}
function values(n: number, seed: number, scale = 4): number[] {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(Math.fround((((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) * 2 - 1) * scale));
  return out;
}

/** float64 references, one row at a time. */
const REF: Record<number, (x: number[], g: number[], w: number[] | null, b: number[] | null, eps: number) => number[]> = {
  0: (x) => { const m = Math.max(...x), e = x.map((v) => Math.exp(v - m)), s = e.reduce((a, c) => a + c, 0); return e.map((v) => v / s); },
  1: (x) => { const m = Math.max(...x), s = x.reduce((a, v) => a + Math.exp(v - m), 0); return x.map((v) => v - m - Math.log(s)); },
  2: (x, _g, w, b, eps) => {
    const n = x.length, mean = x.reduce((a, c) => a + c, 0) / n, v = x.reduce((a, c) => a + (c - mean) ** 2, 0) / n, r = 1 / Math.sqrt(v + eps);
    return x.map((c, i) => (c - mean) * r * (w ? w[i] : 1) + (b ? b[i] : 0));
  },
  3: (y, g) => { const s = y.reduce((a, c, i) => a + c * g[i], 0); return y.map((c, i) => c * (g[i] - s)); },
  4: (y, g) => { const s = g.reduce((a, c) => a + c, 0); return y.map((c, i) => g[i] - Math.exp(c) * s); },
  5: (x, g, w, _b, eps) => {
    const n = x.length, mean = x.reduce((a, c) => a + c, 0) / n, v = x.reduce((a, c) => a + (c - mean) ** 2, 0) / n, r = 1 / Math.sqrt(v + eps);
    const gy = g.map((c, i) => c * (w ? w[i] : 1)), xh = x.map((c) => (c - mean) * r);
    const mg = gy.reduce((a, c) => a + c, 0) / n, mgx = gy.reduce((a, c, i) => a + c * xh[i], 0) / n;
    return gy.map((c, i) => r * (c - mg - xh[i] * mgx));
  },
};

function check(got: number[], ref: number[], label: string, rtol = 2e-6, atol = 1e-6): void {
  for (let i = 0; i < ref.length; i++) {
    const ok = Number.isNaN(ref[i]) ? Number.isNaN(got[i]) : Math.abs(got[i] - ref[i]) <= atol + rtol * Math.abs(ref[i]);
    if (!ok) throw new Error(`${label} [${i}]: got ${got[i]}, expected ${ref[i]}`);
  }
}

const LENS = [1, 3, 4, 5, 7, 64, 1023];

describe('row kernels', () => {
  for (const kind of [0, 1, 2, 3, 4, 5]) {
    for (const affine of kind === 2 || kind === 5 ? [false, true] : [false]) {
      it(`kind ${kind}${affine ? ' with weight and bias' : ''} on rows of ${LENS.join(', ')}`, () => {
        for (const len of LENS) {
          const outer = 3, n = outer * len, eps = 1e-5;
          const x = kind === 3 ? values(n, len, 1).map((v) => Math.fround(Math.abs(v) / len)) : kind === 4 ? values(n, len, 1).map((v) => Math.fround(-Math.abs(v) - 1)) : values(n, len);
          const g = values(n, len + 7, 1), w = affine ? values(len, 11) : null, b = affine ? values(len, 13) : null;
          const o = alloc(n);
          k.rowNorm(desc(kind, put(x), o, outer, len, w ? put(w) : 0, b ? put(b) : 0, eps, kind >= 3 ? put(g) : 0));
          const got = get(o, n);
          for (let r = 0; r < outer; r++) {
            const row = (a: number[]) => a.slice(r * len, (r + 1) * len);
            check(got.slice(r * len, (r + 1) * len), REF[kind](row(x), row(g), w, b, eps), `kind ${kind} len ${len} row ${r}`);
          }
        }
      });
    }
  }

  it('a row holding NaN is NaN throughout; -inf entries give 0 (softmax) and -inf (log-softmax)', () => {
    const x = [1, NaN, 2, 3, 4, 5, 0, 1, -Infinity, 2, 3, -Infinity];
    const o = alloc(12);
    k.rowNorm(desc(0, put(x), o, 2, 6));
    const got = get(o, 12);
    expect(got.slice(0, 6).every(Number.isNaN)).toBe(true);
    check(got.slice(6), REF[0](x.slice(6), [], null, null, 0), 'softmax with -inf');
    expect(got[8]).toBe(0);
    k.rowNorm(desc(1, put(x), o, 2, 6));
    expect(get(o, 12)[8]).toBe(-Infinity);
    expect(get(o, 12)[11]).toBe(-Infinity);
  });

  it('a NaN anywhere in a long row (each of the max pass\'s four chains, and its 4-wide tail) makes the row NaN', () => {
    const len = 40;
    for (const at of [0, 5, 10, 15, 21, 34, 39]) {
      const x = values(len, 3);
      x[at] = NaN;
      const o = alloc(len);
      k.rowNorm(desc(0, put(x), o, 1, len));
      expect(get(o, len).every(Number.isNaN), `NaN at ${at}`).toBe(true);
    }
  });

  it('rowNormPart: any split of the rows gives the whole result', () => {
    const outer = 37, len = 13, x = values(outer * len, 5);
    const whole = alloc(outer * len);
    const px = put(x);
    k.rowNorm(desc(0, px, whole, outer, len));
    const ref = get(whole, outer * len);
    for (const parts of [2, 3, 8, 40]) {
      const o = alloc(outer * len);
      const p = desc(0, px, o, outer, len);
      for (let i = 0; i < parts; i++) k.rowNormPart(p, 0, i, parts);
      expect(get(o, outer * len)).toEqual(ref);
    }
  });
});
