/**
 * The training loop of the PyTorch GPU notes on every device: modules and their state,
 * optimizers against PyTorch's updates, the data loader, model parallelism across two GPU
 * devices, the notes' common mistakes, and training-loop misuse.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const { nn, optim } = torch;
const goldens = JSON.parse(readFileSync(new URL('../fixtures/goldens-optim.json', import.meta.url), 'utf8'));
const devices = suiteDevices();

/** A module with a parameter, a registered buffer and a plain tensor field. */
class WithBuffer extends nn.Module {
  fc = new nn.Linear(3, 2);
  plain = torch.zeros([2]);
  constructor() {
    super();
    this.registerBuffer('stats', torch.ones([2]));
  }
  forward(x: torch.Tensor) {
    return this.fc.call(x);
  }
}

const close = (a: number[], b: number[], tol = 1e-5) => a.forEach((v, i) => expect(Math.abs(v - b[i]), `[${i}] ${v} vs ${b[i]}`).toBeLessThanOrEqual(tol * (1 + Math.abs(b[i]))));

describe('modules', () => {
  it('finds parameters, buffers and children; registered buffers move with .to(), plain fields do not', async () => {
    for (const d of devices) {
      const m = new WithBuffer();
      expect([...m.namedParameters()].map(([k]) => k)).toEqual(['fc.weight', 'fc.bias']);
      // PyTorch's order: a module's own parameters and buffers, then its children's.
      expect([...m.namedBuffers()].map(([k]) => k)).toEqual(['stats']);
      expect(Object.keys(m.stateDict())).toEqual(['stats', 'fc.weight', 'fc.bias']);
      const w = m.fc.weight;
      m.to(d);
      expect(m.fc.weight).toBe(w);                          // moved in place: the same object
      expect(String(w.device)).toBe(d);
      expect(String((m as unknown as { stats: torch.Tensor }).stats.device)).toBe(d);
      expect(String(m.plain.device)).toBe('cpu');           // a plain tensor field stays where it was
      expect(w.requiresGrad).toBe(true);
      m.eval();
      expect([...m.modules()].every((x) => !x.training)).toBe(true);
      m.train();
      [...m.parameters(), ...m.buffers(), m.plain].forEach((t) => t.dispose());
    }
  });

  it('loadStateDict copies values and rejects missing or unexpected keys like PyTorch', async () => {
    const a = new nn.Linear(2, 2), b = new nn.Linear(2, 2);
    b.loadStateDict(a.stateDict());
    expect(await b.weight.tolist()).toEqual(await a.weight.tolist());
    const sd = a.stateDict();
    const { bias, ...missing } = sd;
    expect(() => b.loadStateDict(missing)).toThrow('Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "bias".');
    const extra = torch.zeros([1]);
    expect(() => b.loadStateDict({ ...sd, extra })).toThrow('Unexpected key(s) in state_dict: "extra".');
    expect(b.loadStateDict({ ...sd, extra }, false).unexpectedKeys).toEqual(['extra']);
    void bias;
    [...a.parameters(), ...b.parameters(), extra].forEach((t) => t.dispose());
  });
});

describe('optimizers match PyTorch', () => {
  const OPT: Record<string, new (p: torch.Tensor[], o: any) => torch.optim.Optimizer> = {
    SGD: optim.SGD, Adam: optim.Adam, AdamW: optim.AdamW, RMSprop: optim.RMSprop,
  };
  // SGD and Adam(W) each way: their fused step (the default) and the per-parameter loop (foreach: false)
  const ways = (c: any) => (c.optimizer === 'RMSprop' ? [{}] : [{}, { foreach: false }]);
  it.each(goldens.cases.map((c: any) => [c.id, c]))('%s', async (_id, c: any) => {
    for (const d of devices) for (const way of ways(c)) {
      const p = torch.tidy(() => torch.tensor(goldens.p0, { device: d }).reshape(3, 4)).requiresGrad_();
      const opt = new OPT[c.optimizer]([p], { ...c.options, ...way });
      for (let k = 0; k < goldens.grads.length; k++) {
        p.grad?.dispose();
        p.grad = torch.tidy(() => torch.tensor(goldens.grads[k], { device: d }).reshape(3, 4));
        opt.step();
        close((await p.values()) as number[], c.steps[k], 1e-5);
      }
      const sd = opt.stateDict();
      expect(sd.param_groups[0].params).toEqual([0]);
      opt.zeroGrad();
      expect(p.grad).toBeNull();
      for (const s of opt.state.values()) for (const v of Object.values(s)) if (typeof v === 'object') v.dispose();
      p.dispose();
    }
  });

  it('schedulers set the learning rates PyTorch sets', () => {
    for (const s of goldens.schedulers) {
      const p = torch.zeros([1]).requiresGrad_();
      const opt = new optim.SGD([p], { lr: 0.1 });
      const sched = s.id === 'StepLR' ? new optim.lrScheduler.StepLR(opt, 2, 0.5) : new optim.lrScheduler.CosineAnnealingLR(opt, 5, 0.01);
      const lrs: number[] = [];
      for (let i = 0; i < 6; i++) {
        sched.step();
        lrs.push(sched.getLastLr()[0]);
      }
      close(lrs, s.lrs, 1e-9);
      p.dispose();
    }
  });
});

