/**
 * Printing: `await t.toStringAsync()` gives PyTorch's `repr` (goldens from
 * test/fixtures/make_goldens_printing.py), and `console.log(t)` / `toString()` give shape, dtype
 * and device without reading the device.
 */
import { inspect } from 'node:util';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

interface Case { name: string; shape: number[]; dtype: string; data: (number | boolean | string)[]; repr: Record<string, string> }
const goldens = JSON.parse(readFileSync(new URL('../fixtures/goldens-printing.json', import.meta.url), 'utf8')) as {
  cases: Case[];
  grad: { name: string; repr: Record<string, string> }[];
};
const decode = (v: number | boolean | string): number | boolean => (typeof v === 'string' ? Number(v.replace('inf', 'Infinity')) : v);

/** PyTorch's repr on cpu, or with the gpu:0 suffix (gpu:1 prints as gpu:0 with the index changed). */
const onDevice = (repr: Record<string, string>, device: string): string =>
  device === 'cpu' ? repr.cpu : repr['gpu:0'].replace("device='gpu:0'", `device='${device}'`);

const devices = suiteDevices();

describe('printing', () => {
  it('toStringAsync matches PyTorch for every golden case, on every device', async () => {
    expect(goldens.cases.length).toBeGreaterThan(20);
    for (const device of devices.slice(0, 2)) {
      for (const c of goldens.cases) {
        const flat = torch.tensor(c.data.map(decode) as number[], { dtype: c.dtype as torch.DType, device });
        const t = flat.reshape(c.shape);
        expect(await t.toStringAsync(), `${c.name} on ${device}`).toBe(onDevice(c.repr, device));
        flat.dispose();
        t.dispose();
      }
    }
  });

  it('shows requires_grad and grad_fn as PyTorch does', async () => {
    for (const device of devices.slice(0, 2)) {
      const a = torch.tensor([[1, 2], [3, 4]], { dtype: 'float32', device }).requiresGrad_();
      const b = a.add(1);
      const c = a.mul(a);
      const want = Object.fromEntries(goldens.grad.map((g) => [g.name, onDevice(g.repr, device)]));
      expect(await a.toStringAsync()).toBe(want['leaf requires_grad']);
      expect(await b.toStringAsync()).toBe(want['add grad_fn']);
      expect(await c.toStringAsync()).toBe(want['mul grad_fn']);
      for (const t of [a, b, c]) t.dispose();
    }
  });

  it('console.log, inspect and toString show shape, dtype and device, not the internals', () => {
    for (const device of devices.slice(0, 2)) {
      const t = torch.ones([2, 3], { dtype: 'int32', device });
      const want = `tensor(shape=[2, 3], dtype=int32, device='${device}')`;
      expect(String(t)).toBe(want);
      expect(inspect(t)).toBe(want);
      expect(inspect({ t })).toBe(`{ t: ${want} }`);
      expect(inspect(t)).not.toMatch(/storage|client|queue/);
      const g = torch.ones([2], { device }).requiresGrad_();
      const h = g.mul(2);
      expect(String(g)).toBe(`tensor(shape=[2], dtype=float32, device='${device}', requires_grad=True)`);
      expect(String(h)).toBe(`tensor(shape=[2], dtype=float32, device='${device}', grad_fn=<MulBackward0>)`);
      for (const x of [t, g, h]) x.dispose();
    }
  });

  it('print() logs the values', async () => {
    const t = torch.tensor([[1, 2], [3, 4]], { dtype: 'float32', device: devices[1] ?? 'cpu' });
    const logged: unknown[] = [];
    const orig = console.log;
    console.log = (...a: unknown[]) => void logged.push(...a);
    try {
      await t.print();
    } finally {
      console.log = orig;
    }
    expect(logged).toEqual([await t.toStringAsync()]);
    expect(logged[0]).toMatch(/^tensor\(\[\[1\., 2\.\],\n {8}\[3\., 4\.\]\]/);
    t.dispose();
  });
});
