// Direct tests of build/webtorch.wasm's max and average pooling (assembly/kernels/pool.ts) against
// plain-JS references of PyTorch's CPU loops (MaxPoolKernel.cpp, AvgPoolKernel.cpp). Max pooling:
// the window clipped to the input, its first element inside the start, and an element takes the
// place when it is greater or NaN. Average pooling: f32 sums over the clipped window, divided by
// the window's size with or without the padding, or by the override.
//
// The hard part is max pooling's 2×2 stride-2 path, which does four windows at a time with lane
// masks: its tails (ow not a multiple of 4), rows and columns left over (odd H and W), ties, NaN
// and -inf must give what the plain loop gives. Each case also runs the planes split into parts,
// as the cpu pool does (`…Part`), and the gradient against a scatter in output order.
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { arena, loadKernels } from './wasm.js';

interface Kernels {
  memory: WebAssembly.Memory;
  heapBase(): number;
  scratch(): number;
  maxPool(x: number, values: number, indices: number, p: number): void;
  maxPoolGrad(g: number, indices: number, grad: number, p: number): void;
  maxPoolPart(x: number, values: number, indices: number, p: number, ws: number, part: number, parts: number): void;
  maxPoolGradPart(g: number, indices: number, grad: number, p: number, ws: number, part: number, parts: number): void;
  avgPool(src: number, dst: number, p: number, grad: number): void;
  avgPoolPart(src: number, dst: number, p: number, grad: number, ws: number, part: number, parts: number): void;
}

let k: Kernels;
const heap = arena(() => k);
beforeAll(async () => {
  k = await loadKernels<Kernels>();
});
beforeEach(() => heap.reset());

const alloc = (bytes: number): number => heap.alloc(bytes);
/** f32s at a fresh place (garbage after them, so a read past the end shows). */
function putF32(v: number[]): number {
  const p = alloc(v.length * 4 + 64);
  new Float32Array(k.memory.buffer, p, v.length + 16).fill(12345);
  new Float32Array(k.memory.buffer, p, v.length).set(v);
  return p;
}
/** A place of n elements of `bytes` each, filled with garbage. */
function garbage(n: number, bytes: number): number {
  const p = alloc(n * bytes);
  new Uint8Array(k.memory.buffer, p, n * bytes).fill(0x5a);
  return p;
}
const f32s = (p: number, n: number) => Array.from(new Float32Array(k.memory.buffer, p, n));
const i64s = (p: number, n: number) => Array.from(new BigInt64Array(k.memory.buffer, p, n), Number);

interface Geom { planes: number; H: number; W: number; k: [number, number]; s: [number, number]; p: [number, number]; d: [number, number]; ceil?: boolean }

/** PyTorch's output size (pooling_output_shape). */
function outSize(n: number, k: number, s: number, p: number, d: number, ceil: boolean): number {
  let r = Math.floor((n + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0)) / s) + 1;
  if (ceil && (r - 1) * s >= n + p) r--;
  return r;
}

/** The reference forward: [values, indices] of every window, and the gradient as PyTorch's scatter. */
function reference(x: number[], g: Geom, gOut: number[]) {
  const oh = outSize(g.H, g.k[0], g.s[0], g.p[0], g.d[0], !!g.ceil), ow = outSize(g.W, g.k[1], g.s[1], g.p[1], g.d[1], !!g.ceil);
  const values: number[] = [], indices: number[] = [], grad = new Array<number>(g.planes * g.H * g.W).fill(0);
  for (let q = 0; q < g.planes; q++) {
    for (let oy = 0; oy < oh; oy++) {
      for (let ox = 0; ox < ow; ox++) {
        let h0 = oy * g.s[0] - g.p[0], w0 = ox * g.s[1] - g.p[1];
        const h1 = Math.min(h0 + (g.k[0] - 1) * g.d[0] + 1, g.H), w1 = Math.min(w0 + (g.k[1] - 1) * g.d[1] + 1, g.W);
        while (h0 < 0) h0 += g.d[0];
        while (w0 < 0) w0 += g.d[1];
        let m = -Infinity, mi = h0 * g.W + w0;
        for (let h = h0; h < h1; h += g.d[0]) {
          for (let w = w0; w < w1; w += g.d[1]) {
            const v = x[q * g.H * g.W + h * g.W + w];
            if (v > m || Number.isNaN(v)) (m = v), (mi = h * g.W + w);
          }
        }
        const o = values.length;
        values.push(m);
        indices.push(mi);
        grad[q * g.H * g.W + mi] = Math.fround(grad[q * g.H * g.W + mi] + gOut[o]);
      }
    }
  }
  return { values, indices, grad, oh, ow };
}

/** Small values with repeats (ties), as f32. */
const data = (n: number, seed: number) => Array.from({ length: n }, (_, i) => Math.fround(((i * 7919 + seed * 104729) % 23) / 4 - 2.5));

