// Direct tests of the index kernels of build/webtorch.wasm (assembly/kernels/index.ts).
//
// The hard part is proving that a bad index never becomes an address: every
// output and target sits between guard bytes, a kernel that meets a bad index
// must return 1 and name it, and the guards must be untouched. The sort is
// checked against JS's stable Array.prototype.sort on data full of ties.
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadKernels } from './wasm.js';

interface Kernels {
  memory: WebAssembly.Memory;
  heapBase(): number;
  scratch(): number;
  gather(dt: number, x: number, idx: number, out: number, p: number, dimStride: number, size: number, wrap: number): number;
  scatter(dt: number, add: number, out: number, idx: number, src: number, p: number, dimStride: number, size: number, value: number): number;
  sortWorkspaceBytes(len: number): number;
  sortIndices(dt: number, descending: number, x: number, out: number, outer: number, len: number, inner: number, ws: number): void;
  oneHot(idx: number, out: number, n: number, classes: number): number;
  badIndex(): bigint;
}

const F32 = 0, I32 = 1, U8 = 2, I64 = 6;
const GUARD = 64;
let k: Kernels;
let top = 0;

beforeAll(async () => {
  k = await loadKernels<Kernels>();
});
beforeEach(() => { top = k.heapBase(); });

/** Bytes between two runs of 0xee guard bytes; returns the start. */
function guarded(bytes: number): number {
  const p = ((top + 63) & ~63) + GUARD;
  top = p + bytes + GUARD;
  if (top > k.memory.buffer.byteLength) k.memory.grow(Math.ceil((top - k.memory.buffer.byteLength) / 65536));
  new Uint8Array(k.memory.buffer, p - GUARD, bytes + 2 * GUARD).fill(0xee);
  return p;
}
const guardsIntact = (p: number, bytes: number) =>
  [...new Uint8Array(k.memory.buffer, p - GUARD, GUARD), ...new Uint8Array(k.memory.buffer, p + bytes, GUARD)].every((b) => b === 0xee);
function i32s(values: number[]): number {
  const p = guarded(values.length * 4);
  new Int32Array(k.memory.buffer, p, values.length).set(values);
  return p;
}
/** int64 values (indices are int64; the host widens int32 ones). */
function i64s(values: (number | bigint)[]): number {
  const p = guarded(values.length * 8);
  new BigInt64Array(k.memory.buffer, p, values.length).set(values.map((v) => BigInt(v)));
  return p;
}
const outI64 = (p: number, n: number) => Array.from(new BigInt64Array(k.memory.buffer, p, n), Number);
function f32s(values: number[]): number {
  const p = guarded(values.length * 4);
  new Float32Array(k.memory.buffer, p, values.length).set(values);
  return p;
}
function desc(words: number[]): number {
  new Int32Array(k.memory.buffer, k.scratch(), words.length).set(words);
  return k.scratch();
}

