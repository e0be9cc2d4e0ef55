/**
 * Issue 31's data pieces: `randomSplit` (lengths and fractions, with a generator), `Subset`, the
 * samplers (`SequentialSampler`, `RandomSampler`, `SubsetRandomSampler`, `WeightedRandomSampler`,
 * `BatchSampler`) and `DataLoader` with `sampler`/`batchSampler`, with PyTorch's sizes and errors.
 * (Random orders come from webtorch's generator: seeded they repeat, but are not PyTorch's.)
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

const { data } = torch;
logicalGpuSuite(1, 'surface-data');

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const sorted = (a: number[]) => a.slice().sort((x, y) => x - y);
const gen = (seed: number) => new torch.Generator().manualSeed(seed);

class Numbers extends data.Dataset<number> {
  constructor(readonly n: number) {
    super();
  }

  get length() {
    return this.n;
  }

  getItem(i: number) {
    return i * 10;
  }
}

describe('randomSplit and Subset', () => {
  it('splits by lengths into disjoint subsets over one permutation, repeatable with a seeded generator', () => {
    const ds = new Numbers(10);
    const [a, b] = data.randomSplit(ds, [3, 7], gen(42));
    expect([a.length, b.length]).toEqual([3, 7]);
    expect(sorted([...a.indices, ...b.indices])).toEqual(range(10));
    expect(a.getItem(0)).toBe(a.indices[0] * 10);
    const [a2] = data.randomSplit(ds, [3, 7], { generator: gen(42) });
    expect(a2.indices).toEqual(a.indices);
    const [c] = data.randomSplit(ds, [3, 7], gen(43));
    expect(c.indices).not.toEqual(a.indices);
  });

  it('fractions: floor(n·f), the remainder from the first subset on (PyTorch: [4, 3, 4] for 11 × [0.3, 0.3, 0.4])', () => {
    expect(data.randomSplit(new Numbers(11), [0.3, 0.3, 0.4], gen(0)).map((s) => s.length)).toEqual([4, 3, 4]);
    expect(() => data.randomSplit(new Numbers(10), [3, 6])).toThrow('Sum of input lengths does not equal the length of the input dataset!');
    expect(() => data.randomSplit(new Numbers(10), [5, 5], { generatr: gen(0) } as never)).toThrow("unexpected keyword argument 'generatr'");
    const s = new data.Subset(new Numbers(5), [4, 2]);
    expect([s.length, s.getItem(0), s.getItem(-1)]).toEqual([2, 40, 20]);
    expect(() => s.getItem(2)).toThrow('index 2 is out of range');
  });
});

describe('samplers', () => {
  it('SequentialSampler and BatchSampler (PyTorch\'s example: [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]])', () => {
    const seq = new data.SequentialSampler(range(10));
    expect([...seq]).toEqual(range(10));
    expect([...new data.BatchSampler(seq, 3, false)]).toEqual([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]);
    const dropped = new data.BatchSampler(seq, { batchSize: 3, dropLast: true });
    expect([[...dropped], dropped.length]).toEqual([[[0, 1, 2], [3, 4, 5], [6, 7, 8]], 3]);
    expect(new data.BatchSampler(seq, 3, false).length).toBe(4);
    expect(() => new data.BatchSampler(seq, 0, false)).toThrow('batch_size should be a positive integer value, but got batch_size=0');
    expect(() => new data.BatchSampler(seq, 2, 1 as never)).toThrow('drop_last should be a boolean value, but got drop_last=1');
  });

  it('RandomSampler: permutations (whole ones repeated for numSamples > n), draws with replacement', () => {
    const r = new data.RandomSampler(range(6), { generator: gen(1) });
    const first = [...r];
    expect(sorted(first)).toEqual(range(6));
    expect([...new data.RandomSampler(range(6), { generator: gen(1) })]).toEqual(first);
    const long = [...new data.RandomSampler(range(4), false, 10, gen(2))];
    expect(long.length).toBe(10);
    expect(sorted(long.slice(0, 4))).toEqual(range(4));
    expect(sorted(long.slice(4, 8))).toEqual(range(4));
    const rep = [...new data.RandomSampler(range(3), { replacement: true, numSamples: 300, generator: gen(3) })];
    expect(rep.length).toBe(300);
    expect(new Set(rep)).toEqual(new Set([0, 1, 2]));
    expect(() => new data.RandomSampler(range(3), { numSamples: 0 })).toThrow('num_samples should be a positive integer value, but got num_samples=0');
    expect(() => new data.RandomSampler([], {})).toThrow('num_samples should be a positive integer value, but got num_samples=0');
  });

  it('SubsetRandomSampler and WeightedRandomSampler', () => {
    expect(sorted([...new data.SubsetRandomSampler([7, 3, 9], gen(4))])).toEqual([3, 7, 9]);
    expect([...new data.WeightedRandomSampler([0, 0, 1, 0], 5)]).toEqual([2, 2, 2, 2, 2]);
    const once = [...new data.WeightedRandomSampler([1, 1, 0, 1], 3, false, gen(5))];
    expect(sorted(once)).toEqual([0, 1, 3]);
    const many = [...new data.WeightedRandomSampler([1, 3], { numSamples: 4000, generator: gen(6) })];
    expect(Math.abs(many.filter((i) => i === 1).length / 4000 - 0.75)).toBeLessThan(0.03);
    expect(() => new data.WeightedRandomSampler([1, 1], 3, false)).toThrow('cannot sample n_sample > prob_dist.size(-1) samples without replacement');
    expect(() => new data.WeightedRandomSampler([1, -1], 3)).toThrow('invalid multinomial distribution');
  });
});

describe.each(['cpu', 'gpu:0'])('DataLoader with sampler and batchSampler on %s', (device) => {
  it('batches are the sampler\'s index lists', async () => {
    const X = torch.tidy(() => torch.arange(10, { device }).float());
    const ds = new data.TensorDataset(X);
    const bs = new data.BatchSampler(new data.SequentialSampler(ds), 4, false);
    const loader = new data.DataLoader(ds, { batchSampler: bs });
    expect([loader.length, loader.batchSize]).toEqual([3, null]);
    const got: number[][] = [];
    for (const [x] of loader) {
      got.push((await x.tolist()) as number[]);
      x.dispose();
    }
    expect(got).toEqual([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]);
    const sub = new data.DataLoader(ds, { sampler: new data.SubsetRandomSampler([1, 5, 8], gen(7)), batchSize: 2 });
    const seen: number[] = [];
    for (const [x] of sub) {
      seen.push(...((await x.tolist()) as number[]));
      x.dispose();
    }
    expect(sorted(seen)).toEqual([1, 5, 8]);
    expect(() => new data.DataLoader(ds, { batchSampler: bs, batchSize: 2 })).toThrow('batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last');
    expect(() => new data.DataLoader(ds, { batchSampler: bs, shuffle: true })).toThrow('batch_sampler option is mutually exclusive');
    X.dispose();
  });
});
