/**
 * Seed 003, the torch.cuda overview: device management, moving tensors, cross-device errors, the
 * caching allocator's statistics and cleanup, synchronisation, bfloat16 tensors. (Streams, events,
 * graphs, AMP, TF32, DataParallel/DDP, pinned memory and the profiler are left to their
 * issues; device properties, `torch.cuda` and the OOM fallback are in cuda-semantics.test.ts and
 * oom-handling.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { GPUS, habitsSetup } from './setup.js';

habitsSetup();

describe('torch.cuda overview', () => {
  it('checking availability, the current device, the device name', async () => {
    const printed: string[] = [];
    const print = (s: string) => printed.push(s);
    if (await torch.gpu.isAvailable()) {
      print(`CUDA is available with ${await torch.gpu.deviceCount()} GPU(s)`);
      print(`Current device: ${torch.gpu.currentDevice()}`);
      print(`Device name: ${await torch.gpu.getDeviceName(0)}`);
    } else {
      print('CUDA is not available');
    }
    expect(printed[0]).toBe(`CUDA is available with ${GPUS} GPU(s)`);
    expect(printed[1]).toBe('Current device: 0');
    expect(printed[2]).toMatch(/^Device name: \S/);
  });

  it('with torch.cuda.device(1): tensors on device 1 by default', async () => {
    let result: torch.Tensor | undefined;
    let tensor: torch.Tensor | undefined;
    torch.gpu.withDevice(1, () => {
      // Tensors created here will be on GPU 1 by default
      tensor = torch.randn([100, 100], { device: 'cuda' });
      const t = tensor;
      result = torch.tidy(() => t.matmul(t.T)); // tensor @ tensor.T
    });
    expect(String(tensor!.device)).toBe('gpu:1');
    expect(String(result!.device)).toBe('gpu:1');
    expect(result!.shape).toEqual([100, 100]);
    expect(torch.gpu.currentDevice()).toBe(0);
    tensor!.dispose();
    result!.dispose();
  });

  it('moving tensors between devices', async () => {
    // Create tensor directly on GPU
    let tensorGpu = torch.randn([1000, 1000], { device: 'cuda' });
    expect(String(tensorGpu.device)).toBe('gpu:0');
    tensorGpu.dispose();
    // Move an existing tensor to GPU
    const tensorCpu = torch.randn([1000, 1000]);
    tensorGpu = tensorCpu.to('cuda');
    const again = tensorCpu.cuda();
    expect([String(tensorGpu.device), String(again.device)]).toEqual(['gpu:0', 'gpu:0']);
    // Specific GPU
    const tensorGpu1 = torch.randn([100, 100], { device: 'cuda:1' });
    expect(String(tensorGpu1.device)).toBe('gpu:1');

    const x = torch.randn([100, 100]);
    const xGpu = x.to('cuda');
    const xGpu1 = x.to('cuda:1');
    const xCpu = xGpu.to('cpu');
    const xSafe = xGpu.to('cuda'); // No-op if already on CUDA
    expect(xSafe === xGpu).toBe(true);
    expect([xGpu, xGpu1, xCpu].map((t) => String(t.device))).toEqual(['gpu:0', 'gpu:1', 'cpu']);
    expect(await xCpu.tolist()).toEqual(await x.tolist());
    for (const t of [tensorGpu, tensorCpu, again, tensorGpu1, x, xGpu, xGpu1, xCpu]) t.dispose();
  });

  it('cross-device operations raise; copy first', async () => {
    const a = torch.randn([10], { device: 'cuda:0' });
    let b = torch.randn([10], { device: 'cuda:1' });
    // This will raise an error
    expect(() => a.add(b)).toThrow('Expected all tensors to be on the same device, but found at least two devices, gpu:0 and gpu:1!');
    // Correct approach
    const b1 = b;
    b = b.to('cuda:0');
    const c = a.add(b);
    expect(String(c.device)).toBe('gpu:0');
    const [av, bv, cv] = [await a.values(), await b.values(), await c.values()];
    expect(cv).toEqual(av.map((v, i) => expect.closeTo((v as number) + (bv[i] as number), 5)));
    for (const t of [a, b, b1, c]) t.dispose();
  });

  it('memory information, cleanup and direct allocation (positional forms)', async () => {
    const t = torch.randn([256, 256], { device: 'cuda:0' });
    const allocated = torch.gpu.memoryAllocated(0);
    const reserved = torch.gpu.memoryReserved(0);
    expect(allocated).toBeGreaterThanOrEqual(256 * 256 * 4);
    expect(reserved).toBeGreaterThanOrEqual(allocated);
    expect(`Allocated: ${(allocated / 1e9).toFixed(2)} GB`).toMatch(/^Allocated: \d+\.\d\d GB$/);
    expect(torch.gpu.memorySummary(0)).toMatch(/Allocated memory/);
    t.dispose();
    await torch.gpu.synchronize(0);
    torch.gpu.emptyCache();
    torch.gpu.resetPeakMemoryStats(0);
    torch.gpu.resetAccumulatedMemoryStats(0);
    expect(torch.gpu.memoryReserved(0)).toBe(0);
    const ptr = torch.gpu.cachingAllocatorAlloc(1024 * 1024, 0);
    expect(torch.gpu.memoryAllocated(0)).toBe(1024 * 1024);
    torch.gpu.cachingAllocatorDelete(ptr);
    expect(torch.gpu.memoryAllocated(0)).toBe(0);
  });

  it('synchronize; bfloat16 tensors', async () => {
    await torch.gpu.synchronize(); // Wait for all kernels on the current device
    await torch.gpu.synchronize(0); // Synchronize a specific device
    const tensorBf16 = torch.randn([100, 100], { dtype: 'bfloat16', device: 'cuda' });
    expect(tensorBf16.dtype).toBe('bfloat16');
    expect(String(tensorBf16.device)).toBe('gpu:0');
    tensorBf16.dispose();
  });
});