describe('index kernels', () => {
  it('gather stops at a bad index, names it, and writes nothing out of bounds', () => {
    const x = f32s([10, 11, 12, 13, 14, 15]);
    for (const [bad, wrap] of [[6n, 0], [-7n, 1], [-1n, 0], [2n ** 32n + 1n, 0], [-(2n ** 40n), 1]] as const) {
      const idx = i64s([0, 5, bad, 1]), out = guarded(16);
      expect(k.gather(F32, x, idx, out, desc([1, 4, 4, 0, 0, 1, 0]), 1, 6, wrap)).toBe(1);
      expect(k.badIndex()).toBe(bad);
      expect(guardsIntact(out, 16)).toBe(true);
    }
    const idx = i64s([-1, 0, -6]), out = guarded(12);
    expect(k.gather(F32, x, idx, out, desc([1, 3, 3, 0, 0, 1, 0]), 1, 6, 1)).toBe(0);
    expect(Array.from(new Float32Array(k.memory.buffer, out, 3))).toEqual([15, 10, 10]);
  });

  it('scatter adds repeated indices, and a bad one leaves the target in bounds', () => {
    const out = guarded(12), idx = i64s([2, 0, 2, 2]), src = f32s([1, 2, 3, 4]);
    new Float32Array(k.memory.buffer, out, 3).set([0.5, 0.5, 0.5]);
    expect(k.scatter(F32, 1, out, idx, src, desc([1, 4, 4, 0, 0, 1, 0, 1, 0]), 1, 3, 0)).toBe(0);
    expect(Array.from(new Float32Array(k.memory.buffer, out, 3))).toEqual([2.5, 0.5, 8.5]);
    const u8 = guarded(4);
    expect(k.scatter(U8, 0, u8, i64s([1, 4]), 0, desc([1, 2, 2, 0, 0, 1, 0]), 1, 4, 7)).toBe(1);
    expect(k.badIndex()).toBe(4n);
    expect(guardsIntact(u8, 4)).toBe(true);
  });

  it('one_hot rejects classes outside [0, classes)', () => {
    const out = guarded(8 * 6);
    expect(k.oneHot(i64s([1, 0]), out, 2, 3)).toBe(0);
    expect(outI64(out, 6)).toEqual([0, 1, 0, 1, 0, 0]);
    expect(k.oneHot(i64s([1, 3]), out, 2, 3)).toBe(1);
    expect(k.badIndex()).toBe(3n);
    expect(k.oneHot(i64s([2n ** 33n]), out, 1, 3)).toBe(1);
    expect(k.badIndex()).toBe(2n ** 33n);
    expect(guardsIntact(out, 48)).toBe(true);
  });

  it.each([[false], [true]])('sorts stably like Array.prototype.sort (descending %s), NaN largest, -0 equal to 0', (descending) => {
    const len = 1037, inner = 3, outer = 2;
    const pool = [NaN, -0, 0, 1.5, -2, Infinity, -Infinity, 3];
    const data = Array.from({ length: outer * len * inner }, (_, i) => pool[(i * 7 + (i >> 3)) % pool.length]);
    const x = f32s(data), out = guarded(data.length * 8);
    const wsBytes = k.sortWorkspaceBytes(len), ws = guarded(wsBytes);
    k.sortIndices(F32, +descending, x, out, outer, len, inner, ws);
    const got = outI64(out, data.length);
    /** Ascending order with NaN last and -0 equal to 0. */
    const order = (a: number, b: number) => {
      const na = Number.isNaN(a), nb = Number.isNaN(b);
      if (na || nb) return na === nb ? 0 : na ? 1 : -1;
      return a < b ? -1 : a > b ? 1 : 0;
    };
    for (let o = 0; o < outer; o++) {
      for (let i = 0; i < inner; i++) {
        const line = Array.from({ length: len }, (_, p) => p);
        const v = (p: number) => data[o * len * inner + p * inner + i];
        const want = line.slice().sort((p, q) => (descending ? order(v(q), v(p)) : order(v(p), v(q))));
        const have = line.map((p) => got[o * len * inner + p * inner + i]);
        expect(have).toEqual(want);
      }
    }
    expect(guardsIntact(out, data.length * 8)).toBe(true);
  });

  it('sorts int32 keys across the sign boundary', () => {
    const data = [5, -1, -2147483648, 2147483647, 0, -1];
    const out = guarded(48), ws = guarded(k.sortWorkspaceBytes(6));
    k.sortIndices(I32, 0, i32s(data), out, 1, 6, 1, ws);
    expect(outI64(out, 6)).toEqual([2, 1, 5, 4, 0, 3]);
  });

  it.each([[0], [1]])('sorts int64 keys beyond 32 bits stably (descending %i)', (descending) => {
    const data = [2n ** 40n, -1n, -(2n ** 63n), 2n ** 63n - 1n, 0n, -1n, 2n ** 40n, 2n ** 32n];
    const out = guarded(8 * data.length), ws = guarded(k.sortWorkspaceBytes(data.length));
    k.sortIndices(I64, descending, i64s(data), out, 1, data.length, 1, ws);
    const want = data.map((_, i) => i).sort((p, q) => (descending ? Number(data[q] > data[p]) - Number(data[q] < data[p]) : Number(data[p] > data[q]) - Number(data[p] < data[q])));
    expect(outI64(out, data.length)).toEqual(want);
    expect(guardsIntact(out, 8 * data.length)).toBe(true);
  });
});
