/**
 * Device-to-device copies in chunks (ts/ops/copy.ts): with a small chunk size, copies of sizes
 * that are not a multiple of it, from offset views and non-contiguous sources, between gpu:0 and
 * gpu:1 and to and from the cpu, arrive bit for bit, and later work on the destination (and
 * writes to the source after the copy) keep stream order.
 */
import { afterEach, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

logicalGpuSuite(2, 'chunked copy tests');
const CHUNK = 1024;
afterEach(() => {
  torch._setCopyChunkBytes(4 << 20);
});

describe('device-to-device copies in chunks', () => {
  it.each([['gpu:0', 'gpu:1'], ['gpu:1', 'gpu:0'], ['gpu:0', 'cpu'], ['cpu', 'gpu:1']])('%s → %s: sizes around the chunk, views, dtypes', async (a, b) => {
    torch._setCopyChunkBytes(CHUNK);
    for (const n of [1, 255, 256, 513, 1000, 5 * 256 + 3, 20011]) {
      const base = torch.tidy(() => torch.arange(n + 3, { dtype: 'float32' }).mul(1.5).to(a));
      const view = base.narrow(0, 3, n);                            // an offset into its storage
      const out = view.to(b);
      expect(String(out.device)).toBe(b);
      const want = Array.from({ length: n }, (_, i) => (i + 3) * 1.5);
      expect(await out.tolist(), `n=${n}`).toEqual(want);
      [base, view, out].forEach((t) => t.dispose());
    }
    // int64 and a non-contiguous source
    const m = torch.tidy(() => torch.arange(3 * 700, { dtype: 'int64' }).reshape([3, 700]).to(a));
    const tr = torch.tidy(() => m.transpose(0, 1).to(b));
    expect((await tr.tolist())[699]).toEqual([699, 1399, 2099]);
    [m, tr].forEach((t) => t.dispose());
  });

  it('stream order: the destination\'s later work sees every chunk; a write after the copy does not reach it', async () => {
    torch._setCopyChunkBytes(CHUNK);
    const n = 10_000;
    const x = torch.ones([n], { device: 'gpu:0' });
    const y = x.to('gpu:1');
    const five = torch.full([n], 5, { device: 'gpu:0' });
    x.copy_(five);                                  // after the copy: y keeps the ones
    const s = y.sum();                              // on gpu:1, after every chunk has landed
    expect(await s.item()).toBe(n);
    const sx = x.sum();
    expect(await sx.item()).toBe(5 * n);
    [x, y, s, sx, five].forEach((t) => t.dispose());
  });

  it('the default chunks: a 12 MiB copy (three 4 MiB chunks) gpu:0 → gpu:1 → cpu arrives whole', async () => {
    const n = 3 << 20;
    const x = torch.tidy(() => torch.arange(n, { dtype: 'int32' }).remainder(1000).to('gpu:0'));
    const y = x.to('gpu:1');
    const z = y.to('cpu');
    const v = (await z.data()) as Int32Array;
    expect(v.length).toBe(n);
    const bad = v.findIndex((e, i) => e !== i % 1000);
    expect(bad).toBe(-1);
    [x, y, z].forEach((t) => t.dispose());
  });

  it('refuses a chunk size that is not a positive multiple of 4', () => {
    expect(() => torch._setCopyChunkBytes(6)).toThrow('copy chunk must be a positive multiple of 4 bytes, got 6');
  });
});
