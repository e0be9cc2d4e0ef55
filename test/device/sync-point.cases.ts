/**
 * The sync point's reply path (ts/worker/channel.ts), shared by sync-point.test.ts (answers
 * through the shared reply slot) and sync-point-messages.test.ts (`WEBTORCH_REPLY_SLOT=0`: every
 * answer by message, as in a browser page without cross-origin isolation). Each test checks the
 * path its answers took, so a suite that silently used the other one fails.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

/** The shared slot's size in bytes (`SLOT_BYTES` in ts/worker/channel.ts). */
const SLOT_BYTES = 4096;

/** The change in a device's answer counts while `fn` runs (`direct`: reads and syncs done on the calling thread). */
async function answersDuring<T>(d: string, fn: () => Promise<T>): Promise<{ slot: number; message: number; direct: number; value: T }> {
  const before = torch._replyCounts(d);
  const value = await fn();
  const after = torch._replyCounts(d);
  const direct = after.direct.read + after.direct.sync - before.direct.read - before.direct.sync;
  return { slot: after.slot - before.slot, message: after.message - before.message, direct, value };
}

/** Whether `d` is the cpu device with its memory shared with the calling thread (Node has it): idle, it reads without a message. */
const readsDirectly = (d: string) => d === 'cpu' && typeof SharedArrayBuffer !== 'undefined';

/** `n` distinct small integers (exact in float32 and uint8). */
const ramp = (n: number, mod: number) => Array.from({ length: n }, (_, i) => (i * 7 + 3) % mod);

