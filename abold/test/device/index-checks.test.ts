/**
 * Ops that read an index never read or write out of range silently: the kernel records the first
 * bad index and the next sync point raises PyTorch's message (its device-side assert), naming the
 * op; the runtime stays usable after. The class-index losses check their targets this way, with
 * `ignoreIndex` exempt; the index family's own checks are covered here once per op too.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const { F } = torch;
const devices = suiteDevices();

/** Runs `make` and awaits its result's values; returns the values, or the error's message. */
async function outcome(make: () => torch.Tensor): Promise<unknown> {
  const t = make();
  try {
    return await t.tolist();
  } catch (e) {
    return (e as Error).message;
  } finally {
    t.dispose();
  }
}

describe('class-index losses check their targets on the device', () => {
  it.each([9, -5, 3])('crossEntropy and nllLoss with target %i raise "Target … is out of bounds." at the sync point', async (bad) => {
    for (const d of devices) {
      const x = torch.tensor([[1, 2, 3], [3, 2, 1]], { dtype: 'float32', device: d });
      const t = torch.tensor([0, bad], { device: d });
      expect(await outcome(() => F.crossEntropy(x, t)), d).toMatch(new RegExp(`cross_entropy\\(\\): Target ${bad} is out of bounds\\.`));
      expect(await outcome(() => F.nllLoss(x, t)), d).toMatch(new RegExp(`nll_loss\\(\\): Target ${bad} is out of bounds\\.`));
      expect(await outcome(() => new torch.nn.CrossEntropyLoss({ reduction: 'none' }).forward(x, t)), d).toMatch(/Target .* is out of bounds/);
      // the device is still usable, and a good call gives PyTorch's value (F.cross_entropy: 0.4076059)
      const good = torch.tensor([0, 0], { device: d });
      expect(await outcome(() => torch.tidy(() => F.crossEntropy(x.index('1:2'), good.index('0:1')))), d).toBeCloseTo(0.4076059, 5);
      for (const z of [x, t, good]) z.dispose();
    }
  });

  it('ignoreIndex is exempt from the check (the default -100, and a custom one outside [0, C))', async () => {
    for (const d of devices) {
      const x = torch.tensor([[1, 2, 3], [3, 2, 1]], { dtype: 'float32', device: d });
      const t = torch.tensor([0, -100], { device: d }), t9 = torch.tensor([0, 9], { device: d });
      // only the first sample counts: -log softmax([1, 2, 3])[0] = 2.4076059
      expect(await outcome(() => F.crossEntropy(x, t)), d).toBeCloseTo(2.4076059, 5);
      expect(await outcome(() => F.crossEntropy(x, t9, { ignoreIndex: 9 })), d).toBeCloseTo(2.4076059, 5);
      expect(await outcome(() => F.nllLoss(x, t9, null, null, 9, null, 'sum')), d).toBeCloseTo(-1, 6);
      for (const z of [x, t, t9]) z.dispose();
    }
  });
});

describe('every other op that reads an index checks it on the device', () => {
  const cases: [string, (d: string) => torch.Tensor, RegExp][] = [
    ['gather', (d) => torch.gather(torch.ones([2, 2], { device: d }), 1, torch.tensor([[0, 5]], { device: d })), /gather\(\): index 5 is out of bounds for dimension 1 with size 2/],
    ['indexSelect', (d) => torch.indexSelect(torch.ones([2, 2], { device: d }), 0, torch.tensor([2], { device: d })), /index_select\(\): index 2 is out of range/],
    ['take', (d) => torch.take(torch.ones([2, 2], { device: d }), torch.tensor([7], { device: d })), /take\(\): out of range: tried to access index 7/],
    ['F.embedding', (d) => F.embedding(torch.tensor([4], { device: d }), torch.ones([3, 2], { device: d })), /embedding\(\): index 4 is out of range .*index out of range in self/],
    ['F.oneHot', (d) => F.oneHot(torch.tensor([0, 3], { device: d }), 3), /one_hot\(\): class value 3 is out of range/],
    ['F.oneHot negative', (d) => F.oneHot(torch.tensor([-1], { device: d }), 3), /one_hot\(\): class value -1 is out of range/],
    ['scatter', (d) => torch.scatter(torch.zeros([2, 2], { device: d }), 1, torch.tensor([[0, 2]], { device: d }), 1), /scatter\(\): index 2 is out of bounds for dimension 1 with size 2/],
    ['scatterAdd', (d) => torch.scatterAdd(torch.zeros([2, 2], { device: d }), 0, torch.tensor([[3, 0]], { device: d }), torch.ones([1, 2], { device: d })), /scatter_add\(\): index 3 is out of bounds for dimension 0 with size 2/],
    ['indexPut_', (d) => torch.zeros([3], { device: d }).indexPut_([torch.tensor([5], { device: d })], 1), /index 5 is out of bounds for dimension 0 with size 3/],
    ['advanced index', (d) => torch.zeros([3], { device: d }).index(torch.tensor([-4], { device: d })), /index -4 is out of bounds for dimension 0 with size 3/],
  ];
  it.each(cases)('%s raises at the next sync point, and the device keeps working', async (_, make, message) => {
    for (const d of devices) {
      const result = torch.tidy(() => make(d));
      await expect(result.data(), d).rejects.toThrow(message);
      result.dispose();
      const ok = torch.ones([2], { device: d });
      expect(await ok.tolist(), d).toEqual([1, 1]);
      ok.dispose();
    }
  });
});
