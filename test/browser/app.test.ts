/**
 * The web app (examples/web/, `npm run web`) in headless Chromium: it lists the devices (cpu and
 * two logical GPU devices on the browser's adapter), trains the digits classifier in the device
 * workers while its charts (loss/accuracy, memory, frame times) update, on one device or with
 * nn.DataParallel over gpu:0 and gpu:1, and keeps drawing frames. A screenshot of it
 * mid-training is saved to build/browser-test/app.png. The profile button downloads a Chrome
 * trace of a few steps.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium, launch, open, repo, serve } from './browser.js';

type Server = Awaited<ReturnType<typeof serve>>;
type TraceEvent = { name: string; ph: string; pid: number; tid: number; cat?: string; dur?: number; args?: Record<string, unknown> };

/** The app's state (window.app) with each chart's point count and a fingerprint of its canvas. */
const snapshot = (page: Page) => page.evaluate(() => {
  const app = (window as any).app;
  const charts = Object.fromEntries(Object.entries(app.charts as Record<string, any>).map(([k, c]) => [k, { points: c.length, data: c.data, canvas: c.plot.ctx.canvas.toDataURL().length + ':' + c.plot.ctx.canvas.toDataURL().slice(-64) }]));
  return { steps: app.steps, epochs: app.epochs, running: app.running, error: app.error, frames: app.frames, memory: app.memory, memoryText: document.getElementById('memory')!.textContent, charts, framesText: document.getElementById('frames')!.textContent, rows: [...document.querySelectorAll('#devices tbody tr')].map((r) => (r as HTMLElement).innerText) };
});

type Snapshot = Awaited<ReturnType<typeof snapshot>>;