describe('the data loader', () => {
  it('batches, shuffles with a seeded generator, drops the last batch, and prefetches', async () => {
    const X = torch.tidy(() => torch.arange(10, undefined, 1, { dtype: 'float32' }).reshape(10, 1)), y = torch.arange(10);
    const ds = new torch.TensorDataset(X, y);
    const plain = new torch.DataLoader(ds, { batchSize: 4 });
    expect(plain.length).toBe(3);
    const sizes: number[] = [];
    for (const [xb, yb] of plain) {
      sizes.push(xb.shape[0]);
      expect(yb.dtype).toBe('int64');
      xb.dispose();
      yb.dispose();
    }
    expect(sizes).toEqual([4, 4, 2]);
    const seen: number[] = [];
    const g = new torch.Generator().manualSeed(7);
    const shuffled = new torch.DataLoader(ds, { batchSize: 3, shuffle: true, dropLast: true, numWorkers: 2, generator: g });
    expect(shuffled.length).toBe(3);
    for (const [xb, yb] of shuffled) {
      const xs = (await xb.values()) as number[], ys = (await yb.values()) as number[];
      expect(xs).toEqual(ys);                              // rows stay paired
      seen.push(...ys);
      xb.dispose();
      yb.dispose();
    }
    expect(seen.length).toBe(9);
    expect(new Set(seen).size).toBe(9);
    expect(seen).not.toEqual([...seen].sort((a, b) => a - b));
    X.dispose();
    y.dispose();
  });

  it('rejects a dataset of mismatched lengths and bad options', () => {
    const a = torch.zeros([5, 2]), b = torch.zeros([4]);
    expect(() => new torch.TensorDataset(a, b)).toThrow('Size mismatch between tensors');
    const ds = new torch.TensorDataset(a);
    expect(() => new torch.DataLoader(ds, { batchSize: 0 })).toThrow('batch_size should be a positive integer value');
    a.dispose();
    b.dispose();
  });
});

/** A two-layer classifier, optionally split across two devices (model parallelism). */
class Net extends nn.Module {
  fc1: torch.nn.Linear;
  fc2: torch.nn.Linear;
  constructor(readonly d1: string, readonly d2: string) {
    super();
    torch.manualSeed(3);
    this.fc1 = new nn.Linear(4, 8).to(d1);
    this.fc2 = new nn.Linear(8, 3).to(d2);
  }
  forward(x: torch.Tensor) {
    return torch.tidy(() => this.fc2.call(torch.relu(this.fc1.call(x.to(this.d1))).to(this.d2)));
  }
}

/** Trains a Net for a few steps with MSE-like loss on fixed data; returns the losses and final weights. */
async function train(d1: string, d2: string): Promise<{ losses: number[]; w: number[] }> {
  const net = new Net(d1, d2);
  const opt = new optim.SGD(net.parameters(), { lr: 0.1, momentum: 0.9 });
  torch.manualSeed(11);
  const X = torch.randn([16, 4]), T = torch.randn([16, 3]);
  const losses: number[] = [];
  for (let step = 0; step < 5; step++) {
    const loss = torch.tidy(() => {
      const out = net.call(X);
      return out.sub(T.to(d2)).square().mean();
    });
    opt.zeroGrad();
    loss.backward();
    opt.step();
    losses.push((await loss.item()) as number);
    loss.dispose();
  }
  const w = (await net.fc1.weight.values()) as number[];
  opt.zeroGrad();
  for (const s of opt.state.values()) for (const v of Object.values(s)) if (typeof v === 'object') v.dispose();
  [...net.parameters(), X, T].forEach((t) => t.dispose());
  return { losses, w };
}