function check(g: Geom, x: number[], parts = [1, 3]) {
  const gOut = data(g.planes * 64 * 64, 5).map((v) => v + 0.125);
  const ref = reference(x, g, gOut);
  const n = g.planes * ref.oh * ref.ow;
  const desc = [g.planes, g.H, g.W, ref.oh, ref.ow, ...g.k, ...g.s, ...g.p, ...g.d];
  for (const count of parts) {
    heap.reset();
    const xp = putF32(x), v = garbage(n, 4), ix = garbage(n, 8), gp = putF32(gOut.slice(0, n)), gi = garbage(g.planes * g.H * g.W, 4);
    const p = k.scratch();
    new Int32Array(k.memory.buffer, p, desc.length).set(desc);
    if (count === 1) k.maxPool(xp, v, ix, p);
    else for (let part = 0; part < count; part++) k.maxPoolPart(xp, v, ix, p, 0, part, count);
    expect(f32s(v, n), `values, ${count} part(s)`).toEqual(ref.values);
    expect(i64s(ix, n), `indices, ${count} part(s)`).toEqual(ref.indices);
    if (count === 1) k.maxPoolGrad(gp, ix, gi, p);
    else for (let part = 0; part < count; part++) k.maxPoolGradPart(gp, ix, gi, p, 0, part, count);
    expect(f32s(gi, g.planes * g.H * g.W), `gradient, ${count} part(s)`).toEqual(ref.grad);
  }
}

describe('max pooling (maxPool, maxPoolGrad)', () => {
  it('takes PyTorch\'s rule: ties keep the first, the last NaN wins, a window of -inf names its first element inside', () => {
    const g: Geom = { planes: 1, H: 2, W: 4, k: [2, 2], s: [2, 2], p: [0, 0], d: [1, 1] };
    // PyTorch 1.13: F.max_pool2d([[1, nan, 2, nan], [nan, 3, 0, 5]], 2, return_indices=True) -> [nan, nan], [4, 3]
    check(g, [1, NaN, 2, NaN, NaN, 3, 0, 5]);
    heap.reset();
    const xp = putF32([1, NaN, 2, NaN, NaN, 3, 0, 5]), v = garbage(2, 4), ix = garbage(2, 8);
    new Int32Array(k.memory.buffer, k.scratch(), 13).set([1, 2, 4, 1, 2, 2, 2, 2, 2, 0, 0, 1, 1]);
    k.maxPool(xp, v, ix, k.scratch());
    expect(i64s(ix, 2)).toEqual([4, 3]);
    // a 3×3 window padded by 1 over -inf: the index of its first element inside ([[0, 0, 1], [0, 0, 1], [3, 3, 4]])
    const inf = new Array(9).fill(-Infinity);
    check({ planes: 1, H: 3, W: 3, k: [3, 3], s: [1, 1], p: [1, 1], d: [1, 1] }, inf);
    expect(reference(inf, { planes: 1, H: 3, W: 3, k: [3, 3], s: [1, 1], p: [1, 1], d: [1, 1] }, new Array(9).fill(0)).indices).toEqual([0, 0, 1, 0, 0, 1, 3, 3, 4]);
  });

  // 2×2 stride 2: widths whose outputs leave every tail of the four-window loop, odd heights and widths;
  // in each plane NaN alone at another place of a window (top left, top right, bottom left, bottom
  // right), two NaNs in one window (the last one's index), a window of -inf, and one in the tail
  it.each([[4, 2], [6, 5], [5, 9], [7, 16], [9, 17], [3, 23], [2, 8]])('2×2 stride 2 over %i×%i planes (tails, odd sizes, ties, NaN, -inf)', (H, W) => {
    const x = data(6 * H * W, H * W);
    const set = (q: number, h: number, w: number, v: number) => { if (h < H && w < W) x[(q * H + h) * W + w] = v; };
    set(0, 0, 3, NaN);
    set(1, 1, 0, NaN);
    set(2, 1, 1, NaN);
    set(3, 0, 2, NaN);
    set(3, 0, 3, NaN);
    set(3, 1, 3, NaN);
    for (const [h, w] of [[0, 4], [0, 5], [1, 4], [1, 5]]) set(4, h, w, -Infinity);
    set(4, 1, 7, -Infinity);
    const last = 2 * (Math.floor(W / 2) - 1);
    set(5, 1, last + 1, NaN);
    set(5, 0, last, NaN);
    for (const ceil of [false, true]) check({ planes: 6, H, W, k: [2, 2], s: [2, 2], p: [0, 0], d: [1, 1], ceil }, x);
  });

  it.each<[string, Geom]>([
    ['3×3 stride 1 padding 1 (overlap)', { planes: 4, H: 7, W: 9, k: [3, 3], s: [1, 1], p: [1, 1], d: [1, 1] }],
    ['3×2 stride (2, 1) padding 1 dilation (2, 1), ceil', { planes: 3, H: 11, W: 13, k: [3, 2], s: [2, 1], p: [1, 1], d: [2, 1], ceil: true }],
    ['2×3 stride (1, 2) dilation (3, 2)', { planes: 2, H: 5, W: 6, k: [2, 3], s: [1, 2], p: [1, 1], d: [3, 2] }],
    ['2×2 stride 2 padding 1 (the general path)', { planes: 3, H: 6, W: 5, k: [2, 2], s: [2, 2], p: [1, 1], d: [1, 1], ceil: true }],
    ['1×1', { planes: 2, H: 1, W: 3, k: [1, 1], s: [1, 1], p: [0, 0], d: [1, 1] }],
  ])('%s', (_name, g) => {
    const x = data(g.planes * g.H * g.W, 3);
    x[5] = NaN;
    check(g, x);
  });
});

