/**
 * Clear errors in a browser: no WebGPU (`tryGpu()` gives cpu, an explicit `gpu:0` says why), and
 * a worker script or kernels' `.wasm` the server does not give (the error names the URL and the
 * HTTP status).
 */
import type { Browser } from 'playwright-core';
import { chromium } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { CHROMIUM, haveChromium, launch, open } from './browser.js';
import { startServer } from '../../examples/web/server.mjs';

const servers: { close(): Promise<void> }[] = [];
const browsers: Browser[] = [];
afterAll(async () => {
  await Promise.all(browsers.map((b) => b.close()));
  await Promise.all(servers.map((s) => s.close()));
});

describe.runIf(haveChromium())('misuse in the browser', () => {
  it('without WebGPU, tryGpu() gives cpu and an explicit gpu:0 raises, saying why', async () => {
    // Chromium on Linux has no WebGPU unless --enable-unsafe-webgpu.
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--disable-webgpu'] });
    browsers.push(browser);
    const server = await startServer({ isolated: true });
    servers.push(server);
    const { page, errors } = await open(browser, `${server.url}/test/browser/pages/train.html`);
    const got = await page.evaluate(async () => {
      const torch = (window as any).torch;
      const dev = String(await torch.tryGpu(0));
      const s = await torch.backends.summary();
      let message = '';
      try {
        torch.ones([2], { device: 'gpu:0' });
      } catch (e) {
        message = (e as Error).message;
      }
      const x = torch.ones([3], { device: dev });
      const sum = await x.sum().item();
      x.dispose();
      return { dev, message, sum, gpuCount: s.gpuCount, gpuError: s.gpuError };
    });
    expect(errors).toEqual([]);
    expect(got.dev).toBe('cpu');
    expect(got.sum).toBe(3);
    expect(got.gpuCount).toBe(0);
    expect(got.message).toMatch(/Invalid device gpu:0: webtorch has 0 GPU devices \(no WebGPU adapter: .*(WebGPU|adapter)/);
    expect(got.gpuError).toMatch(/WebGPU|adapter/);
  });

  it("a kernels' .wasm that the server does not give raises, naming the URL and the status", async () => {
    const browser = await launch();
    browsers.push(browser);
    const server = await startServer({ isolated: false, missing: ['/dist/webtorch.wasm', '/dist/webtorch-shared.wasm'] });
    servers.push(server);
    const { page } = await open(browser, `${server.url}/test/browser/pages/train.html`);
    const message = await page.evaluate(async () => {
      const torch = (window as any).torch;
      try {
        await torch.ones([2]).sum().item();
        return 'no error';
      } catch (e) {
        return (e as Error).message;
      }
    });
    expect(message).toMatch(/webtorch: could not load the kernels' WebAssembly from http:\/\/127\.0\.0\.1:\d+\/dist\/webtorch\.wasm: HTTP 404/);
  });

  it('a device worker script that the server does not give raises, naming the URL and the status', async () => {
    const browser = await launch();
    browsers.push(browser);
    const server = await startServer({ isolated: false, missing: ['/dist/webtorch-cpu-worker.js'] });
    servers.push(server);
    const { page } = await open(browser, `${server.url}/test/browser/pages/train.html`);
    const message = await page.evaluate(async () => {
      const torch = (window as any).torch;
      try {
        await torch.ones([2]).sum().item();
        return 'no error';
      } catch (e) {
        return (e as Error).message;
      }
    });
    expect(message).toMatch(/webtorch: the cpu device's worker script http:\/\/127\.0\.0\.1:\d+\/dist\/webtorch-cpu-worker\.js failed to load \(HTTP 404 Not Found\)$/);
  });
});
