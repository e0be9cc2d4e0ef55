/**
 * Large device→host reads go through the GPU worker's download ring (three mapped 8 MiB chunks,
 * `readChunked` in ts/worker/gpu/transfers.ts) above 8 MiB: sizes at and around the chunk, sizes
 * that are not a multiple of 4 bytes or of the chunk, more chunks than the ring has buffers,
 * views at an odd byte offset, reads into pinned memory, and after emptyCache dropped the ring.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const devices = suiteDevices();
const MiB = 1 << 20;

/** Bytes with a pattern that differs at every position of a chunk (so a misplaced chunk shows). */
function pattern(n: number, salt: number): Uint8Array {
  const a = new Uint8Array(n);
  for (let i = 0; i < n; i++) a[i] = (i * 7 + (i >> 13) + salt) & 255;
  return a;
}

/** Index of the first difference, or -1 (-2 for different lengths). */
function firstDiff(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return -2;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

describe.each(['gpu:0', 'gpu:1'])('downloads from %s', (dev) => {
  it('reads of 8 MiB up to five chunks + 3 bytes come back exactly', async () => {
    expect(devices).toContain(dev);
    for (const n of [8 * MiB, 8 * MiB + 1, 16 * MiB + 4, 5 * 8 * MiB + 3]) {
      const host = pattern(n, n & 31);
      const t = torch.tensor(host, { device: dev, dtype: 'uint8' });
      const back = t.add(0); // computed on the device, so the read waits for a kernel
      expect(firstDiff(new Uint8Array(await back.data()), host), `${n} bytes`).toBe(-1);
      t.dispose();
      back.dispose();
    }
  }, 120_000);

  it('a view at an odd byte offset reads its own bytes', async () => {
    const n = 20 * MiB + 7;
    const host = pattern(n, 3);
    const t = torch.tensor(host, { device: dev, dtype: 'uint8' });
    for (const [from, len] of [[5, 9 * MiB], [1, n - 2], [8 * MiB - 1, 8 * MiB + 3]]) {
      const v = t.narrow(0, from, len);
      expect(firstDiff(new Uint8Array(await v.data()), host.subarray(from, from + len)), `[${from}, +${len})`).toBe(-1);
      v.dispose();
    }
    t.dispose();
  }, 120_000);

  it('a non-blocking copy into pinned memory of 3 chunks + 3 bytes is right after synchronize', async () => {
    const n = 24 * MiB + 3;
    const host = pattern(n, 11);
    const g = torch.tensor(host, { device: dev, dtype: 'uint8' });
    const dst = torch.empty([n], { dtype: 'uint8', pinMemory: true });
    dst.copy_(g, { nonBlocking: true });
    await torch.gpu.synchronize(dev);
    expect(firstDiff(new Uint8Array(await dst.data()), host)).toBe(-1);
    const h = g.to('cpu', { nonBlocking: true });
    expect(h.isPinned()).toBe(true);
    await torch.gpu.synchronize(dev);
    expect(firstDiff(new Uint8Array(await h.data()), host)).toBe(-1);
    for (const t of [g, dst, h]) t.dispose();
  }, 120_000);

  it('reads still work after emptyCache dropped the ring, and the ring is in memoryReserved while kept', async () => {
    const n = 17 * MiB;
    const host = pattern(n, 5);
    const t = torch.tensor(host, { device: dev, dtype: 'uint8' });
    await t.data();
    const withRing = torch.gpu.memoryReserved(dev);
    torch.gpu.emptyCache(dev);
    await torch.gpu.synchronize(dev);
    expect(torch.gpu.memoryReserved(dev)).toBeLessThanOrEqual(withRing - 24 * MiB);
    expect(firstDiff(new Uint8Array(await t.data()), host)).toBe(-1);
    t.dispose();
  }, 120_000);
});
