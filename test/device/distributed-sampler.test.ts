/**
 * `torch.utils.data.DistributedSampler`: PyTorch's index split (padding by repeating the start, or
 * dropping the tail), against the indices PyTorch gives; the shuffle (seed + epoch: the same on
 * every rank, different per epoch, a partition of the dataset); the process group's rank and
 * world size as defaults; and a `DataLoader` driven by it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck } from '../devices.js';

const { DistributedSampler } = torch.utils.data;
leakCheck(() => ['cpu']);
afterAll(async () => {
  await torch.shutdown();
});

/**
 * PyTorch's indices with shuffle=False, per rank: `DistributedSampler(range(n), num_replicas=k,
 * rank=r, shuffle=False, drop_last=drop)`. Computed with a line-for-line port of
 * torch/utils/data/distributed.py's `__init__`/`__iter__` (torch is not installed here);
 * test/fixtures/make_sampler_goldens.py prints the same table from PyTorch itself.
 */
const GOLDEN: Record<string, number[][]> = {
  '10,3,false': [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]],
  '10,3,true': [[0, 3, 6], [1, 4, 7], [2, 5, 8]],
  '2,5,false': [[0], [1], [0], [1], [0]],
  '7,2,false': [[0, 2, 4, 6], [1, 3, 5, 0]],
  '7,2,true': [[0, 2, 4], [1, 3, 5]],
  '12,4,false': [[0, 4, 8], [1, 5, 9], [2, 6, 10], [3, 7, 11]],
  '0,2,false': [[], []],
  '5,5,true': [[0], [1], [2], [3], [4]],
  '3,4,true': [[], [], [], []],
};
const range = (n: number) => ({ length: n });

describe('DistributedSampler', () => {
  it.each(Object.keys(GOLDEN))('shuffle=false, (n, numReplicas, dropLast) = (%s): PyTorch\'s indices', (key) => {
    const [n, k, drop] = key.split(',');
    const got = Array.from({ length: Number(k) }, (_, rank) => {
      const s = new DistributedSampler({ dataset: range(Number(n)), numReplicas: Number(k), rank, shuffle: false, dropLast: drop === 'true' });
      expect(s.length).toBe(GOLDEN[key][rank].length);
      return [...s];
    });
    expect(got).toEqual(GOLDEN[key]);
  });

  it('shuffle: a partition of the dataset (padded), the same order on every rank, new per epoch, fixed by the seed', () => {
    const k = 3, n = 17;
    const make = (rank: number, seed = 5) => new DistributedSampler({ dataset: range(n), numReplicas: k, rank, seed });
    const ranks = [0, 1, 2].map((r) => make(r));
    const epoch0 = ranks.map((s) => [...s]);
    expect(epoch0.map((x) => x.length)).toEqual([6, 6, 6]);
    const all = epoch0.flat();
    expect(new Set(all).size).toBe(n);                        // every index, and one repeated (17 → 18)
    expect([...all].sort((a, b) => a - b)).not.toEqual(all);  // not in order
    // The same order again for the epoch, and for a new sampler with the same seed.
    expect([...ranks[1]]).toEqual(epoch0[1]);
    expect([...make(1)]).toEqual(epoch0[1]);
    ranks.forEach((s) => s.setEpoch(1));
    const epoch1 = ranks.map((s) => [...s]);
    expect(new Set(epoch1.flat()).size).toBe(n);
    expect(epoch1).not.toEqual(epoch0);
    expect([...make(0, 6)]).not.toEqual(epoch0[0]);
    // The padding repeats the start of the shuffled order: the interleaved order's last index is its first.
    const inter = Array.from({ length: 18 }, (_, i) => epoch1[i % k][Math.floor(i / k)]);
    expect(inter[17]).toBe(inter[0]);
  });

  it('misuse: PyTorch\'s messages', () => {
    expect(() => new DistributedSampler({ dataset: range(4), numReplicas: 2, rank: 2 })).toThrow('Invalid rank 2, rank should be in the interval [0, 1]');
    expect(() => new DistributedSampler({ dataset: range(4) })).toThrow('Default process group has not been initialized');
    expect(() => new DistributedSampler({ dataset: range(4), numReplicas: 0, rank: 0 })).toThrow('numReplicas must be a positive integer, got 0');
    expect(() => new DistributedSampler({ dataset: range(4), numReplicas: 2, rank: 0, shufle: true } as never)).toThrow(/shufle/);
    const s = new DistributedSampler({ dataset: range(4), numReplicas: 2, rank: 0 });
    const z = torch.zeros([4]);
    expect(() => new torch.DataLoader(new torch.TensorDataset(z), { sampler: s, shuffle: true })).toThrow('sampler option is mutually exclusive with shuffle');
    z.dispose();
  });

  it('the process group\'s rank and world size are the defaults; a DataLoader batches each rank\'s share', async () => {
    torch.gpu.configure({ devices: 2 });
    await torch.gpu.init();
    const X = torch.arange(10, { dtype: 'float32' });
    const ds = new torch.TensorDataset(X);
    const shares = await torch.distributed.spawn(async (rank) => {
      await torch.distributed.initProcessGroup({ backend: 'webtorch' });   // rank r on gpu:r
      const sampler = new DistributedSampler({ dataset: ds, shuffle: false });
      expect([sampler.numReplicas, sampler.rank]).toEqual([2, rank]);
      const loader = new torch.DataLoader(ds, { batchSize: 3, sampler });
      expect(loader.length).toBe(2);
      const rows: number[] = [];
      for (const [xb] of loader) {
        rows.push(...((await xb.tolist()) as number[]));
        xb.dispose();
      }
      return rows;
    }, { nprocs: 2 });
    expect(shares).toEqual([[0, 2, 4, 6, 8], [1, 3, 5, 7, 9]]);
    X.dispose();
  });
});
