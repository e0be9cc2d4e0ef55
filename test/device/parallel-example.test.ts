/**
 * examples/model-parallel.mjs trains end to end (sub-networks on gpu:0 and gpu:1): it exits 0
 * only when the loss halves and the accuracy passes 90%, and its output names both devices; the
 * same with `--chunks 4` (GPipe micro-batches through nn.parallel.Pipe).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const script = fileURLToPath(new URL('../../examples/model-parallel.mjs', import.meta.url));

describe('examples/model-parallel.mjs', () => {
  it.each([[[]], [['--chunks', '4']]])('trains a model split over gpu:0 and gpu:1 (args %j)', async (args: string[]) => {
    const { code, out } = await new Promise<{ code: number; out: string }>((resolve) => {
      execFile(process.execPath, [script, ...args], { timeout: 120_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}\n${stderr}` });
      });
    });
    expect(code, out).toBe(0);
    expect(out).toContain('sub_network1 on gpu:0, sub_network2 on gpu:1');
    if (args.length) expect(out).toContain('GPipe: 4 micro-batches over stages on gpu:0, gpu:1');
    expect(out).toMatch(/accuracy (9\d|100)\.\d%, subNetwork1\.grad on gpu:0, subNetwork2\.grad on gpu:1/);
  }, 150_000);
});

describe('examples/ddp-processes.mjs', () => {
  const run = fileURLToPath(new URL('../../bin/webtorch-run.mjs', import.meta.url));
  const ddp = fileURLToPath(new URL('../../examples/ddp-processes.mjs', import.meta.url));
  it.each([[['--nproc', '2', ddp]], [['--threads', '--nproc', '2', ddp, '--device', 'gpu']]])('trains under webtorch-run (%j)', async (args: string[]) => {
    const { code, out } = await new Promise<{ code: number; out: string }>((resolve) => {
      execFile(process.execPath, [run, ...args], { timeout: 120_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}\n${stderr}` });
      });
    });
    expect(code, out).toBe(0);
    const lines = out.split('\n').filter((l) => /^rank \d: 500 samples per epoch/.test(l));
    expect(lines.length, out).toBe(2);
    // Both ranks end with the same weight (DDP keeps the replicas equal).
    const w = lines.map((l) => l.split('weight[0][0] ')[1]);
    expect(w[1]).toBe(w[0]);
  }, 150_000);
});
