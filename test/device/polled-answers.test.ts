/**
 * The cpu device's short round trip (ts/worker/channel.ts: `Poll`, `CallPort.spinFor`): after an
 * answer the worker polls a doorbell for a while and takes the next message straight off its
 * port, and the caller polls the reply slot for a small read it expects within microseconds.
 * These tests check that the polled path is taken and that neither poll changes what a program
 * sees: values, program order, errors at the sync point, reads after long work, other devices,
 * and a worker whose poll has ended.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the cpu worker polls for the next call and the caller polls for small answers', () => {
  const devices = suiteDevices();

  it('small reads after an op are answered through the slot, some of them polled for, each right', async () => {
    const x = torch.ones([4], { device: 'cpu' });
    const before = torch._replyCounts('cpu');
    // Polls back off after misses (a loaded machine): go on until one has been answered while polled
    // (at most 20,000 round trips, a few seconds).
    let i = 0;
    for (; i < 20000 && torch._replyCounts('cpu').polled === before.polled; i++) {
      const y = x.add(i);
      expect(Array.from((await y.data()) as Float32Array)).toEqual([1 + i, 1 + i, 1 + i, 1 + i]);
      y.dispose();
    }
    const after = torch._replyCounts('cpu');
    expect(after.hasSlot).toBe(true);
    expect(after.polled - before.polled, `polled answers in ${i} round trips`).toBeGreaterThan(0);
    expect(after.slot - before.slot).toBe(i);
    expect(after.message - before.message).toBe(0);
    x.dispose();
  });

  it('a read after long work is right: the poll gives up and the answer wakes the caller', async () => {
    const a = torch.rand([384, 384], { device: 'cpu' }), b = torch.rand([384, 384], { device: 'cpu' });
    const want = Array.from((await a.data()) as Float32Array).slice(0, 384);
    const bcol = Array.from((await b.data()) as Float32Array).filter((_, k) => k % 384 === 0);
    for (let r = 0; r < 3; r++) {
      const c = torch.tidy(() => {
        let t = a.matmul(b);
        for (let k = 0; k < 4; k++) t = t.add(0);
        return t.slice(0, 0, 1).contiguous();
      });
      const got = (await c.data()) as Float32Array;
      c.dispose();
      const ref = want.reduce((s, v, k) => s + v * bcol[k], 0);
      expect(got[0]).toBeCloseTo(ref, 2);
    }
    a.dispose();
    b.dispose();
  });

  it('keeps program order across submits, reads, a worker whose poll ended, and an error at the sync point', async () => {
    const x = torch.zeros([3], { device: 'cpu' });
    let want = 0;
    for (let round = 0; round < 6; round++) {
      for (let k = 0; k < 5; k++) {
        x.add_(1); // no answer: a submit
        want++;
      }
      if (round % 2) await sleep(12); // past the worker's poll: the next message comes by its event loop
      expect(Array.from((await x.data()) as Float32Array), `round ${round}`).toEqual([want, want, want]);
    }
    const src = torch.ones([2, 2], { device: 'cpu' }), idx = torch.tensor([[0, 5]], { device: 'cpu' });
    const bad = torch.gather(src, 1, idx);
    await expect(bad.data()).rejects.toThrow(/index 5 is out of bounds for dimension 1 with size 2/);
    x.add_(1);
    expect(Array.from((await x.data()) as Float32Array)).toEqual([want + 1, want + 1, want + 1]);
    await torch.cpu.synchronize();
    for (const t of [x, src, idx, bad]) t.dispose();
  });

  it('copies between the polling cpu worker and the GPU devices arrive', async () => {
    for (const d of devices.filter((n) => n.startsWith('gpu'))) {
      const x = torch.arange(6, { device: 'cpu', dtype: 'float32' });
      await x.data(); // the cpu worker has answered: it polls now
      const back = torch.tidy(() => x.to(d).mul(2).to('cpu').add(1));
      expect(Array.from((await back.data()) as Float32Array), d).toEqual([1, 3, 5, 7, 9, 11]);
      for (const t of [x, back]) t.dispose();
    }
  });

  it('a poll setting that is not a duration raises a clear error, naming the variable', () => {
    const dist = fileURLToPath(new URL('../../dist/webtorch.js', import.meta.url));
    const script = `const t = await import(${JSON.stringify(dist)}); try { await t.ones([2]).add(1).data(); console.log('ran'); } catch (e) { console.log(e.message); } process.exit(0);`;
    const run = (name: string, value: string) =>
      spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, [name]: value }, encoding: 'utf8' });
    const worker = run('WEBTORCH_POLL_MS', '-1');
    expect(worker.stdout).toMatch(/WEBTORCH_POLL_MS must be a duration in milliseconds, 0 or more, got "-1"/);
    const caller = run('WEBTORCH_GPU_SPIN_MS', 'fast');
    expect(caller.stderr + caller.stdout).toMatch(/WEBTORCH_GPU_SPIN_MS must be a duration in milliseconds, 0 or more, got "fast"/);
    expect(run('WEBTORCH_POLL_MS', '0').stdout.trim()).toBe('ran');
  });
});
