/**
 * Graphs on every device: capture once, replay with one command (ts/runtime/graphs.ts), as
 * PyTorch's `torch.cuda.graph`: training steps replayed against eager steps, static inputs, the
 * private pool's memory, and each capture error, which raises, discards the capture and leaves
 * the runtime usable. (Capturable optimizers, fusion and makeGraphedCallables: graphs-training.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';
import { capture, free, mlp, newGraph, ns, on, values } from './graphs-helpers.js';

const { nn, optim } = torch;
const devices = suiteDevices();

describe('capture and replay', () => {
  it('a captured MLP training step (forward, backward, SGD with momentum) replayed 20 times gives the parameters of 20 eager steps', async () => {
    for (const d of devices) {
      const X = torch.randn([32, 8], { device: d }), Y = torch.randint(0, 4, [32], { device: d });
      const lossFn = new nn.CrossEntropyLoss();
      const step = (m: torch.nn.Module, o: torch.optim.Optimizer) => {
        o.zeroGrad();
        const l = torch.tidy(() => lossFn.call(m.call(X), Y));
        l.backward();
        o.step();
        l.dispose();
      };
      const a = mlp(d), oa = new optim.SGD(a.parameters(), { lr: 0.1, momentum: 0.9 });
      for (let i = 0; i < 23; i++) step(a, oa);
      // PyTorch's whole-network capture: warm up eagerly (the momentum buffers exist), then capture one step
      const b = mlp(d), ob = new optim.SGD(b.parameters(), { lr: 0.1, momentum: 0.9 });
      for (let i = 0; i < 3; i++) step(b, ob);
      ob.zeroGrad();
      const g = newGraph(d);
      let loss: torch.Tensor | null = null;
      await capture(d, g, () => {
        loss = torch.tidy(() => lossFn.call(b.call(X), Y));
        loss.backward();
        ob.step();
      });
      for (let i = 0; i < 20; i++) g.replay();
      const want = await values(a.parameters()), got = await values(b.parameters());
      got.forEach((v, i) => expect(Math.abs(v - want[i]), `${d} parameter element ${i}`).toBeLessThanOrEqual(1e-5 * (1 + Math.abs(want[i]))));
      // the static loss holds the last replay's loss, which falls as training goes on
      expect(await loss!.item()).toBeLessThan(1.3);
      loss!.dispose();
      g.reset();
      free(a, oa);
      free(b, ob);
      X.dispose();
      Y.dispose();
    }
  });

  it('replays read the static inputs as they are now and write the static outputs; nothing runs during capture', async () => {
    for (const d of devices) {
      const x = torch.ones([6], { device: d }), y = torch.zeros([6], { device: d });
      const g = newGraph(d);
      let out: torch.Tensor | null = null;
      await capture(d, g, () => {
        const twice = x.mul(2);
        out = twice.add(1);
        twice.dispose();
        y.copy_(out);
      });
      expect(await y.tolist()).toEqual([0, 0, 0, 0, 0, 0]); // captured, not run (as CUDA)
      g.replay();
      expect(await y.tolist()).toEqual([3, 3, 3, 3, 3, 3]);
      const five = torch.full([6], 5, { device: d });
      x.copy_(five);
      g.replay();
      expect(await out!.tolist()).toEqual([11, 11, 11, 11, 11, 11]);
      // on a GPU, the mul and the add are fused (their intermediate is dead): 2 dispatches
      expect(await g.info()).toEqual({ commands: 3, dispatches: d === 'cpu' ? 3 : 2 });
      expect(await g.dispatchCount()).toBe(d === 'cpu' ? 3 : 2);
      g.reset();
      for (const t of [x, y, out!, five]) t.dispose();
    }
  });

  it('captures an async function, and replays on the current stream in its order', async () => {
    for (const d of devices) {
      const x = torch.arange(4, { device: d, dtype: 'float32' });
      const g = newGraph(d);
      let out: torch.Tensor | null = null;
      await capture(d, g, async () => {
        await Promise.resolve();
        out = x.mul(x);
      });
      g.replay();
      const after = out!.add(1); // eager work after the replay sees its result
      expect(await after.tolist()).toEqual([1, 2, 5, 10]);
      g.reset();
      for (const t of [x, out!, after]) t.dispose();
    }
  });

  it('captureBegin/captureEnd by hand on a side stream; the default stream refuses; isCurrentStreamCapturing tells', async () => {
    const d = 'gpu:0';
    const g = new torch.gpu.Graph();
    expect(() => g.captureBegin()).toThrow('CUDA graphs must be captured on a non-default stream');
    const s = new torch.gpu.Stream(d);
    const x = torch.ones([3], { device: d });
    await torch.gpu.synchronize(d);
    let y: torch.Tensor | null = null;
    torch.gpu.stream(s, () => {
      expect(torch.gpu.isCurrentStreamCapturing()).toBe(false);
      g.captureBegin();
      expect(torch.gpu.isCurrentStreamCapturing()).toBe(true);
      y = x.add(41);
      g.captureEnd();
      expect(torch.gpu.isCurrentStreamCapturing()).toBe(false);
    });
    expect(() => g.captureBegin()).toThrow('already captured; reset() it first');
    g.replay(); // on the default stream, as PyTorch allows
    expect(await y!.tolist()).toEqual([42, 42, 42]);
    expect(g.pool()).toBeInstanceOf(torch.gpu.GraphPool);
    g.reset();
    x.dispose();
    y!.dispose();
    // torch.cpu's
    const c = new torch.cpu.Graph();
    const z = torch.ones([2]);
    let w: torch.Tensor | null = null;
    await torch.cpu.graph(c, () => {
      expect(torch.cpu.isCurrentStreamCapturing()).toBe(true);
      w = z.neg();
    });
    expect(torch.cpu.isCurrentStreamCapturing()).toBe(false);
    c.replay();
    expect(await w!.tolist()).toEqual([-1, -1]);
    c[Symbol.dispose]();
    z.dispose();
    w!.dispose();
  });

  it('a replay after reset(), or of a graph never captured, raises', () => {
    for (const d of devices) {
      const g = newGraph(d);
      expect(() => g.replay()).toThrow('Called CUDAGraph::replay without a preceding successful capture.');
      expect(() => g.pool()).toThrow('Called CUDAGraph::pool without a preceding successful capture.');
    }
  });

  it('replay after reset raises, and a reset graph can be captured again', async () => {
    for (const d of devices) {
      const x = torch.ones([2], { device: d });
      const g = newGraph(d);
      let y: torch.Tensor | null = null;
      await capture(d, g, () => (y = x.add(1)));
      g.reset();
      expect(() => g.replay()).toThrow('Called CUDAGraph::replay without a preceding successful capture (the graph was reset).');
      y!.dispose();
      await capture(d, g, () => (y = x.add(2)));
      g.replay();
      expect(await y!.tolist()).toEqual([3, 3]);
      g.reset();
      x.dispose();
      y!.dispose();
    }
  });

  it('random ops draw fresh numbers at every replay: the numbers eager draws would make next', async () => {
    for (const d of devices) {
      torch.manualSeed(0);
      const g = newGraph(d);
      let out: torch.Tensor | null = null;
      await capture(d, g, () => {
        const r = torch.rand([9], { device: d });
        out = r.mul(2);
        r.dispose();
      });
      g.replay();
      const first = await out!.data();
      g.replay();
      const second = await out!.data();
      torch.manualSeed(0);
      const eager = [0, 1, 2].map(() => torch.rand([9], { device: d }));
      const twice = eager.map((t) => t.mul(2));
      expect(Array.from(first)).toEqual(Array.from(await twice[1].data()));
      expect(Array.from(second)).toEqual(Array.from(await twice[2].data()));
      for (const t of twice) t.dispose();
      expect(Array.from(first)).not.toEqual(Array.from(second));
      g.reset();
      out!.dispose();
      for (const t of eager) t.dispose();
    }
  });
});


describe('the private memory pool', () => {
  it('a segment a graph binds, released meanwhile, is destroyed only at reset: the replay still runs', async () => {
    for (const d of devices.filter((x) => x !== 'cpu')) {
      const big = torch.ones([600_000], { device: d }); // a segment of its own
      const g = newGraph(d);
      let y: torch.Tensor | null = null;
      await capture(d, g, () => {
        const head = big.narrow(0, 0, 4);
        y = head.add(1);
        head.dispose();
      });
      const reserved = torch.gpu.memoryReserved(d);
      big.dispose();
      torch.gpu.emptyCache(d); // releases big's segment: the worker holds its buffer for the graph
      expect(torch.gpu.memoryReserved(d)).toBeLessThan(reserved);
      await torch.gpu.synchronize(d); // the release has run and its batch was submitted (a buffer is destroyed then)
      g.replay();
      await expect(y!.data()).resolves.toHaveLength(4); // no validation error (the contents are PyTorch's undefined)
      g.reset();
      y!.dispose();
      await torch.gpu.synchronize(d);
    }
  });

  it('allocations during capture come from the graph\'s pool, kept from emptyCache until the graph is reset; then the memory goes back', async () => {
    for (const d of devices) {
      const x = torch.ones([4096], { device: d });
      torch.gpu.emptyCache(d);
      const allocated = torch.gpu.memoryAllocated(d), reserved = torch.gpu.memoryReserved(d);
      const g = newGraph(d);
      let out: torch.Tensor | null = null;
      await capture(d, g, () => {
        const t = x.mul(3); // freed during capture: its block stays the graph's
        out = t.add(1);
        t.dispose();
      });
      expect(torch.gpu.memoryReserved(d)).toBeGreaterThan(reserved);
      out!.dispose();
      expect(torch.gpu.memoryAllocated(d)).toBe(allocated);
      torch.gpu.emptyCache(d);
      expect(torch.gpu.memoryReserved(d), 'the pool outlives emptyCache while its graph lives').toBeGreaterThan(reserved);
      g.replay(); // its intermediate and output blocks are still the graph's
      g.reset();
      expect(torch.gpu.memoryAllocated(d)).toBe(allocated);
      expect(torch.gpu.memoryReserved(d), 'the pool is released with its graph').toBe(reserved);
      x.dispose();
    }
  });

  it('a raw block (cachingAllocatorAlloc) taken during capture comes from the pool too', async () => {
    for (const d of devices) {
      const g = newGraph(d);
      let raw: torch.gpu.RawBlock | null = null;
      await capture(d, g, () => {
        raw = torch.gpu.cachingAllocatorAlloc(4096, d);
      });
      const snapshot = torch.gpu.memorySnapshot(d);
      const seg = snapshot.find((s) => s.blocks.some((b) => b.state === 'active_allocated' && b.size >= 4096 && s.stream >= 2 ** 30));
      expect(seg, `${d}: the block is in a pool segment (allocator stream 2^30 + pool)`).toBeDefined();
      torch.gpu.cachingAllocatorDelete(raw!);
      g.reset();
    }
  });

  it('graphs share a pool through graphPoolHandle() or pool(), and each replays right', async () => {
    for (const d of devices) {
      const x = torch.ones([8], { device: d });
      const pool = ns(d).graphPoolHandle();
      const g1 = newGraph(d), g2 = newGraph(d);
      let a: torch.Tensor | null = null, b: torch.Tensor | null = null;
      await capture(d, g1, () => (a = x.add(1)), { pool });
      expect(g1.pool()).toBe(pool);
      await capture(d, g2, () => (b = a!.mul(10)), { pool: g1.pool() });
      g1.replay();
      g2.replay();
      expect(await b!.tolist()).toEqual(Array(8).fill(20));
      g1.reset();
      g2.replay(); // the pool lives while g2 does
      expect(await b!.tolist()).toEqual(Array(8).fill(20));
      g2.reset();
      for (const t of [x, a!, b!]) t.dispose();
    }
  });
});

describe('capture errors raise at capture time, discard the capture and leave the runtime usable', () => {
  /** Captures `body` (which must raise `message`), then checks that eager work and a new capture work. */
  async function raises(d: string, body: (x: torch.Tensor) => unknown, message: string | RegExp): Promise<void> {
    const x = torch.ones([4], { device: d });
    const g = newGraph(d);
    await expect(capture(d, g, () => body(x)), d).rejects.toThrow(message);
    expect(g.captured).toBe(false);
    expect(() => g.replay()).toThrow('the capture was discarded');
    expect(on(d, () => ns(d).isCurrentStreamCapturing())).toBe(false);
    // usable: eager work, and a new capture into the same graph
    const y = x.add(1);
    expect(await y.tolist()).toEqual([2, 2, 2, 2]);
    let z: torch.Tensor | null = null;
    await capture(d, g, () => (z = x.add(5)));
    g.replay();
    expect(await z!.tolist()).toEqual([6, 6, 6, 6]);
    g.reset();
    for (const t of [x, y, z!]) t.dispose();
  }

  it('a sync point: item(), data(), synchronize()', async () => {
    for (const d of devices) {
      const sync = /is a sync point, which cannot be captured \(operation not permitted when stream is capturing\)/;
      await raises(d, async (x) => {
        const s = x.sum();
        try {
          await s.item();
        } finally {
          s.dispose();
        }
      }, sync);
      await raises(d, (x) => x.data(), sync);
      await raises(d, () => (d === 'cpu' ? torch.cpu.synchronize() : torch.gpu.synchronize(d)), sync);
    }
  });

  it('a copy from the host, and a copy between devices', async () => {
    for (const d of devices) {
      await raises(d, () => torch.tensor([1, 2], { device: d }), "a copy from the host ('write') cannot be captured");
      const other = d === 'cpu' ? 'gpu:0' : 'cpu';
      await raises(d, (x) => x.to(other), /cannot be captured: a graph replays device work only|is a sync point/);
    }
  });

  it('an op whose output shape depends on the data (nonzero, maskedSelect)', async () => {
    for (const d of devices) {
      await raises(d, (x) => torch.nonzero(x), "nonzero's output shape depends on the data");
      await raises(d, async (x) => {
        const mask = x.gt(0);
        try {
          await x.maskedSelect(mask);
        } finally {
          mask.dispose();
        }
      }, "masked_select's output shape depends on the data");
    }
  });

  it('a forked stream never joined back; work on the default stream (gpu)', async () => {
    for (const d of devices.filter((x) => x !== 'cpu')) {
      const side = new torch.gpu.Stream(d);
      await raises(d, (x) => {
        side.waitStream(torch.gpu.currentStream(d));
        torch.gpu.stream(side, () => x.mul(2).dispose());
      }, 'never joined it back (capture sequence contains a fork that was not joined to the primary stream)');
      await raises(d, (x) => torch.gpu.stream(torch.gpu.defaultStream(d), () => x.add(1)), 'while another stream of it is capturing');
      // a fork joined back is captured into the graph, in order
      const x = torch.ones([4], { device: d }), g = newGraph(d);
      let y: torch.Tensor | null = null, z: torch.Tensor | null = null;
      await capture(d, g, () => {
        const main = torch.gpu.currentStream(d);
        side.waitStream(main);
        torch.gpu.stream(side, () => (y = x.mul(3)));
        main.waitStream(side);
        z = y!.add(1);
      });
      g.replay();
      expect(await z!.tolist()).toEqual([4, 4, 4, 4]);
      g.reset();
      for (const t of [x, y!, z!]) t.dispose();
    }
  });

  it("captureErrorMode 'relaxed' lets other work run on the default stream, uncaptured", async () => {
    for (const d of devices.filter((x) => x !== 'cpu')) {
      const x = torch.ones([4], { device: d }), g = newGraph(d);
      let y: torch.Tensor | null = null, z: torch.Tensor | null = null;
      await capture(d, g, () => {
        y = x.add(1);
        z = torch.gpu.stream(torch.gpu.defaultStream(d), () => x.mul(7)); // runs now, on the default stream
      }, { captureErrorMode: 'relaxed' });
      expect(await z!.tolist()).toEqual([7, 7, 7, 7]);
      expect(await g.info()).toEqual({ commands: 1, dispatches: 1 });
      g.replay();
      expect(await y!.tolist()).toEqual([2, 2, 2, 2]);
      g.reset();
      for (const t of [x, y!, z!]) t.dispose();
    }
  });

  it('an optimizer step whose state would be made during capture', async () => {
    for (const d of devices) {
      const m = mlp(d), o = new optim.SGD(m.parameters(), { lr: 0.1, momentum: 0.9 });
      const X = torch.randn([4, 8], { device: d });
      const g = newGraph(d);
      let loss: torch.Tensor | null = null;
      await expect(capture(d, g, () => {
        loss = torch.tidy(() => m.call(X).sum());
        loss.backward();
        o.step();
      })).rejects.toThrow("SGD.step() under graph capture made its state 'momentumBuffer' during capture");
      loss!.dispose();
      free(m, o);
      X.dispose();
    }
  });
});
