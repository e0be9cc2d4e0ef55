/**
 * Issue 31's optimizer surface against PyTorch (make_goldens_surface_nn.py): the schedulers'
 * learning rates (and OneCycleLR's momentum) over 20 steps, Adagrad's parameters after each of 4
 * steps, `nn.utils.clipGradNorm_`'s total norm and clipped gradients, `clipGradValue_`; and the
 * module hooks and `requiresGrad_`.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';
import { close, GOLDENS, make } from './surface-goldens.js';

const { nn, optim } = torch;
const S = optim.lrScheduler;
const devices = logicalGpuSuite(2, 'surface-optim');

/** Builds the scheduler of a golden (by id) over `o`. */
function scheduler(id: string, c: any, o: torch.optim.Optimizer): { step(m?: number): void; getLastLr(): number[] } {
  const k = c.ctor;
  switch (id) {
    case 'LambdaLR': return new S.LambdaLR(o, (e: number) => 0.95 ** e);
    case 'MultiStepLR': return new S.MultiStepLR(o, k.milestones, k.gamma);
    case 'LinearLR': return new S.LinearLR(o);
    case 'LinearLR-args': return new S.LinearLR(o, k.startFactor, k.endFactor, k.totalIters);
    case 'SequentialLR': return new S.SequentialLR(o, [new S.LinearLR(o, 0.2, 1.0, 5), new S.StepLR(o, 3, 0.5)], [5]);
    case 'SequentialLR-3':
      return new S.SequentialLR(o, [new S.LinearLR(o, 0.5, 1.0, 4), new S.MultiStepLR(o, [2, 4], 0.1), new S.LambdaLR(o, (e: number) => 0.95 ** e)], [4, 10]);
  }
  if (id === 'SequentialLR-exp-poly') return new S.SequentialLR(o, [new S.ConstantLR(o, 0.25, 3), new S.PolynomialLR(o, 10, 1.5)], [6]);
  if (['ExponentialLR', 'ConstantLR', 'PolynomialLR', 'CosineAnnealingWarmRestarts'].includes(id)) return new (S as any)[id](o, k);
  if (id.startsWith('OneCycleLR')) {
    const { maxLr, ...rest } = k;
    return new S.OneCycleLR(o, maxLr, rest);
  }
  if (id.startsWith('ReduceLROnPlateau')) return new S.ReduceLROnPlateau(o, k) as unknown as { step(m?: number): void; getLastLr(): number[] };
  throw new Error(id);
}

describe('schedulers: PyTorch\'s lr sequences', () => {
  it.each(GOLDENS.schedulers.map((c) => [c.id, c] as const))('%s', (id, c) => {
    const p = torch.zeros([2]).requiresGrad_();
    const o = c.opt === 'adam' ? new optim.Adam([p], { lr: 0.1 }) : new optim.SGD([p], { lr: 0.1, momentum: 0.9 });
    const s = scheduler(id, c, o);
    const lrs = [o.paramGroups[0].lr], mom = [c.opt === 'adam' ? (o.paramGroups[0].betas as number[])[0] : o.paramGroups[0].momentum];
    for (let i = 1; i < c.lrs.length; i++) {
      s.step(c.metrics?.[i - 1]);
      lrs.push(o.paramGroups[0].lr);
      mom.push(c.opt === 'adam' ? (o.paramGroups[0].betas as number[])[0] : o.paramGroups[0].momentum);
    }
    lrs.forEach((v, i) => expect(Math.abs(v - c.lrs[i]), `lr after ${i} steps: ${v}, PyTorch ${c.lrs[i]}`).toBeLessThanOrEqual(1e-12 + 1e-9 * Math.abs(c.lrs[i])));
    if (c.momentum) mom.forEach((v, i) => expect(v as number, `momentum after ${i} steps`).toBeCloseTo(c.momentum[i], 12));
    expect(s.getLastLr()).toEqual([o.paramGroups[0].lr]);
    p.dispose();
  });

  it('refusals and stateDict', () => {
    const p = torch.zeros([2]).requiresGrad_();
    const o = new optim.SGD([p], { lr: 0.1 });
    expect(() => new S.LinearLR(o, 0)).toThrow('Starting multiplicative factor expected to be greater than 0 and less or equal to 1.');
    expect(() => new S.OneCycleLR(o, 1)).toThrow('You must define either total_steps OR (epochs AND steps_per_epoch)');
    expect(() => new S.OneCycleLR(o, 1, { totalSteps: 10, annealStrategy: 'cosine' as never })).toThrow("anneal_strategy must by one of 'cos' or 'linear', instead got cosine");
    expect(() => new S.ReduceLROnPlateau(o, { factor: 1 })).toThrow('Factor should be < 1.0.');
    expect(() => new S.ReduceLROnPlateau(o, { min_lr: 0 } as never)).toThrow("unexpected keyword argument 'min_lr'");
    expect(() => new S.SequentialLR(o, [new S.LinearLR(o)], [3])).toThrow('Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone points');
    const one = new S.OneCycleLR(o, 1, { totalSteps: 2 });
    one.step();
    one.step();
    expect(() => one.step()).toThrow('Tried to step 3 times. The specified number of total steps is 2');
    const r = new S.ReduceLROnPlateau(o, { patience: 0 });
    r.step(1);
    r.step(2);
    expect(r.stateDict()).toEqual({ best: 1, numBadEpochs: 0, cooldownCounter: 0, lastEpoch: 2 });
    p.dispose();
  });
});

