// The browser column of `npm run bench -- --browser`: builds the bench page (bench/browser, with
// Vite), serves the repository with the cross-origin isolation headers (examples/web/server.mjs,
// so that webtorch's cpu device and tfjs-wasm get their threads), opens it in headless Chromium
// through playwright-core (Debian's /usr/bin/chromium, `--enable-unsafe-webgpu`; no browser
// download) and runs the same cases there. WEBTORCH_CHROMIUM names another browser binary,
// WEBTORCH_CHROMIUM_FLAGS adds flags (as in test/browser/browser.ts).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
export const CHROMIUM = process.env.WEBTORCH_CHROMIUM ?? '/usr/bin/chromium';

/**
 * Runs the cases in Chromium; resolves with `{info, rows}` (each row: case, label, size, device,
 * unit and `figures` per implementation: webtorch, tfjs, dawn), or rejects saying why it cannot.
 * @param {{quick: boolean, devices: string[], cases: string[] | null, log: (...a: any[]) => void}} opts
 */
export async function runBrowser({ quick, devices, cases, log }) {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set WEBTORCH_CHROMIUM)`);
  const [{ chromium }, { build }, { startServer }] = await Promise.all([
    import('playwright-core'), import('vite'), import('../../examples/web/server.mjs'),
  ]);
  process.env.VITE_OUT_DIR = `${root}build/bench-browser`;
  try {
    await build({ configFile: `${root}bench/browser/vite.config.mjs`, logLevel: 'error' });
  } finally {
    delete process.env.VITE_OUT_DIR;
  }
  const server = await startServer({ isolated: true });
  const flags = ['--enable-unsafe-webgpu', ...(process.env.WEBTORCH_CHROMIUM_FLAGS ?? '').split(/\s+/).filter(Boolean)];
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: flags });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('response', (r) => {
      if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) errors.push(`HTTP ${r.status()} for ${r.url()}`);
    });
    page.on('console', (m) => {
      // A failed load is reported by the response handler, with its URL.
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
      if (m.type() === 'log' && m.text().startsWith('[bench]')) log(m.text());
    });
    await page.goto(`${server.url}/build/bench-browser/index.html`);
    await page.waitForFunction(() => window.pageReady === true, null, { timeout: 60_000 }).catch((e) => {
      throw new Error(`the bench page did not load: ${errors.join('; ') || e.message}`);
    });
    log(`browser: Chromium ${browser.version()}, ${quick ? 'quick' : 'full'} run of ${cases ? cases.join(',') : 'every case'} on ${devices.join(', ')}…`);
    const out = await page.evaluate((o) => window.runBench(o), { quick, devices, cases });
    out.info.chromium = browser.version();
    out.info.flags = flags;
    if (errors.length) out.info.pageErrors = errors.slice(0, 10);
    return out;
  } finally {
    await browser.close();
    await server.close();
  }
}

/**
 * Puts the browser's figures on the Node rows they match (case, size, device): `row.browser` is
 * `{webtorch, tfjs, dawn, ratios}`, ratios being webtorch's speed over each peer's in the page.
 * Rows the page ran that Node did not are added on their own (their `webtorch` is null).
 * @param {any[]} rows  bench/run.mjs's rows
 * @param {{rows: any[]}} browser  what `runBrowser` resolved with
 * @param {(ours: number, theirs: number, higherIsBetter: boolean) => (number | null)} speedRatio
 */
export function mergeBrowser(rows, browser, speedRatio) {
  const key = (r) => `${r.case}|${r.label}|${r.size}|${r.device}`;
  const byKey = new Map(rows.map((r) => [key(r), r]));
  for (const b of browser.rows) {
    let row = byKey.get(key(b));
    if (!row) {
      row = { case: b.case, label: b.label, size: b.size, device: b.device, unit: b.unit, higherIsBetter: b.higherIsBetter, webtorch: null, peers: {}, refs: {}, ratios: {} };
      rows.push(row);
      byKey.set(key(b), row);
    }
    const { webtorch = null, ...peers } = b.figures;
    const ratios = {};
    for (const [p, f] of Object.entries(peers)) {
      const r = speedRatio(webtorch?.value, f?.value, b.higherIsBetter);
      if (r !== null) ratios[p] = r;
    }
    row.browser = { webtorch, ...peers, ratios };
  }
}

/**
 * The browser column as a table: case, size, device, webtorch in Node, then in the page webtorch
 * and each peer as "figure (ratio×)", unit; errors listed under it.
 * @param {any[]} rows  rows with `browser`
 * @param {(v: number) => string} fmt
 */
export function browserTable(rows, fmt) {
  const cell = (f) => (!f ? '—' : f.error ? 'error' : fmt(f.value));
  const peers = ['tfjs', 'dawn'];
  const head = ['case', 'size', 'dev', 'node webtorch', 'browser webtorch', ...peers.map((p) => `browser ${p} (×)`), 'unit'];
  const withBrowser = rows.filter((r) => r.browser);
  const lines = withBrowser.map((r) => [
    r.label, r.size, r.device, cell(r.webtorch), cell(r.browser.webtorch),
    ...peers.map((p) => (r.browser[p] ? (r.browser.ratios[p] === undefined ? cell(r.browser[p]) : `${cell(r.browser[p])} (${fmt(r.browser.ratios[p])}×)`) : '—')),
    r.unit,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => String(l[i]).length)));
  const line = (l) => l.map((c, i) => String(c).padEnd(widths[i])).join('  ').trimEnd();
  const out = [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(line)];
  const errors = withBrowser.flatMap((r) => Object.entries(r.browser).filter(([, f]) => f?.error).map(([who, f]) => `  ${r.label} ${r.size} [${r.device}] browser ${who}: ${f.error}`));
  if (errors.length) out.push('', 'errors in the browser:', ...errors);
  return out.join('\n');
}
