/**
 * The idle cpu device's direct path (ts/runtime/client.ts: `idle`): with its memory shared with
 * the calling thread, a read, a write and a synchronize of an idle cpu device take no message,
 * and never when work is queued or running, so a write cannot overtake queued work that reads the
 * old bytes, and an asynchronous error still surfaces at the next sync point.
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck } from '../devices.js';

leakCheck(() => ['cpu']);
afterAll(async () => {
  await torch.shutdown();
});

const direct = () => torch._replyCounts('cpu').direct;
const ramp = (n: number, k: number) => Float32Array.from({ length: n }, (_, i) => ((i * k) % 97) / 8 - 6);

describe.runIf(typeof SharedArrayBuffer !== 'undefined')('the idle cpu device, from the calling thread', () => {
  it('a large read (a buffer Node does not zero first) holds every byte, on the direct path and through the worker', async () => {
    const n = 300_001, v = ramp(n, 7);
    const t = torch.tensor(v);
    await torch.cpu.synchronize();
    const before = direct();
    const a = await t.data();
    expect(direct().read - before.read).toBe(1);
    // queued work sends the read to the worker, whose answer is transferred
    const u = t.mul(1);
    const b = await u.data();
    expect(direct().read - before.read).toBe(1);
    for (const got of [a, b]) {
      expect(got).toBeInstanceOf(Float32Array);
      expect(got.buffer).toBeInstanceOf(ArrayBuffer);
      expect(got.buffer.byteLength).toBe(4 * n);
      expect(Array.from(got as Float32Array)).toEqual(Array.from(v));
    }
    t.dispose();
    u.dispose();
  });

  it('reads, writes and synchronizes without a message when idle, with the right bytes', async () => {
    const v = ramp(1000, 3);
    const warm = torch.tensor(v);
    await torch.cpu.synchronize();
    warm.dispose();
    const before = direct();
    // The block freed above is reused: no new segment, so nothing is queued and the write is direct.
    const t = torch.tensor(v);
    expect(direct().write - before.write).toBe(1);
    await torch.cpu.synchronize();
    expect(direct().sync - before.sync).toBe(1);
    expect(Array.from((await t.data()) as Float32Array)).toEqual(Array.from(v));
    expect(direct().read - before.read).toBe(1);
    // What a direct read proves goes on the board, as a message's answer would: once the worker has
    // run an op (nothing told the calling thread so), a direct read makes the stream's query true.
    const u = t.add(1);
    await new Promise((r) => setTimeout(r, 20));
    for (let i = 0; i < 200; i++) {
      const reads = direct().read;
      await t.data();
      if (direct().read > reads) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(torch.cpu.currentStream().query()).toBe(true);
    expect(Array.from((await u.data()) as Float32Array)).toEqual(Array.from(v, (x) => Math.fround(x + 1)));
    t.dispose();
    u.dispose();
  });

  it('a write never overtakes queued or running work that reads the old bytes', async () => {
    const n = 1 << 20, v1 = ramp(n, 5), v2 = ramp(n, 7);
    for (let round = 0; round < 4; round++) {
      const a = torch.tensor(v1);
      await torch.cpu.synchronize();
      // Work that reads a's bytes, queued (round 0, 1) or already sent and running (round 2, 3) when a's block is written again.
      const e = a.exp(), y = e.sum();
      if (round >= 2) await Promise.resolve();
      const before = direct().write;
      a.dispose();
      const b = torch.tensor(v2); // likely a's block again
      // Queued (not yet sent) work always blocks the direct path; sent work only until the worker has run it.
      if (round < 2) expect(direct().write - before, `round ${round}: not written directly while work is queued`).toBe(0);
      let ref = 0;
      for (let i = 0; i < n; i++) ref += Math.exp(v1[i]);
      const got = (await y.data())[0] as number;
      expect(Math.abs(got - ref) / ref, `round ${round}: the sum read a's old bytes`).toBeLessThan(1e-5);
      expect(Array.from(((await b.data()) as Float32Array).subarray(0, 64))).toEqual(Array.from(v2.subarray(0, 64)));
      for (const t of [e, y, b]) t.dispose();
    }
  });

  it('an asynchronous error is never skipped: the sync after it takes a message and raises', async () => {
    const src = torch.ones([2, 2]), idx = torch.tensor([[0, 5]]);
    await torch.cpu.synchronize();
    const bad = torch.gather(src, 1, idx);
    // Let the worker run the failing gather: the device is then idle but for the error it holds.
    await new Promise((r) => setTimeout(r, 50));
    const before = direct().sync;
    await expect(torch.cpu.synchronize()).rejects.toThrow(/gather\(\): index 5 is out of bounds/);
    expect(direct().sync - before).toBe(0);
    await torch.cpu.synchronize();
    for (const t of [src, idx, bad]) t.dispose();
  });
});