describe.each(['cpu', 'gpu:0'])('Adagrad on %s', (device) => {
  it.each(GOLDENS.adagrad.map((c) => [JSON.stringify(c.options), c] as const))('%s', async (_name, c) => {
    const p = make(c.p0, device).requiresGrad_();
    const o = new optim.Adagrad([p], c.options);
    for (let i = 0; i < c.grads.length; i++) {
      p.grad?.dispose();
      p.grad = make(c.grads[i], device);
      o.step();
      await close(p, c.after[i], `step ${i + 1}`, 1e-5, 1e-6);
    }
    p.grad?.dispose();
    for (const s of o.state.values()) for (const v of Object.values(s)) if (typeof v === 'object') v.dispose();
    p.dispose();
  });
});

describe('Adagrad refusals', () => {
  it('invalid values and keyword-only maximize', () => {
    const p = torch.zeros([2]).requiresGrad_();
    expect(() => new optim.Adagrad([p], { lrDecay: -1 })).toThrow('Invalid lr_decay value: -1');
    expect(() => new optim.Adagrad([p], 0.1, 0, 0, 0, 1e-10, null, true as never)).toThrow('takes from 1 to 7 positional arguments but 8 were given');
    p.dispose();
  });
});

describe.each(['cpu', 'gpu:0', 'gpu:1'])('clip_grad on %s', (device) => {
  it.each(GOLDENS.clip.map((c) => [`maxNorm ${c.maxNorm} normType ${c.normType}`, c] as const))('clipGradNorm_ %s', async (_n, c) => {
    const ps = c.grads.map((g: any) => {
      const p = torch.zeros(g.shape, { device }).requiresGrad_();
      p.grad = make(g, device);
      return p;
    });
    const total = nn.utils.clipGradNorm_(ps, c.maxNorm, c.normType) as torch.Tensor;
    expect(total.device.toString()).toBe(device);
    await close(total, c.total, 'total norm', 1e-5, 1e-6);
    for (let i = 0; i < ps.length; i++) await close(ps[i].grad!, c.clipped[i], `clipped grad ${i}`, 1e-5, 1e-6);
    total.dispose();
    ps.forEach((p: torch.Tensor) => { p.grad!.dispose(); p.dispose(); });
  });

  it('clipGradValue_ and errorIfNonfinite', async () => {
    const c = GOLDENS.clipValue;
    const ps = c.grads.map((g: any) => {
      const p = torch.zeros(g.shape, { device }).requiresGrad_();
      p.grad = make(g, device);
      return p;
    });
    nn.utils.clipGradValue_(ps, c.clipValue);
    for (let i = 0; i < ps.length; i++) await close(ps[i].grad!, c.clipped[i], `clipped grad ${i}`, 0, 0);
    ps[0].grad!.fill_(Infinity);
    await expect(nn.utils.clipGradNorm_(ps, 1, { errorIfNonfinite: true })).rejects.toThrow('The total norm of order 2 for gradients from `parameters` is non-finite');
    ps.forEach((p: torch.Tensor) => { p.grad!.dispose(); p.dispose(); });
  });
});

