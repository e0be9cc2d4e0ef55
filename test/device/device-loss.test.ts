/**
 * Device loss (ts/runtime/device-lost.ts): gpu:0's GPUDevice destroyed mid-training through the
 * test-only hook `torch.gpu._loseDevice(0)` raises `DeviceLostError` at the next sync point and
 * at every op call after it; gpu:1 and cpu train on with their bookkeeping intact; `await
 * torch.gpu.init()` brings gpu:0 back with a fresh worker and allocator, and its old tensors raise.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

logicalGpuSuite(2, 'device loss');
const { nn, optim } = torch;

/** A small fixed-seed MLP on synthetic data, trained one step at a time on one device. */
class Trainer {
  model: torch.nn.Module;
  opt: torch.optim.Optimizer;
  X: torch.Tensor;
  y: torch.Tensor;
  constructor(readonly device: string) {
    torch.manualSeed(3);
    this.model = new nn.Sequential(new nn.Linear(8, 16), new nn.ReLU(), new nn.Linear(16, 3)).to(device);
    this.opt = new optim.SGD(this.model.parameters(), { lr: 0.1 });
    this.X = torch.tidy(() => torch.randn([32, 8]).to(device));
    this.y = torch.tidy(() => torch.arange(32).remainder(3).to(device));
  }
  /** One step; the loss is left unread (the caller's sync point). */
  step(): torch.Tensor {
    const loss = torch.tidy(() => torch.F.crossEntropy(this.model.call(this.X), this.y));
    this.opt.zeroGrad();
    loss.backward();
    this.opt.step();
    return loss;
  }
  async steps(n: number): Promise<number[]> {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const loss = this.step();
      try {
        out.push(await loss.item());
      } finally {
        loss.dispose();
      }
    }
    return out;
  }
  dispose(): void {
    this.opt.zeroGrad();
    for (const p of this.model.parameters()) p.dispose();
    this.X.dispose();
    this.y.dispose();
  }
}

const live = (d: string) => torch._liveStorage(torch.device(d)).count;
const closeTo = (a: number[], b: number[]) => a.forEach((v, i) => expect(Math.abs(v - b[i]), `step ${i}: ${v} vs ${b[i]}`).toBeLessThan(1e-4));

