/** `model(x)` is `model.forward(x)`, as in PyTorch, without breaking instanceof, subclassing or stateDict. */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const { nn } = torch;
const devices = suiteDevices();

/** A subclass with fields named as a function object's own read-only properties. */
class Named extends nn.Module {
  name = 'scaler';
  length = 3;
  scale: torch.Tensor;
  constructor() {
    super();
    const init = torch.full([1], 2, { dtype: 'float32' });
    this.scale = torch.nn.Parameter.of(init);
    init.dispose();
  }
  forward(x: torch.Tensor): torch.Tensor {
    return x.mul(this.scale).add(this.length);
  }
}

describe('callable modules', () => {
  it('model(x) equals model.forward(x), on every device', async () => {
    for (const device of devices.slice(0, 2)) {
      torch.manualSeed(0);
      const lin = new nn.Linear(3, 2).to(device);
      const x = torch.randn([4, 3], { device });
      const a = lin(x);
      const b = lin.forward(x);
      expect(await a.tolist()).toEqual(await b.tolist());
      expect(lin).toBeInstanceOf(nn.Linear);
      expect(lin).toBeInstanceOf(nn.Module);
      expect(typeof lin).toBe('function');
      for (const t of [a, b, x, ...lin.parameters()]) t.dispose();
    }
  });

  it('subclass fields named name and length, and Sequential of callables', async () => {
    for (const device of devices.slice(0, 2)) {
      const m = new Named().to(device);
      expect(m.name).toBe('scaler');
      expect(m.length).toBe(3);
      expect(m).toBeInstanceOf(Named);
      expect(Object.keys(m.stateDict())).toEqual(['scale']);
      const x = torch.tensor([1, 2], { device, dtype: 'float32' });
      const y = torch.tidy(() => m(x));
      expect(await y.tolist()).toEqual([5, 7]);

      const seq = new nn.Sequential(new Named(), new nn.ReLU(), new Named()).to(device);
      expect(seq.length).toBe(3);
      expect(seq.at(1)).toBeInstanceOf(nn.ReLU);
      expect(Object.keys(seq.stateDict())).toEqual(['0.scale', '2.scale']);
      const [z, w] = torch.tidy(() => [seq(x), seq.at(0)(x)]);
      expect(await z.tolist()).toEqual([13, 17]);
      expect(await w.tolist()).toEqual([5, 7]);
      for (const t of [x, y, z, w, ...m.parameters(), ...seq.parameters()]) t.dispose();
    }
  });

  it('module(x) trains: gradients reach the parameters', async () => {
    // torch.tidy keeps a returned module's parameters (a module is a function object now).
    const lin = torch.tidy(() => new nn.Linear(2, 1));
    torch.tidy(() => lin(torch.ones([1, 2])).sum().backward());
    expect(lin.weight.grad).not.toBeNull();
    expect(await lin.weight.grad!.tolist()).toEqual([[1, 1]]);
    for (const p of lin.parameters()) {
      p.grad?.dispose();
      p.dispose();
    }
  });
});

describe('module printing', () => {
  it('console.log(model) shows the class and submodules as PyTorch does, not a function', async () => {
    const { inspect } = await import('node:util');
    const seq = new nn.Sequential(new nn.ReLU(), new nn.Sequential(new nn.Tanh()));
    const want = 'Sequential(\n  (0): ReLU()\n  (1): Sequential(\n    (0): Tanh()\n  )\n)';
    expect(String(seq)).toBe(want);
    expect(inspect(seq)).toBe(want);
  });
});
