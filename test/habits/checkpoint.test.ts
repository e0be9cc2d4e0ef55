/**
 * Seed 003's remedy for running out of memory, "3. Enable gradient checkpointing", as PyTorch
 * spells it: `torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False)` and
 * `checkpoint_sequential(functions, segments, input)`. Gradients against the plain forward on cpu
 * and gpu:0 with dropout inside (the generators are rewound for the recompute), the memory at
 * backward's peak for a 12-layer MLP, the default `useReentrant: false`, autocast, DDP.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { habitsSetup } from './setup.js';

const { nn } = torch;
const { checkpoint, checkpointSequential } = torch.utils.checkpoint;
habitsSetup();

/** An MLP of `depth` Linear → ReLU → Dropout blocks. */
function mlp(depth: number, width: number, p: number, device: string) {
  const layers = [];
  for (let i = 0; i < depth; i++) layers.push(new nn.Linear(width, width), new nn.ReLU(), ...(p ? [new nn.Dropout(p)] : []));
  return new nn.Sequential(...layers).to(device);
}

/** Frees a module's parameters (the leak check after each test). */
const free = (net: torch.nn.Module) => net.parameters().forEach((p) => p.dispose());

/** The gradients of x and of every parameter after `run`'s backward (then cleared). */
async function gradsOf(run: () => torch.Tensor, x: torch.Tensor, net: torch.nn.Module): Promise<number[]> {
  torch.manualSeed(1);
  const y = run();
  const loss = torch.tidy(() => y.square().sum());
  y.dispose();
  loss.backward();
  loss.dispose();
  const ts = [x, ...net.parameters()];
  const out: number[] = [];
  for (const t of ts) {
    const flat = t.grad!.reshape([-1]);
    out.push(...(await flat.tolist() as number[]));
    flat.dispose();
    t.grad!.dispose();
    t.grad = null;
  }
  return out;
}

