/** Seed 002, the "GPUs" chapter of Dive into Deep Learning, line by line. */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { GPUS, habitsSetup } from './setup.js';

const { nn } = torch;
habitsSetup();

// def cpu(): return torch.device('cpu')
function cpu() {
  return torch.device('cpu');
}
// def gpu(i=0): return torch.device(f'cuda:{i}')
function gpu(i = 0) {
  return torch.device(`cuda:${i}`);
}
// def num_gpus(): return torch.cuda.device_count()
async function numGpus() {
  return await torch.gpu.deviceCount();
}
// def try_gpu(i=0): if num_gpus() >= i + 1: return gpu(i); return cpu()
async function tryGpu(i = 0) {
  if ((await numGpus()) >= i + 1) return gpu(i);
  return cpu();
}
// def try_all_gpus(): return [gpu(i) for i in range(num_gpus())]
async function tryAllGpus() {
  return Array.from({ length: await numGpus() }, (_, i) => gpu(i));
}

describe('d2l: GPUs', () => {
  it('what hardware do we have', async () => {
    expect([cpu(), gpu(), gpu(1)].map(String)).toEqual(['cpu', 'gpu:0', 'gpu:1']);
    expect(await numGpus()).toBe(GPUS);
    expect(String(await tryGpu())).toBe('gpu:0');
    expect(String(await tryGpu(10))).toBe('cpu');
    expect((await tryAllGpus()).map(String)).toEqual(['gpu:0', 'gpu:1', 'gpu:2', 'gpu:3']);
    // the library's own helpers agree
    expect(String(await torch.tryGpu(10))).toBe('cpu');
    expect((await torch.tryAllGpus()).map(String)).toEqual(['gpu:0', 'gpu:1', 'gpu:2', 'gpu:3']);
  });

  it('tensors carry a device; cross-device math: copy, then operate', async () => {
    const x = torch.tensor([1, 2, 3]);
    expect(String(x.device)).toBe('cpu');
    const X = torch.ones([2, 3], { device: await tryGpu() });
    expect(await X.toStringAsync()).toBe("tensor([[1., 1., 1.],\n        [1., 1., 1.]], device='gpu:0')");
    const Y = torch.rand([2, 3], { device: await tryGpu(1) });
    expect(String(Y.device)).toBe('gpu:1');
    const Z = X.cuda(1);
    expect(await Z.toStringAsync()).toBe("tensor([[1., 1., 1.],\n        [1., 1., 1.]], device='gpu:1')");
    expect(() => Y.add(X)).toThrow('Expected all tensors to be on the same device, but found at least two devices');
    const S = Y.add(Z);
    const [ys, ss] = [await Y.values(), await S.values()];
    expect(ss.map((v, i) => (v as number) - (ys[i] as number))).toEqual(ys.map(() => expect.closeTo(1, 6)));
    expect(Z.cuda(1) === Z).toBe(true);
    for (const t of [x, X, Y, Z, S]) t.dispose();
  });

  it('models on the GPU: net(X) on the device, the weight on the device', async () => {
    const X = torch.ones([2, 3], { device: await tryGpu() });
    let net = new nn.Sequential(new nn.LazyLinear(1));
    net = net.to({ device: await tryGpu() });
    const out = net(X);
    expect(String(out.device)).toBe('gpu:0');
    expect(out.shape).toEqual([2, 1]);
    expect(await out.toStringAsync()).toMatch(/^tensor\(\[\[-?\d\.\d{4}\],\n {8}\[-?\d\.\d{4}\]\], device='gpu:0', grad_fn=<\w+Backward0>\)$/);
    expect(String((net[0] as torch.nn.Linear).weight.device)).toBe('gpu:0');
    for (const t of [X, out, ...net.parameters()]) t.dispose();
  });

  it('where to put the device move: model once, optimizer after, batches at the boundary', async () => {
    const device = await tryGpu(0);
    class MyModel extends nn.Module {
      fc = new nn.Linear(4, 3);
      forward(x: torch.Tensor): torch.Tensor {
        // torch.zeros((10,), device=x.device) follows the input (the common mistake avoided)
        return this.fc(x).add(torch.zeros([3], { device: x.device }));
      }
    }
    torch.manualSeed(0);
    const model = new MyModel().to(device);
    const opt = new torch.optim.SGD(model.parameters(), { lr: 0.1 });
    const data = new torch.data.TensorDataset(...torch.tidy(() => [torch.randn([16, 4]), torch.arange(16).remainder(3) /* torch.randint: pending-args */]));
    const loader = new torch.data.DataLoader(data, { batchSize: 4 });
    let first = 0;
    let last = 0;
    for (let epoch = 0; epoch < 5; epoch++) {
      for (const batch of loader) {
        const [X, y] = [batch[0].to(device), batch[1].to(device)];
        const loss = torch.tidy(() => {
          const l = torch.F.crossEntropy(model(X), y);
          opt.zeroGrad();
          l.backward();
          opt.step();
          return l;
        });
        last = (await loss.item()) as number;
        if (epoch === 0 && first === 0) first = last;
        for (const t of [X, y, loss, ...batch]) t.dispose();
      }
    }
    expect(String(model.fc.weight.device)).toBe('gpu:0');
    expect(last).toBeLessThan(first);
    opt.zeroGrad();
    for (const p of model.parameters()) p.dispose();
    for (const t of data.tensors) t.dispose();
  });

  it('register_buffer moves with .to(device); a plain tensor field does not', async () => {
    class WithState extends nn.Module {
      constructor() {
        super();
        this.registerBuffer('runningMean', torch.zeros([3]));
      }
      forward(x: torch.Tensor): torch.Tensor {
        return x;
      }
    }
    const m = new WithState().to(await tryGpu(1));
    const buf = [...m.buffers()];
    expect(buf.map((b) => String(b.device))).toEqual(['gpu:1']);
    expect(Object.keys(m.stateDict())).toEqual(['runningMean']);
    for (const b of buf) b.dispose();
  });
});
