// The AssemblyScript Philox kernel (assembly/kernels/random.ts) on build/webtorch.wasm directly:
// Random123's known answers, the calling thread's reference numbers (ts/random.ts, through the
// built package's Generator) bit for bit, and chunks that start mid-draw (the cpu pool's parts,
// a GPU's windows) giving the same numbers as the whole draw, across the SIMD and scalar paths.
import { beforeAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { loadKernels } from './wasm.js';

interface Kernels {
  memory: WebAssembly.Memory;
  heapBase(): number;
  random(dist: number, out: number, n: number, first: number, k0: number, k1: number, c0: number, c1: number, c2: number, c3: number, a: number, b: number): void;
  randomPart(p: number, ws: number, part: number, parts: number): void;
}
const BITS = 0, UNIFORM = 1, NORMAL = 2, INT = 3, BERNOULLI = 4;
const f32Bits = (x: number) => new Uint32Array(new Float32Array([x]).buffer)[0];

let k: Kernels;
let base = 0;
beforeAll(async () => {
  k = await loadKernels<Kernels>();
  base = k.heapBase();
  const need = base + (1 << 22) - k.memory.buffer.byteLength;
  if (need > 0) k.memory.grow(Math.ceil(need / 65536));
});

/** Runs `random` into the heap and returns a copy of the n words. */
function draw(dist: number, n: number, first: number, key: number[], counter: number[], a = 0, b = 0, at = base): Uint32Array {
  k.random(dist, at, n, first, key[0], key[1], counter[0], counter[1], counter[2], counter[3], a, b);
  return new Uint32Array(k.memory.buffer, at, n).slice();
}

describe('the AssemblyScript Philox kernel', () => {
  it('matches Random123\'s known answers for Philox4x32-10', () => {
    expect([...draw(BITS, 4, 0, [0, 0], [0, 0, 0, 0])]).toEqual([0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]);
    expect([...draw(BITS, 4, 0, [0xffffffff, 0xffffffff], [0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff])]).toEqual([0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]);
    expect([...draw(BITS, 4, 0, [0xa4093822, 0x299f31d0], [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344])]).toEqual([0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]);
  });

  it('gives the calling thread\'s reference numbers bit for bit (words, uniforms, normals)', () => {
    const n = 10007, key = [0x12345678, 0x9abc];
    const seed = 0x9abc * 2 ** 32 + 0x12345678;
    const ref = () => new torch.Generator().manualSeed(seed);
    expect(draw(BITS, n, 0, key, [0, 0, 0, 0])).toEqual(ref().words(n));
    expect(draw(UNIFORM, n, 0, key, [0, 0, 0, 0], f32Bits(0), f32Bits(1))).toEqual(new Uint32Array(ref().uniform(n).buffer));
    expect(draw(NORMAL, n, 0, key, [0, 0, 0, 0], f32Bits(0), f32Bits(1))).toEqual(new Uint32Array(ref().normal(n).buffer));
  });

  it('a chunk starting mid-draw equals that slice of the whole draw, for every distribution', () => {
    const key = [7, 8], counter = [0xfffffff0, 0xffffffff, 3, 4]; // the counter carries across words mid-draw
    const params: [number, number, number][] = [[BITS, 0, 0], [UNIFORM, f32Bits(-1), f32Bits(3)], [NORMAL, f32Bits(2), f32Bits(0.5)],
      [INT, -50, 101], [INT, 0x80000000, 0], [BERNOULLI, f32Bits(0.3), f32Bits(2.5)]];
    for (const [dist, a, b] of params) {
      const whole = draw(dist, 203, 0, key, counter, a, b);
      for (const [first, n] of [[1, 50], [3, 37], [4, 16], [5, 198], [17, 1], [64, 139]]) {
        expect(draw(dist, n, first, key, counter, a, b), `dist ${dist}, [${first}, ${first + n})`).toEqual(whole.slice(first, first + n));
      }
    }
  });

  it('randomPart\'s chunks together make the whole draw', () => {
    const n = 1001, key = [1, 2], out = base + 65536, desc = base + 32768;
    const whole = draw(NORMAL, n, 0, key, [9, 0, 0, 0], f32Bits(0), f32Bits(1));
    new Uint32Array(k.memory.buffer, out, n).fill(0);
    new Uint32Array(k.memory.buffer, desc, 12).set([NORMAL, out, n, 0, 1, 2, 9, 0, 0, 0, f32Bits(0), f32Bits(1)]);
    for (let part = 0; part < 7; part++) k.randomPart(desc, 0, part, 7);
    expect(new Uint32Array(k.memory.buffer, out, n).slice()).toEqual(whole);
  });
});
