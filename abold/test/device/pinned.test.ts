/**
 * Pinned memory and non-blocking copies (ts/runtime/pinned.ts) on gpu:0 and gpu:1: pinned
 * tensors are cpu tensors in the cpu worker's shared memory; a non-blocking copy from one returns
 * before its data has arrived (an event recorded after it is not done yet) and is right after a
 * synchronize; device→host into pinned memory; the pinned block is not reused before the GPU has
 * read it; the DataLoader's pinned batches; the errors.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

suiteDevices();
const N = 256;

/** Long cpu work whose result is `x` exactly (`steps` 512×512 products with the identity, then x + 0·their sum). */
function longCpuWork(x: torch.Tensor, steps: number): torch.Tensor {
  return torch.tidy(() => {
    const eye = torch.eye(512);
    let y = eye;
    for (let i = 0; i < steps; i++) y = y.matmul(eye);
    return x.add(y.sum().mul(0));
  });
}

const data = () => torch.tidy(() => torch.arange(N * N, { dtype: 'float32' }).remainder(89).reshape([N, N]));

/** The largest difference between two tensors of one device, read (a sync point). */
async function maxDiff(a: torch.Tensor, b: torch.Tensor): Promise<number> {
  const d = torch.tidy(() => a.sub(b).abs().max());
  const v = (await d.item()) as number;
  d.dispose();
  return v;
}

describe('pinned memory', () => {
  it('pinMemory copies a cpu tensor into pinned memory; views and empty/tensor({pinMemory}) are pinned', async () => {
    const x = data();
    expect(x.isPinned()).toBe(false);
    const p = x.pinMemory();
    expect(p).not.toBe(x);
    expect(p.isPinned()).toBe(true);
    expect(p.pinMemory()).toBe(p); // already pinned
    const v = p.index('1:3');
    expect(v.isPinned()).toBe(true);
    expect(await maxDiff(p, x)).toBe(0);
    const e = torch.empty([3, 4], { pinMemory: true });
    const t = torch.tensor([1, 2, 3], { pinMemory: true });
    const plain = torch.empty([2]);
    expect([e.isPinned(), t.isPinned(), plain.isPinned()]).toEqual([true, true, false]);
    expect(await t.tolist()).toEqual([1, 2, 3]);
    for (const u of [x, p, v, e, t, plain]) u.dispose();
  });

  it('raises for GPU tensors', async () => {
    const g = torch.ones([2], { device: 'gpu:0' });
    expect(() => g.pinMemory()).toThrow("cannot pin 'gpu:0' tensor: only dense CPU tensors can be pinned");
    expect(() => torch.empty([2], { device: 'gpu:1', pinMemory: true })).toThrow('empty(): Only dense CPU tensors can be pinned, got a tensor on gpu:1');
    g.dispose();
    // The runtime is still usable.
    const h = torch.ones([2], { device: 'gpu:0' });
    expect(await h.tolist()).toEqual([1, 1]);
    h.dispose();
  });
});

describe.each(['gpu:0', 'gpu:1'])('non-blocking copies with %s', (d) => {
  it('host→device from pinned memory returns before the data has arrived, and is right after synchronize', async () => {
    const warm = torch.full([4], 1, { device: d }); // the device's worker is up before the timing-sensitive part
    await torch.gpu.synchronize(d);
    warm.dispose();
    const x = data();
    const late = longCpuWork(x, 40); // the cpu is busy making the source
    const p = late.pinMemory();
    const t0 = performance.now();
    const y = p.to(d, { nonBlocking: true });
    const issued = performance.now() - t0;
    const arrived = torch.gpu.currentStream(d).recordEvent();
    expect(arrived.query()).toBe(false); // the copy waits for the cpu's work, in stream order
    // Another stream of the device is not fenced by a non-blocking copy.
    const side = new torch.gpu.Stream(d);
    let quick!: torch.Tensor;
    torch.gpu.stream(side, () => (quick = torch.full([4], 7, { device: d })));
    await side.synchronize();
    expect(arrived.query()).toBe(false);
    await torch.gpu.synchronize();
    expect(arrived.query()).toBe(true);
    expect(issued).toBeLessThan(50);
    const back = x.to(d);
    expect(await maxDiff(y, back)).toBe(0);
    for (const t of [x, late, p, y, quick, back]) t.dispose();
  }, 120_000);

  it('a pinned block freed right after a non-blocking copy is not reused before the GPU has read it', async () => {
    const x = data();
    const late = longCpuWork(x, 8);
    const p = late.pinMemory();
    late.dispose();
    const y = p.to(d, { nonBlocking: true });
    p.dispose();
    // The cpu's next tensors of the same size are written at once, on the cpu's stream.
    const others = Array.from({ length: 3 }, () => torch.full([N, N], -5));
    await torch.gpu.synchronize();
    const back = x.to(d);
    expect(await maxDiff(y, back)).toBe(0);
    for (const t of [x, y, back, ...others]) t.dispose();
  }, 120_000);

  it('device→host: to("cpu", {nonBlocking}) makes a pinned tensor; copy_ into pinned memory', async () => {
    const x = data();
    const g = x.to(d);
    const g2 = g.mul(2);
    const h = g2.to('cpu', { nonBlocking: true });
    expect(h.isPinned()).toBe(true);
    const done = torch.gpu.currentStream(d).recordEvent();
    await done.synchronize();
    const twice = x.mul(2);
    expect(await maxDiff(h, twice)).toBe(0);
    const dst = torch.empty([N, N], { pinMemory: true });
    dst.copy_(g, { nonBlocking: true });
    await torch.gpu.synchronize();
    expect(await maxDiff(dst, x)).toBe(0);
    // From pageable memory nonBlocking behaves as a plain copy.
    const pageable = torch.empty([N, N]);
    pageable.copy_(g, true);
    expect(await maxDiff(pageable, x)).toBe(0);
    for (const t of [x, g, g2, h, twice, dst, pageable]) t.dispose();
  }, 120_000);
});

describe('DataLoader({pinMemory: true})', () => {
  it('yields pinned batches that move to a GPU without blocking', async () => {
    const xs = torch.tidy(() => torch.arange(40, { dtype: 'float32' }).reshape([10, 4]));
    const ys = torch.arange(10);
    const loader = new torch.data.DataLoader(new torch.data.TensorDataset(xs, ys), { batchSize: 4, pinMemory: true });
    let rows = 0;
    for (const [bx, by] of loader) {
      expect([bx.isPinned(), by.isPinned()]).toEqual([true, true]);
      const g = bx.to('gpu:0', { nonBlocking: true });
      const s = g.sum();
      rows += bx.shape[0];
      expect(await s.item()).toBe(((await bx.data()) as Float32Array).reduce((a, b) => a + b, 0));
      for (const t of [bx, by, g, s]) t.dispose();
    }
    expect(rows).toBe(10);
    xs.dispose();
    ys.dispose();
  });
});