describe('clipGradNorm_ across devices', () => {
  it('the norms of gradients on cpu and gpu:0 combine on the first one\'s device; each gradient is scaled on its own', async () => {
    const a = torch.zeros([2]).requiresGrad_(), b = torch.zeros([1], { device: 'gpu:0' }).requiresGrad_();
    a.grad = torch.tensor([3, 4], { dtype: 'float32' });
    b.grad = torch.tensor([12], { dtype: 'float32', device: 'gpu:0' });
    const total = nn.utils.clipGradNorm_([a, b], 1.3) as torch.Tensor;
    expect(total.device.toString()).toBe('cpu');
    expect(await total.item()).toBeCloseTo(13, 5);
    ((await a.grad.tolist()) as number[]).forEach((v, i) => expect(v).toBeCloseTo([0.3, 0.4][i], 5));
    expect(b.grad.device.toString()).toBe('gpu:0');
    expect((await b.grad.tolist() as number[])[0]).toBeCloseTo(1.2, 5);
    [a.grad, b.grad, a, b, total].forEach((t) => t.dispose());
  });
});

describe('module hooks and requiresGrad_', () => {
  it('forward pre-hooks and hooks replace args and outputs; handles remove them', async () => {
    const lin = new nn.Linear(2, 2);
    const seen: string[] = [], made: torch.Tensor[] = [];
    const keep = (t: torch.Tensor) => (made.push(t), t);
    const h1 = lin.registerForwardPreHook((_m, args) => { seen.push('pre'); return [keep((args[0] as torch.Tensor).mul(2))]; });
    const h2 = lin.registerForwardHook((_m, _args, out) => { seen.push('post'); keep(out as torch.Tensor); return (out as torch.Tensor).mul(0); });
    const h3 = lin.registerForwardHook(() => { seen.push('first'); }, { prepend: true });
    const x = torch.ones([1, 2]);
    const y = lin(x);
    expect(seen).toEqual(['pre', 'first', 'post']);
    expect(((await y.tolist()) as number[][])[0].map(Math.abs)).toEqual([0, 0]);
    [h1, h2, h3].forEach((h) => h.remove());
    const y2 = lin(x);
    const ref = torch.tidy(() => x.matmul(lin.weight.t()).add(lin.bias!));
    expect(await y2.tolist()).toEqual(await ref.tolist());
    made.push(ref);
    expect(seen.length).toBe(3);
    expect(() => lin.registerForwardHook(() => undefined, { withKwargs: true } as never)).toThrow('withKwargs=true is not supported');
    [x, y, y2, ...made, ...lin.parameters()].forEach((t) => t.dispose());
  });

  it('registerFullBackwardHook sees gradOutput and gradInput, and may replace gradInput', async () => {
    const m = new nn.Tanh();
    const x = torch.tensor([0.5, -1]).requiresGrad_();
    const got: torch.Tensor[][] = [];
    const h = m.registerFullBackwardHook((_m, gi, go) => {
      got.push([gi[0]!.clone(), go[0]!.clone()]);
      return [gi[0]!.mul(10)];
    });
    const y = m(x);
    const loss = y.sum();
    loss.backward();
    expect(got.length).toBe(1);
    const t = [Math.tanh(0.5), Math.tanh(-1)].map((v) => 1 - Math.fround(v) ** 2);
    expect(await got[0][1].tolist()).toEqual([1, 1]);
    ((await got[0][0].tolist()) as number[]).forEach((v, i) => expect(v).toBeCloseTo(t[i], 5));
    got[0].forEach((g) => g.dispose());
    ((await x.grad!.tolist()) as number[]).forEach((v, i) => expect(v).toBeCloseTo(10 * t[i], 5));
    h.remove();
    [x.grad!, x, y, loss].forEach((v) => v.dispose());
  });

  it('requiresGrad_ sets every parameter; returns the module', () => {
    const net = new nn.Sequential(new nn.Linear(2, 3), new nn.ReLU(), new nn.Linear(3, 1));
    expect(net.requiresGrad_(false)).toBe(net);
    expect(net.parameters().every((p) => !p.requiresGrad)).toBe(true);
    net.requiresGrad_();
    expect(net.parameters().every((p) => p.requiresGrad)).toBe(true);
    net.parameters().forEach((p) => p.dispose());
  });
});
void devices;
