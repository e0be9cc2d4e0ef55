/**
 * Device loss in headless Chromium (ts/runtime/device-lost.ts; test/device/device-loss.test.ts is
 * Node's): gpu:0 lost mid-training through `torch.gpu._loseDevice(0)` raises `DeviceLostError` at
 * the next sync point and at the next op call; gpu:1 (a second logical device on SwiftShader) and
 * cpu train on; `torch.gpu.init()` brings gpu:0 back, fresh, while its old tensors raise.
 */
import { describe, expect, it } from 'vitest';
import { browserSession, haveChromium } from './browser.js';

type Raised = { name: string; message: string; device?: string; reason?: string; isDeviceLost: boolean } | null;

describe.runIf(haveChromium())('device loss in the browser', () => {
  const { openPage, browser } = browserSession();

  it('gpu:0 lost mid-training (GPUDevice.destroy()): DeviceLostError, gpu:1 and cpu train on, torch.gpu.init() brings it back', async () => {
    const { page, errors } = await openPage('test/browser/pages/train.html');
    const r = await page.evaluate(async () => {
      const torch = (window as any).torch;
      torch.gpu.configure({ devices: 2 });
      await torch.gpu.init();
      return (window as any).lossRun(() => torch.gpu._loseDevice(0));
    });
    const close = (a: number[], b: number[]) => a.forEach((v, i) => expect(Math.abs(v - b[i]), `step ${i}: ${v} vs ${b[i]}`).toBeLessThan(1e-4));
    expect(errors).toEqual([]);
    close(r.before.g0, r.ref.slice(0, 2));
    close(r.before.g1, r.ref.slice(0, 2));
    const sync = r.sync as Raised;
    expect(sync).toMatchObject({ name: 'DeviceLostError', device: 'gpu:0', reason: 'destroyed', isDeviceLost: true });
    expect(sync!.message).toMatch(/^gpu:0 was lost \(reason: destroyed/);
    expect(r.op as Raised).toMatchObject({ name: 'DeviceLostError', device: 'gpu:0', isDeviceLost: true });
    expect(r.opAllocated).toBe(0);
    close(r.g1, r.ref.slice(2, 6));
    expect(r.g1Bookkeeping).toBe(true);
    expect(r.cpuSum).toBe(3);
    expect(r.old as Raised).toMatchObject({ name: 'DeviceLostError', device: 'gpu:0' });
    expect(r.freshAllocated).toBe(0);
    close(r.fresh, r.ref.slice(0, 3));
    expect(r.after).toEqual({ allocated: 0, live: 0 });
    await page.close();
  }, 120_000);

  it("the browser's own loss (its GPU process crashes): every GPU device raises DeviceLostError, cpu goes on, torch.gpu.init() brings them back", async () => {
    const { page, errors } = await openPage('test/browser/pages/train.html');
    const before = await page.evaluate(async () => {
      const torch = (window as any).torch, w = window as any;
      torch.gpu.configure({ devices: 2 });
      await torch.gpu.init();
      w.held = ['gpu:0', 'gpu:1'].map((d) => torch.ones([4], { device: d }));
      return Promise.all(w.held.map(async (t: any) => {
        const s = t.sum();
        try {
          return await s.item();
        } finally {
          s.dispose();
        }
      }));
    });
    expect(before).toEqual([4, 4]);
    // Chromium's own loss: its GPU process, where every page's WebGPU devices live, crashes.
    const cdp = await browser().newBrowserCDPSession();
    await cdp.send('Browser.crashGpuProcess' as never);
    const after = await page.evaluate(async () => {
      const torch = (window as any).torch, w = window as any;
      // Wait until each worker has heard of its loss (the browser settles GPUDevice.lost a little later).
      const raised = async (fn: () => Promise<unknown>) => {
        try {
          await fn();
          return null;
        } catch (e: any) {
          return { name: e.name, message: e.message, device: e.device, reason: e.reason };
        }
      };
      const out: Record<string, unknown> = {};
      for (let i = 0; i < 2; i++) {
        const d = `gpu:${i}`;
        for (let k = 0; k < 100; k++) {
          const r = await raised(() => torch.gpu.synchronize(d));
          if (r) {
            out[d] = r;
            break;
          }
          await new Promise((f) => setTimeout(f, 50));
        }
      }
      out.cpu = await torch.ones([2]).sum().item();
      await torch.gpu.init();
      out.old = await raised(() => w.held[0].tolist());
      const fresh = ['gpu:0', 'gpu:1'].map((d) => torch.full([3], 2, { device: d }));
      out.fresh = await Promise.all(fresh.map((t: any) => t.tolist()));
      for (const t of [...w.held, ...fresh]) t.dispose();
      return out;
    });
    await cdp.detach();
    for (const d of ['gpu:0', 'gpu:1']) {
      expect(after[d], `${d} after the GPU process crashed`).toMatchObject({ name: 'DeviceLostError', device: d });
      expect((after[d] as { message: string }).message).toMatch(new RegExp(`^${d} was lost \\(reason: `));
    }
    expect(after.cpu).toBe(2);
    expect(after.old).toMatchObject({ name: 'DeviceLostError', device: 'gpu:0' });
    expect(after.fresh).toEqual([[2, 2, 2], [2, 2, 2]]);
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);
});
