/**
 * The shared op suite in a browser: `window.runGoldens(file, device)` fetches a goldens file
 * from test/fixtures and runs every case on a device with test/golden.ts's own `runCase`
 * (bundled by Vite, see vite.config.mjs: `vitest` is the shim next to this file, and webtorch is
 * the plain dist/ at /dist/webtorch.js). After each case the device's allocated bytes and live
 * storages must be back where they were (the Node suites' leak check).
 */
import * as torch from '../../../dist/webtorch.js';
import { gapOn, runCase, type Case } from '../../golden.js';

interface GoldenReport { file: string; device: string; total: number; ran: number; passed: number; gaps: number; failures: { id: string; message: string }[] }

const counts = (d: string) => [torch.gpu.memoryAllocated(d), torch._liveStorage(torch.device(d)).count];

async function runGoldens(file: string, device: string): Promise<GoldenReport> {
  const res = await fetch(`/test/fixtures/${file}`);
  if (!res.ok) throw new Error(`could not load /test/fixtures/${file}: HTTP ${res.status}`);
  const { cases } = (await res.json()) as { cases: Case[] };
  const report: GoldenReport = { file, device, total: cases.length, ran: 0, passed: 0, gaps: 0, failures: [] };
  for (const c of cases) {
    if (gapOn(c, device)) {
      report.gaps++;
      continue;
    }
    report.ran++;
    const before = counts(device);
    try {
      await runCase(c, device);
      await torch.gpu.synchronize();
      const after = counts(device);
      // Only growth is a leak: a case that failed earlier may leave tensors that the GC frees during a later one.
      if (after.some((n, i) => n > before[i])) throw new Error(`leak check: allocated bytes/live storages ${before.join('/')} before, ${after.join('/')} after`);
      report.passed++;
    } catch (e) {
      report.failures.push({ id: c.id, message: e instanceof Error ? e.message : String(e) });
    }
  }
  return report;
}

(globalThis as { runGoldens?: typeof runGoldens }).runGoldens = runGoldens;
(globalThis as { torch?: typeof torch }).torch = torch;
(globalThis as { pageReady?: boolean }).pageReady = true;
