/**
 * Graphs on every device: capture once, replay with one command (ts/runtime/graphs.ts), as
 * PyTorch's `torch.cuda.graph`: training steps replayed against eager steps, static inputs, the
 * private pool's memory, and each capture error, which raises, discards the capture and leaves
 * the runtime usable.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const { nn, optim } = torch;
const devices = suiteDevices();

/** The namespace whose Graph captures on `d` (`torch.cpu` or `torch.gpu`). */
const ns = (d: string) => (d === 'cpu' ? torch.cpu : torch.gpu);
/** Runs `fn` with `d` as the current GPU (graphs capture on the current device). */
const on = <T>(d: string, fn: () => T): T => (d === 'cpu' ? fn() : torch.gpu.withDevice(d, fn));
const newGraph = (d: string) => on(d, () => new (ns(d).Graph)());
const capture = <T>(d: string, g: torch.gpu.Graph, fn: () => T | Promise<T>, options: torch.gpu.GraphOptions = {}) => on(d, () => ns(d).graph(g, fn, options));

const mlp = (d: string) => {
  torch.manualSeed(0);
  return new nn.Sequential(new nn.Linear(8, 16), new nn.ReLU(), new nn.Linear(16, 4)).to(d);
};

/** Disposes a model's parameters and gradients and an optimizer's state tensors. */
function free(model: torch.nn.Module, opt?: torch.optim.Optimizer): void {
  for (const p of model.parameters()) {
    p.grad?.dispose();
    p.dispose();
  }
  for (const s of opt?.state.values() ?? []) for (const v of Object.values(s)) if (typeof v === 'object') v.dispose();
}

async function values(ts: Iterable<torch.Tensor>): Promise<number[]> {
  const out: number[] = [];
  for (const t of ts) out.push(...(await t.data()));
  return out;
}

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

describe('capturable optimizers', () => {
  it('Adam({capturable: true}) keeps its step count on the device: eager steps match Adam, 10 replays match 10 eager steps; plain Adam refuses capture', async () => {
    for (const d of devices) {
      const X = torch.randn([16, 8], { device: d }), Y = torch.randint(0, 4, [16], { device: d });
      const lossFn = new nn.CrossEntropyLoss();
      const step = (m: torch.nn.Module, o: torch.optim.Optimizer) => {
        o.zeroGrad();
        const l = torch.tidy(() => lossFn.call(m.call(X), Y));
        l.backward();
        o.step();
        l.dispose();
      };
      const a = mlp(d), oa = new optim.Adam(a.parameters(), { lr: 0.01 });
      for (let i = 0; i < 13; i++) step(a, oa);
      const b = mlp(d), ob = new optim.Adam(b.parameters(), { lr: 0.01, capturable: true });
      for (let i = 0; i < 3; i++) step(b, ob);
      const stepT = ob.state.get([...b.parameters()][0])!.step as torch.Tensor;
      expect(stepT).toBeInstanceOf(torch.Tensor);
      expect(String(stepT.device)).toBe(d);
      ob.zeroGrad();
      const g = newGraph(d);
      let loss: torch.Tensor | null = null;
      await capture(d, g, () => {
        loss = torch.tidy(() => lossFn.call(b.call(X), Y));
        loss.backward();
        ob.step();
      });
      for (let i = 0; i < 10; i++) g.replay();
      expect(await stepT.item()).toBe(13);
      const want = await values(a.parameters()), got = await values(b.parameters());
      got.forEach((v, i) => expect(Math.abs(v - want[i]), `${d} parameter element ${i}`).toBeLessThanOrEqual(1e-4 * (1 + Math.abs(want[i]))));
      g.reset();
      loss!.dispose();
      // plain Adam keeps its step on the host: capture refuses it, as PyTorch does
      const c = mlp(d), oc = new optim.Adam(c.parameters(), { lr: 0.01 });
      step(c, oc);
      oc.zeroGrad();
      let l2: torch.Tensor | null = null;
      await expect(capture(d, g, () => {
        l2 = torch.tidy(() => lossFn.call(c.call(X), Y));
        l2.backward();
        oc.step();
      })).rejects.toThrow("Attempting CUDA graph capture of step() for an instance of Adam but param_groups' capturable is False.");
      l2!.dispose();
      free(a, oa);
      free(b, ob);
      free(c, oc);
      X.dispose();
      Y.dispose();
    }
  });
});

