/**
 * nn.DataParallel over three logical GPU devices on one adapter: the same parameters as one
 * device over 20 SGD steps (2 and 3 devices, batches that do not divide evenly), the loss
 * computed on each device, PyTorch's scatter sizes (fewer devices for a small batch), gather
 * on another device or dim, `.module` and `module.` keys, and PyTorch's errors.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

const { nn, optim } = torch;
const GPUS = 3;
const devices = logicalGpuSuite(GPUS, 'DataParallel tests');

/** The MLP both sides train, built from one seed so that every copy starts equal. */
class MLP extends nn.Module {
  fc1 = new nn.Linear(8, 16);
  act = new nn.ReLU();
  fc2 = new nn.Linear(16, 4);
  forward(x: torch.Tensor): torch.Tensor {
    return torch.tidy(() => this.fc2(this.act(this.fc1(x))));
  }
}

function mlp(device: string): MLP {
  torch.manualSeed(7);
  return new MLP().to(device);
}

const free = (ts: torch.Tensor[]) => ts.forEach((t) => t.dispose());

function closeTo(a: number[], b: number[], tol: number, what: string): void {
  expect(a.length, what).toBe(b.length);
  let worst = 0;
  a.forEach((v, i) => {
    worst = Math.max(worst, Math.abs(v - b[i]) / (1 + Math.abs(b[i])));
  });
  expect(worst, `${what}: largest relative difference`).toBeLessThanOrEqual(tol);
}

/** Trains `net` (called as `call(x)`) for `steps` SGD steps on fixed data; returns the final parameters. */
async function trainSteps(params: torch.Tensor[], call: (x: torch.Tensor, t: torch.Tensor) => torch.Tensor, batch: number, steps = 20): Promise<number[][]> {
  const opt = new optim.SGD(params, { lr: 0.05 });
  torch.manualSeed(11);
  const X = torch.tidy(() => torch.randn([batch, 8]).to('gpu:0')), T = torch.tidy(() => torch.randn([batch, 4]).to('gpu:0'));
  for (let s = 0; s < steps; s++) {
    opt.zeroGrad();
    const loss = torch.tidy(() => call(X, T));
    loss.backward();
    opt.step();
    loss.dispose();
  }
  const out = await Promise.all(params.map(async (p) => (await p.values()) as number[]));
  opt.zeroGrad();
  free([X, T, ...params]);
  return out;
}

const mse = (y: torch.Tensor, t: torch.Tensor) => y.sub(t).square().mean();

