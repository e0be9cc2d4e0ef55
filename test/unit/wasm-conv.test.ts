// The convolution kernels of build/webtorch.wasm (assembly/kernels/conv.ts) against a plain-JS
// direct convolution in f64: the forward with and without a bias, and every gradient (input,
// weight, bias), over strides, dilation, padding wider than the kernel's reach, groups, a strided
// (channels-last) input view, outputs as wide as the input (window.ts's shifted-plane copy and
// the fold's run), output rows whose length is not a multiple of 4 (the SIMD tails of
// the bias add, the row sums and the fold), the windows kept by the forward or made again, and
// the pool's split of the images into parts whose weight and bias sums `convGradSum` adds up.
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { arena, loadKernels } from './wasm.js';

interface Kernels {
  memory: WebAssembly.Memory;
  heapBase(): number;
  scratch(): number;
  convWorkspaceBytes(p: number, grad: number): number;
  conv(x: number, w: number, b: number, out: number, p: number, saved: number, ws: number): void;
  convPart(x: number, w: number, b: number, out: number, p: number, saved: number, ws: number, part: number, parts: number): void;
  convGrad(x: number, w: number, gy: number, dx: number, dw: number, db: number, p: number, saved: number, ws: number): void;
  convGradPart(x: number, w: number, gy: number, dx: number, dw: number, db: number, p: number, saved: number, ws: number, part: number, parts: number): void;
  convGradSum(src: number, out: number, n: number, parts: number): void;
}

let k: Kernels;
const heap = arena(() => k);
beforeAll(async () => {
  k = await loadKernels<Kernels>();
});
beforeEach(() => heap.reset());

interface Geo { N: number; C: number; H: number; W: number; Cout: number; G: number; kh: number; kw: number; s: [number, number]; d: [number, number]; p: [number, number] }

const outSize = (g: Geo): [number, number] => [
  Math.floor((g.H + 2 * g.p[0] - g.d[0] * (g.kh - 1) - 1) / g.s[0]) + 1,
  Math.floor((g.W + 2 * g.p[1] - g.d[1] * (g.kw - 1) - 1) / g.s[1]) + 1,
];

/** A deterministic pseudo-random fill in [-1, 1). */
function values(n: number, seed: number): Float32Array {
  const a = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    a[i] = s / 2 ** 31 - 1;
  }
  return a;
}

/** The reference in f64: y, and the gradients of sum(y · gy) for x, w and b. xs: x's element strides. */
function reference(g: Geo, x: Float32Array, xs: number[], w: Float32Array, b: Float32Array | null, gy: Float32Array) {
  const [oh, ow] = outSize(g), Cg = g.C / g.G, Mg = g.Cout / g.G;
  const y = new Float64Array(g.N * g.Cout * oh * ow), dx = new Float64Array(g.N * g.C * g.H * g.W);
  const dw = new Float64Array(w.length), db = new Float64Array(g.Cout);
  for (let n = 0; n < g.N; n++) for (let co = 0; co < g.Cout; co++) for (let i = 0; i < oh; i++) for (let j = 0; j < ow; j++) {
    const o = ((n * g.Cout + co) * oh + i) * ow + j, q = Math.floor(co / Mg);
    let acc = b ? b[co] : 0;
    db[co] += gy[o];
    for (let c = 0; c < Cg; c++) for (let ki = 0; ki < g.kh; ki++) for (let kj = 0; kj < g.kw; kj++) {
      const h = i * g.s[0] + ki * g.d[0] - g.p[0], ww = j * g.s[1] + kj * g.d[1] - g.p[1];
      if (h < 0 || h >= g.H || ww < 0 || ww >= g.W) continue;
      const cin = q * Cg + c, wi = ((co * Cg + c) * g.kh + ki) * g.kw + kj;
      const xv = x[n * xs[0] + cin * xs[1] + h * xs[2] + ww * xs[3]];
      acc += w[wi] * xv;
      dw[wi] += gy[o] * xv;
      dx[((n * g.C + cin) * g.H + h) * g.W + ww] += gy[o] * w[wi];
    }
    y[o] = acc;
  }
  return { y, dx, dw, db };
}

/** Writes a Float32Array into the kernels' memory; returns its address. */
function put(a: Float32Array): number {
  const at = heap.alloc(a.length * 4);
  new Float32Array(k.memory.buffer, at, a.length).set(a);
  return at;
}
const read = (at: number, n: number) => Array.from(new Float32Array(k.memory.buffer, at, n));

function expectClose(got: number[], want: Float64Array, what: string): void {
  const scale = Math.max(1, ...Array.from(want, Math.abs));
  let worst = 0;
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
  expect(worst / scale, what).toBeLessThan(2e-6);
}

const GEOS: [string, Geo][] = [
  ['3×3, pad 1, 8→16 (the small CNN\'s second layer, 2 images)', { N: 2, C: 8, H: 14, W: 14, Cout: 16, G: 1, kh: 3, kw: 3, s: [1, 1], d: [1, 1], p: [1, 1] }],
  ['1→8, odd rows (7×5 outputs)', { N: 3, C: 1, H: 7, W: 5, Cout: 8, G: 1, kh: 3, kw: 3, s: [1, 1], d: [1, 1], p: [1, 1] }],
  ['5×3, stride 2, pad 2', { N: 2, C: 2, H: 10, W: 13, Cout: 3, G: 1, kh: 5, kw: 3, s: [2, 2], d: [1, 1], p: [2, 2] }],
  ['3×3, dilation 2, pad 2 (output as wide as x: the shifted-plane path)', { N: 2, C: 3, H: 9, W: 7, Cout: 4, G: 1, kh: 3, kw: 3, s: [1, 1], d: [2, 2], p: [2, 2] }],
  ['3×3, dilation 2, pad 3 (beyond the reach)', { N: 1, C: 2, H: 7, W: 8, Cout: 5, G: 1, kh: 3, kw: 3, s: [1, 1], d: [2, 2], p: [3, 3] }],
  ['groups 2, stride (2, 1), dilation (1, 2)', { N: 2, C: 4, H: 6, W: 9, Cout: 6, G: 2, kh: 2, kw: 3, s: [2, 1], d: [1, 2], p: [0, 1] }],
  ['depthwise 3 groups', { N: 2, C: 3, H: 5, W: 6, Cout: 6, G: 3, kh: 3, kw: 3, s: [1, 1], d: [1, 1], p: [1, 1] }],
];