describe('fusion at capture end', () => {
  /** Captures a chain of 8 elementwise ops (fuse on or off); returns its output, what it keeps, the dispatches. */
  async function chain(d: string, fuse: boolean, keep: boolean) {
    const x = torch.linspace(-2, 2, 1000, { device: d }), w = torch.full([1000], 0.5, { device: d });
    const g = newGraph(d);
    let out: torch.Tensor | null = null, kept: torch.Tensor | null = null;
    await capture(d, g, () => {
      const steps = [(a: torch.Tensor) => a.mul(2), (a: torch.Tensor) => a.add(w), (a: torch.Tensor) => a.relu(), (a: torch.Tensor) => a.sub(0.25),
        (a: torch.Tensor) => a.exp(), (a: torch.Tensor) => a.mul(a), (a: torch.Tensor) => a.div(3), (a: torch.Tensor) => a.tanh()];
      let t = x;
      steps.forEach((f, i) => {
        const next = f(t);
        if (t !== x && t !== kept) t.dispose();
        if (keep && i === 3) kept = next; // alive at capture end: written out, so the chain is cut after it
        t = next;
      });
      out = t;
    }, { fuse });
    const dispatches = await g.dispatchCount();
    g.replay();
    const result = { out: Array.from(await out!.data()), kept: kept ? Array.from(await (kept as torch.Tensor).data()) : null, dispatches };
    g.reset();
    for (const t of [x, w, out!, kept]) t?.dispose();
    return result;
  }

  it('a chain of elementwise ops replays as one generated kernel on a GPU, with eager\'s results; {fuse: false} replays every op', async () => {
    for (const d of devices) {
      const fused = await chain(d, true, false), plain = await chain(d, false, false);
      expect(plain.dispatches).toBe(8);
      expect(fused.dispatches, d).toBe(d === 'cpu' ? 8 : 1); // the cpu replays its commands (no fusion there yet)
      const x = torch.linspace(-2, 2, 1000, { device: d });
      const e = torch.tidy(() => x.mul(2).add(0.5).relu().sub(0.25).exp().square().div(3).tanh());
      const eager = await e.data();
      e.dispose();
      fused.out.forEach((v, i) => expect(Math.abs(v - eager[i]), `${d} element ${i}`).toBeLessThanOrEqual(1e-6 * (1 + Math.abs(eager[i]))));
      expect(plain.out).toEqual(Array.from(eager));
      x.dispose();
    }
  });

  it('an intermediate alive at capture end is written out: the chain is cut there', async () => {
    for (const d of devices.filter((x) => x !== 'cpu')) {
      const r = await chain(d, true, true), plain = await chain(d, false, true);
      expect(r.dispatches).toBe(2);
      r.kept!.forEach((v, i) => expect(v).toBeCloseTo(plain.kept![i], 6));
      r.out.forEach((v, i) => expect(v).toBeCloseTo(plain.out[i], 6));
    }
  });

  it('the chain of 1,000 adds replays in 16 dispatches; a fused MLP training step matches the unfused one', async () => {
    for (const d of devices.filter((x) => x !== 'cpu')) {
      const X = torch.ones([4], { device: d }), g = newGraph(d);
      let y: torch.Tensor | null = null;
      await capture(d, g, () => {
        let t = X;
        for (let i = 0; i < 1000; i++) {
          const next = t.add(X);
          if (t !== X) t.dispose();
          t = next;
        }
        y = t;
      });
      expect(await g.info()).toEqual({ commands: 1000, dispatches: 16 });
      g.replay();
      g.replay();
      expect(await y!.tolist()).toEqual([1001, 1001, 1001, 1001]);
      g.reset();
      y!.dispose();
      X.dispose();
      // a training step, fused and not
      const Xb = torch.randn([32, 8], { device: d }), Yb = torch.randint(0, 4, [32], { device: d });
      const lossFn = new nn.CrossEntropyLoss();
      const trained = async (fuse: boolean) => {
        const m = mlp(d), o = new optim.SGD(m.parameters(), { lr: 0.1, momentum: 0.9 });
        for (let i = 0; i < 2; i++) {
          o.zeroGrad();
          const l = torch.tidy(() => lossFn.call(m.call(Xb), Yb));
          l.backward();
          o.step();
          l.dispose();
        }
        o.zeroGrad();
        const gr = newGraph(d);
        let loss: torch.Tensor | null = null;
        await capture(d, gr, () => {
          loss = torch.tidy(() => lossFn.call(m.call(Xb), Yb));
          loss.backward();
          o.step();
        }, { fuse });
        const info = await gr.info();
        for (let i = 0; i < 10; i++) gr.replay();
        const v = await values(m.parameters());
        gr.reset();
        loss!.dispose();
        free(m, o);
        return { v, info };
      };
      const a = await trained(true), b = await trained(false);
      expect(a.info.dispatches).toBeLessThan(b.info.dispatches);
      a.v.forEach((v, i) => expect(Math.abs(v - b.v[i]), `${d} parameter element ${i}`).toBeLessThanOrEqual(1e-5 * (1 + Math.abs(b.v[i]))));
      Xb.dispose();
      Yb.dispose();
    }
  });
});

