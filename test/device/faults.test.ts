/**
 * Faults injected and survived (issue 33), in one process: a GPU device lost in the middle of a
 * training step, an allocation failure in the middle of backward, and a DataLoader worker thread
 * whose `getItem` throws (or whose thread dies). Faults between ranks are in faults-dist.test.ts.
 *
 * The values are exact: the step's data are small integers, so every product and sum is an
 * integer well below 2^24 and float32 gives it exactly on every device, in any summation order.
 * A fault that corrupted a value, on the faulty device or on another, cannot pass as rounding.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

logicalGpuSuite(2, 'faults');

/** n×m small integers in [-2, 2] from a fixed LCG (the same on every device). */
function ints(seed: number, n: number, m: number): number[][] {
  let s = seed >>> 0;
  return Array.from({ length: n }, () => Array.from({ length: m }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s >>> 16) % 5 - 2;
  }));
}

const N = 96;
const XS = ints(1, N, N), WS = ints(2, N, N);

/** One step of `loss = relu(X @ W).sum()`: the loss, W's gradient, and W after `W -= 0.5 · grad`, in plain JS. */
function refStep(X: number[][], W: number[][]): { loss: number; grad: number[][]; next: number[][] } {
  const n = X.length, m = W[0].length, k = W.length;
  const Y = X.map((row) => Array.from({ length: m }, (_, j) => row.reduce((a, x, t) => a + x * W[t][j], 0)));
  const loss = Y.flat().reduce((a, y) => a + Math.max(y, 0), 0);
  const grad = Array.from({ length: k }, (_, t) => Array.from({ length: m }, (_, j) => {
    let g = 0;
    for (let i = 0; i < n; i++) if (Y[i][j] > 0) g += X[i][t];
    return g;
  }));
  return { loss, grad, next: W.map((r, t) => r.map((w, j) => w - 0.5 * grad[t][j])) };
}
const REF1 = refStep(XS, WS), REF2 = refStep(XS, REF1.next);

/** A model on one device: X, and the parameter W. */
class Exact {
  X: torch.Tensor;
  W: torch.Tensor;
  constructor(readonly device: string) {
    this.X = torch.tensor(XS, { device, dtype: 'float32' });
    this.W = torch.tensor(WS, { device, dtype: 'float32', requiresGrad: true });
  }
  /** Queues forward and backward; returns the loss (unread). */
  forwardBackward(): torch.Tensor {
    const loss = torch.tidy(() => this.X.matmul(this.W).relu().sum());
    this.W.grad?.dispose();
    this.W.grad = null;
    loss.backward();
    return loss;
  }
  /** Queues the SGD update (lr 0.5) and drops the gradient. */
  update(): void {
    torch.tidy(() => torch.noGrad(() => void this.W.sub_(this.W.grad!.mul(0.5))));
  }
  /** A whole step; the promise of [loss, grad, W after]. */
  async step(): Promise<[number, number[][], number[][]]> {
    const loss = this.forwardBackward();
    const grad = this.W.grad!.clone();
    this.update();
    try {
      return [await loss.item(), await grad.tolist() as number[][], await this.W.tolist() as number[][]];
    } finally {
      loss.dispose();
      grad.dispose();
    }
  }
  dispose(): void {
    this.W.grad?.dispose();
    this.W.grad = null;
    this.X.dispose();
    this.W.dispose();
  }
}

