/**
 * Seed 003's OOM handling, word for word. The smaller tensor (10000 × 10000 float32, 400 MB) is
 * larger than lavapipe's 128 MiB per-binding limit: the GPU worker runs ops over it in windows.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { habitsSetup } from './setup.js';

habitsSetup();

describe('seed 003: out of memory handling', () => {
  it('catches OutOfMemoryError, empties the cache, allocates a smaller tensor', async () => {
    const printed: string[] = [];
    let smallerTensor: torch.Tensor | undefined;
    try {
      // Attempt large allocation
      const hugeTensor = torch.randn([100000, 100000], { device: 'cuda' });
      hugeTensor.dispose();
    } catch (e) {
      if (!(e instanceof torch.OutOfMemoryError)) throw e;
      printed.push('Out of memory! Clearing cache...');
      torch.gpu.emptyCache();
      // Try with smaller tensor
      smallerTensor = torch.randn([10000, 10000], { device: 'cuda' });
    }
    expect(printed).toEqual(['Out of memory! Clearing cache...']);
    expect(smallerTensor!.shape).toEqual([10000, 10000]);
    const total = smallerTensor!.sum();
    expect(Number.isFinite((await total.item()) as number)).toBe(true);
    total.dispose();
    smallerTensor!.dispose();
  });
});
