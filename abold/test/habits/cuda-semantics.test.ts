/**
 * The seeds' examples that need torch.cuda as an alias of torch.gpu, torch.FloatTensor /
 * torch.cuda.FloatTensor, the device properties and capability queries, and withDevice scoped to
 * async callbacks (issue 19's runtime part). `torch.tidy` frees what the example leaves to
 * Python's garbage collector.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { habitsSetup } from './setup.js';

habitsSetup();

describe('seed 000: CUDA semantics, word for word', () => {
  it('the selected device, the device scope, copies and cuda(2)', async () => torch.tidy(() => {
    const x = torch.cuda.FloatTensor(1);
    expect(x.getDevice()).toBe(0);
    const y = torch.FloatTensor(1).cuda();
    expect(y.getDevice()).toBe(0);
    let z: torch.Tensor | undefined;
    torch.cuda.withDevice(1, () => {
      // allocates a tensor on GPU 1
      const a = torch.cuda.FloatTensor(1);
      // transfers a tensor from CPU to GPU 1
      const b = torch.FloatTensor(1).cuda();
      expect(a.getDevice()).toBe(1);
      expect(b.getDevice()).toBe(1);
      const c = a.add(b);
      expect(c.getDevice()).toBe(1);
      z = x.add(y);
      expect(z.getDevice()).toBe(0);
      // even within a context, you can give a GPU id to the .cuda call
      const d = torch.randn(2).cuda(2);
      expect(d.getDevice()).toBe(2);
    });
    expect(z!.getDevice()).toBe(0);
  }));
});

describe('seed 003: device properties', () => {
  it('get_device_properties(0) has the fields the example prints', async () => {
    const props = await torch.cuda.getDeviceProperties(0);
    const printed = [
      `Device name: ${props.name}`,
      `Compute capability: ${props.major}.${props.minor}`,
      `Total memory: ${(props.totalMemory / 1e9).toFixed(2)} GB`,
      `Multi-processor count: ${props.multiProcessorCount}`,
    ];
    expect(props.name).not.toBe('gpu:0');
    expect(props.totalMemory).toBeGreaterThan(0);
    expect(printed[1]).toMatch(/^Compute capability: \d+\.\d+$/);
    expect(typeof torch.cuda.getDeviceCapability).toBe('function');
    expect(Array.isArray(torch.cuda.getArchList())).toBe(true);
  });

  it('withDevice with an async callback does not leak into concurrent tasks', async () => {
    const seen: string[] = [];
    await Promise.all([
      torch.cuda.withDevice(1, async () => {
        await new Promise((r) => setTimeout(r, 5));
        const t = torch.ones([1], { device: 'cuda' });
        seen.push(String(t.device));
        t.dispose();
      }),
      (async () => {
        const t = torch.ones([1], { device: 'cuda' });
        seen.push(String(t.device));
        t.dispose();
      })(),
    ]);
    expect(seen.sort()).toEqual(['gpu:0', 'gpu:1']);
    expect(torch.cuda.currentDevice()).toBe(0);
  });
});
