/**
 * Every byte the GPU worker holds is in the allocator's figures: after each path that needs a
 * buffer of the worker's own (a packed output's scratch, a sort's pairs, a large read's staging,
 * matmul's operand copies), `memoryReserved` equals the bytes of the GPUBuffers alive in the
 * worker (less the device's fixed buffers, see ts/worker/scratch.ts), and the cached ones count
 * against the memory budget.
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck, testDevices } from '../devices.js';

const MiB = 1024 * 1024;
/** The default GPU budget (ts/runtime/memory.ts); the tests do not change it. */
const CAPACITY = 8 * 1024 ** 3;
const all = await testDevices();
const devices = all.filter((d) => d !== 'cpu');
leakCheck(() => all);
afterAll(async () => {
  await torch.shutdown();
});

/** The worker's live buffer bytes that the allocator should count. */
const held = (d: string) => {
  const b = torch._deviceBuffers(d);
  return b.alive - b.context;
};

describe.each(devices)('the worker buffers of %s are in the allocator figures', (d) => {
  const paths: Record<string, () => Promise<void>> = {
    'a packed (float16) output': async () => {
      const a = torch.randn([64, 64], { device: d, dtype: 'float16' });
      const c = a.matmul(a);
      await c.data();
      [a, c].forEach((t) => t.dispose());
    },
    'a sort': async () => {
      const x = torch.randn([1000], { device: d });
      const { values, indices } = x.sort();
      await values.data();
      [x, values, indices].forEach((t) => t.dispose());
    },
    'a large read': async () => {
      const x = torch.ones([6 * MiB], { device: d }); // 24 MiB: read staging of that size is kept
      expect(((await x.data()) as Float32Array)[6 * MiB - 1]).toBe(1);
      x.dispose();
    },
    'a product that copies a transposed operand': async () => {
      const a = torch.randn([256, 256], { device: d }), w = torch.randn([256, 256], { device: d });
      const wT = w.T, c = a.matmul(wT);
      await c.data();
      [a, w, wT, c].forEach((t) => t.dispose());
    },
  };

  it.each(Object.keys(paths))('after %s', async (name) => {
    await paths[name]();
    await torch.gpu.synchronize(d);
    expect(held(d), `${name}: live worker buffers`).toBeGreaterThan(0);
    expect(torch.gpu.memoryReserved(d), `${name}: memoryReserved against the live worker buffers`).toBe(held(d));
    torch.gpu.emptyCache(d);
    await torch.gpu.synchronize(d);
    expect(torch.gpu.memoryReserved(d), `${name}: after emptyCache`).toBe(held(d));
  });

  it('counts cached read staging against the budget', async () => {
    torch.gpu.emptyCache(d);
    await torch.gpu.synchronize(d);
    expect(torch.gpu.memoryReserved(d)).toBe(held(d));
    const x = torch.ones([12 * MiB], { device: d }); // 48 MiB
    await x.data();
    const reserved = torch.gpu.memoryReserved(d);
    expect(reserved).toBeGreaterThanOrEqual(96 * MiB); // the tensor's segment and the kept staging
    // a budget with room for 40 MiB more segments, but not with the 48 MiB of staging counted
    const segments = reserved - 48 * MiB;
    torch.gpu.setPerProcessMemoryFraction((segments + 40 * MiB) / CAPACITY, d);
    let caught: unknown;
    try {
      torch.empty([8 * MiB], { device: d }).dispose(); // 32 MiB: a new segment
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(torch.OutOfMemoryError);
    torch.gpu.emptyCache(d); // drops the staging: now it fits
    torch.empty([8 * MiB], { device: d }).dispose();
    x.dispose();
    torch.gpu.setPerProcessMemoryFraction(1, d);
    torch.gpu.emptyCache(d);
    await torch.gpu.synchronize(d);
    expect(torch.gpu.memoryReserved(d)).toBe(held(d));
  });

  it('raises out of memory when a scratch buffer would pass the budget', async () => {
    torch.gpu.emptyCache(d);
    const x = torch.ones([8 * MiB], { device: d }); // 32 MiB; reading it needs 32 MiB of staging
    await torch.gpu.synchronize(d);
    torch.gpu.setPerProcessMemoryFraction((torch.gpu.memoryReserved(d) + 16 * MiB) / CAPACITY, d);
    await expect(x.data()).rejects.toThrow(/OutOfMemoryError: Tried to allocate 32\.00 MiB of scratch memory for a read\. The device's budget is/);
    torch.gpu.setPerProcessMemoryFraction(1, d);
    expect(((await x.data()) as Float32Array)[8 * MiB - 1]).toBe(1);
    x.dispose();
    torch.gpu.emptyCache(d);
    await torch.gpu.synchronize(d);
    expect(torch.gpu.memoryReserved(d)).toBe(held(d));
  });
});

describe('the cpu worker\'s scratch (matmul workspaces, 16-bit copies)', () => {
  const CPU_CAPACITY = 2 * 1024 ** 3; // the default cpu budget (ts/runtime/memory.ts)

  it('counts against the budget and is released after the command', async () => {
    const a = torch.randn([512, 512], { dtype: 'float16' }), b = torch.randn([512, 512], { dtype: 'float16' });
    await torch.gpu.synchronize('cpu');
    const before = torch.gpu.memoryReserved('cpu');
    // 3 MiB more than now: not enough for the 3 MiB of f32 copies and the workspace
    torch.gpu.setPerProcessMemoryFraction((before + 3 * MiB) / CPU_CAPACITY, 'cpu');
    const c = a.matmul(b);
    await expect(c.data()).rejects.toThrow(/OutOfMemoryError: Tried to allocate [\d.]+ MiB of scratch memory for matmul/);
    c.dispose();
    torch.gpu.setPerProcessMemoryFraction(1, 'cpu');
    const c2 = a.matmul(b);
    expect(((await c2.data()) as Uint16Array).length).toBe(512 * 512);
    await torch.gpu.synchronize('cpu');
    const allocatorOnly = torch.gpu.memoryStats('cpu')['reserved_bytes.all.current'];
    expect(torch.gpu.memoryReserved('cpu')).toBe(allocatorOnly); // nothing left of the scratch
    [a, b, c2].forEach((t) => t.dispose());
  });
});
