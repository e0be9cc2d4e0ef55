// The cpu pool's chunked elementwise kernels (`unaryPart`, `binaryPart` in build/webtorch.wasm):
// for every split, the chunks together write exactly what the one-call kernel writes, bit for bit,
// on contiguous rows whose length is not a multiple of the vector width (the one-row case splits
// the row itself), transposed and permuted views (rows split, chunks starting mid-iteration),
// scalar and row broadcasts, and every element is written once (the output starts as garbage).
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { arena, loadKernels } from './wasm.js';

interface Kernels {
  memory: WebAssembly.Memory;
  heapBase(): number;
  scratch(): number;
  unary(op: number, dt: number, outDt: number, a: number, out: number, p: number, s0: number, s1: number, s2: number): void;
  unaryPart(q: number, ws: number, part: number, parts: number): void;
  binary(op: number, dt: number, outDt: number, a: number, b: number, out: number, p: number, alpha: number): number;
  binaryPart(q: number, ws: number, part: number, parts: number): void;
}

let k: Kernels;
const heap = arena(() => k);
beforeAll(async () => {
  k = await loadKernels<Kernels>();
});
beforeEach(() => heap.reset());

/** Room for n 4-byte values. */
const alloc = (n: number): number => heap.alloc(n * 4);
function put(values: Float32Array): number {
  const p = alloc(values.length);
  new Float32Array(k.memory.buffer, p, values.length).set(values);
  return p;
}
function garbage(n: number): number {
  const p = alloc(n);
  new Uint32Array(k.memory.buffer, p, n).fill(0x7fc0dead);
  return p;
}
const get = (p: number, n: number) => new Uint32Array(k.memory.buffer, p, n).slice();
const numel = (s: number[]) => s.reduce((a, b) => a * b, 1);
/** The descriptor [r, n, shape, (strides, offset) per view] at the scratch area's start. */
function desc(shape: number[], views: [number[], number][]): number {
  new Int32Array(k.memory.buffer, k.scratch(), 64).set([shape.length, numel(shape), ...shape, ...views.flatMap(([s, o]) => [...s, o])]);
  return k.scratch();
}
/** A part's argument block at scratch word 2048: i32 words, then f64 parameters at word 2056. */
function args(words: number[], params: number[]): number {
  const q = k.scratch() + 2048 * 4;
  new Int32Array(k.memory.buffer, q, 8).set([...words, 0, 0, 0, 0, 0, 0, 0, 0].slice(0, 8));
  new Float64Array(k.memory.buffer, q + 32, params.length).set(params);
  return q;
}
function values(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) * 2 - 1) * 6;
  return out;
}

/** [label, out shape, a's view, b's view] (strides and offsets in elements of a 70,000-element source). */
const VIEWS: [string, number[], [number[], number], [number[], number]][] = [
  ['one contiguous row of 66,667', [66667], [[1], 3], [[1], 5]],
  ['a short row (7)', [7], [[1], 0], [[1], 1]],
  ['transposed [130, 257]', [130, 257], [[1, 130], 0], [[257, 1], 2]],
  ['permuted [5, 6, 7, 9]', [5, 6, 7, 9], [[1, 5 * 9 * 7, 5, 35], 1], [[378, 63, 9, 1], 0]],
  ['scalar broadcast [300, 111]', [300, 111], [[111, 1], 0], [[0, 0], 7]],
  ['row broadcast [300, 111]', [300, 111], [[111, 1], 0], [[0, 1], 9]],
  ['every other element [33333]', [33333], [[2], 1], [[2], 0]],
];

describe('pool chunks of the map kernels', () => {
  const src = values(70000, 3), src2 = values(70000, 9);
  for (const [label, shape, av, bv] of VIEWS) {
    it(`unary and binary, ${label}: any split equals one call`, () => {
      const a = put(src), b = put(src2), n = numel(shape);
      for (const op of [2, 10, 12, 15]) {
        const whole = garbage(n);
        k.unary(op, 0, 0, a, whole, desc(shape, [av]), 0, 0, 0);
        const ref = get(whole, n);
        for (const parts of [2, 3, 8, 64]) {
          const o = garbage(n);
          desc(shape, [av]);
          const q = args([op, 0, 0, a, o, k.scratch()], [0, 0, 0]);
          for (let i = 0; i < parts; i++) k.unaryPart(q, 0, i, parts);
          expect(get(o, n), `unary ${op}, ${parts} parts`).toEqual(ref);
        }
      }
      for (const [op, alpha] of [[0, 1], [0, 2.5], [2, 1], [3, 1], [7, 1]]) {
        const whole = garbage(n);
        k.binary(op, 0, 0, a, b, whole, desc(shape, [av, bv]), alpha);
        const ref = get(whole, n);
        for (const parts of [2, 3, 8, 64]) {
          const o = garbage(n);
          desc(shape, [av, bv]);
          const q = args([op, 0, 0, a, b, o, k.scratch()], [alpha]);
          for (let i = 0; i < parts; i++) k.binaryPart(q, 0, i, parts);
          expect(get(o, n), `binary ${op}, ${parts} parts`).toEqual(ref);
        }
      }
    });
  }
});