describe('device loss', () => {
  it('gpu:0 lost mid-training raises DeviceLostError; gpu:1 and cpu train on; torch.gpu.init() brings gpu:0 back', async () => {
    const cpu = new Trainer('cpu'), g0 = new Trainer('gpu:0'), g1 = new Trainer('gpu:1');
    const ref = await cpu.steps(6);
    closeTo(await g0.steps(2), ref.slice(0, 2));
    closeTo(await g1.steps(2), ref.slice(0, 2));
    // The two GPUs are peers before the loss (a copy connects their workers).
    const peer = torch.ones([4], { device: 'gpu:0' });
    const onG1 = peer.to('gpu:1');
    expect(await onG1.tolist()).toEqual([1, 1, 1, 1]);
    onG1.dispose();
    const g1Allocated = torch.gpu.memoryAllocated('gpu:1');

    await torch.gpu._loseDevice(0);
    // Ops issued before anyone knows still queue (the worker drops them); the sync point raises.
    const pending = g0.step();
    const err = await pending.item().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(torch.DeviceLostError);
    expect((err as Error).name).toBe('DeviceLostError');
    expect((err as Error).message).toMatch(/^gpu:0 was lost \(reason: destroyed: .*destroyed.*\)/);
    expect((err as torch.DeviceLostError).device).toBe('gpu:0');
    expect((err as torch.DeviceLostError).reason).toBe('destroyed');
    pending.dispose();
    // From then on every op call on gpu:0 raises at once, allocating nothing.
    const before = live('gpu:0');
    expect(() => g0.step()).toThrow(torch.DeviceLostError);
    expect(() => torch.zeros([2], { device: 'gpu:0' })).toThrow(/gpu:0 was lost/);
    expect(() => peer.add(1)).toThrow(torch.DeviceLostError);
    expect(live('gpu:0')).toBe(before);
    await expect(torch.gpu.synchronize('gpu:0')).rejects.toThrow(torch.DeviceLostError);
    await expect(g0.X.tolist()).rejects.toThrow(/gpu:0 was lost/);
    await expect(torch.gpu.synchronize()).rejects.toThrow(/gpu:0 was lost/);

    // The other devices go on, with the same losses as before, and gpu:1's bookkeeping unchanged.
    closeTo(await g1.steps(4), ref.slice(2, 6));
    expect(torch.gpu.memoryAllocated('gpu:1')).toBe(g1Allocated);
    await torch.gpu.synchronize('gpu:1');
    await torch.gpu.synchronize('cpu');
    // A copy from the lost device fails on the healthy one's side, naming the loss, and gpu:1 goes on.
    expect(() => peer.to('gpu:1')).toThrow(torch.DeviceLostError);

    // init() brings gpu:0 back: a fresh worker and allocator; the old tensors stay lost.
    await torch.gpu.init();
    expect(torch.gpu.memoryAllocated('gpu:0')).toBe(0);
    expect(() => peer.add(1)).toThrow(/gpu:0 was lost/);
    await expect(peer.tolist()).rejects.toThrow(torch.DeviceLostError);
    expect(() => g0.step()).toThrow(torch.DeviceLostError);
    const fresh = new Trainer('gpu:0');
    closeTo(await fresh.steps(3), ref.slice(0, 3));
    expect(torch.gpu.memoryAllocated('gpu:0')).toBeGreaterThan(0);
    // The peers connect afresh: copies both ways between the new gpu:0 and gpu:1.
    const a = torch.tidy(() => torch.arange(5, { device: 'gpu:1' }).to('gpu:0')), b = torch.tidy(() => a.mul(2).to('gpu:1'));
    expect(await b.tolist()).toEqual([0, 2, 4, 6, 8]);
    await torch.gpu.synchronize();

    // Disposing the old tensors raises nothing and returns their storages (the leak check counts them).
    peer.dispose();
    g0.dispose();
    for (const t of [a, b]) t.dispose();
    for (const t of [cpu, g1, fresh]) t.dispose();
    expect(torch.gpu.memoryAllocated('gpu:0')).toBe(0);
  });

  it('a read waiting when the device is lost settles (with its data or the loss), never hangs; init() is a no-op with nothing lost', async () => {
    // powers of two, so the answer is exact: x·x is all ones, each y·x/256 divides by 16, the sum is 2^16 · 16^-8
    const x = torch.full([256, 256], 1 / 16, { device: 'gpu:0' });
    let y = x.matmul(x);
    for (let i = 0; i < 8; i++) {
      const z = torch.tidy(() => y.matmul(x).div(256));
      y.dispose();
      y = z;
    }
    const total = y.sum();
    const read = total.item().then((v) => v, (e: unknown) => e);
    await torch.gpu._loseDevice(0);
    const got = await read;
    // either the device answered before it was lost (then with the right value), or the loss
    if (got instanceof Error) expect(got).toBeInstanceOf(torch.DeviceLostError);
    else expect(got).toBe(2 ** -16);
    await expect(y.tolist()).rejects.toThrow(torch.DeviceLostError);
    await torch.gpu.init();
    const started = torch._startedDevices();
    await torch.gpu.init();
    expect(torch._startedDevices()).toEqual(started);
    const ok = torch.ones([3], { device: 'gpu:0' });
    expect(await ok.tolist()).toEqual([1, 1, 1]);
    for (const t of [x, y, total, ok]) t.dispose();
    // A non-GPU device cannot be lost, and a loss is a destroy or a crash.
    await expect(torch.gpu._loseDevice(0, 'melt' as never)).rejects.toThrow("_loseDevice: how must be 'destroy' or 'crash', got melt");
    await expect(torch.gpu._loseDevice('cpu')).rejects.toThrow('_loseDevice: expected a gpu device, got cpu');
  });

  it("a GPU worker whose thread dies raises DeviceLostError naming why, never hangs; the others go on; init() brings it back", async () => {
    const g0 = new Trainer('gpu:0'), g1 = new Trainer('gpu:1');
    await g0.steps(1);
    await torch.gpu._loseDevice(0, 'crash');
    const pending = g0.step();
    const err = await pending.item().catch((e: unknown) => e);
    pending.dispose();
    expect(err).toBeInstanceOf(torch.DeviceLostError);
    expect((err as torch.DeviceLostError).reason).toBe('worker died');
    expect((err as Error).message).toMatch(/^gpu:0 was lost \(reason: worker died: gpu:0's worker died: its thread (threw Error: webtorch test: the GPU worker was made to crash|exited with code 1)\)/);
    expect(() => g0.step()).toThrow(torch.DeviceLostError);
    expect((await g1.steps(2)).every(Number.isFinite)).toBe(true);
    await torch.gpu.init();
    const x = torch.ones([3], { device: 'gpu:0' }), total = x.sum();
    expect(await total.item()).toBe(3);
    x.dispose();
    total.dispose();
    g0.dispose();
    g1.dispose();
  });

  it('a copy from gpu:0 under way when it is lost fails on gpu:1 at its next sync point, naming the loss; gpu:1 goes on', async () => {
    const src = torch.ones([1024], { device: 'gpu:0' });
    await torch.gpu.synchronize('gpu:0');
    await torch.gpu._loseDevice(0);
    // Nobody has seen the loss at a sync point yet: the copy is queued, and the lost worker answers gpu:1 with the loss.
    const dst = src.to('gpu:1');
    const err = await dst.tolist().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/the copy from gpu:0 failed: gpu:0 was lost \(reason: destroyed: .*destroyed.*\)/);
    const ok = torch.full([3], 2, { device: 'gpu:1' }), total = ok.sum();
    expect(await total.item()).toBe(6);
    await expect(torch.gpu.synchronize('gpu:0')).rejects.toThrow(torch.DeviceLostError);
    await torch.gpu.init();
    for (const t of [src, dst, ok, total]) t.dispose();
  });
});
