/**
 * PyTorch's version counter: an in-place write (`copy_`, index assignment, `normal_` and the other
 * fills) moves the storage's `_version`, shared by its views, and backward refuses a tensor a
 * gradient rule saved if the write came after the save. Without it, the rule would read the new
 * values and return a plausible, wrong gradient.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck, testDevices } from '../devices.js';

let devices: string[] = [];

beforeAll(async () => {
  devices = (await testDevices()).filter((d) => d !== 'gpu:1');
});
leakCheck(() => devices);
afterAll(async () => {
  await torch.shutdown();
});

const MODIFIED = /^one of the variables needed for gradient computation has been modified by an inplace operation: \[\S+ float32 \[3\]\], which is output 0 of MulBackward0, is at version 1; expected version 0 instead\. \(in SinBackward0\)$/;

describe('in-place writes and autograd', () => {
  it('counts in-place writes per storage, views included', async () => {
    for (const device of devices) {
      const t = torch.zeros([2, 3], { device }), row = t.select(0, 1);
      expect(t._version).toBe(0);
      const ones = torch.ones([2, 3], { device }), at = torch.tensor([0], { device });
      t.copy_(ones);
      expect([t._version, row._version]).toEqual([1, 1]);
      row.normal_();
      row.uniform_();
      row.bernoulli_();
      expect(t._version).toBe(4);
      t.indexPut_([at], 5);
      expect(t._version).toBe(5);
      // an out-of-place op makes a new storage
      const u = t.add(1);
      expect(u._version).toBe(0);
      [t, row, u, ones, at].forEach((x) => x.dispose());
    }
  });

  it('backward raises PyTorch\'s error when a saved tensor was written in place after it was saved, and the runtime goes on', async () => {
    for (const device of devices) {
      const x = torch.tensor([1.0, 2.5, 3.0], { requiresGrad: true, device });
      const y = x.mul(2);
      const z = y.sin(); // saves y
      const zero = torch.zeros([3], { device });
      torch.noGrad(() => y.copy_(zero));
      const loss = z.sum();
      expect(() => loss.backward(), device).toThrow(MODIFIED);
      expect(x.grad).toBeNull();
      [loss, z, y, zero].forEach((t) => t.dispose());
      // the same graph without the write: the right gradient, 2·cos(2x)
      const y2 = x.mul(2), l2 = torch.tidy(() => y2.sin().sum());
      l2.backward();
      const want = [1, 2.5, 3].map((v) => 2 * Math.cos(2 * v));
      ((await x.grad!.tolist()) as number[]).forEach((g, i) => expect(g).toBeCloseTo(want[i], 5));
      [y2, l2, x.grad!, x].forEach((t) => t.dispose());
    }
  });

  it('a copy over a tracked tensor cuts its old history (no gradient through overwritten values); a second backward after a write raises', async () => {
    for (const device of devices) {
      const x = torch.tensor([0.5, -1.0, 2.0], { requiresGrad: true, device });
      // y's values are overwritten by values that do not depend on x: x's gradient is zero, as PyTorch's CopyBackwards gives
      const y = x.add(1);
      const tripled = torch.tidy(() => y.detach().mul(3));
      y.copy_(tripled);
      const l = y.sum();
      l.backward();
      expect(await x.grad!.tolist()).toEqual([0, 0, 0]); // y's values came from a detached tensor: none depend on x
      expect(await y.tolist()).toEqual([4.5, 0, 9]);
      [l, y, x.grad!, tripled].forEach((t) => t.dispose());
      x.grad = null;
      // exp saves its output: a write after the first backward, then a second backward through the same graph
      const e = x.exp(), s = e.sum();
      s.backward({ retainGraph: true });
      const zero = torch.zeros([3], { device });
      torch.noGrad(() => e.copy_(zero));
      expect(() => s.backward()).toThrow(/modified by an inplace operation: \[\S+ float32 \[3\]\] is at version 1; expected version 0 instead\. \(in ExpBackward0\)$/);
      [s, e, x.grad!, x, zero].forEach((t) => t.dispose());
    }
  });
});
