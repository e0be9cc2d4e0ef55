// The sliding-window kernel of build/webtorch.wasm (assembly/kernels/window.ts) against a plain-JS
// im2col: strides 1 and 2, dilation, padding wider than the kernel's reach on one side, both
// layouts (kernel dims before or after the window position), contiguous rows (the memory-copy
// path) and transposed views (the element path), a fill value, and the pool's row split. The fold
// (col2im, `foldWindows`) against a plain-JS scatter-add in the same order, bit for bit: windows
// that overlap (stride below the kernel's reach) and that do not, contiguous and permuted views of
// the gradient, and every split of the planes.
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { arena, loadKernels } from './wasm.js';

interface Kernels {
  memory: WebAssembly.Memory;
  heapBase(): number;
  scratch(): number;
  windows(x: number, out: number, p: number): void;
  windowsPart(x: number, out: number, p: number, ws: number, part: number, parts: number): void;
  foldWindows(g: number, out: number, p: number): void;
  foldWindowsPart(g: number, out: number, p: number, ws: number, part: number, parts: number): void;
}

let k: Kernels;
const heap = arena(() => k);
beforeAll(async () => {
  k = await loadKernels<Kernels>();
});
beforeEach(() => heap.reset());

/** Room for n 4-byte values. */
const alloc = (n: number): number => heap.alloc(n * 4);

interface Geo { N: number; C: number; H: number; W: number; kh: number; kw: number; s: [number, number]; d: [number, number]; p: [number, number] }

/** Output size per dim (padding on both sides, as conv's). */
const outSize = (g: Geo): [number, number] => [
  Math.floor((g.H + 2 * g.p[0] - g.d[0] * (g.kh - 1) - 1) / g.s[0]) + 1,
  Math.floor((g.W + 2 * g.p[1] - g.d[1] * (g.kw - 1) - 1) / g.s[1]) + 1,
];

/** The reference: out[n, c, ki, kj, i, j] (or [n, c, i, j, ki, kj]) from x read through `at`. */
function reference(g: Geo, at: (n: number, c: number, h: number, w: number) => number, last: boolean, value: number): number[] {
  const [oh, ow] = outSize(g), out: number[] = [];
  const v = (n: number, c: number, ki: number, kj: number, i: number, j: number) => {
    const h = i * g.s[0] + ki * g.d[0] - g.p[0], w = j * g.s[1] + kj * g.d[1] - g.p[1];
    return h >= 0 && h < g.H && w >= 0 && w < g.W ? at(n, c, h, w) : value;
  };
  for (let n = 0; n < g.N; n++) for (let c = 0; c < g.C; c++) {
    if (last) for (let i = 0; i < oh; i++) for (let j = 0; j < ow; j++) for (let ki = 0; ki < g.kh; ki++) for (let kj = 0; kj < g.kw; kj++) out.push(v(n, c, ki, kj, i, j));
    else for (let ki = 0; ki < g.kh; ki++) for (let kj = 0; kj < g.kw; kj++) for (let i = 0; i < oh; i++) for (let j = 0; j < ow; j++) out.push(v(n, c, ki, kj, i, j));
  }
  return out;
}

const GEOS: [string, Geo][] = [
  ['3×3, pad 1', { N: 2, C: 3, H: 9, W: 11, kh: 3, kw: 3, s: [1, 1], d: [1, 1], p: [1, 1] }],
  ['5×3, stride 2, pad 2', { N: 1, C: 2, H: 10, W: 13, kh: 5, kw: 3, s: [2, 2], d: [1, 1], p: [2, 2] }],
  ['3×3, dilation 2, pad 3 (beyond the reach)', { N: 1, C: 2, H: 7, W: 8, kh: 3, kw: 3, s: [1, 1], d: [2, 2], p: [3, 3] }],
  ['1×7, stride (1, 3), no pad', { N: 2, C: 1, H: 4, W: 23, kh: 1, kw: 7, s: [1, 3], d: [1, 1], p: [0, 0] }],
];

