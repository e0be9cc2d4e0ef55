/**
 * `withDevice` and `noGrad` with async callbacks are scoped to the callback and the async work it
 * starts (ts/context.ts over AsyncLocalStorage): tasks running beside them keep their own current
 * device and grad mode. Before, the setting was a global restored when the promise settled, so a
 * concurrent task saw it. Where the platform has no async context, an async callback raises.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { ContextVar } from '../../ts/context.js';
import { suiteDevices } from '../devices.js';

const devices = suiteDevices();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('withDevice with an async callback', () => {
  it('two concurrent tasks: tensors land on their own devices, and the current device is 0 afterwards', async () => {
    expect(devices).toContain('gpu:1');
    const seen: Record<string, string[]> = { inside: [], beside: [] };
    await Promise.all([
      torch.gpu.withDevice(1, async () => {
        seen.inside.push(String(torch.device('gpu')));
        await sleep(20);
        const t = torch.ones([2], { device: 'gpu' });
        seen.inside.push(String(t.device), String(torch.gpu.currentDevice()));
        expect(await t.tolist()).toEqual([1, 1]);
        t.dispose();
      }),
      (async () => {
        await sleep(5); // runs while the other task is inside its scope, awaiting its timer
        const t = torch.ones([2], { device: 'cuda' });
        seen.beside.push(String(t.device), String(torch.gpu.currentDevice()));
        t.dispose();
      })(),
    ]);
    expect(seen).toEqual({ inside: ['gpu:1', 'gpu:1', '1'], beside: ['gpu:0', '0'] });
    expect(torch.gpu.currentDevice()).toBe(0);
  });

  it('setDevice inside a scope changes that scope only; at the top level it changes the program', async () => {
    const order: string[] = [];
    await Promise.all([
      torch.gpu.withDevice(0, async () => {
        await sleep(5);
        torch.gpu.setDevice(1);
        order.push(`scope ${torch.gpu.currentDevice()}`);
        await sleep(20);
        order.push(`scope ${torch.gpu.currentDevice()}`);
      }),
      (async () => {
        await sleep(15);
        order.push(`beside ${torch.gpu.currentDevice()}`);
      })(),
    ]);
    expect(order).toEqual(['scope 1', 'beside 0', 'scope 1']);
    expect(torch.gpu.currentDevice()).toBe(0);
    torch.gpu.setDevice(1);
    try {
      await sleep(1);
      expect(torch.gpu.currentDevice()).toBe(1);
      expect(String(torch.device('gpu'))).toBe('gpu:1');
    } finally {
      torch.gpu.setDevice(0);
    }
  });

  it('nests, restores after a throw, and refuses a cpu device', async () => {
    await torch.gpu.withDevice(1, async () => {
      await sleep(1);
      torch.gpu.withDevice(0, () => expect(torch.gpu.currentDevice()).toBe(0));
      expect(torch.gpu.currentDevice()).toBe(1);
    });
    await expect(torch.gpu.withDevice(1, async () => {
      await sleep(1);
      throw new Error('inside');
    })).rejects.toThrow('inside');
    expect(torch.gpu.currentDevice()).toBe(0);
    expect(() => torch.gpu.withDevice('cpu', () => 0)).toThrow('Expected a gpu device, but got: cpu');
    expect(() => torch.gpu.setDevice('cpu')).toThrow('Expected a gpu device, but got: cpu');
  });
});

describe('noGrad with an async callback', () => {
  for (const dev of ['cpu', 'gpu:0']) {
    it(`on ${dev}: a concurrent task keeps recording, and grad mode is on afterwards`, async () => {
      const x = torch.ones([3], { device: dev, requiresGrad: true });
      const got: Record<string, boolean> = {};
      await Promise.all([
        torch.noGrad(async () => {
          await sleep(20);
          const y = x.mul(2);
          got.inside = y.requiresGrad;
          got.insideMode = torch.isGradEnabled();
          y.dispose();
        }),
        (async () => {
          await sleep(5);
          const y = x.mul(2);
          got.beside = y.requiresGrad;
          got.besideMode = torch.isGradEnabled();
          const s = y.sum();
          s.backward();
          s.dispose();
          y.dispose();
        })(),
      ]);
      expect(got).toEqual({ inside: false, insideMode: false, beside: true, besideMode: true });
      expect(torch.isGradEnabled()).toBe(true);
      expect(await x.grad!.tolist()).toEqual([2, 2, 2]);
      x.grad!.dispose();
      x.dispose();
    });
  }
});

describe('ContextVar without an async context (a browser without AsyncContext)', () => {
  it('a sync callback works; an async one raises a clear error', () => {
    const v = new ContextVar('withDevice', 0, null);
    expect(v.scopesAsync).toBe(false);
    expect(v.run(3, () => v.get())).toBe(3);
    expect(v.get()).toBe(0);
    expect(() => v.run(1, () => {
      throw new Error('boom');
    })).toThrow('boom');
    expect(v.get()).toBe(0);
    expect(() => v.run(2, async () => 1)).toThrow(/withDevice: an async callback needs an async context/);
    expect(() => v.run(2, () => Promise.resolve(1))).toThrow(/withDevice: an async callback needs an async context/);
    expect(v.get()).toBe(0);
    v.set(5);
    expect(v.get()).toBe(5);
    v.run(6, () => v.set(7));
    expect(v.get()).toBe(5);
  });

  it('runSync (webtorch\'s own synchronous steps) never enters the async scope, and nests with run', async () => {
    const calls: string[] = [];
    const real = new ContextVar('probe', 0);
    const counting = { get: () => (real as unknown as { scope: { get(): unknown } }).scope.get(), run: <R>(value: unknown, fn: () => R): R => (calls.push('run'), (real as unknown as { scope: { run(v: unknown, f: () => R): R } }).scope.run(value, fn)) };
    const v = new ContextVar('noGrad/enableGrad', 0, counting as never);
    expect(v.runSync(1, () => v.get())).toBe(1);
    expect(calls).toEqual([]);
    expect(() => v.runSync(1, async () => 0)).toThrow('noGrad/enableGrad: expected a synchronous callback');
    expect(v.runSync(1, () => v.run(2, () => v.get()))).toBe(2);
    let inner: Promise<number[]> | undefined;
    v.runSync(3, () => {
      inner = v.run(4, async () => {
        const before = v.runSync(5, () => v.get());
        await sleep(1);
        return [before, v.get()];
      });
      expect(v.get()).toBe(3);
    });
    expect(v.get()).toBe(0);
    expect(await inner).toEqual([5, 4]);
    expect(calls).toEqual(['run', 'run']);
  });

  it('with the platform scope, set() inside a run stays in the run', async () => {
    const v = new ContextVar('test', 'top');
    expect(v.scopesAsync).toBe(true);
    const inner = v.run('a', async () => {
      await sleep(1);
      v.set('b');
      await sleep(1);
      return v.get();
    });
    expect(v.get()).toBe('top');
    expect(await inner).toBe('b');
    expect(v.get()).toBe('top');
  });
});
