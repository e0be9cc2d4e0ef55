/**
 * Issue 31, "GPU use without ceremony": a script whose first GPU line is `model.to('cuda')` runs,
 * with no `await torch.gpu.init()`: discovery starts at the first GPU call and the device's
 * commands queue until its worker is up (ts/device.ts). A bad index raises at the next sync point,
 * with PyTorch's words. Each case is a fresh Node process (test/habits/fixtures/gpu-no-ceremony.mjs),
 * since discovery happens once per process. On the machine's adapter (lavapipe in CI).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('./fixtures/gpu-no-ceremony.mjs', import.meta.url));

/** Runs the fixture in `mode` and returns its stdout lines (it must exit 0). */
function run(mode: string, env: Record<string, string> = {}): Promise<string[]> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [fixture, mode], { env: { ...process.env, ...env }, timeout: 90_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${mode}: ${err.message}\n${stderr}`));
      else resolve(stdout.trim().split('\n'));
    });
  });
}

describe('GPU use without ceremony', () => {
  it("nn.Linear(4, 2).to('cuda') and a forward on 'cuda' as a script's first GPU lines give the cpu's values", async () => {
    const [gpu, cpu, started] = await run('linear');
    const y = JSON.parse(gpu) as number[][], ref = JSON.parse(cpu) as number[][];
    expect(y.length).toBe(1);
    expect(y[0].length).toBe(2);
    y[0].forEach((v, i) => expect(v).toBeCloseTo(ref[0][i], 5));
    expect(JSON.parse(started)).toContain('gpu:0');
  }, 120_000);

  it('gpu:7 on a 2-GPU machine raises at the next sync point, then at the call once discovery has ended', async () => {
    const out = await run('bad-index', { WEBTORCH_GPU_DEVICES: '2' });
    expect(out[0]).toBe('queued'); // no error where the tensor was made: discovery had not ended
    expect(out[1]).toBe('sync point: RangeError: CUDA error: invalid device ordinal (gpu:7; 2 GPU devices)');
    expect(out[2]).toBe('call: RangeError: Invalid device gpu:7: webtorch has 2 GPU devices. Invalid device ordinal');
    expect(out[3]).toBe('[1,1]'); // gpu:1 exists and works
  }, 120_000);

  it('copies between two GPUs named before discovery ends', async () => {
    const [out] = await run('two-gpus', { WEBTORCH_GPU_DEVICES: '2' });
    expect(JSON.parse(out)).toEqual([[6, 6], [6, 6], [0, 1, 2, 3]]);
  }, 120_000);

  it('torch.gpu.isAvailable() is a Promise before discovery ends, and a boolean after', async () => {
    const out = await run('available', { WEBTORCH_ALLOW_SOFTWARE_GPU: '1' });
    expect(out).toEqual(['promise', 'true', 'boolean true']);
  }, 120_000);
});