describe('torch.utils.checkpoint', () => {
  it.each(['cpu', 'gpu:0'])('checkpoint and checkpointSequential give the plain forward\'s gradients with dropout inside (%s)', async (dev) => {
    torch.manualSeed(0);
    const net = mlp(4, 16, 0.3, dev);
    const x = torch.randn([8, 16], { device: dev, requiresGrad: true });
    const plain = await gradsOf(() => net(x), x, net);
    const whole = await gradsOf(() => checkpoint(net, x), x, net);
    const seq = await gradsOf(() => checkpointSequential(net, 3, x), x, net);
    const reentrant = await gradsOf(() => checkpoint(net, x, { useReentrant: true }), x, net);
    expect(plain.filter((v) => v === 0).length).toBeGreaterThan(50); // dropout zeroed some of them
    expect(whole).toEqual(plain);
    expect(seq).toEqual(plain);
    expect(reentrant).toEqual(plain);
    // Without preserveRngState the recompute draws new masks: the gradients differ.
    const fresh = await gradsOf(() => checkpoint(net, x, { preserveRngState: false }), x, net);
    expect(fresh).not.toEqual(plain);
    x.dispose();
    free(net);
  });

  it('memoryAllocated at the peak of backward is lower for a 12-layer MLP', async () => {
    const dev = 'gpu:0';
    torch.manualSeed(0);
    const net = mlp(12, 256, 0, dev);
    const x = torch.randn([1024, 256], { device: dev });
    const peakOfBackward = (forward: () => torch.Tensor) => {
      const base = torch.gpu.memoryAllocated(dev);
      const y = forward();
      const loss = torch.tidy(() => y.square().mean());
      y.dispose();
      const afterForward = torch.gpu.memoryAllocated(dev) - base;
      torch.gpu.resetPeakMemoryStats(dev);
      loss.backward();
      loss.dispose();
      const peak = torch.gpu.maxMemoryAllocated(dev) - base;
      for (const p of net.parameters()) {
        p.grad!.dispose();
        p.grad = null;
      }
      return { afterForward, peak };
    };
    const plain = peakOfBackward(() => net(x));
    const seq = peakOfBackward(() => checkpointSequential(net, 4, x));
    const MiB = 2 ** 20;
    console.log(`12-layer MLP (256 wide, batch 1024, gpu:0): held after forward ${plain.afterForward / MiB} MiB plain, ${seq.afterForward / MiB} MiB checkpointed; ` +
      `peak of backward ${plain.peak / MiB} MiB plain, ${seq.peak / MiB} MiB checkpointed (4 segments)`);
    expect(seq.afterForward).toBeLessThan(plain.afterForward * 0.6);
    expect(seq.peak).toBeLessThan(plain.peak * 0.75);
    x.dispose();
    free(net);
  });

  it('useReentrant: false is the default: parameters get gradients though no input requires grad', async () => {
    const net = new nn.Linear(4, 3);
    const x = torch.ones([2, 4]); // requires no grad, as a batch of data
    const y = checkpoint(net, x);
    expect(y.requiresGrad).toBe(true);
    const total = torch.tidy(() => y.sum());
    total.backward();
    total.dispose();
    expect(net.weight.grad).not.toBeNull();
    for (const p of net.parameters()) {
      p.grad!.dispose();
      p.grad = null;
    }
    y.dispose();
    // PyTorch's reentrant form: a warning, an output that requires no grad, no gradients.
    const warn = console.warn;
    const warned: string[] = [];
    console.warn = (m: string) => warned.push(m);
    try {
      const z = checkpoint(net, x, { useReentrant: true });
      expect(z.requiresGrad).toBe(false);
      z.dispose();
    } finally {
      console.warn = warn;
    }
    expect(warned).toEqual(['None of the inputs have requires_grad=True. Gradients will be None']);
    // autograd.grad works through the default form and is refused by the reentrant one, as in PyTorch.
    const xg = torch.ones([2, 4], { requiresGrad: true });
    const out = checkpoint(net, xg);
    const s = torch.tidy(() => out.sum());
    const [gw] = torch.autograd.grad(s, [net.weight]);
    expect(await gw!.tolist()).toEqual([[2, 2, 2, 2], [2, 2, 2, 2], [2, 2, 2, 2]]);
    const out2 = checkpoint(net, xg, { useReentrant: true });
    const s2 = torch.tidy(() => out2.sum());
    expect(() => torch.autograd.grad(s2, [xg])).toThrow('Checkpointing is not compatible with .grad()');
    for (const t of [gw!, out, s, out2, s2, xg, x]) t.dispose();
    free(net);
  });

  it('unknown options raise as PyTorch\'s keywords do', () => {
    const x = torch.ones([2], { requiresGrad: true });
    expect(() => checkpoint((t: torch.Tensor) => t.mul(2), x, { useReentrent: false } as never)).toThrow("checkpoint() got an unexpected keyword argument 'useReentrent'");
    expect(() => checkpointSequential([(t: torch.Tensor) => t.mul(2)], 1, x, { preserve: true } as never)).toThrow('Unexpected keyword arguments: preserve');
    x.dispose();
  });

  it('under autocast: the same gradients as the autocast forward without checkpointing', async () => {
    torch.manualSeed(0);
    const net = mlp(3, 16, 0.2, 'cpu');
    const x = torch.randn([4, 16], { requiresGrad: true });
    const plain = await gradsOf(() => torch.autocast('cpu', { dtype: 'bfloat16' }, () => net(x)), x, net);
    const ck = await gradsOf(() => torch.autocast('cpu', { dtype: 'bfloat16' }, () => checkpointSequential(net, 2, x)), x, net);
    expect(ck).toEqual(plain);
    x.dispose();
    free(net);
  });

  it('inside DistributedDataParallel: each rank\'s averaged gradients equal those without checkpointing', async () => {
    class Net extends nn.Module {
      body = mlp(3, 8, 0, 'cpu');
      head = new nn.Linear(8, 1);
      constructor(readonly ckpt: boolean) {
        super();
      }
      forward(x: torch.Tensor) {
        const h = this.ckpt ? checkpoint(this.body, x) : this.body(x);
        const y = this.head(h);
        h.dispose();
        return y;
      }
    }
    const runDdp = (ckpt: boolean) => torch.distributed.spawn(async (rank: number) => {
      await torch.distributed.initProcessGroup({ backend: 'webtorch' });
      torch.manualSeed(0);
      const model = new nn.parallel.DistributedDataParallel(new Net(ckpt).to('cuda'));
      const x = torch.full([4, 8], rank + 1, { device: 'cuda', dtype: 'float32' });
      const loss = torch.tidy(() => model(x).square().mean());
      loss.backward();
      loss.dispose();
      x.dispose();
      const grads = [];
      for (const p of model.parameters()) {
        const flat = p.grad!.reshape([-1]);
        grads.push(...(await flat.tolist() as number[]));
        flat.dispose();
      }
      for (const p of model.parameters()) p.grad!.dispose();
      free(model);
      return grads;
    }, { nprocs: 2 });
    const plain = await runDdp(false);
    const ck = await runDdp(true);
    expect(plain[0]).toEqual(plain[1]); // averaged across the ranks
    expect(ck[0]).toEqual(ck[1]);
    expect(ck[0].length).toBe(plain[0].length);
    ck[0].forEach((g, i) => expect(g).toBeCloseTo(plain[0][i], 5));
  });
});
