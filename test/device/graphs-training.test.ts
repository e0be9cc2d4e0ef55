/**
 * Graphs in training (ts/runtime/graphs.ts, graphed.ts, gpu/fuse.ts): capturable optimizers
 * (`Adam({capturable: true})`), fusion at capture end (dispatch counts with and without, results
 * against eager), and `makeGraphedCallables` training the digits model, on cpu, gpu:0 and gpu:1.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';
import { batchOn, capture, free, mlp, newGraph, values } from './graphs-helpers.js';

const { nn, optim } = torch;
const devices = suiteDevices();

describe('capturable optimizers', () => {
  it.each([['fused', {}], ['per-parameter', { foreach: false }]])('%s Adam({capturable: true}) keeps a float32 step count on the device: eager steps match Adam, 10 replays of a captured whole step match 10 eager steps; plain Adam refuses capture', async (way, opts) => {
    for (const d of devices) {
      const batch = batchOn(d), { step, loss: lossOf } = batch;
      const a = mlp(d), oa = new optim.Adam(a.parameters(), { lr: 0.01 });
      for (let i = 0; i < 13; i++) step(a, oa);
      const b = mlp(d), ob = new optim.Adam(b.parameters(), { lr: 0.01, capturable: true, ...opts });
      for (let i = 0; i < 3; i++) step(b, ob);
      const stepT = ob.state.get([...b.parameters()][0])!.step as torch.Tensor;
      expect(stepT).toBeInstanceOf(torch.Tensor);
      expect([stepT.dtype, String(stepT.device), stepT.shape.length]).toEqual(['float32', d, 0]);
      ob.zeroGrad();
      const g = newGraph(d);
      let loss: torch.Tensor | null = null;
      await capture(d, g, () => {
        loss = lossOf(b);
        loss.backward();
        ob.step();
      }, { fuse: false });
      // the fused step is one command in the graph; the per-parameter loop's is about ten per parameter
      const { commands } = await g.info();
      if (way === 'fused') expect(commands).toBeLessThan(60);
      else expect(commands).toBeGreaterThan(60);
      for (let i = 0; i < 10; i++) g.replay();
      expect(await stepT.item()).toBe(13);
      const want = await values(a.parameters()), got = await values(b.parameters());
      got.forEach((v, i) => expect(Math.abs(v - want[i]), `${d} parameter element ${i}`).toBeLessThanOrEqual(1e-4 * (1 + Math.abs(want[i]))));
      g.reset();
      loss!.dispose();
      // plain Adam keeps its step on the host: capture refuses it, as PyTorch does
      const c = mlp(d), oc = new optim.Adam(c.parameters(), { lr: 0.01, ...opts });
      step(c, oc);
      oc.zeroGrad();
      let l2: torch.Tensor | null = null;
      await expect(capture(d, g, () => {
        l2 = lossOf(c);
        l2.backward();
        oc.step();
      })).rejects.toThrow("Attempting CUDA graph capture of step() for an instance of Adam but param_groups' capturable is False.");
      l2!.dispose();
      free(a, oa);
      free(b, ob);
      free(c, oc);
      batch.dispose();
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

  it('a chain with a broadcast operand (a bias over rows) and a transposed one fuses, with eager\'s results', async () => {
    for (const d of devices.filter((x) => x !== 'cpu')) {
      const x = torch.randn([6, 5], { device: d }), b = torch.randn([5], { device: d }), m = torch.randn([5, 6], { device: d });
      const g = newGraph(d);
      let out: torch.Tensor | null = null;
      await capture(d, g, () => {
        out = torch.tidy(() => x.add(b).relu().mul(m.T).sub(b));
      });
      expect(await g.dispatchCount()).toBe(1);
      g.replay();
      const e = torch.tidy(() => x.add(b).relu().mul(m.T).sub(b));
      const [got, want] = [await out!.data(), await e.data()];
      got.forEach((v, i) => expect(v).toBeCloseTo(want[i], 6));
      g.reset();
      for (const t of [x, b, m, out!, e]) t.dispose();
    }
  });

  it('a training step\'s bias add and ReLU fuse though the backward reuses their memory in part (rows, losses, sums and products are told by what they read and write): 25 dispatches for the 8-16-10 step, with eager\'s parameters after 5 replays', async () => {
    for (const d of devices.filter((x) => x !== 'cpu')) {
      const X = torch.randn([37, 8], { device: d }), Y = torch.randint(0, 10, [37], { device: d });
      const lossFn = new nn.CrossEntropyLoss();
      const make = () => {
        torch.manualSeed(0);
        const m = new nn.Sequential(new nn.Linear(8, 16), new nn.ReLU(), new nn.Linear(16, 10)).to(d);
        return { m, o: new optim.SGD(m.parameters(), { lr: 0.1 }) };
      };
      const step = ({ m, o }: ReturnType<typeof make>) => {
        o.zeroGrad();
        const l = torch.tidy(() => lossFn.call(m.call(X), Y));
        l.backward();
        o.step();
        l.dispose();
      };
      const eager = make(), graphed = make();
      for (let i = 0; i < 5; i++) step(eager);
      const g = newGraph(d);
      await capture(d, g, () => step(graphed));
      // 29 when a sum over the batch seemed to read to its segment's end, and a partial rewrite of the pre-activation's memory hid that it was dead
      expect(await g.dispatchCount(), d).toBeLessThanOrEqual(25);
      for (let i = 0; i < 5; i++) g.replay();
      const [want, got] = [await values(eager.m.parameters()), await values(graphed.m.parameters())];
      got.forEach((v, i) => expect(v, `${d} parameter element ${i}`).toBeCloseTo(want[i], 5));
      g.reset();
      free(eager.m, eager.o);
      free(graphed.m, graphed.o);
      X.dispose();
      Y.dispose();
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
      // fusion writes each parameter's update straight into the parameter (its copy_ folded):
      // the 4 parameters' copies are gone, besides the chains fused
      expect(a.info.dispatches).toBeLessThanOrEqual(b.info.dispatches - 4);
      a.v.forEach((v, i) => expect(Math.abs(v - b.v[i]), `${d} parameter element ${i}`).toBeLessThanOrEqual(1e-5 * (1 + Math.abs(b.v[i]))));
      Xb.dispose();
      Yb.dispose();
    }
  });

  it('an in-place copy of a fresh result is written straight into its destination, unless an operand reads the destination through another view', async () => {
    for (const d of devices.filter((x) => x !== 'cpu')) {
      const run = async (update: (x: torch.Tensor) => torch.Tensor, fuse: boolean) => {
        const base = torch.arange(0, 16, 1, { dtype: 'float32', device: d }), x = base.reshape([4, 4]), g = newGraph(d);
        await capture(d, g, () => torch.noGrad(() => torch.tidy(() => void x.copy_(update(x)))), { fuse });
        const info = await g.info();
        g.replay();
        g.replay();
        const got = (await base.tolist()) as number[];
        g.reset();
        x.dispose();
        base.dispose();
        return { got, info };
      };
      const start = [...Array(16).keys()];
      // x ← 2x + 1 reads x element for element: folded into one dispatch (unfused: mul, add, copy)
      const own = (x: torch.Tensor) => x.mul(2).add(1);
      const [a, b] = [await run(own, true), await run(own, false)];
      expect(b.got).toEqual(start.map((v) => 4 * v + 3));
      expect(a.got).toEqual(b.got);
      expect([a.info.dispatches, b.info.dispatches]).toEqual([1, 3]);
      // x ← 2·xᵀ: each element reads another's, so the product must go through a block of its own
      const transposed = (x: torch.Tensor) => x.transpose(0, 1).mul(2);
      const [c, e] = [await run(transposed, true), await run(transposed, false)];
      expect(e.got).toEqual(start.map((v) => 4 * v));
      expect(c.got).toEqual(e.got);
      expect([c.info.dispatches, e.info.dispatches]).toEqual([2, 2]);
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