describe('a GPU device lost in the middle of a step', () => {
  it.each(['destroy', 'crash'] as const)('%s: the next sync point on gpu:0 raises DeviceLostError; cpu and gpu:1 give exact values; after init() gpu:0 computes exactly again', async (how) => {
    const cpu = new Exact('cpu'), g0 = new Exact('gpu:0'), g1 = new Exact('gpu:1');
    // Every device gives the reference exactly before the fault (so exact comparison is fair).
    for (const m of [cpu, g0, g1]) expect(await m.step(), m.device).toEqual([REF1.loss, REF1.grad, REF1.next]);
    for (const m of [cpu, g0, g1]) torch.tidy(() => torch.noGrad(() => void m.W.copy_(torch.tensor(WS, { dtype: 'float32' }))));

    // Step 2 on all three at once: forward and backward queued, the loss hits gpu:0, the update is queued after it.
    const losses = [cpu, g0, g1].map((m) => m.forwardBackward());
    const inFlight = losses[1].item().then((v) => v, (e: unknown) => e);
    const lost = torch.gpu._loseDevice(0, how);
    for (const m of [cpu, g1]) m.update();
    // gpu:0's update: queued if nobody knows of the loss yet, refused at the call if someone does.
    try {
      g0.update();
    } catch (e) {
      expect(e).toBeInstanceOf(torch.DeviceLostError);
    }
    await lost;

    // The lost device's next sync point raises DeviceLostError, not data: not even X's, made long before.
    const next = await g0.X.tolist().then((v) => v, (e: unknown) => e);
    expect(next).toBeInstanceOf(torch.DeviceLostError);
    expect((next as torch.DeviceLostError).device).toBe('gpu:0');
    expect((next as torch.DeviceLostError).reason).toBe(how === 'destroy' ? 'destroyed' : 'worker died');
    // The read that was under way settles: the loss, or the right number (if it finished first), never anything else.
    const got = await inFlight;
    if (got instanceof Error) expect(got).toBeInstanceOf(torch.DeviceLostError);
    else expect(got).toBe(REF1.loss);
    await expect(torch.gpu.synchronize('gpu:0')).rejects.toThrow(torch.DeviceLostError);
    expect(() => g0.X.add(1)).toThrow(torch.DeviceLostError);

    // cpu and gpu:1 finish the step exactly, and go on exactly.
    for (const [i, m] of [[0, cpu], [2, g1]] as const) {
      expect(await losses[i].item(), m.device).toBe(REF1.loss);
      expect(await m.W.tolist(), m.device).toEqual(REF1.next);
      expect(await m.step(), m.device).toEqual([REF2.loss, REF2.grad, REF2.next]);
    }
    await torch.gpu.synchronize('gpu:1');
    await torch.gpu.synchronize('cpu');

    // init() brings gpu:0 back: a fresh model there gives the reference exactly, and copies with gpu:1 work both ways.
    await torch.gpu.init();
    const again = new Exact('gpu:0');
    expect(await again.step()).toEqual([REF1.loss, REF1.grad, REF1.next]);
    const there = torch.tidy(() => again.W.to('gpu:1')), back = torch.tidy(() => there.mul(2).to('gpu:0'));
    expect(await back.tolist()).toEqual(REF1.next.map((r) => r.map((v) => 2 * v)));

    for (const t of [...losses, there, back]) t.dispose();
    for (const m of [cpu, g0, g1, again]) m.dispose();
  }, 60_000);
});

/** The device's memory budget at fraction 1 (cpu: WEBTORCH_CPU_MEMORY, else 2 GiB; ts/runtime/memory.ts). */
async function capacity(dev: string): Promise<number> {
  if (dev !== 'cpu') return (await torch.gpu.getDeviceProperties(dev)).totalMemory;
  const env = process.env.WEBTORCH_CPU_MEMORY;
  if (!env) return 2 * 1024 ** 3;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(gib|mib|kib|b)?\s*$/i.exec(env);
  if (!m) throw new Error(`faults test: cannot read WEBTORCH_CPU_MEMORY=${env}`);
  return Number(m[1]) * { gib: 1024 ** 3, mib: 1024 ** 2, kib: 1024, b: 1 }[(m[2] ?? 'b').toLowerCase() as 'b'];
}

describe('an allocation that fails in the middle of backward', () => {
  it.each(['cpu', 'gpu:0'])('%s: backward raises OutOfMemoryError; nothing leaks; the device and the others compute exactly afterwards', async (dev) => {
    const other = dev === 'cpu' ? 'gpu:1' : 'cpu';
    await torch.gpu.synchronize();
    const base = torch.gpu.memoryAllocated(dev), baseLive = torch._liveStorage(torch.device(dev)).count;
    const otherBase = torch.gpu.memoryAllocated(other);
    // A graph whose forward fits, on tensors of 12 MiB (each in a segment of its own, so that the
    // budget below counts exactly what the forward holds), with a branch: when a rule fails, the
    // other branch's gradient is in flight.
    const n = 3 << 20, grad = n * 4;
    try {
      for (const room of [1.5, 2.5, 3.5]) {
        torch.gpu.setPerProcessMemoryFraction(1, dev);
        const x = torch.randn([n], { device: dev }).requiresGrad_(), w = torch.randn([n], { device: dev }).requiresGrad_();
        const loss = torch.tidy(() => {
          const y = x.mul(w);
          return y.tanh().add(y.relu().mul(x)).sum();
        });
        const forward = torch.gpu.memoryAllocated(dev);
        // The cached blocks go back; then room for `room` more gradients: backward's first rules fit, a later one cannot.
        torch.gpu.emptyCache(dev);
        torch.gpu.setPerProcessMemoryFraction((torch.gpu.memoryReserved(dev) + room * grad) / (await capacity(dev)), dev);
        torch.gpu.resetPeakMemoryStats(dev);
        const ooms = torch.gpu.memoryStats(dev)['num_ooms'];
        let err: unknown = null;
        try {
          loss.backward();
        } catch (e) {
          err = e;
        }
        expect(err, `room for ${room} gradients`).toBeInstanceOf(torch.OutOfMemoryError);
        expect((err as Error).message).toMatch(/^Tried to allocate 12\.00 MiB\./);
        expect(torch.gpu.memoryStats(dev)['num_ooms']).toBeGreaterThan(ooms);
        // In the middle: gradients were made before the allocation that failed.
        expect(torch.gpu.maxMemoryAllocated(dev)).toBeGreaterThanOrEqual(forward + Math.floor(room) * grad);
        // Nothing half-made is left behind: once the caller's tensors go, the device is back where it was.
        for (const t of [x, w]) {
          t.grad?.dispose();
          t.grad = null;
        }
        for (const t of [loss, x, w]) t.dispose();
        await torch.gpu.synchronize(dev);
        expect(torch.gpu.memoryAllocated(dev), `bytes left allocated after the failed backward (room ${room})`).toBe(base);
        expect(torch._liveStorage(torch.device(dev)).count, `storages left after the failed backward (room ${room})`).toBe(baseLive);
      }
      // Under the same small budget, a fresh small step on the device is exact.
      const m = new Exact(dev);
      try {
        expect(await m.step()).toEqual([REF1.loss, REF1.grad, REF1.next]);
      } finally {
        m.dispose();
      }
    } finally {
      torch.gpu.setPerProcessMemoryFraction(1, dev);
    }
    // The other device was untouched, and computes exactly.
    expect(torch.gpu.memoryAllocated(other)).toBe(otherBase);
    const o = new Exact(other);
    expect(await o.step()).toEqual([REF1.loss, REF1.grad, REF1.next]);
    o.dispose();
    // With the budget back, the device trains exactly.
    const m2 = new Exact(dev);
    expect(await m2.step()).toEqual([REF1.loss, REF1.grad, REF1.next]);
    m2.dispose();
  }, 60_000);
});