describe('model parallelism and the notes’ common mistakes', () => {
  it('trains sub-networks on gpu:0 and gpu:1 to the same result as on one device', async () => {
    const pair = devices.length > 2 ? ['gpu:0', 'gpu:1'] : ['cpu', 'cpu'];
    const split = await train(pair[0], pair[1]);
    const single = await train('cpu', 'cpu');
    close(split.losses, single.losses, 1e-4);
    close(split.w, single.w, 1e-4);
    expect(split.losses[4]).toBeLessThan(split.losses[0]);
  });

  it('a tensor forgotten on the CPU gets the device-mismatch error naming both devices', () => {
    const gpu = devices.find((d) => d !== 'cpu');
    if (!gpu) return;
    const m = new nn.Linear(3, 2).to(gpu);
    const x = torch.ones([1, 3]);
    expect(() => m.call(x)).toThrow(`Expected all tensors to be on the same device, but found at least two devices, cpu and ${gpu}!`);
    [...m.parameters(), x].forEach((t) => t.dispose());
  });

  it('zeros created mid-forward with {device: x.device} follow the input', () => {
    for (const d of devices) {
      const r = torch.tidy(() => {
        const x = torch.ones([2, 2], { device: d });
        const h = torch.zeros(x.shape.slice(), { device: x.device });
        return String(x.add(h).device);
      });
      expect(r).toBe(d);
    }
  });

  it('an optimizer built before .to() keeps working; its state follows the parameters', async () => {
    for (const d of devices) {
      const m = new nn.Linear(2, 1);
      const opt = new optim.SGD(m.parameters(), { lr: 0.5, momentum: 0.9 });
      const x = torch.ones([4, 2]);
      const step = () => {
        const loss = torch.tidy(() => m.call(x.to(m.weight.device)).square().mean());
        opt.zeroGrad();
        loss.backward();
        opt.step();
        loss.dispose();
      };
      step();                                                // state created on cpu
      m.to(d);                                               // parameters move in place
      const before = (await m.weight.values()) as number[];
      step();
      expect(String(m.weight.device)).toBe(d);
      const buf = opt.state.get(m.weight)!.momentumBuffer as torch.Tensor;
      expect(String(buf.device)).toBe(d);
      expect(await m.weight.values()).not.toEqual(before);
      opt.zeroGrad();
      for (const s of opt.state.values()) for (const v of Object.values(s)) if (typeof v === 'object') v.dispose();
      [...m.parameters(), x].forEach((t) => t.dispose());
    }
  });
});

describe('training-loop misuse gets a clear error', () => {
  it('backward twice, and backward on a non-scalar without a gradient', () => {
    const x = torch.ones([3]).requiresGrad_();
    const y = torch.tidy(() => x.mul(2).sum());
    y.backward();
    expect(() => y.backward()).toThrow('Trying to backward through the graph a second time');
    const z = x.mul(2);
    expect(() => z.backward()).toThrow('grad can be implicitly created only for scalar outputs');
    const r = torch.tidy(() => x.mul(3).sum());
    r.backward(undefined, { retainGraph: true });
    r.backward();
    [x, y, z, r, x.grad!].forEach((t) => t.dispose());
  });
});

