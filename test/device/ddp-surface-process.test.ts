/**
 * DDP's join(), nn.SyncBatchNorm and the fp16 comm hook with ranks as processes and as worker
 * threads (bin/webtorch-run.mjs running test/fixtures/ddp-surface-rank.mjs), against the same
 * PyTorch references as the in-process tests (test/fixtures/ddp-surface-goldens.json).
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { closeTo } from './ddp-helpers.js';

const RUN = fileURLToPath(new URL('../../bin/webtorch-run.mjs', import.meta.url));
const RANK = fileURLToPath(new URL('../fixtures/ddp-surface-rank.mjs', import.meta.url));
const goldens = JSON.parse(readFileSync(new URL('../fixtures/ddp-surface-goldens.json', import.meta.url), 'utf8'));

interface Ran { code: number | null; stderr: string; results: Record<string, any>[] }

function launch(args: string[]): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(process.execPath, [RUN, ...args], { env: { ...process.env }, timeout: 110_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      const results = stdout.split('\n').filter((l) => l.startsWith('RESULT ')).map((l) => JSON.parse(l.slice(7)));
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stderr, results: results.sort((a, b) => a.rank - b.rank) });
    });
  });
}

describe('join, SyncBatchNorm and the fp16 hook between ranks of webtorch-run', () => {
  it.each([['processes', 'cpu', []], ['threads', 'cpu', ['--threads']], ['processes', 'gpu:0', []]] as const)('as %s on %s', async (_, dev, how) => {
    // join with 3 ranks of uneven batches (2|4|3), dividing by the ranks not joined
    const c = goldens.join[2];
    const j = await launch([...how, '--nproc', '3', RANK, 'join', '2', dev]);
    expect(j.code, j.stderr).toBe(0);
    expect(j.results.length).toBe(3);
    for (const r of j.results) {
      closeTo(r.w, c.finalWeight, 1e-5, `rank ${r.rank} weight`);
      closeTo(r.b, c.finalBias, 1e-5, `rank ${r.rank} bias`);
    }
    // SyncBatchNorm over 2 ranks
    const s = goldens.syncbn[Object.keys(goldens.syncbn)[0]], step = s.steps[0];
    const b = await launch([...how, '--nproc', '2', RANK, 'syncbn', '0', dev]);
    expect(b.code, b.stderr).toBe(0);
    for (const r of b.results) {
      closeTo(r.y, step.y[r.rank], 1e-4, `rank ${r.rank} output`);
      closeTo(r.dx, step.dx[r.rank], 1e-4, `rank ${r.rank} input gradient`);
      closeTo(r.dw, step.dw[r.rank], 1e-4, `rank ${r.rank} weight gradient`);
      closeTo(r.rm, step.runningMean, 1e-5, `rank ${r.rank} running mean`);
      closeTo(r.rv, step.runningVar, 1e-5, `rank ${r.rank} running var`);
    }
    // the fp16 hook over 2 ranks: float16 rounding, bit for bit
    const h = goldens.hooks.find((x: { k: number; dtype: string }) => x.k === 2 && x.dtype === 'float16');
    const f = await launch([...how, '--nproc', '2', RANK, 'fp16', '0', dev]);
    expect(f.code, f.stderr).toBe(0);
    for (const r of f.results) expect(r.grad, `rank ${r.rank}`).toEqual(h.reduced);
  }, 240_000);
});