describe('the private memory pool', () => {
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

describe('makeGraphedCallables', () => {
  /** The digits (data/digits.u8, as the demo and amp.test.ts load them): train and test sets on `d`. */
  function digits(d: string) {
    const raw = readFileSync(new URL('../../data/digits.u8', import.meta.url));
    const n = raw.length / 65, nTest = 360;
    const order = [...Array(n).keys()];
    let seed = 1234;
    for (let i = n - 1; i > 0; i--) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const j = seed % (i + 1);
      [order[i], order[j]] = [order[j], order[i]];
    }
    const px = new Float32Array(n * 64), lab: number[] = [];
    order.forEach((src, i) => {
      for (let j = 0; j < 64; j++) px[i * 64 + j] = raw[src * 65 + j] / 16;
      lab.push(raw[src * 65 + 64]);
    });
    const X = torch.tidy(() => torch.tensor(px, { device: d }).reshape(n, 64)), Y = torch.tensor(Int32Array.from(lab), { dtype: 'int64', device: d });
    return { n, nTest, X, Y };
  }

  it('forward and backward as two graphs train the digits model to the demo\'s accuracy, inside an eager loop', async () => {
    for (const d of devices) {
      const { n, nTest, X, Y } = digits(d);
      torch.manualSeed(0);
      const model = new nn.Sequential(new nn.Linear(64, 128), new nn.ReLU(), new nn.Linear(128, 64), new nn.ReLU(), new nn.Linear(64, 10)).to(d);
      const opt = new optim.SGD(model.parameters(), { lr: 0.05, momentum: 0.9 });
      const bs = 64, m = n - nTest;
      const sample = torch.zeros([bs, 64], { device: d });
      const graphed = await torch.gpu.makeGraphedCallables(model, [sample]) as torch.nn.Sequential;
      expect(graphed).toBe(model);
      const losses: number[] = [];
      for (let epoch = 0; epoch < 10; epoch++) {
        for (let i = 0; i + bs <= m; i += bs) {
          const [xb, yb] = [X.narrow(0, nTest + i, bs), Y.narrow(0, nTest + i, bs)];
          opt.zeroGrad();
          const loss = torch.tidy(() => torch.nn.functional.crossEntropy(graphed.call(xb), yb));
          loss.backward();
          opt.step();
          if (i === 0) losses.push(Number(await loss.item()));
          for (const t of [xb, yb, loss]) t.dispose();
        }
      }
      // eval mode runs the module's own forward (captured in training mode), as PyTorch's
      model.eval();
      const correct = torch.noGrad(() => torch.tidy(() => model.call(X.narrow(0, 0, nTest)).argmax(1).eq(Y.narrow(0, 0, nTest)).sum()));
      const acc = Number(await correct.item()) / nTest;
      expect(acc, `${d} accuracy`).toBeGreaterThan(0.9);
      expect(losses[9]).toBeLessThan(losses[0] / 4);
      const [fwd, bwd] = (model as unknown as { graphed: { graphs: torch.gpu.Graph[] } }).graphed.graphs;
      expect((await fwd.info()).commands).toBeGreaterThan(0);
      expect((await bwd.info()).commands).toBeGreaterThan(0);
      (model as unknown as { graphed: { reset(): void } }).graphed.reset();
      correct.dispose();
      free(model, opt);
      for (const t of [X, Y, sample]) t.dispose();
    }
  }, 300_000);

  it('a graphed function gives the eager function\'s outputs and input gradients', async () => {
    for (const d of devices) {
      const w = torch.randn([5, 3], { device: d });
      const fn = (x: torch.Tensor) => torch.tidy(() => x.matmul(w).tanh());
      const sample = torch.randn([4, 5], { device: d }).requiresGrad_();
      const graphed = await torch.gpu.makeGraphedCallables(fn, [sample]) as ((x: torch.Tensor) => torch.Tensor) & { reset(): void };
      const x = torch.randn([4, 5], { device: d }).requiresGrad_();
      const y = graphed(x);
      const loss = torch.tidy(() => y.square().sum());
      loss.backward();
      const gGraphed = await x.grad!.data();
      const yGraphed = await y.data();
      x.grad!.dispose();
      x.grad = null;
      const y2 = fn(x);
      const loss2 = torch.tidy(() => y2.square().sum());
      loss2.backward();
      const gEager = await x.grad!.data(), yEager = await y2.data();
      yGraphed.forEach((v, i) => expect(v).toBeCloseTo(yEager[i], 5));
      gGraphed.forEach((v, i) => expect(v).toBeCloseTo(gEager[i], 5));
      graphed.reset();
      for (const t of [w, sample, x, x.grad!, y, y2, loss, loss2]) t.dispose();
    }
  });
});
