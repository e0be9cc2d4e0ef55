/**
 * What `max(dim)`, `min(dim)`, `sort`, `topk` and `maxPool2d(…, {returnIndices: true})` return is
 * PyTorch's named tuple in JavaScript's terms: by name, by position, and unpacked
 * (`values, indices = torch.max(x, 1)` becomes `const [values, indices] = torch.max(x, 1)`).
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

describe('values and indices, as PyTorch unpacks them', () => {
  const devices = suiteDevices();

  it('unpacks, indexes and names the same two tensors', async () => {
    for (const d of devices) {
      const x = torch.tensor([[1, 5, 3], [7, 2, 9]], { device: d, dtype: 'float32' });
      const r = torch.max(x, 1);
      const [values, indices] = r;
      expect(values, d).toBe(r.values);
      expect(indices, d).toBe(r.indices);
      expect(r[0], d).toBe(r.values);
      expect(r[1], d).toBe(r.indices);
      expect(r.length, d).toBe(2);
      expect(Array.from((await values.data()) as Float32Array), d).toEqual([5, 9]);
      expect(((await indices.tolist()) as unknown[]).map(Number), d).toEqual([1, 2]);
      const [mins, argmins] = x.min(0);
      expect(Array.from((await mins.data()) as Float32Array), d).toEqual([1, 2, 3]);
      expect(((await argmins.tolist()) as unknown[]).map(Number), d).toEqual([0, 1, 0]);
      const [sorted, order] = torch.sort(x, 1, true);
      expect(await sorted.tolist(), d).toEqual([[5, 3, 1], [9, 7, 2]]);
      expect(((await order.tolist()) as unknown[][]).map((row) => row.map(Number)), d).toEqual([[1, 2, 0], [2, 0, 1]]);
      const flat = x.flatten();
      const [top, where] = torch.topk(flat, 2);
      expect(await top.tolist(), d).toEqual([9, 7]);
      expect(((await where.tolist()) as unknown[]).map(Number), d).toEqual([5, 3]);
      const img = torch.tidy(() => torch.arange(16, { device: d, dtype: 'float32' }).reshape([1, 1, 4, 4]));
      // PyTorch's positional order: kernel_size, stride, padding, dilation, ceil_mode, return_indices
      const [pooled, at] = torch.nn.functional.maxPool2d(img, 2, 2, 0, 1, false, true);
      expect(await pooled.tolist(), d).toEqual([[[[5, 7], [13, 15]]]]);
      expect(((await at.tolist()) as unknown[][][][]).flat(3).map(Number), d).toEqual([5, 7, 13, 15]);
      for (const t of [x, values, indices, mins, argmins, sorted, order, flat, top, where, img, pooled, at]) t.dispose();
    }
  });
});