/** Three epochs of training seen from the page: every chart gained points and was redrawn, the loss fell, and each epoch's accuracy is charted (the last above chance). */
function expectTrained(start: Snapshot, mid: Snapshot, end: Snapshot): void {
  for (const name of ['losses', 'memory', 'frames']) {
    expect(mid.charts[name].points, `${name}: points mid-training`).toBeGreaterThan(0);
    expect(end.charts[name].points, `${name}: points grew`).toBeGreaterThan(mid.charts[name].points);
    expect(end.charts[name].canvas, `${name}: the canvas was redrawn`).not.toBe(start.charts[name].canvas);
    expect(end.charts[name].canvas, `${name}: the canvas was redrawn`).not.toBe(mid.charts[name].canvas);
  }
  const [, loss, acc] = end.charts.losses.data as (number | null)[][];
  const l = loss.filter((v): v is number => v !== null), a = acc.filter((v): v is number => v !== null);
  expect(a.length).toBe(3);
  expect(a[2], 'test accuracy after 3 epochs (chance is 10%)').toBeGreaterThan(0.5);
  expect(l.at(-1)!).toBeLessThan(l[0]);
}

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

  /** The app in a fresh isolated page, ready: the page, its errors and a first snapshot. */
  async function openApp() {
    const server = await serve(true);
    servers.push(server);
    const { page, errors } = await open(browser, `${server.url}/examples/web/`, 'app');
    await page.setViewportSize({ width: 1200, height: 1000 });
    await page.waitForFunction(() => (window as any).app.ready || (window as any).app.error, null, { timeout: 60_000 });
    return { page, errors, start: await snapshot(page) };
  }

  it('lists the devices, trains on gpu:0 with live charts, and keeps drawing frames (isolated page)', async () => {
    const { page, errors, start } = await openApp();
    expect(start.error).toBeNull();
    expect(start.rows.length).toBe(3);
    expect(start.rows[0]).toMatch(/^cpu\s.*WebAssembly.*2 threads|^cpu\s.*WebAssembly/);
    expect(start.rows[1]).toMatch(/^gpu:0\s.*swiftshader.*logical device 1 of 2/i);
    expect(start.rows[2]).toMatch(/^gpu:1\s.*swiftshader.*logical device 2 of 2/i);
    expect(await page.locator('#isolation').innerText()).toMatch(/cross-origin isolated: yes/);
    // The picker: each device, and DataParallel over both GPU devices; gpu:0 is picked at first.
    expect(await page.locator('#device option').allInnerTexts()).toEqual(['cpu', 'gpu:0', 'gpu:1', 'DataParallel (gpu:0, gpu:1)']);
    expect(await page.inputValue('#device')).toBe('gpu:0');

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
    expectTrained(start, mid, end);
    // gpu:0's reserved memory is charted and covers its allocated.
    const mem = end.charts.memory.data as number[][]; // x, then allocated and reserved per device: cpu, gpu:0, gpu:1
    expect(Math.max(...mem[4])).toBeGreaterThan(0);
    mem[3].forEach((alloc, i) => expect(alloc).toBeLessThanOrEqual(mem[4][i]));
    // The page measured its frames while training, and showed them. The GPU worker compiles its
    // kernels asynchronously (ts/worker/gpu/core.ts): a synchronous compile held the browser's GPU
    // process, which also draws the page, so frames waited while kernels compiled (the first step,
    // the first epoch's shorter last batch, the first evaluation), with the page's thread idle:
    // a frame of 1.2 to 1.3 s in 2 of 6 runs on this machine. Asynchronously, 10 runs (load average
    // about 2 on 2 shared cores) kept every frame at or under 50 ms (max 33 ms in 8 of them) but one
    // frame of 67 ms in one run, which came with a long task on the page's own thread; CI's fresh
    // 2-core machine once had two. So over the whole run, first step included: at most three
    // frames over 50 ms (load spikes), p95 under 50 ms, and none as long as a compile.
    expect(end.frames.count).toBeGreaterThan(10);
    expect(end.framesText).toMatch(/frames while training: mean [\d.]+ ms, p95 [\d.]+ ms, max [\d.]+ ms, \d+ over 50 ms; after the first step \(which compiles the kernels\): p95 [\d.]+ ms, max [\d.]+ ms, \d+ of \d+ over 50 ms/);
    expect(end.frames.p95, 'p95 of the frames while training').toBeLessThan(50);
    expect(end.frames.over50, 'frames over 50 ms while training').toBeLessThanOrEqual(3);
    expect(end.frames.max, 'the longest frame while training').toBeLessThan(250);
    expect(end.frames.steady.count, 'frames after the first step').toBeGreaterThan(10);
    console.log(`web app: ${end.steps} steps on gpu:0; ${end.framesText}`);
    await page.close();
  }, 240_000);

  it('trains with DataParallel over gpu:0 and gpu:1, charting both devices\' memory, and profiles it (isolated page)', async () => {
    const { page, errors, start } = await openApp();
    expect(start.error).toBeNull();
    await page.selectOption('#device', { label: 'DataParallel (gpu:0, gpu:1)' });
    await page.fill('#epochs', '3');
    await page.click('#train');
    await page.waitForFunction(() => (window as any).app.epochs >= 1, null, { timeout: 120_000 });
    const mid = await snapshot(page);
    await page.waitForFunction(() => !(window as any).app.running, null, { timeout: 120_000 });
    await page.waitForTimeout(100); // the last redraw is on the next animation frame
    const end = await snapshot(page);
    const status = await page.locator('#status').innerText();

    expect(end.error).toBeNull();
    expect(errors).toEqual([]);
    expect(end.epochs).toBe(3);
    expect(status).toMatch(/^Done on DataParallel \(gpu:0, gpu:1\): 3 epochs, \d+ steps/);
    expectTrained(start, mid, end);
    // Both GPU devices hold memory (the replica, its chunk of the batch and activations on gpu:1),
    // and each device's reserved memory covers its allocated, in the chart and the readout.
    const mem = end.charts.memory.data as number[][]; // x, then allocated and reserved per device: cpu, gpu:0, gpu:1
    for (const [name, col] of [['gpu:0', 3], ['gpu:1', 5]] as const) {
      expect(Math.max(...mem[col + 1]), `${name}: reserved memory charted`).toBeGreaterThan(0);
      mem[col].forEach((alloc, i) => expect(alloc, `${name}: allocated ≤ reserved`).toBeLessThanOrEqual(mem[col + 1][i]));
      expect(end.memory[name].reserved, `${name}: reserved in the readout`).toBeGreaterThan(0);
      expect(end.memory[name].allocated).toBeLessThanOrEqual(end.memory[name].reserved);
    }
    expect(end.memoryText).toMatch(/gpu:0: [\d.]+ MiB allocated of [\d.]+ MiB reserved · gpu:1: [\d.]+ MiB allocated of [\d.]+ MiB reserved/);
    // The steps ran in the device workers: the page kept drawing frames.
    expect(end.frames.count).toBeGreaterThan(10);
    expect(end.frames.p50).toBeLessThan(50);
    console.log(`web app: ${end.steps} steps with DataParallel (gpu:0, gpu:1); ${end.framesText}; ${end.memoryText}`);
    // Profiling the DataParallel choice: a trace with both devices' kernels.
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: 120_000 }), page.click('#profile')]);
    expect(download.suggestedFilename()).toBe('webtorch-trace-dataparallel.json');
    const ev = (JSON.parse(readFileSync(await download.path(), 'utf8')) as { traceEvents: TraceEvent[] }).traceEvents;
    await page.waitForFunction(() => !(window as any).app.profiling, null, { timeout: 60_000 });
    for (const name of ['gpu:0', 'gpu:1']) {
      const pid = ev.find((e) => e.ph === 'M' && e.name === 'process_name' && e.args?.name === name)?.pid;
      expect(ev.filter((e) => e.cat === 'kernel' && e.pid === pid).length, `kernels on ${name}`).toBeGreaterThan(20);
    }
    expect(await page.evaluate(() => (window as any).app.error)).toBeNull();
    expect(errors).toEqual([]);
    await page.close();
  }, 240_000);

  it('the profile button downloads a Chrome trace of a few training steps, with the device tracks and ops', async () => {
    const server = await serve(true);
    servers.push(server);
    const { page, errors } = await open(browser, `${server.url}/examples/web/`, 'app');
    await page.waitForFunction(() => (window as any).app.ready || (window as any).app.error, null, { timeout: 60_000 });
    await page.selectOption('#device', 'gpu:0');
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: 120_000 }), page.click('#profile')]);
    expect(download.suggestedFilename()).toBe('webtorch-trace-gpu0.json');
    const trace = JSON.parse(readFileSync(await download.path(), 'utf8')) as { traceEvents: TraceEvent[] };
    await page.waitForFunction(() => !(window as any).app.profiling, null, { timeout: 60_000 });
    const app = await page.evaluate(() => ({ error: (window as any).app.error, trace: (window as any).app.trace, status: document.getElementById('status')!.textContent }));
    expect(app.error).toBeNull();
    expect(errors).toEqual([]);
    const ev = trace.traceEvents;
    const pidOf = (name: string) => ev.find((e) => e.ph === 'M' && e.name === 'process_name' && e.args?.name === name)?.pid;
    // The device track: gpu:0 is a process with a stream-0 thread holding the kernels.
    const gpu = pidOf('gpu:0');
    expect(gpu, 'a gpu:0 process in the trace').toBeGreaterThan(0);
    expect(ev.some((e) => e.ph === 'M' && e.name === 'thread_name' && e.pid === gpu && e.args?.name === 'stream 0')).toBe(true);
    const kernels = ev.filter((e) => e.cat === 'kernel' && e.pid === gpu);
    expect(kernels.length, 'kernels on gpu:0').toBeGreaterThan(20);
    expect(kernels.every((k) => k.name.startsWith('wgsl:') && k.dur! >= 0)).toBe(true);
    // The calling thread's ops and the app's ranges: five steps, each with forward, backward and the optimizer step.
    const ops = ev.filter((e) => e.pid === pidOf('caller') && e.cat === 'cpu_op');
    expect(ops.length).toBeGreaterThan(20);
    expect(ops.some((e) => /matmul|linear/.test(e.name))).toBe(true);
    const ranges = ev.filter((e) => e.cat === 'user_annotation').map((e) => e.name);
    for (let s = 1; s <= 5; s++) expect(ranges).toContain(`step ${s}`);
    expect(ranges.filter((n) => n === 'forward').length).toBe(5);
    expect(ranges.filter((n) => n === 'optimizer.step').length).toBe(5);
    // Flow arrows from ops to their kernels.
    expect(ev.filter((e) => e.ph === 'f' && e.pid === gpu).length).toBeGreaterThan(0);
    expect(app.trace).toMatchObject({ name: 'webtorch-trace-gpu0.json', events: ev.length, kernels: ev.filter((e) => e.cat === 'kernel').length });
    expect(app.status).toMatch(/^Profiled 5 steps on gpu:0: webtorch-trace-gpu0\.json/);
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
