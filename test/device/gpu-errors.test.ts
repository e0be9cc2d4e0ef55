/**
 * GPU errors that Dawn reports (validation, out of memory) surface at the next sync point of their
 * device, once, and the device keeps working (gpu/core.ts `takeErrors`): they are taken from the
 * device's `uncapturederror` event, which Dawn fires inside the call that made the error, instead
 * of error scopes pushed and popped around every sync point. The error is a real one, made by
 * the test-only hook `torch.gpu._gpuError(i)` (a buffer both mappable and storage).
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

const devices = logicalGpuSuite(2, 'GPU errors at sync points');

describe('a GPU error raises at the next sync point', () => {
  for (const i of [0, 1]) {
    it(`gpu:${i}: at a read, once; the read after it, and the other device, are right`, async () => {
      const d = devices[1 + i], other = devices[2 - i];
      const x = torch.tensor([1, 2, 3], { device: d, dtype: 'float32' });
      const y = torch.tensor([5, 6], { device: other, dtype: 'float32' });
      await torch.gpu._gpuError(d);
      const z = x.add(1);
      await expect(z.data()).rejects.toThrow(/MapRead/);
      expect(Array.from(await z.data())).toEqual([2, 3, 4]);
      const w = y.add(1);
      expect(Array.from(await w.data())).toEqual([6, 7]);
      for (const t of [x, y, z, w]) t.dispose();
    });

    it(`gpu:${i}: at synchronize with nothing queued, once`, async () => {
      const d = devices[1 + i];
      await torch.gpu.synchronize(d);
      await torch.gpu._gpuError(d);
      await expect(torch.gpu.synchronize(d)).rejects.toThrow(/MapRead/);
      await expect(torch.gpu.synchronize(d)).resolves.toBeUndefined();
    });
  }

  it('the hook refuses a device that is not a GPU', async () => {
    await expect(torch.gpu._gpuError('cpu')).rejects.toThrow(/expected a gpu device, got cpu/);
  });
});
