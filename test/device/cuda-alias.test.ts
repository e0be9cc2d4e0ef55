/**
 * `torch.cuda` is `torch.gpu`; PyTorch's legacy typed constructors (`torch.FloatTensor(2, 3)`,
 * `torch.cuda.FloatTensor([1, 2])`); device properties with the adapter's real name and honest,
 * documented values (ts/properties.ts); keyword forms of every torch.gpu function that takes a device.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { capability, multiProcessorCount } from '../../ts/properties.js';
import { suiteDevices } from '../devices.js';

suiteDevices();
const GiB = 1024 ** 3;

describe('torch.cuda', () => {
  it('is torch.gpu', () => {
    expect(torch.cuda).toBe(torch.gpu);
    expect(torch.cuda.memoryAllocated).toBe(torch.gpu.memoryAllocated);
  });
});

describe('legacy typed constructors', () => {
  it('sizes give an uninitialised tensor of that size, data gives a tensor (cpu)', async () => {
    const a = torch.FloatTensor(2, 3);
    expect([a.shape, a.dtype, String(a.device)]).toEqual([[2, 3], 'float32', 'cpu']);
    const b = torch.FloatTensor([1, 2]);
    expect([b.shape, await b.tolist()]).toEqual([[2], [1, 2]]);
    const c = torch.FloatTensor();
    expect(c.shape).toEqual([0]);
    const d = new torch.LongTensor([[1, 2], [3, 4]]);
    expect([d.dtype, await d.tolist()]).toEqual(['int64', [[1, 2], [3, 4]]]);
    const one = torch.FloatTensor(1);
    expect(one.shape).toEqual([1]);
    for (const [ctor, dtype] of [[torch.IntTensor, 'int32'], [torch.HalfTensor, 'float16'], [torch.BFloat16Tensor, 'bfloat16'],
      [torch.ByteTensor, 'uint8'], [torch.BoolTensor, 'bool'], [torch.LongTensor, 'int64']] as const) {
      const t = ctor(4);
      expect([t.shape, t.dtype, String(t.device)]).toEqual([[4], dtype, 'cpu']);
      expect(t instanceof ctor).toBe(true);
      expect(t instanceof torch.FloatTensor).toBe(false);
      t.dispose();
    }
    expect(a instanceof torch.FloatTensor).toBe(true);
    expect(a instanceof torch.cuda.FloatTensor).toBe(false);
    for (const t of [a, b, c, d, one]) t.dispose();
  });

  it('torch.cuda.X lands on the current GPU; .cuda() moves a cpu one', async () => {
    const x = torch.cuda.FloatTensor(1);
    expect(x.getDevice()).toBe(0);
    expect(x instanceof torch.cuda.FloatTensor).toBe(true);
    expect(x instanceof torch.FloatTensor).toBe(false);
    const [a, b] = torch.tidy(() => torch.cuda.withDevice(1, () => [torch.cuda.FloatTensor([1, 2]), torch.FloatTensor([3, 4]).cuda()]));
    expect([a.getDevice(), b.getDevice()]).toEqual([1, 1]);
    const c = a.add(b);
    expect(await c.tolist()).toEqual([4, 6]);
    const i = torch.cuda.IntTensor(2, 2, { device: 'gpu:1' });
    expect([String(i.device), i.dtype, i.shape]).toEqual(['gpu:1', 'int32', [2, 2]]);
    for (const t of [x, a, b, c, i]) t.dispose();
  });

  it('raises for what PyTorch or webtorch refuses', () => {
    expect(() => torch.DoubleTensor(2)).toThrow('torch.DoubleTensor: float64 is not supported (WebGPU has no 64-bit floats); use float32');
    expect(() => torch.cuda.DoubleTensor([1])).toThrow('float64 is not supported');
    expect(() => torch.CharTensor(2)).toThrow(/unknown dtype "int8"/);
    expect(() => torch.FloatTensor(2, { device: 'gpu:0' })).toThrow('legacy constructor expects device type: cpu but device type: gpu was passed');
    expect(() => torch.cuda.FloatTensor(2, { device: 'cpu' })).toThrow('legacy constructor expects device type: gpu but device type: cpu was passed');
    expect(() => torch.FloatTensor(2.5)).toThrow('torch.FloatTensor(): expected sizes (integers) or data (an array), but got (number)');
    expect(() => torch.IntTensor(2, -1)).toThrow('Trying to create tensor with negative dimension');
    expect(() => torch.FloatTensor(2, { dtype: 'int32' } as never)).toThrow("torch.FloatTensor() got an unexpected keyword argument 'dtype'");
    torch.tidy(() => expect(() => torch.FloatTensor(torch.ones([1]) as never)).toThrow('a tensor argument is not supported'));
  });
});

describe('device properties', () => {
  it('name, totalMemory, capability, multiprocessors and the two limits', async () => {
    const p = await torch.cuda.getDeviceProperties(0);
    expect(p.name).not.toBe('gpu:0');
    expect(p.name).toBe(p.device || p.description);
    expect(p.name.length).toBeGreaterThan(0);
    expect(await torch.cuda.getDeviceName(0)).toBe(p.name);
    expect(p.index).toBe(0);
    expect(p.totalMemory).toBe(process.env.WEBTORCH_GPU_MEMORY ? p.totalMemory : 8 * GiB);
    expect(p.maxStorageBufferBindingSize).toBe(p.limits.maxStorageBufferBindingSize);
    expect(p.maxBufferSize).toBe(p.limits.maxBufferSize);
    expect(p.maxStorageBufferBindingSize).toBeGreaterThan(0);
    expect(p.multiProcessorCount).toBe(multiProcessorCount(p));
    if (p.isSoftware) expect(p.multiProcessorCount).toBeNull();
    expect([p.major, p.minor]).toEqual(capability(p));
    expect(await torch.cuda.getDeviceCapability(0)).toEqual([p.major, p.minor]);
    expect(torch.cuda.getArchList()).toEqual(['wgsl']);
    if (p.isSoftware) expect([p.major, p.minor]).toEqual([0, 0]);
  });

  it('totalMemory is the budget the allocator enforces', async () => {
    const before = (await torch.gpu.getDeviceProperties(1)).totalMemory;
    try {
      torch.gpu.configure({ memory: 3 * GiB });
      expect((await torch.gpu.getDeviceProperties(1)).totalMemory).toBe(3 * GiB);
      expect(() => torch.empty([GiB], { device: 'gpu:1' })).toThrow(torch.OutOfMemoryError); // 4 GiB > 3 GiB
    } finally {
      torch.gpu.configure({ memory: before });
    }
    expect((await torch.gpu.getDeviceProperties(1)).totalMemory).toBe(before);
  });

  it('major.minor: the first capability of the NVIDIA architecture Dawn names, else 0.0', () => {
    expect(capability({ vendor: 'nvidia', architecture: 'hopper' })).toEqual([9, 0]);
    expect(capability({ vendor: 'nvidia', architecture: 'ampere' })).toEqual([8, 0]);
    expect(capability({ vendor: 'nvidia', architecture: 'lovelace' })).toEqual([8, 9]);
    expect(capability({ vendor: 'nvidia', architecture: 'turing' })).toEqual([7, 5]);
    expect(capability({ vendor: 'nvidia', architecture: '', device: 'nvidia-h100-80gb-hbm3' })).toEqual([9, 0]);
    expect(capability({ vendor: 'nvidia', architecture: '', device: 'nvidia-gh200-480gb' })).toEqual([9, 0]);
    expect(capability({ vendor: 'nvidia', architecture: '', device: 'nvidia-h1000' })).toEqual([0, 0]);
    expect(capability({ vendor: 'nvidia', architecture: '' })).toEqual([0, 0]);
    expect(capability({ vendor: 'amd', architecture: 'rdna-3' })).toEqual([0, 0]);
    expect(capability({ vendor: 'mesa', architecture: 'software' })).toEqual([0, 0]);
  });

  it('multiProcessorCount: the SMs of an NVIDIA GPU Dawn names, else null', () => {
    expect(multiProcessorCount({ vendor: 'nvidia', device: 'nvidia-h100-80gb-hbm3' })).toBe(132);
    expect(multiProcessorCount({ vendor: 'nvidia', device: 'nvidia-h100-pcie' })).toBe(114);
    expect(multiProcessorCount({ vendor: 'nvidia', device: 'nvidia-h200' })).toBe(132);
    expect(multiProcessorCount({ vendor: 'nvidia', device: 'nvidia-a100-sxm4-80gb' })).toBe(108);
    expect(multiProcessorCount({ vendor: 'nvidia', device: 'nvidia-a10g' })).toBe(80);
    expect(multiProcessorCount({ vendor: 'nvidia', device: 'nvidia-a10' })).toBe(72);
    expect(multiProcessorCount({ vendor: 'nvidia', device: 'nvidia-l4' })).toBe(58);
    expect(multiProcessorCount({ vendor: 'nvidia', device: 'tesla-t4' })).toBe(40);
    expect(multiProcessorCount({ vendor: 'nvidia', device: 'nvidia-geforce-rtx-4090' })).toBe(128);
    expect(multiProcessorCount({ vendor: 'nvidia', device: 'nvidia-h1000' })).toBeNull();
    expect(multiProcessorCount({ vendor: 'nvidia', device: '' })).toBeNull();
    expect(multiProcessorCount({ vendor: 'amd', device: 'radeon-h100' })).toBeNull();
    expect(multiProcessorCount({ vendor: 'mesa', device: 'llvmpipe-llvm-15-0-6-256-bits-' })).toBeNull();
  });
});

describe('keyword forms of the device argument', () => {
  it('every torch.gpu function that takes a device takes {device}', async () => {
    expect((await torch.gpu.getDeviceProperties({ device: 1 })).index).toBe(1);
    expect(await torch.gpu.getDeviceName({ device: 'cuda:1' })).toBe(await torch.gpu.getDeviceName(1));
    expect(await torch.gpu.getDeviceCapability({ device: 0 })).toEqual(await torch.gpu.getDeviceCapability());
    await torch.gpu.synchronize({ device: 0 });
    for (const d of [0, 'gpu:1', 'cpu']) {
      expect(torch.gpu.memoryAllocated({ device: d })).toBe(torch.gpu.memoryAllocated(d));
      expect(torch.gpu.memoryReserved({ device: d })).toBe(torch.gpu.memoryReserved(d));
      expect(torch.gpu.maxMemoryAllocated({ device: d })).toBe(torch.gpu.maxMemoryAllocated(d));
      expect(torch.gpu.maxMemoryReserved({ device: d })).toBe(torch.gpu.maxMemoryReserved(d));
      expect(torch.gpu.memoryStats({ device: d })).toEqual(torch.gpu.memoryStats(d));
      expect(torch.gpu.memorySnapshot({ device: d })).toEqual(torch.gpu.memorySnapshot(d));
      expect(torch.gpu.memorySummary({ device: d, abbreviated: true })).toBe(torch.gpu.memorySummary(d, true));
      torch.gpu.resetPeakMemoryStats({ device: d });
      torch.gpu.resetAccumulatedMemoryStats({ device: d });
      torch.gpu.emptyCache({ device: d });
      torch.gpu.setPerProcessMemoryFraction({ fraction: 1, device: d });
      torch.gpu.setPerProcessMemoryFraction(1, { device: d });
    }
    const block = torch.gpu.cachingAllocatorAlloc({ size: 1024, device: 1 });
    expect(String(block.device)).toBe('gpu:1');
    torch.gpu.cachingAllocatorDelete(block);
    expect(torch.gpu.withDevice({ device: 'cuda:1' }, () => torch.gpu.currentDevice())).toBe(1);
    expect(() => torch.gpu.withDevice({ devcie: 1 } as never, () => 0)).toThrow("device() got an unexpected keyword argument 'devcie'");
    try {
      torch.gpu.setDevice({ device: 1 });
      expect(torch.gpu.currentDevice()).toBe(1);
    } finally {
      torch.gpu.setDevice(0);
    }
    await expect(torch.gpu.getDeviceProperties({ devcie: 0 } as never)).rejects.toThrow("get_device_properties() got an unexpected keyword argument 'devcie'");
    await expect(torch.gpu.getDeviceProperties('cpu')).rejects.toThrow('get_device_properties: Expected a gpu device, but got: cpu');
    expect(() => torch.gpu.setPerProcessMemoryFraction({ device: 0 } as never)).toThrow("set_per_process_memory_fraction() missing 1 required argument: 'fraction'");
  });
});