/** PyTorch's average pooling loop (AvgPoolKernel.cpp): values, and the gradient as its scatter. */
function avgReference(x: number[], g: Geom, includePad: boolean, divisor: number, gOut: number[]) {
  const oh = outSize(g.H, g.k[0], g.s[0], g.p[0], 1, !!g.ceil), ow = outSize(g.W, g.k[1], g.s[1], g.p[1], 1, !!g.ceil);
  const values: number[] = [], grad = new Array<number>(g.planes * g.H * g.W).fill(0);
  for (let q = 0; q < g.planes; q++) {
    for (let oy = 0; oy < oh; oy++) {
      for (let ox = 0; ox < ow; ox++) {
        let h0 = oy * g.s[0] - g.p[0], h1 = Math.min(h0 + g.k[0], g.H + g.p[0]), w0 = ox * g.s[1] - g.p[1], w1 = Math.min(w0 + g.k[1], g.W + g.p[1]);
        const padded = (h1 - h0) * (w1 - w0);
        (h0 = Math.max(h0, 0)), (w0 = Math.max(w0, 0)), (h1 = Math.min(h1, g.H)), (w1 = Math.min(w1, g.W));
        const div = divisor || (includePad ? padded : (h1 - h0) * (w1 - w0));
        let sum = 0;
        for (let h = h0; h < h1; h++) for (let w = w0; w < w1; w++) sum = Math.fround(sum + x[q * g.H * g.W + h * g.W + w]);
        const d = Math.fround(gOut[values.length] / div);
        for (let h = h0; h < h1; h++) for (let w = w0; w < w1; w++) grad[q * g.H * g.W + h * g.W + w] = Math.fround(grad[q * g.H * g.W + h * g.W + w] + d);
        values.push(Math.fround(sum / div));
      }
    }
  }
  return { values, grad, oh, ow };
}

describe('average pooling (avgPool, its gradient)', () => {
  it.each<[string, Geom, boolean, number]>([
    ['2×2 stride 2, odd sizes', { planes: 5, H: 7, W: 9, k: [2, 2], s: [2, 2], p: [0, 0], d: [1, 1] }, true, 0],
    ['3×3 stride 2 padding 1, counting the padding', { planes: 4, H: 7, W: 6, k: [3, 3], s: [2, 2], p: [1, 1], d: [1, 1] }, true, 0],
    ['3×3 stride 2 padding 1, ceil, not counting the padding', { planes: 3, H: 7, W: 8, k: [3, 3], s: [2, 2], p: [1, 1], d: [1, 1], ceil: true }, false, 0],
    ['3×4 stride (1, 3) padding (1, 2), ceil, counting the padding', { planes: 2, H: 6, W: 11, k: [3, 4], s: [1, 3], p: [1, 2], d: [1, 1], ceil: true }, true, 0],
    ['2×3 stride 1, divisor 4', { planes: 3, H: 5, W: 5, k: [2, 3], s: [1, 1], p: [0, 0], d: [1, 1] }, true, 4],
  ])('%s', (_name, g, includePad, divisor) => {
    const x = data(g.planes * g.H * g.W, 9);
    x[7] = NaN;
    const gOut = data(g.planes * 64, 4).map((v) => v + 0.5);
    const ref = avgReference(x, g, includePad, divisor, gOut);
    const n = g.planes * ref.oh * ref.ow;
    for (const count of [1, 3]) {
      heap.reset();
      const xp = putF32(x), v = garbage(n, 4), gp = putF32(gOut.slice(0, n)), gi = garbage(g.planes * g.H * g.W, 4);
      const p = k.scratch();
      new Int32Array(k.memory.buffer, p, 13).set([g.planes, g.H, g.W, ref.oh, ref.ow, ...g.k, ...g.s, ...g.p, +includePad, 0]);
      new Float32Array(k.memory.buffer, p + 48, 1)[0] = divisor;
      const run = (src: number, dst: number, grad: number) => {
        if (count === 1) k.avgPool(src, dst, p, grad);
        else for (let part = 0; part < count; part++) k.avgPoolPart(src, dst, p, grad, 0, part, count);
      };
      run(xp, v, 0);
      expect(f32s(v, n), `values, ${count} part(s)`).toEqual(ref.values);
      run(gp, gi, 1);
      expect(f32s(gi, g.planes * g.H * g.W), `gradient, ${count} part(s)`).toEqual(ref.grad);
    }
  });
});