describe('DataParallel', () => {
  it.each([
    [[0, 1], 10], [[0, 1, 2], 10], [[0, 1, 2], 12], [[0, 2], 7],
  ])('over gpu %j (batch %i) gives one device\'s parameters after 20 SGD steps', async (ids, batch) => {
    const single = mlp('gpu:0');
    const ref = await trainSteps(single.parameters(), (x, t) => mse(single(x), t), batch);
    const net = mlp('gpu:0');
    const dp = new nn.DataParallel(net, ids);
    // the replicas are made again each forward from net's parameters, which are the ones trained
    const got = await trainSteps(dp.parameters(), (x, t) => mse(dp(x), t), batch);
    got.forEach((p, i) => closeTo(p, ref[i], 1e-4, `parameter ${i}`));
    // and training moved them (a DataParallel that dropped gradients would fail here)
    const start = mlp('gpu:0');
    const p0 = (await start.fc1.weight.values()) as number[];
    expect(Math.max(...p0.map((v, i) => Math.abs(v - got[0][i])))).toBeGreaterThan(1e-3);
    free(start.parameters());
  });

  it('gradients after one backward equal one device\'s, and sit on deviceIds[0]', async () => {
    const single = mlp('gpu:0'), net = mlp('gpu:0');
    torch.manualSeed(5);
    const X = torch.randn([9, 8], { device: 'gpu:0' });
    const l1 = torch.tidy(() => single(X).square().sum());
    l1.backward();
    const dp = new nn.DataParallel(net, { deviceIds: [0, 1, 2] });
    const l2 = torch.tidy(() => dp(X).square().sum());
    l2.backward();
    for (const [a, b] of [[single.fc1.weight, net.fc1.weight], [single.fc2.bias, net.fc2.bias]]) {
      expect(String(b.grad!.device)).toBe('gpu:0');
      closeTo((await b.grad!.values()) as number[], (await a.grad!.values()) as number[], 1e-5, 'grad');
    }
    single.zeroGrad();
    net.zeroGrad();
    free([X, l1, l2, ...single.parameters(), ...net.parameters()]);
  });

  it('the loss computed on each device: a vector of per-device losses, whose mean trains as one device', async () => {
    /** The notes' advice: the wrapped module returns the loss, so it is computed where its chunk is. */
    class WithLoss extends nn.Module {
      constructor(readonly net: MLP) {
        super();
      }
      forward(x: torch.Tensor, t: torch.Tensor): torch.Tensor {
        return torch.tidy(() => mse(this.net(x), t));
      }
    }
    const single = mlp('gpu:0');
    const ref = await trainSteps(single.parameters(), (x, t) => mse(single(x), t), 12);
    const net = mlp('gpu:0');
    const dp = new nn.DataParallel(new WithLoss(net), [0, 1, 2]);
    let shape: number[] = [];
    const warn = console.warn;
    console.warn = () => {};
    try {
      const got = await trainSteps(dp.parameters(), (x, t) => {
        const losses = dp(x, t) as torch.Tensor;   // one loss per device, gathered on gpu:0
        shape = losses.shape;
        return losses.mean();                      // 12 rows in chunks of 4: the mean of means is the mean
      }, 12);
      got.forEach((p, i) => closeTo(p, ref[i], 1e-4, `parameter ${i}`));
    } finally {
      console.warn = warn;
    }
    expect(shape).toEqual([3]);
  });

  it('a batch smaller than the devices uses fewer devices (torch.chunk sizes), as PyTorch', async () => {
    /** Records the device and rows of each replica's input (the array is shared by the replicas). */
    class Probe extends nn.Module {
      seen: string[] = [];
      fc = new nn.Linear(8, 4);
      forward(x: torch.Tensor): torch.Tensor {
        this.seen.push(`${x.device}:${x.shape[0]}`);
        return this.fc(x);
      }
    }
    torch.manualSeed(2);
    const net = new Probe().to('gpu:0');
    const dp = new nn.DataParallel(net, [0, 1, 2]);
    for (const [rows, expected] of [[1, ['gpu:0:1']], [2, ['gpu:0:1', 'gpu:1:1']], [5, ['gpu:0:2', 'gpu:1:2', 'gpu:2:1']], [9, ['gpu:0:3', 'gpu:1:3', 'gpu:2:3']]] as const) {
      net.seen = [];
      const x = torch.randn([rows, 8], { device: 'gpu:0' });
      const y = dp(x) as torch.Tensor;
      const want = net(x);
      expect(net.seen.slice(0, -1)).toEqual(expected);
      expect(y.shape).toEqual([rows, 4]);
      expect(String(y.device)).toBe('gpu:0');
      closeTo((await y.values()) as number[], (await want.values()) as number[], 1e-5, `batch ${rows}`);
      free([x, y, want]);
    }
    free(net.parameters());
  });

  it('outputDevice and dim: gathers on the cpu, scatters along dim 1; inputs may start on the cpu', async () => {
    class Scale extends nn.Module {
      w = torch.tidy(() => nn.Parameter.of(torch.tensor([2.0], { dtype: "float32" })));
      forward(x: torch.Tensor): torch.Tensor {
        return x.mul(this.w);
      }
    }
    const m = new Scale().to('gpu:0');
    const x = torch.tidy(() => torch.arange(12, { dtype: 'float32' }).reshape(2, 6));
    const dp = new nn.DataParallel(m, { deviceIds: ['gpu:0', 'cuda:1', 2], outputDevice: 'cpu', dim: 1 });
    const y = dp(x) as torch.Tensor;
    expect(String(y.device)).toBe('cpu');
    expect(await y.tolist()).toEqual([[0, 2, 4, 6, 8, 10], [12, 14, 16, 18, 20, 22]]);
    expect(dp.outputDevice!.toString()).toBe('cpu');
    free([x, y, ...m.parameters()]);
  });

  it('.module, stateDict keys prefixed module., to(0) moves the wrapped module', async () => {
    torch.manualSeed(1);
    const net = new MLP();
    const dp = new nn.DataParallel(net);
    expect(dp.module).toBe(net);
    expect(dp.deviceIds.map(String)).toEqual(['gpu:0', 'gpu:1', 'gpu:2']); // every GPU device by default
    expect(Object.keys(dp.stateDict())).toEqual(['module.fc1.weight', 'module.fc1.bias', 'module.fc2.weight', 'module.fc2.bias']);
    expect(String(dp)).toContain('DataParallel(\n  (module): MLP(');
    const x = torch.randn([4, 8]);
    expect(() => dp(x)).toThrow('module must have its parameters and buffers on device gpu:0 (deviceIds[0]) but found one of them on device: cpu');
    dp.to(0);
    expect(String(net.fc1.weight.device)).toBe('gpu:0');
    const y = dp(x) as torch.Tensor;
    expect(y.shape).toEqual([4, 4]);
    free([x, y, ...net.parameters()]);
  });

  it('misuse raises with PyTorch\'s messages', async () => {
    torch.manualSeed(1);
    const net = new MLP().to('gpu:1');
    // on gpu:1, but deviceIds[0] is gpu:0
    const dp = new nn.DataParallel(net, [0, 1]);
    const x = torch.randn([4, 8], { device: 'gpu:0' });
    expect(() => dp(x)).toThrow('module must have its parameters and buffers on device gpu:0 (deviceIds[0]) but found one of them on device: gpu:1');
    // the module on deviceIds[0] works with any order of the others
    const y = new nn.DataParallel(net, [1, 0])(x) as torch.Tensor;
    expect(String(y.device)).toBe('gpu:1');
    expect(() => new nn.DataParallel(net, { gpuIds: [0, 1] } as never)).toThrow("DataParallel() got an unexpected keyword argument 'gpuIds'");
    expect(() => new nn.DataParallel(net, ['cpu'])).toThrow('deviceIds must be GPU devices, got cpu');
    expect(() => new nn.DataParallel(net, [0, 0])).toThrow('deviceIds lists gpu:0 more than once');
    expect(() => new nn.DataParallel(net, [0, 5])).toThrow('Invalid device gpu:5');
    expect(() => new nn.DataParallel(net, [])).toThrow('deviceIds is empty');
    expect(() => new nn.DataParallel({} as never)).toThrow('expected module to be an nn.Module');
    free([x, y, ...net.parameters()]);
  });
});