describe('windows (im2col with padding)', () => {
  for (const [label, g] of GEOS) {
    for (const last of [false, true]) {
      for (const transposed of [false, true]) {
        it(`${label}, ${last ? 'kernel last' : 'kernel first'}, ${transposed ? 'transposed view' : 'contiguous rows'}`, () => {
          const { N, C, H, W, kh, kw } = g, [oh, ow] = outSize(g), n = N * C * H * W, off = 3;
          const src = Float32Array.from({ length: n + off }, (_, i) => i * 0.5 - 7);
          // Strides of a [N, C, H, W] view: row-major, or with H and W swapped in memory.
          const st = transposed ? [C * H * W, H * W, 1, H] : [C * H * W, H * W, W, 1];
          const x = alloc(n + off);
          new Float32Array(k.memory.buffer, x, n + off).set(src);
          const at = (nn: number, c: number, h: number, w: number) => src[off + nn * st[0] + c * st[1] + h * st[2] + w * st[3]];
          const value = last ? -Infinity : 0.25;
          const count = N * C * kh * kw * oh * ow;
          const p = () => {
            const words = new Int32Array(k.memory.buffer, k.scratch(), 21);
            words.set([N, C, H, W, kh, kw, oh, ow, ...g.s, ...g.d, ...g.p, off, ...st, +last, 0]);
            new Float32Array(k.memory.buffer, k.scratch() + 80, 1)[0] = value;
            return k.scratch();
          };
          const ref = reference(g, at, last, value);
          const o = alloc(count);
          new Float32Array(k.memory.buffer, o, count).fill(NaN);
          k.windows(x, o, p());
          expect(Array.from(new Float32Array(k.memory.buffer, o, count))).toEqual(ref);
          for (const parts of [2, 5]) {
            const o2 = alloc(count);
            new Float32Array(k.memory.buffer, o2, count).fill(NaN);
            for (let i = 0; i < parts; i++) k.windowsPart(x, o2, p(), 0, i, parts);
            expect(Array.from(new Float32Array(k.memory.buffer, o2, count)), `${parts} parts`).toEqual(ref);
          }
        });
      }
    }
  }
});

describe('foldWindows (col2im)', () => {
  // [label, N, C, H, W, kh, kw, s, d] where H, W are the (padded) extent the windows cover.
  const FOLDS: [string, number, number, number, number, number, number, [number, number], [number, number]][] = [
    ['3×3 stride 1 (overlapping)', 2, 3, 9, 11, 3, 3, [1, 1], [1, 1]],
    ['2×2 stride 2 (disjoint)', 1, 2, 8, 10, 2, 2, [2, 2], [1, 1]],
    ['3×3 dilation 2, stride (1, 3)', 2, 1, 11, 13, 3, 3, [1, 3], [2, 2]],
    ['5×3 stride 2', 1, 2, 13, 12, 5, 3, [2, 2], [1, 1]],
  ];
  for (const [label, N, C, H, W, kh, kw, s, d] of FOLDS) {
    for (const permuted of [false, true]) {
      it(`${label}, ${permuted ? 'a permuted view ([N, C, oh, ow, kh, kw] in memory)' : 'contiguous'}`, () => {
        const oh = Math.floor((H - d[0] * (kh - 1) - 1) / s[0]) + 1, ow = Math.floor((W - d[1] * (kw - 1) - 1) / s[1]) + 1;
        const n = N * C * kh * kw * oh * ow, off = 5;
        const src = Float32Array.from({ length: n + off }, (_, i) => Math.fround(Math.sin(i * 0.37) * 3));
        // Strides of the logical [N, C, kh, kw, oh, ow] view.
        const st = permuted
          ? [C * oh * ow * kh * kw, oh * ow * kh * kw, kw, 1, ow * kh * kw, kh * kw]
          : [C * kh * kw * oh * ow, kh * kw * oh * ow, kw * oh * ow, oh * ow, ow, 1];
        const g = alloc(n + off);
        new Float32Array(k.memory.buffer, g, n + off).set(src);
        // Reference: out += g in the kernel's order (plane, ki, kj, i, j), in f32.
        const ref = new Float32Array(N * C * H * W);
        for (let nn = 0; nn < N; nn++) for (let c = 0; c < C; c++) for (let ki = 0; ki < kh; ki++) for (let kj = 0; kj < kw; kj++) {
          for (let i = 0; i < oh; i++) for (let j = 0; j < ow; j++) {
            const at = ((nn * C + c) * H + i * s[0] + ki * d[0]) * W + j * s[1] + kj * d[1];
            ref[at] = Math.fround(ref[at] + src[off + nn * st[0] + c * st[1] + ki * st[2] + kj * st[3] + i * st[4] + j * st[5]]);
          }
        }
        const p = () => {
          new Int32Array(k.memory.buffer, k.scratch(), 19).set([N, C, H, W, kh, kw, oh, ow, ...s, ...d, off, ...st]);
          return k.scratch();
        };
        const count = N * C * H * W, o = alloc(count);
        new Float32Array(k.memory.buffer, o, count).fill(NaN);
        k.foldWindows(g, o, p());
        expect(Array.from(new Float32Array(k.memory.buffer, o, count))).toEqual(Array.from(ref));
        for (const parts of [2, 3, 16]) {
          const o2 = alloc(count);
          new Float32Array(k.memory.buffer, o2, count).fill(NaN);
          for (let i = 0; i < parts; i++) k.foldWindowsPart(g, o2, p(), 0, i, parts);
          expect(Array.from(new Float32Array(k.memory.buffer, o2, count)), `${parts} parts`).toEqual(Array.from(ref));
        }
      });
    }
  }
});