/** A dataset whose getItem raises at index 5 (sent to the worker threads as its class source). */
class BadItem extends torch.utils.data.Dataset<[Float32Array, number]> {
  constructor(readonly n: number, readonly bad: number) {
    super();
  }
  get length() {
    return this.n;
  }
  getItem(i: number): [Float32Array, number] {
    if (i === this.bad) throw new Error(`webtorch fault test: bad item ${i}`);
    return [Float32Array.of(i, 2 * i), i];
  }
}

/** The batches of a loader of `BadItem`s (2 worker threads, 4 items a batch), and the error it raised. */
async function drain(ds: BadItem): Promise<{ got: unknown[]; error: Error | null }> {
  const got: unknown[] = [];
  try {
    for (const [x, y] of new torch.utils.data.DataLoader(ds, { batchSize: 4, numWorkers: 2 })) {
      got.push([await x.tolist(), await y.tolist()]);
      x.dispose();
      y.dispose();
    }
  } catch (e) {
    return { got, error: e as Error };
  }
  return { got, error: null };
}

const batch = (b: number) => [[0, 1, 2, 3].map((k) => [4 * b + k, 2 * (4 * b + k)]), [0, 1, 2, 3].map((k) => 4 * b + k)];

describe('a DataLoader worker thread that fails', () => {
  it("getItem raising in a worker: the batches before it come, then the worker's error at its batch; a new loader works", async () => {
    const bad = await drain(new BadItem(16, 5));
    expect(bad.got).toEqual([batch(0)]);
    expect(bad.error).toBeInstanceOf(Error);
    expect(bad.error!.message).toMatch(/^DataLoader worker \(numWorkers: 2\): getItem raised in a worker thread: Error: webtorch fault test: bad item 5\n/);
    // The failed loader's threads are gone and nothing was left on the device; a new loader gives every batch.
    const good = await drain(new BadItem(16, -1));
    expect(good.error).toBeNull();
    expect(good.got).toEqual([0, 1, 2, 3].map(batch));
  }, 30_000);

  it('a worker thread that exits in getItem (process.exit(7)) raises naming why, never hangs; a new loader works (in a child process)', async () => {
    // In a child process: a loader waiting on a dead thread blocks its thread (Atomics.wait), which no test time-out could end.
    const FIXTURE = fileURLToPath(new URL('../fixtures/loader-fault.mjs', import.meta.url));
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string; killed: boolean }>((resolve) => {
      execFile(process.execPath, [FIXTURE, 'exit'], { timeout: 20_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr, killed: !!err?.killed });
      });
    });
    expect(r.killed, 'the loader hung').toBe(false);
    expect(r.code, r.stderr).toBe(0);
    const line = r.stdout.split('\n').find((l) => l.startsWith('RESULT '));
    const res = JSON.parse(line!.slice(7));
    expect(res.bad.got).toEqual([batch(0)]);
    expect(res.bad.error).toBe('DataLoader worker (numWorkers: 2): worker 1 ended before batch 1: its thread exited with code 7');
    expect(res.good).toEqual({ got: [0, 1, 2, 3].map(batch), error: null });
    expect(res.live).toBe(0);
  }, 30_000);
});
