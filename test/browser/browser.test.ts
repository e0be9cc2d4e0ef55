/**
 * webtorch in a real browser (headless Chromium, see browser.ts): the package loads from a
 * plain module page and from a Vite build, with and without cross-origin isolation; `gpu:0`
 * exists; the shared op suite's goldens pass on `cpu` and `gpu:0`; a fixed-seed training run
 * gives Node's losses; isolation decides SharedArrayBuffer and the cpu device's helper threads.
 */
import { readFileSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { haveChromium, launch, open, repo, serve, viteBuild } from './browser.js';
import { trainRun } from './train-run.mjs';
import { MATH_ULP_BOUNDS } from '../math-sweep.mjs';

type Server = Awaited<ReturnType<typeof serve>>;
let browser: Browser;
const servers: Record<'isolated' | 'plain', Server> = {} as never;
const VITE_APP = repo('build/browser-test/vite-app'), PAGES = repo('build/browser-test/pages');
const modes = [['isolated', true], ['plain', false]] as const;

describe.runIf(haveChromium())('webtorch in headless Chromium', () => {
  beforeAll(async () => {
    await viteBuild('test/browser/vite-app/vite.config.mjs', VITE_APP);
    await viteBuild('test/browser/pages/vite.config.mjs', PAGES);
    browser = await launch();
    servers.isolated = await serve(true);
    servers.plain = await serve(false);
  });

  afterAll(async () => {
    await browser?.close();
    await Promise.all(Object.values(servers).map((s) => s.close()));
    await torch.shutdown();
  });

  describe.each(modes)('loading (%s page)', (mode, isolated) => {
    it('a plain <script type="module"> page loads dist/, starts the cpu worker and gpu:0, and reports the isolation', async () => {
      const { page, errors } = await open(browser, `${servers[mode].url}/test/browser/pages/train.html`);
      const got = await page.evaluate(async () => {
        const torch = (window as any).torch;
        const s = await torch.backends.summary();
        const x = torch.arange(6, { dtype: 'float32' }).reshape(2, 3);
        const cpu = await x.matmul(x.T).values();
        const g = x.to('gpu:0');
        const gpu = await g.matmul(g.T).values();
        const props = await torch.gpu.getDeviceProperties(0);
        // A product large enough for the pool's threads (ts/worker/cpu/core.ts: POOL_MIN_MACS).
        const a = torch.ones([96, 96, 96]);
        const big = await a.matmul(a).sum().item();
        // Pinned memory: a pinned tensor and a non-blocking copy to gpu:0 where the page is isolated; a clear refusal where not.
        let pinned: unknown;
        try {
          const p = torch.arange(4, { dtype: 'float32' }).pinMemory();
          const onGpu = p.to('gpu:0', { nonBlocking: true });
          pinned = { isPinned: p.isPinned(), values: await onGpu.values() };
          [p, onGpu].forEach((t) => t.dispose());
        } catch (e) {
          pinned = { error: (e as Error).message };
        }
        [x, g, a].forEach((t) => t.dispose());
        return { s, cpu, gpu, big, pinned, props: { coi: props.crossOriginIsolated, sab: props.sharedArrayBuffer, pinned: props.pinnedMemory, helpers: props.cpuHelperThreads, isSoftware: props.isSoftware }, sab: typeof SharedArrayBuffer, cores: navigator.hardwareConcurrency };
      });
      expect(errors).toEqual([]);
      expect(got.cpu).toEqual([5, 14, 14, 50]);
      expect(got.gpu).toEqual([5, 14, 14, 50]);
      expect(got.big).toBe(96 ** 4);
      expect(got.s.platform).toBe('browser');
      expect(got.s.webgpu).toBe(true);
      expect(got.s.gpuCount, 'gpu:0 exists').toBeGreaterThanOrEqual(1);
      expect(got.props.isSoftware, 'the headless adapter is SwiftShader').toBe(true);
      expect(got.s.crossOriginIsolated).toBe(isolated);
      expect(got.s.sharedArrayBuffer).toBe(isolated);
      expect(got.s.pinnedMemory).toBe(isolated);
      expect(got.sab === 'function').toBe(isolated);
      expect(got.props).toMatchObject({ coi: isolated, sab: isolated, pinned: isolated, helpers: isolated && got.cores > 1 });
      // The cpu device's helper threads run where the page is isolated (and has more than one core), and only there.
      if (isolated && got.cores > 1) expect(got.s.cpuThreads).toBe(Math.min(got.cores, 4));
      else expect(got.s.cpuThreads).toBe(1);
      expect(got.s.cpuHelperThreads).toBe(got.s.cpuThreads > 1);
      if (isolated) expect(got.pinned).toEqual({ isPinned: true, values: [0, 1, 2, 3] });
      else expect((got.pinned as { error: string }).error).toMatch(/^pinMemory\(\): pinned memory needs shared memory \(SharedArrayBuffer\).*cross-origin isolated/);
      await page.close();
    });

    it('a Vite app (vite build, then served) loads webtorch, its workers and its .wasm', async () => {
      const server = await serve(isolated, VITE_APP);
      try {
        const { page, errors } = await open(browser, `${server.url}/`, '__result');
        const got = await page.evaluate(() => (window as any).__result);
        expect(errors).toEqual([]);
        expect(got).toEqual({ isolated, cpu: [5, 14, 14, 50], gpu: [5, 14, 14, 50], cpuThreads: got.cpuThreads });
        if (!isolated) expect(got.cpuThreads).toBe(1);
        await page.close();
      } finally {
        await server.close();
      }
    });
  });

  describe('the shared op suite in the browser (isolated page)', () => {
    it.each(['cpu', 'gpu:0'])('test/fixtures/goldens.json passes on %s', async (device) => {
      const { page, errors } = await open(browser, `${servers.isolated.url}/build/browser-test/pages/goldens.html`);
      const report = await page.evaluate(async (d) => {
        const w = window as any;
        w.torch.gpu.configure({ allowSoftware: true });
        await w.torch.gpu.init();
        const props = d === 'cpu' ? null : await w.torch.gpu.getDeviceProperties(0);
        return { ...(await w.runGoldens('goldens.json', d)), architecture: props?.architecture };
      }, device);
      const failures: { id: string; message: string }[] = report.failures;
      // Every case passes on every adapter, SwiftShader's too (wgsl/math.ts relies on no more than WGSL promises).
      console.log(`browser goldens on ${device}${report.architecture ? ` (${report.architecture})` : ''}: ${report.ran} cases ran, ${report.passed} passed`);
      expect(errors).toEqual([]);
      expect(failures.slice(0, 10)).toEqual([]);
      expect(report.ran).toBe(report.total);
      expect(report.ran).toBeGreaterThan(1000);
      expect(report.passed).toBe(report.ran);
      await page.close();
    }, 300_000);
  });

  it('the float32 transcendentals on gpu:0 (SwiftShader) are within a few ulp of Math over dense sweeps, special values exact (test/math-sweep.mjs)', async () => {
    const { page, errors } = await open(browser, `${servers.isolated.url}/test/browser/pages/train.html`);
    const report: Record<string, { worst: number; wrongSpecials: unknown[] }> = await page.evaluate(() => (window as any).mathSweep('gpu:0'));
    console.log(`transcendentals on gpu:0 in Chromium, worst ulps: ${Object.entries(report).map(([op, r]) => `${op} ${r.worst.toFixed(2)}`).join(', ')}`);
    expect(errors).toEqual([]);
    expect(Object.keys(report)).toEqual(Object.keys(MATH_ULP_BOUNDS));
    for (const [op, r] of Object.entries(report)) {
      expect(r.wrongSpecials, `${op}: special values`).toEqual([]);
      expect(r.worst, `${op}: worst error in ulps (${JSON.stringify(r)})`).toBeLessThanOrEqual(MATH_ULP_BOUNDS[op as keyof typeof MATH_ULP_BOUNDS]);
    }
    await page.close();
  }, 120_000);

  describe('a fixed-seed training run gives the same losses in the browser as in Node', () => {
    const node: Record<string, number[]> = {};
    beforeAll(async () => {
      torch.gpu.configure({ allowSoftware: true });
      const bytes = readFileSync(repo('data/digits.u8'));
      for (const d of ['cpu', 'gpu:0']) node[d] = await trainRun(torch, bytes, d);
    });

    it.each(modes)('%s page', async (mode) => {
      const { page, errors } = await open(browser, `${servers[mode].url}/test/browser/pages/train.html`);
      const got = await page.evaluate(async () => {
        const w = window as any;
        return { cpu: await w.trainRun('cpu'), gpu: await w.trainRun('gpu:0') };
      });
      expect(errors).toEqual([]);
      expect(got.cpu.length).toBe(16);
      // The same kernels on the same numbers: the cpu device's WebAssembly gives the same bits.
      expect(got.cpu).toEqual(node.cpu);
      // The GPUs differ (Dawn on lavapipe in Node, SwiftShader in Chromium), so float rounding may too.
      got.gpu.forEach((l: number, i: number) => expect(Math.abs(l - node['gpu:0'][i]), `step ${i}: browser ${l}, Node ${node['gpu:0'][i]}`).toBeLessThanOrEqual(1e-4 * Math.abs(l)));
      expect(got.cpu.at(-1)).toBeLessThan(got.cpu[0]);
      await page.close();
    });
  });
});
