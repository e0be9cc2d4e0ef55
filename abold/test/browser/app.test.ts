/**
 * The web app (examples/web/, `npm run web`) in headless Chromium: it lists the devices, trains
 * the digits classifier in the device workers while its charts (loss/accuracy, memory, frame
 * times) update, and keeps drawing frames. A screenshot of it mid-training is saved to
 * build/browser-test/app.png.
 */
import { mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium, launch, open, repo, serve } from './browser.js';

type Server = Awaited<ReturnType<typeof serve>>;

/** The app's state (window.app) with each chart's point count and a fingerprint of its canvas. */
const snapshot = (page: Page) => page.evaluate(() => {
  const app = (window as any).app;
  const charts = Object.fromEntries(Object.entries(app.charts as Record<string, any>).map(([k, c]) => [k, { points: c.length, data: c.data, canvas: c.plot.ctx.canvas.toDataURL().length + ':' + c.plot.ctx.canvas.toDataURL().slice(-64) }]));
  return { steps: app.steps, epochs: app.epochs, running: app.running, error: app.error, frames: app.frames, charts, framesText: document.getElementById('frames')!.textContent, rows: [...document.querySelectorAll('#devices tbody tr')].map((r) => (r as HTMLElement).innerText) };
});

describe.runIf(haveChromium())('the web app', () => {
  let browser: Browser;
  const servers: Server[] = [];
  beforeAll(async () => {
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all(servers.map((s) => s.close()));
  });

  it('lists the devices, trains on gpu:0 with live charts, and keeps drawing frames (isolated page)', async () => {
    const server = await serve(true);
    servers.push(server);
    const { page, errors } = await open(browser, `${server.url}/examples/web/`, 'app');
    await page.setViewportSize({ width: 1200, height: 1000 });
    await page.waitForFunction(() => (window as any).app.ready || (window as any).app.error, null, { timeout: 60_000 });
    const start = await snapshot(page);
    expect(start.error).toBeNull();
    expect(start.rows.length).toBe(2);
    expect(start.rows[0]).toMatch(/^cpu\s.*WebAssembly.*2 threads|^cpu\s.*WebAssembly/);
    expect(start.rows[1]).toMatch(/^gpu:0\s.*swiftshader/i);
    expect(await page.locator('#isolation').innerText()).toMatch(/cross-origin isolated: yes/);

    await page.selectOption('#device', 'gpu:0');
    await page.fill('#epochs', '3');
    await page.click('#train');
    await page.waitForFunction(() => (window as any).app.epochs >= 1, null, { timeout: 120_000 });
    const mid = await snapshot(page);
    mkdirSync(repo('build/browser-test'), { recursive: true });
    await page.screenshot({ path: repo('build/browser-test/app.png') });
    await page.waitForFunction(() => !(window as any).app.running, null, { timeout: 120_000 });
    await page.waitForTimeout(100); // the last redraw is on the next animation frame
    const end = await snapshot(page);

    expect(end.error).toBeNull();
    expect(errors).toEqual([]);
    expect(end.epochs).toBe(3);
    for (const name of ['losses', 'memory', 'frames']) {
      expect(mid.charts[name].points, `${name}: points mid-training`).toBeGreaterThan(0);
      expect(end.charts[name].points, `${name}: points grew`).toBeGreaterThan(mid.charts[name].points);
      expect(end.charts[name].canvas, `${name}: the canvas was redrawn`).not.toBe(start.charts[name].canvas);
      expect(end.charts[name].canvas, `${name}: the canvas was redrawn`).not.toBe(mid.charts[name].canvas);
    }
    // Loss falls, accuracy is charted each epoch; gpu:0's reserved memory is charted and covers its allocated.
    const [, loss, acc] = end.charts.losses.data as (number | null)[][];
    const l = loss.filter((v): v is number => v !== null), a = acc.filter((v): v is number => v !== null);
    expect(a.length).toBe(3);
    expect(a[2], 'test accuracy after 3 epochs (chance is 10%)').toBeGreaterThan(0.5);
    expect(l.at(-1)!).toBeLessThan(l[0]);
    const mem = end.charts.memory.data as number[][]; // x, then allocated and reserved per device: cpu, gpu:0
    expect(Math.max(...mem[4])).toBeGreaterThan(0);
    mem[3].forEach((alloc, i) => expect(alloc).toBeLessThanOrEqual(mem[4][i]));
    // The page measured its frames while training, and showed them; most came well within 50 ms.
    expect(end.frames.count).toBeGreaterThan(10);
    expect(end.framesText).toMatch(/frames while training: mean [\d.]+ ms, p95 [\d.]+ ms, max [\d.]+ ms/);
    expect(end.frames.p50).toBeLessThan(50);
    console.log(`web app: ${end.steps} steps on gpu:0; ${end.framesText}`);
    await page.close();
  }, 240_000);

  it('works without cross-origin isolation (cpu on one thread)', async () => {
    const server = await serve(false);
    servers.push(server);
    const { page, errors } = await open(browser, `${server.url}/examples/web/`, 'app');
    await page.waitForFunction(() => (window as any).app.ready || (window as any).app.error, null, { timeout: 60_000 });
    expect(await page.locator('#isolation').innerText()).toMatch(/cross-origin isolated: no.*pinned memory: no.*cpu threads \(1\): no/s);
    await page.selectOption('#device', 'cpu');
    await page.fill('#epochs', '1');
    await page.click('#train');
    await page.waitForFunction(() => !(window as any).app.running && (window as any).app.epochs >= 1, null, { timeout: 120_000 });
    const end = await snapshot(page);
    expect(end.error).toBeNull();
    expect(errors).toEqual([]);
    expect(end.rows[0]).toMatch(/1 thread/);
    expect(end.charts.losses.points).toBeGreaterThan(3);
    await page.close();
  }, 240_000);
});
