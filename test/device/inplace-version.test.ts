/**
 * In-place ops (`add_`, `sub_`, `mul_`, `div_`, `clamp_`, `neg_`, `fill_`, `zero_`) and PyTorch's version counter: an in-place write (`copy_`, index assignment, `normal_` and the other
 * fills) moves the storage's `_version`, shared by its views, and backward refuses a tensor a
 * gradient rule saved if the write came after the save. Without it, the rule would read the new
 * values and return a plausible, wrong gradient.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const devices = suiteDevices();

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

  it('add_, sub_, mul_, div_, clamp_, neg_, fill_ and zero_ write in place (views too) and return the tensor', async () => {
    for (const device of devices) {
      const x = torch.tensor([1, 2, 3], { dtype: 'float32', device }), one = torch.ones([3], { device });
      expect(x.add_(one, { alpha: 2 })).toBe(x);
      expect(await x.tolist()).toEqual([3, 4, 5]);
      x.mul_(2).sub_(1);
      expect(await x.tolist()).toEqual([5, 7, 9]);
      x.div_(2).clamp_(3, 4);
      expect(await x.tolist()).toEqual([3, 3.5, 4]);
      x.neg_().add_(1, { alpha: 2 });
      // alpha is keyword-only, as PyTorch's
      expect(() => x.add_(1, 2 as never)).toThrow('add_() takes 1 positional argument but 2 were given');
      expect(await x.tolist()).toEqual([-1, -1.5, -2]);
      expect(x._version).toBe(7); // seven writes
      x.zero_();
      expect(await x.tolist()).toEqual([0, 0, 0]);
      x.fill_(7);
      expect(await x.tolist()).toEqual([7, 7, 7]);
      // a strided view writes its base; integer division as div's
      const base = torch.arange(0, 6, 1, { dtype: 'int32', device }), m = base.reshape(2, 3), col = m.select(1, 1);
      col.mul_(10);
      expect(await base.tolist()).toEqual([0, 10, 2, 3, 40, 5]);
      base.div_(3, { roundingMode: 'floor' });
      expect(await base.tolist()).toEqual([0, 3, 0, 1, 13, 1]);
      const u8 = torch.tensor([1, 2, 3], { dtype: 'uint8', device });
      u8.sub_(255);
      expect(await u8.tolist()).toEqual([2, 3, 4]); // uint8 arithmetic wraps, as PyTorch's
      [x, one, base, m, col, u8].forEach((t) => t.dispose());
    }
  });

  it('in-place ops refuse what PyTorch refuses: a result the dtype cannot hold, a broadcast beyond the shape, a leaf that requires grad', () => {
    for (const device of devices) {
      const i = torch.tensor([1, 2, 3], { device }), f = torch.zeros([3], { device }), big = torch.ones([2, 3], { device });
      const leaf = torch.zeros([3], { device, requiresGrad: true });
      expect(() => i.add_(0.5)).toThrow("add_: result type Float can't be cast to the desired output type Long");
      expect(() => f.add_(big)).toThrow("add_: output with shape [3] doesn't match the broadcast shape [2, 3]");
      expect(() => leaf.mul_(2)).toThrow('a leaf Variable that requires grad is being used in an in-place operation. (mul_)');
      expect(() => f.add_(1, { alhpa: 2 } as never)).toThrow("add_() got an unexpected keyword argument 'alhpa'");
      // a uint8 op's scalar: PyTorch's checked conversion (past 255 raises; down to -255 wraps)
      const u8 = torch.tensor([1, 2, 3], { dtype: 'uint8', device });
      expect(() => u8.add_(300)).toThrow('value cannot be converted to type uint8_t without overflow (in add, [3] uint8 and scalar 300)');
      expect(() => u8.mul(-256)).toThrow('value cannot be converted to type uint8_t without overflow');
      expect([i._version, f._version, leaf._version, u8._version]).toEqual([0, 0, 0, 0]);
      [i, f, big, leaf, u8].forEach((t) => t.dispose());
    }
  });

  it('on the tape, in-place ops keep the gradient PyTorch gives; off it, they update a parameter by hand', async () => {
    for (const device of devices) {
      const w = torch.tensor([1, 2, 3], { dtype: 'float32', requiresGrad: true, device });
      // h = 2w, h *= 3, h += 1: d/dw sin(h).sum() = 6·cos(6w + 1), mul_'s saved operand untouched by the write
      const l = torch.tidy(() => {
        const h = w.mul(2);
        h.mul_(3).add_(1);
        return h.sin().sum();
      });
      l.backward();
      const want = [1, 2, 3].map((v) => 6 * Math.cos(6 * v + 1));
      ((await w.grad!.tolist()) as number[]).forEach((g, k) => expect(g).toBeCloseTo(want[k], 4));
      // the d2l habit: w -= lr·grad under noGrad, then grad.zero_()
      torch.noGrad(() => w.sub_(w.grad!, { alpha: 0.5 }));
      ((await w.tolist()) as number[]).forEach((v, k) => expect(v).toBeCloseTo(k + 1 - 0.5 * want[k], 4));
      w.grad!.zero_();
      expect(await w.grad!.tolist()).toEqual([0, 0, 0]);
      [l, w.grad!, w].forEach((t) => t.dispose());
    }
  });
});
