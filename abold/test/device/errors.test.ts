/**
 * Device-side errors: integer division by zero. The divisor's values live on the device and
 * launches are asynchronous, so, like an index out of range, the kernel records the failure and
 * the next sync point raises PyTorch's ZeroDivisionError naming the op; the device keeps working.
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

type Dt = 'int32' | 'int64' | 'uint8';
const CASES: [string, (a: torch.Tensor, b: torch.Tensor) => torch.Tensor, string][] = [
  ['div floor', (a, b) => torch.div(a, b, { roundingMode: 'floor' }), 'floor_divide'],
  ['div trunc', (a, b) => torch.div(a, b, { roundingMode: 'trunc' }), 'trunc_divide'],
  ['floorDivide', (a, b) => torch.floorDivide(a, b), 'floor_divide'],
  ['remainder', (a, b) => torch.remainder(a, b), 'remainder'],
];

describe('integer division by zero', () => {
  it.each(CASES)('%s by a zero element raises ZeroDivisionError at the next read, naming the op', async (_name, fn, op) => {
    for (const device of devices) {
      for (const dtype of ['int32', 'int64', 'uint8'] as Dt[]) {
        const a = torch.tensor([7, 8, 9, 10], { dtype, device }), b = torch.tensor([2, 0, 3, 1], { dtype, device });
        const y = fn(a, b);
        await expect(y.data(), `${device} ${dtype}`).rejects.toThrow(`ZeroDivisionError: integer division by zero (in ${op}, dtype ${dtype})`);
        [a, b, y].forEach((t) => t.dispose());
      }
    }
  });

  it('is raised by synchronize() and item(), then cleared; the device keeps computing', async () => {
    for (const device of devices) {
      const a = torch.tensor([5, -5, 6], { dtype: 'int32', device });
      const z = torch.zeros([3], { dtype: 'int32', device }), d = torch.tensor([1, 0, 1], { dtype: 'int32', device });
      const bad = torch.floorDivide(a, d);
      await expect(torch.gpu.synchronize(device)).rejects.toThrow('ZeroDivisionError: integer division by zero (in floor_divide, dtype int32)');
      await torch.gpu.synchronize(device);
      const r = torch.tidy(() => torch.remainder(a.sum(), z.sum()));
      await expect(r.item()).rejects.toThrow('ZeroDivisionError: integer division by zero (in remainder, dtype int64)');
      // Later ops work and read back normally.
      const ok = torch.tidy(() => torch.floorDivide(a, torch.tensor([2, 2, -4], { dtype: 'int32', device })));
      expect(Array.from(await ok.data())).toEqual([2, -3, -2]);
      const rem = torch.remainder(a, 4);
      expect(await rem.tolist()).toEqual([1, 3, 2]);
      [a, z, d, bad, r, ok, rem].forEach((t) => t.dispose());
    }
  });

  it('broadcast and strided divisors are checked; only real zeros fail (vector tails included)', async () => {
    for (const device of devices) {
      // 5 elements: the vectorised GPU path runs past the end of the tensor into padding, which must not count.
      const a = torch.arange(0, 5, 1, { dtype: 'int32', device }), one = torch.ones([5], { dtype: 'int32', device });
      const q = torch.floorDivide(a, one);
      expect(Array.from(await q.data())).toEqual([0, 1, 2, 3, 4]);
      const m = torch.tensor([[1, 0], [3, 4]], { dtype: 'int32', device });
      const col = m.select(1, 1);
      const y = torch.tidy(() => torch.remainder(torch.ones([3, 2], { dtype: 'int32', device }), col));
      await expect(y.data()).rejects.toThrow('(in remainder, dtype int32)');
      [a, one, q, m, col, y].forEach((t) => t.dispose());
    }
  });

  it('a zero JS scalar divisor throws at the call', () => {
    for (const device of devices) {
      const i = torch.ones([2], { device, dtype: 'int64' });
      expect(() => torch.remainder(i, 0)).toThrow('ZeroDivisionError');
      expect(() => torch.floorDivide(i, 0)).toThrow('ZeroDivisionError');
      expect(() => torch.div(i, 0, { roundingMode: 'trunc' })).toThrow('ZeroDivisionError');
      i.dispose();
    }
  });

  it('float division by zero stays IEEE', async () => {
    for (const device of devices) {
      const a = torch.tensor([1, -1, 0, 5], { device, dtype: 'float32' }), z = torch.zeros([4], { device });
      const ys = [torch.div(a, z), torch.div(a, z, { roundingMode: 'floor' }), torch.remainder(a, z), torch.div(a, 0, { roundingMode: 'trunc' })];
      const [d, f, r, t] = await Promise.all(ys.map((y) => y.data()));
      expect(Array.from(d)).toEqual([Infinity, -Infinity, NaN, Infinity]);
      expect(Array.from(f)).toEqual([Infinity, -Infinity, NaN, Infinity]);
      expect(Array.from(r).every(Number.isNaN)).toBe(true);
      expect(Array.from(t)).toEqual([Infinity, -Infinity, NaN, Infinity]);
      [a, z, ...ys].forEach((y) => y.dispose());
    }
  });
});
