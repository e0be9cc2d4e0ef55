/**
 * Large host→device writes go through the GPU worker's upload ring (mapped staging buffers and
 * a copy, `writeStaged` in ts/worker/gpu.ts) from 1 MiB up: sizes at and around the threshold,
 * sizes that are not a multiple of 4 bytes or of the 8 MiB chunk, tensors at an offset inside a
 * segment, from pageable and from pinned memory, and after emptyCache dropped the ring.
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

/** Index of the first difference, or -1. */
function firstDiff(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return -2;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

describe.each(['gpu:0', 'gpu:1'])('uploads to %s', (dev) => {
  it('writes of 1 MiB - 1 up to 3 chunks + 3 bytes arrive exactly, also at an offset in a segment', async () => {
    expect(devices).toContain(dev);
    for (const n of [MiB - 1, MiB, 3 * MiB + 3, 8 * MiB, 16 * MiB + 8 * MiB + 3]) {
      const first = pattern(n, 1), second = pattern(n, 99);
      const a = torch.tensor(first, { device: dev, dtype: 'uint8' });
      const b = torch.tensor(second, { device: dev, dtype: 'uint8' }); // may sit after `a` in one segment
      expect(firstDiff(new Uint8Array(await a.data()), first), `${n} bytes, first tensor`).toBe(-1);
      expect(firstDiff(new Uint8Array(await b.data()), second), `${n} bytes, second tensor`).toBe(-1);
      a.dispose();
      b.dispose();
    }
  });

  it('float32 from pinned memory (non-blocking) and from pageable memory agree with the host data', async () => {
    const n = 3 * MiB + 1; // elements: 12 MiB + 4 bytes
    const host = new Float32Array(n);
    for (let i = 0; i < n; i++) host[i] = ((i * 2654435761) >>> 0) / 2 ** 32 - 0.5;
    const src = torch.tensor(host);
    const pinned = src.pinMemory();
    const g1 = pinned.to(dev, { nonBlocking: true });
    const g2 = src.to(dev);
    await torch.gpu.synchronize(dev);
    const r1 = new Float32Array(await g1.data()), r2 = new Float32Array(await g2.data());
    expect(firstDiff(new Uint8Array(r1.buffer), new Uint8Array(host.buffer))).toBe(-1);
    expect(firstDiff(new Uint8Array(r2.buffer), new Uint8Array(host.buffer))).toBe(-1);
    for (const t of [src, pinned, g1, g2]) t.dispose();
  });

  it('uploads still work after emptyCache dropped the ring, and the ring is in memoryReserved', async () => {
    const n = 4 * MiB;
    const x = torch.tensor(pattern(n, 5), { device: dev, dtype: 'uint8' });
    await x.data();
    const withRing = torch.gpu.memoryReserved(dev);
    x.dispose();
    torch.gpu.emptyCache(dev);
    await torch.gpu.synchronize(dev);
    expect(torch.gpu.memoryReserved(dev)).toBeLessThan(withRing);
    const y = torch.tensor(pattern(n, 6), { device: dev, dtype: 'uint8' });
    expect(firstDiff(new Uint8Array(await y.data()), pattern(n, 6))).toBe(-1);
    y.dispose();
  });
});
