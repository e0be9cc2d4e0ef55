/**
 * What the browser suites share: headless Debian Chromium driven by playwright-core (no browser
 * download: `apt-get install chromium`), the static server (examples/web/server.mjs) once with
 * the cross-origin isolation headers and once without, and Vite builds of the test pages.
 *
 * WebGPU headless: Chromium needs only `--enable-unsafe-webgpu` here; with no GPU it offers its
 * SwiftShader adapter (a software Vulkan, `isFallbackAdapter`), which webtorch counts as a GPU
 * once the page calls `torch.gpu.configure({ allowSoftware: true })`. `WEBTORCH_CHROMIUM` names
 * another browser binary; `WEBTORCH_CHROMIUM_FLAGS` adds flags (e.g. `--use-angle=vulkan
 * --enable-features=Vulkan` to try a hardware GPU).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { build } from 'vite';
import { startServer } from '../../examples/web/server.mjs';

export const CHROMIUM = process.env.WEBTORCH_CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_FLAGS = ['--enable-unsafe-webgpu', ...(process.env.WEBTORCH_CHROMIUM_FLAGS ?? '').split(/\s+/).filter(Boolean)];
export const repo = (p: string) => fileURLToPath(new URL(`../../${p}`, import.meta.url));

/**
 * Whether the browser suites can run: Chromium is installed. Under CI a missing browser is an
 * error (the browser tests never skip there); elsewhere the suites skip with a warning.
 */
export function haveChromium(): boolean {
  if (existsSync(CHROMIUM)) return true;
  const why = `no Chromium at ${CHROMIUM}: install it (apt-get install -y chromium, as .ci/run does) or set WEBTORCH_CHROMIUM`;
  if (process.env.CI) throw new Error(`browser tests cannot run under CI: ${why}`);
  console.warn(`webtorch browser tests skipped: ${why}`);
  return false;
}

/** Starts Chromium. */
export async function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: install it (apt-get install -y chromium, as .ci/run does) or set WEBTORCH_CHROMIUM`);
  }
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
}

/** A server of the repository root: `isolated` sends COOP/COEP. */
export const serve = (isolated: boolean, root?: string) => startServer({ isolated, ...(root ? { root } : {}) });

/**
 * A suite's Chromium and isolated server, started before its tests and closed after them;
 * `openPage(path)` opens a page of the repository in it, `browser()` is the Chromium.
 */
export function browserSession(): { openPage: (path: string) => Promise<Opened>; browser: () => Browser } {
  let browser: Browser | undefined;
  let server: Awaited<ReturnType<typeof serve>> | undefined;
  beforeAll(async () => {
    browser = await launch();
    server = await serve(true);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });
  return { openPage: (path) => open(browser!, `${server!.url}/${path}`), browser: () => browser! };
}

/** Builds a Vite config of test/browser into `outDir` (a folder under build/). */
export async function viteBuild(config: string, outDir: string): Promise<void> {
  process.env.VITE_OUT_DIR = outDir;
  try {
    await build({ configFile: repo(config), logLevel: 'error' });
  } finally {
    delete process.env.VITE_OUT_DIR;
  }
}

/** A page's errors and console errors, for the test to check (a 404 for favicon.ico is not one). */
export interface Opened { page: Page; errors: string[] }

/** Opens `url` in a new page and waits for `window.pageReady` (or `window.__result`). */
export async function open(browser: Browser, url: string, ready = 'pageReady'): Promise<Opened> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/favicon|Failed to load resource/.test(m.text())) errors.push(`console: ${m.text()}`);
  });
  page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => {
    if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) errors.push(`HTTP ${r.status()} for ${r.url()}`);
  });
  await page.goto(url);
  await page.waitForFunction((name) => (window as unknown as Record<string, unknown>)[name] !== undefined, ready, { timeout: 60_000 });
  return { page, errors };
}
