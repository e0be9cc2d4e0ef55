/**
 * PENDING (rename to .test.ts once issue 19's `args` part is merged): the seeds' examples in
 * PyTorch's positional and keyword forms (sizes as positional numbers, randint, keyword device
 * arguments of the memory functions, requiresGrad at creation, optimizers' positional lr).
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { habitsSetup } from './setup.js';

habitsSetup();

describe('seed examples with positional and keyword arguments', () => {
  it('sizes as positional numbers (seed 001: torch.zeros(4, 3), torch.randn(2, 4))', async () => {
    const a = torch.zeros(4, 3);
    const r = torch.randn(2, 4);
    expect([a.shape, r.shape]).toEqual([[4, 3], [2, 4]]);
    a.dispose();
    r.dispose();
  });

  it('torch.randint / randperm / tensor(requiresGrad) (d2l training loop data)', async () => {
    const y = torch.randint(0, 3, [16]);
    expect(y.shape).toEqual([16]);
    const p = torch.randperm(5);
    expect(((await p.tolist()) as unknown[]).map(Number).sort()).toEqual([0, 1, 2, 3, 4]);
    const w = torch.tensor([1.5], { requiresGrad: true });
    expect(w.requiresGrad).toBe(true);
    const a = torch.arange(5, { device: 'gpu:0', dtype: 'float32' });
    expect(String(a.device)).toBe('gpu:0');
    for (const t of [y, p, w, a]) t.dispose();
  });

  it('seed 003: memory_summary(device=0), synchronize(device=0), caching_allocator_alloc(size=, device=, stream=)', async () => {
    expect(torch.gpu.memorySummary({ device: 0 })).toMatch(/Allocated memory/);
    await torch.gpu.synchronize({ device: 0 });
    const ptr = torch.gpu.cachingAllocatorAlloc({
      size: 1024 * 1024, // 1MB
      device: 0,
      stream: torch.gpu.currentStream(),
    });
    expect(torch.gpu.memoryAllocated(0)).toBe(1024 * 1024);
    torch.gpu.cachingAllocatorDelete(ptr);
  });

  it('d2l: SGD(model.parameters(), lr) positional', async () => {
    const lin = new torch.nn.Linear(2, 1, false);
    expect(lin.bias).toBeNull();
    const opt = new torch.optim.SGD(lin.parameters(), 0.5);
    expect(opt.paramGroups[0].lr).toBe(0.5);
    for (const p of lin.parameters()) p.dispose();
  });
});