/** Lays out the descriptor (window.ts's 21 words, then Cout and groups); x strides as given. */
function descriptor(g: Geo, xs: number[]): number {
  const [oh, ow] = outSize(g);
  const words = [g.N, g.C, g.H, g.W, g.kh, g.kw, oh, ow, ...g.s, ...g.d, ...g.p, 0, ...xs, 0, 0, g.Cout, g.G];
  const p = heap.alloc(words.length * 4);
  new Int32Array(k.memory.buffer, p, words.length).set(words);
  return p;
}

describe('conv and convGrad (an image at a time)', () => {
  for (const [name, g] of GEOS) {
    for (const layout of ['contiguous', 'channels-last view'] as const) {
      it(`${name}, ${layout}: the forward, then every gradient, on one thread and in parts`, () => {
        const [oh, ow] = outSize(g), L = oh * ow, K = g.C * g.kh * g.kw;
        // x is [N, C, H, W] read through strides: row-major, or an NHWC buffer
        const xs = layout === 'contiguous' ? [g.C * g.H * g.W, g.H * g.W, g.W, 1] : [g.H * g.W * g.C, 1, g.W * g.C, g.C];
        const xv = values(g.N * g.C * g.H * g.W, 1), wv = values(g.Cout * (g.C / g.G) * g.kh * g.kw, 2), bv = values(g.Cout, 3);
        const gyv = values(g.N * g.Cout * L, 4);
        const ref = reference(g, xv, xs, wv, bv, gyv);
        const refNoBias = reference(g, xv, xs, wv, null, gyv);
        const x = put(xv), w = put(wv), b = put(bv), gy = put(gyv), p = descriptor(g, xs);
        const nOut = g.N * g.Cout * L;
        // forward: bias or none, windows kept or not, whole or in parts
        for (const parts of [1, 2, 3]) {
          const ws = heap.alloc(k.convWorkspaceBytes(p, 0) * parts);
          for (const [bias, want] of [[b, ref.y], [0, refNoBias.y]] as const) {
            const out = heap.alloc(nOut * 4), saved = heap.alloc(g.N * K * L * 4);
            if (parts === 1) k.conv(x, w, bias, out, p, saved, ws);
            else for (let part = 0; part < parts; part++) k.convPart(x, w, bias, out, p, 0, ws + part * k.convWorkspaceBytes(p, 0), part, parts);
            expectClose(read(out, nOut), want, `forward, ${parts} part(s), bias ${bias !== 0}`);
            // the gradients, from the kept windows and from x
            const gws = heap.alloc(k.convWorkspaceBytes(p, 1) * parts);
            for (const keep of parts === 1 ? [saved, 0] : [0]) {
              const dx = heap.alloc(xv.length * 4), dw = heap.alloc(wv.length * 4), db = heap.alloc(g.Cout * 4);
              if (parts === 1) k.convGrad(x, w, gy, dx, dw, db, p, keep, gws);
              else {
                const dwParts = heap.alloc(wv.length * 4 * parts), dbParts = heap.alloc(g.Cout * 4 * parts);
                for (let part = 0; part < parts; part++) k.convGradPart(x, w, gy, dx, dwParts, dbParts, p, 0, gws + part * k.convWorkspaceBytes(p, 1), part, parts);
                k.convGradSum(dwParts, dw, wv.length, parts);
                k.convGradSum(dbParts, db, g.Cout, parts);
              }
              expectClose(read(dx, xv.length), ref.dx, `input gradient, ${parts} part(s)`);
              expectClose(read(dw, wv.length), ref.dw, `weight gradient, ${parts} part(s), windows ${keep ? 'kept' : 'made again'}`);
              expectClose(read(db, g.Cout), ref.db, `bias gradient, ${parts} part(s)`);
            }
          }
        }
      });
    }
  }

  it('convGrad writes only the gradients asked for', () => {
    const g = GEOS[1][1], [oh, ow] = outSize(g), L = oh * ow, xs = [g.C * g.H * g.W, g.H * g.W, g.W, 1];
    const xv = values(g.N * g.C * g.H * g.W, 5), wv = values(g.Cout * g.C * 9, 6), gyv = values(g.N * g.Cout * L, 7);
    const x = put(xv), w = put(wv), gy = put(gyv), p = descriptor(g, xs), ws = heap.alloc(k.convWorkspaceBytes(p, 1));
    const dw = put(new Float32Array(wv.length).fill(7)), dx = put(new Float32Array(xv.length).fill(7));
    k.convGrad(x, w, gy, 0, dw, 0, p, 0, ws);
    expectClose(read(dw, wv.length), reference(g, xv, xs, wv, null, gyv).dw, 'weight gradient alone');
    expect(read(dx, xv.length).every((v) => v === 7)).toBe(true);
  });
});
