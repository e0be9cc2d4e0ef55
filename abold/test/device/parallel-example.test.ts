/**
 * examples/model-parallel.mjs trains end to end (sub-networks on gpu:0 and gpu:1): it exits 0
 * only when the loss halves and the accuracy passes 90%, and its output names both devices.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const script = fileURLToPath(new URL('../../examples/model-parallel.mjs', import.meta.url));

describe('examples/model-parallel.mjs', () => {
  it('trains a model split over gpu:0 and gpu:1', async () => {
    const { code, out } = await new Promise<{ code: number; out: string }>((resolve) => {
      execFile(process.execPath, [script], { timeout: 120_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}\n${stderr}` });
      });
    });
    expect(code, out).toBe(0);
    expect(out).toContain('sub_network1 on gpu:0, sub_network2 on gpu:1');
    expect(out).toMatch(/accuracy (9\d|100)\.\d%, subNetwork1\.grad on gpu:0, subNetwork2\.grad on gpu:1/);
  }, 150_000);
});