describe('layers', () => {
  it('a small CNN (Conv2d, BatchNorm2d, MaxPool2d, Dropout, Linear) trains on every device; BatchNorm buffers move and update', async () => {
    for (const d of devices) {
      torch.manualSeed(5);
      const net = new nn.Sequential(
        new nn.Conv2d(1, 4, 3, { padding: 1 }), new nn.BatchNorm2d(4), new nn.ReLU(), new nn.MaxPool2d(2),
        new nn.Flatten(), new nn.Dropout(0.1), new nn.Linear(4 * 4 * 4, 3),
      ).to(d);
      const bn = net.at(1) as unknown as { running_mean: torch.Tensor };
      expect(String(bn.running_mean.device)).toBe(d);
      const opt = new optim.Adam(net.parameters(), { lr: 0.01 });
      const lossFn = new nn.CrossEntropyLoss();
      const X = torch.randn([8, 1, 8, 8], { device: d }), y = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1], { device: d });
      const losses: number[] = [];
      for (let i = 0; i < 8; i++) {
        const loss = torch.tidy(() => lossFn.call(net.call(X), y));
        opt.zeroGrad();
        loss.backward();
        opt.step();
        losses.push((await loss.item()) as number);
        loss.dispose();
      }
      expect(losses[7]).toBeLessThan(losses[0]);
      expect((await bn.running_mean.values()).some((v) => v !== 0)).toBe(true);
      expect(await (bn as unknown as { num_batches_tracked: torch.Tensor }).num_batches_tracked.item()).toBe(8);
      net.eval();
      const out = torch.noGrad(() => net.call(X));
      expect(out.shape).toEqual([8, 3]);
      out.dispose();
      opt.zeroGrad();
      for (const s of opt.state.values()) for (const v of Object.values(s)) if (typeof v === 'object') v.dispose();
      [...net.parameters(), ...net.buffers(), X, y].forEach((t) => t.dispose());
    }
  });

  it('a whole step inside torch.tidy (forward, backward, opt.step()) keeps the optimizer\'s state, and matches a tidy around the forward only', async () => {
    for (const d of devices) {
      const run = async (wrapped: boolean) => {
        torch.manualSeed(9);
        const net = new nn.Sequential(new nn.Linear(6, 8), new nn.ReLU(), new nn.Linear(8, 2)).to(d);
        const opt = new optim.Adam(net.parameters(), { lr: 0.05 });
        const X = torch.randn([16, 6], { device: d }), Y = torch.randn([16, 2], { device: d });
        const losses: number[] = [];
        for (let i = 0; i < 4; i++) {
          const forward = () => torch.nn.functional.mseLoss(net.call(X), Y);
          const step = (lossOf: () => torch.Tensor) => {
            opt.zeroGrad();
            const loss = lossOf();
            loss.backward();
            opt.step();
            return loss;
          };
          // The whole step in one tidy, or (the suite's usual form) a tidy around the forward only.
          const loss = wrapped ? torch.tidy(() => step(forward)) : step(() => torch.tidy(forward));
          losses.push((await loss.item()) as number);
          loss.dispose();
        }
        // Adam's moments, made inside the tidy of the first step, are alive and used by the later ones.
        const states = [...opt.state.values()];
        const avg = states[0].expAvg as torch.Tensor;
        expect(avg.isDisposed).toBe(false);
        const params = await Promise.all(net.parameters().map((p) => p.values()));
        opt.zeroGrad();
        for (const s of states) for (const v of Object.values(s)) if (typeof v === 'object') v.dispose();
        [...net.parameters(), X, Y].forEach((t) => t.dispose());
        return { losses, params };
      };
      const plain = await run(false), tidied = await run(true);
      expect(tidied.losses[3]).toBeLessThan(tidied.losses[0]);
      expect(tidied).toEqual(plain);
    }
  });

  it('Embedding, LayerNorm, Conv1d, AdaptiveAvgPool2d and the activations give the expected shapes and gradients', async () => {
    for (const d of devices) {
      const emb = new nn.Embedding(10, 4).to(d), ln = new nn.LayerNorm(4).to(d), c1 = new nn.Conv1d(4, 2, 3).to(d);
      const shapes = torch.tidy(() => {
        const idx = torch.tensor([[1, 2, 3, 4, 5]], { device: d });
        const h = ln.call(emb.call(idx));                                 // [1, 5, 4]
        const c = c1.call(h.transpose(1, 2));                             // [1, 2, 3]
        const p = new nn.AdaptiveAvgPool2d(1).call(c.unsqueeze(0));       // [1, 1, 1, 1]
        const a = new nn.GELU().call(new nn.SiLU().call(new nn.Tanh().call(new nn.Sigmoid().call(p))));
        a.sum().backward();
        return [h.shape, c.shape, p.shape];
      });
      expect(shapes).toEqual([[1, 5, 4], [1, 2, 3], [1, 1, 1, 1]]);
      expect(emb.weight.grad!.shape).toEqual([10, 4]);
      const sums = emb.weight.grad!.sum(1);
      const rowGrads = (await sums.values()) as number[];
      sums.dispose();
      expect(rowGrads[0]).toBe(0);                                          // row 0 was not looked up
      [...emb.parameters(), ...ln.parameters(), ...c1.parameters()].forEach((p) => {
        p.grad?.dispose();
        p.dispose();
      });
    }
  });
});