export function syncPointSuite(mode: 'slot' | 'message'): void {
  const devices = suiteDevices();
  /** Whether an answer of `bytes` bytes comes through the slot in this mode. */
  const viaSlot = (bytes: number) => mode === 'slot' && bytes <= SLOT_BYTES;

  describe(`the sync point's answers (${mode === 'slot' ? 'shared reply slot' : 'messages only'})`, () => {
    it('the device has the reply path of this mode', async () => {
      for (const d of devices) {
        const t = torch.ones([1], { device: d });
        await t.data();
        t.dispose();
        expect(torch._replyCounts(d).hasSlot, d).toBe(mode === 'slot');
      }
    });

    it.each([
      ['float32', 1023], ['float32', 1024], ['float32', 1025],
      ['uint8', SLOT_BYTES - 1], ['uint8', SLOT_BYTES], ['uint8', SLOT_BYTES + 1],
    ] as const)('reads %s[%i] whole (around the slot size) with the right values, by the right path', async (dtype, n) => {
      const bytes = n * (dtype === 'float32' ? 4 : 1);
      for (const d of devices) {
        const values = ramp(n, 251);
        const t = torch.tensor(values, { dtype, device: d });
        await torch.gpu.synchronize(d);
        // An idle cpu device is read on the calling thread; with work queued before it, every device answers by its reply path.
        if (readsDirectly(d)) {
          const idle = await answersDuring(d, () => t.data());
          expect(Array.from(idle.value as ArrayLike<number>), `${d} ${dtype}[${n}], idle`).toEqual(values);
          expect({ slot: idle.slot, message: idle.message, direct: idle.direct }, `${d}: ${bytes} bytes, idle`).toEqual({ slot: 0, message: 0, direct: 1 });
        }
        const u = t.mul(1);
        const { slot, message, direct, value } = await answersDuring(d, () => u.data());
        expect(Array.from(value as ArrayLike<number>), `${d} ${dtype}[${n}]`).toEqual(values);
        expect({ slot, message, direct }, `${d}: ${bytes} bytes`).toEqual(viaSlot(bytes) ? { slot: 1, message: 0, direct: 0 } : { slot: 0, message: 1, direct: 0 });
        t.dispose();
        u.dispose();
      }
    });

    it('reads a slice at an odd offset, one element each side of the slot size', async () => {
      for (const d of devices) {
        const values = ramp(3 * SLOT_BYTES, 253);
        const t = torch.tensor(values, { dtype: 'uint8', device: d });
        for (const [from, n] of [[1, SLOT_BYTES - 1], [3, SLOT_BYTES], [5, SLOT_BYTES + 1]]) {
          const v = t.index(`${from}:${from + n}`);
          expect(Array.from((await v.data()) as Uint8Array), `${d} [${from}:${from + n}]`).toEqual(values.slice(from, from + n));
          v.dispose();
        }
        t.dispose();
      }
    });

    it('a read sees the ops queued before it and none queued after it (program order)', async () => {
      for (const d of devices) {
        const a = torch.zeros([8], { device: d }), one = torch.ones([8], { device: d });
        const reads: Promise<ArrayLike<number>>[] = [];
        for (let i = 1; i <= 5; i++) {
          // an in-place update queued after each read: no read may see a later one
          const next = a.add(one);
          a.copy_(next);
          next.dispose();
          reads.push(a.data() as Promise<ArrayLike<number>>);
        }
        const got = (await Promise.all(reads)).map((r) => Array.from(r));
        expect(got, d).toEqual([1, 2, 3, 4, 5].map((v) => new Array(8).fill(v)));
        a.dispose();
        one.dispose();
      }
    });

    it('concurrent reads from several async tasks, small and large, each get their own data', async () => {
      for (const d of devices) {
        const before = torch._replyCounts(d);
        const task = async (i: number) => {
          // Alternating sizes: with the slot, small answers take it while large ones come by message.
          const n = i % 2 ? 4 : 2 * SLOT_BYTES;
          const base = torch.full([n], i, { dtype: 'float32', device: d });
          await Promise.resolve();
          const y = torch.tidy(() => base.mul(2).add(1));
          const first = Array.from((await y.data()) as Float32Array);
          const z = y.add(i);
          const second = Array.from((await z.data()) as Float32Array);
          for (const t of [base, y, z]) t.dispose();
          return { first, second, n };
        };
        const results = await Promise.all(Array.from({ length: 12 }, (_, i) => task(i)));
        results.forEach(({ first, second, n }, i) => {
          expect(first, `${d} task ${i}`).toEqual(new Array(n).fill(2 * i + 1));
          expect(second, `${d} task ${i}`).toEqual(new Array(n).fill(3 * i + 1));
        });
        const after = torch._replyCounts(d);
        expect(after.message - before.message, `${d}: answers by message`).toBeGreaterThanOrEqual(12);
        if (mode === 'slot') expect(after.slot - before.slot, `${d}: answers through the slot`).toBeGreaterThan(0);
        else expect(after.slot, d).toBe(0);
      }
    });

    it('a device check fails at the sync point with its message, and the device goes on', async () => {
      for (const d of devices) {
        const src = torch.ones([2, 2], { device: d }), idx = torch.tensor([[0, 5]], { device: d });
        const bad = torch.gather(src, 1, idx);
        await expect(bad.data(), d).rejects.toThrow(/gather\(\): index 5 is out of bounds for dimension 1 with size 2/);
        // the error was reported once: the next read is clean and right
        const ok = src.add(1);
        expect(Array.from((await ok.data()) as Float32Array), d).toEqual([2, 2, 2, 2]);
        // a failing check found by a synchronize rather than a read
        const bad2 = torch.gather(src, 1, idx);
        await expect(torch.gpu.synchronize(d), d).rejects.toThrow(/gather\(\): index 5 is out of bounds/);
        await torch.gpu.synchronize(d);
        for (const t of [src, idx, bad, ok, bad2]) t.dispose();
      }
    });

    it('synchronize and an event\'s synchronize answer by the right path; an event\'s time comes back', async () => {
      for (const d of devices.filter((x) => x.startsWith('gpu'))) {
        const x = torch.ones([64, 64], { device: d });
        const { slot, message } = await answersDuring(d, () => torch.gpu.synchronize(d));
        expect({ slot, message }, d).toEqual(mode === 'slot' ? { slot: 1, message: 0 } : { slot: 0, message: 1 });
        const start = new torch.gpu.Event({ enableTiming: true }), end = new torch.gpu.Event({ enableTiming: true });
        const wallStart = performance.now();
        start.record(torch.gpu.currentStream(d));
        const y = x.matmul(x);
        end.record(torch.gpu.currentStream(d));
        await end.synchronize();
        const wall = performance.now() - wallStart;
        // The matmul took some device time, and no more than passed on the host around the records.
        expect(start.elapsedTime(end), d).toBeGreaterThan(0);
        expect(start.elapsedTime(end), d).toBeLessThanOrEqual(wall * 1.05 + 1);
        expect(end.query(), d).toBe(true);
        // an event recorded with nothing after it: the next synchronize covers its record too
        for (let i = 0; i < 10; i++) {
          const z = x.add(i);
          const e = new torch.gpu.Event();
          e.record(torch.gpu.currentStream(d));
          await z.data();
          await torch.gpu.synchronize(d);
          expect(e.query(), `${d}: query() after synchronize (${i})`).toBe(true);
          z.dispose();
        }
        x.dispose();
        y.dispose();
      }
    });
  });
}
