/**
 * Issue 31, "Memory with the habits users have": `backward()` frees the graph's saved tensors (as
 * PyTorch does unless `retain_graph`), and the state that optimizers, modules, schedulers and
 * GradScaler own survives any `tidy` their methods run in. On `cpu` (what is checked is the
 * calling thread's bookkeeping, the same for every device).
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

suiteDevices();
const { nn } = torch;
const alloc = () => torch.gpu.memoryAllocated('cpu');
/** Bytes of a [256, 256] float32 tensor. */
const BLOCK = 256 * 256 * 4;

describe('saved tensors', () => {
  /** loss = sum((x + 1)²): mul saves both operands, here the intermediate h, whose own handle is disposed. */
  const graph = (x: torch.Tensor) => {
    const h = x.add(1);
    const sq = h.mul(h);
    const loss = sq.sum();
    h.dispose(); // only the graph's saved handles hold h now
    sq.dispose();
    return loss;
  };
  const dropGrad = (x: torch.Tensor) => {
    x.grad?.dispose();
    x.grad = null;
  };

  it('backward() frees them (memoryAllocated drops by their bytes); a second backward raises PyTorch\'s message', async () => {
    const x = torch.randn([256, 256], { requiresGrad: true });
    const base = alloc();
    const loss = graph(x);
    expect(alloc() - base).toBeGreaterThanOrEqual(BLOCK);
    loss.backward();
    dropGrad(x);
    expect(alloc() - base, 'after backward: only the loss scalar is left').toBeLessThan(BLOCK);
    expect(() => loss.backward()).toThrow(
      'Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). ' +
        'Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retainGraph: true',
    );
    loss.dispose();
    x.dispose();
  });

  it('retainGraph: true keeps them, and a second backward gives the same gradient', async () => {
    const x = torch.randn([256, 256], { requiresGrad: true });
    const base = alloc();
    const loss = graph(x);
    loss.backward({ retainGraph: true });
    const first = await x.grad!.tolist();
    dropGrad(x);
    expect(alloc() - base, 'the saved intermediate is still held').toBeGreaterThanOrEqual(BLOCK);
    loss.backward();
    expect(await x.grad!.tolist()).toEqual(first);
    dropGrad(x);
    expect(alloc() - base).toBeLessThan(BLOCK);
    loss.dispose();
    x.dispose();
  });
});

describe('state owned by modules, schedulers and GradScaler survives tidy', () => {
  it('BatchNorm1d\'s running statistics and num_batches_tracked, updated inside tidy', async () => {
    const bn = new nn.BatchNorm1d(3);
    const x = torch.tensor([[1, 2, 3], [3, 6, 9]], { dtype: 'float32' });
    for (let i = 0; i < 3; i++) torch.tidy(() => void bn.call(x));
    const s = bn as unknown as { running_mean: torch.Tensor; running_var: torch.Tensor; num_batches_tracked: torch.Tensor };
    expect(Number(await s.num_batches_tracked.item())).toBe(3);
    // mean [2, 4, 6] blended in three times with momentum 0.1: 1 - 0.9³ = 0.271 of it
    const mean = (await s.running_mean.tolist()) as number[];
    [2, 4, 6].forEach((m, i) => expect(mean[i]).toBeCloseTo(0.271 * m, 5));
    for (const t of [...bn.parameters(), ...bn.buffers()]) t.dispose();
    x.dispose();
  });

  it('a LazyLinear materialised inside tidy keeps its parameters', async () => {
    const lazy = new nn.LazyLinear(2);
    const x = torch.ones([1, 4]);
    torch.tidy(() => void lazy.call(x));
    expect(lazy.weight!.isDisposed).toBe(false);
    const y = lazy.call(x);
    expect(y.shape).toEqual([1, 2]);
    for (const t of [y, x, ...lazy.parameters()]) t.dispose();
  });

  it('Module.to inside tidy keeps the parameters\' gradients', async () => {
    const lin = new nn.Linear(4, 2);
    torch.tidy(() => lin.call(torch.ones([1, 4])).sum().backward());
    torch.tidy(() => lin.to({ dtype: 'float16' }));
    expect(lin.weight.grad!.dtype).toBe('float16');
    expect(await lin.weight.grad!.tolist()).toEqual([[1, 1, 1, 1], [1, 1, 1, 1]]);
    for (const p of lin.parameters()) p.grad!.dispose(), p.dispose();
  });

  it('GradScaler\'s scale and growth tracker, made and updated inside tidy; a scheduler stepped inside tidy', async () => {
    const lin = new nn.Linear(2, 1);
    const opt = new torch.optim.SGD(lin.parameters(), { lr: 0.1 });
    const sched = new torch.optim.lrScheduler.StepLR(opt, 1, 0.5);
    const scaler = new torch.amp.GradScaler('cpu', { initScale: 8, growthInterval: 2 });
    const x = torch.ones([1, 2]);
    for (let i = 0; i < 2; i++) {
      torch.tidy(() => scaler.scale(lin.call(x).sum()).backward());
      await scaler.step(opt);
      torch.tidy(() => scaler.update());
      torch.tidy(() => sched.step());
      opt.zeroGrad();
    }
    expect(await scaler.getScale()).toBe(16); // grown after growthInterval = 2 clean steps
    expect(await scaler.getGrowthTracker()).toBe(0);
    expect(sched.getLastLr()).toEqual([0.025]);
    for (const p of lin.parameters()) p.dispose();
    x.dispose();
    (scaler as unknown as { scaleT: torch.Tensor }).scaleT.dispose();
    (scaler as unknown as { tracker: torch.Tensor }).tracker.dispose();
  });
});
