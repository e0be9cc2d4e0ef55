/**
 * SGD, Adam, AdamW and RMSprop, with PyTorch's update rules and defaults. Each update is a few
 * elementwise ops on the parameter's device, run inside `torch.tidy` by the base class.
 */
import { binaryOp as bin, unaryOp } from '../ops/elementwise.js';
import type { Tensor } from '../tensor.js';
import { full } from '../ops/creation.js';
import { bindArgs, type PyArgs } from '../args.js';
import { Optimizer, type Params, type ParamGroup, type ParamState } from './optimizer.js';
import { checkFusedOptions, emitFused, partition, type FusedParam } from './fused.js';
import { untrack } from '../scope.js';

/** A 0-dim float32 state tensor on `p`'s device, owned by the optimizer (a capturable step count). */
const scalarState = (value: number, p: Tensor): Tensor => {
  const t = full([], value, { device: p.device, dtype: 'float32' });
  untrack(t);
  return t;
};
/** A zero state tensor like `p`, owned by the optimizer (the fused step's first step: PyTorch's `zeros_like`). */
const zerosLike = (p: Tensor): Tensor => {
  const z = full([...p.shape], 0, { device: p.device, dtype: p.dtype });
  untrack(z);
  return z;
};

const add = (a: Tensor, b: Tensor | number, alpha = 1) => bin('add', a, b, alpha);
const mul = (a: Tensor, b: Tensor | number) => bin('mul', a, b);
/** `decay·old + (1 − decay)·x`, or `(1 − decay)·x` when there is no old value (PyTorch's lerp of zeros). */
const ema = (old: Tensor | number | undefined, x: Tensor, decay: number, scale = 1 - decay) =>
  old === undefined ? mul(x, scale) : add(mul(old as Tensor, decay), x, scale);

/** Options of `SGD`. */
export interface SGDOptions {
  lr?: number; momentum?: number; dampening?: number; weightDecay?: number; nesterov?: boolean; maximize?: boolean;
  /** PyTorch's `foreach`: false runs the per-parameter loop of elementwise ops; null or true the multi-tensor step. */
  foreach?: boolean | null;
  /** PyTorch's `fused`: true asks for the fused kernel and raises where a parameter cannot have it (ts/optim/fused.ts). */
  fused?: boolean | null;
}

/** `torch.optim.SGD(params, lr = 1e-3, momentum = 0, dampening = 0, weightDecay = 0, nesterov = false, {maximize, foreach, fused})`. */
export class SGD extends Optimizer {
  constructor(params: Params, ...args: PyArgs<[lr: number, momentum: number, dampening: number, weightDecay: number, nesterov: boolean], SGDOptions>) {
    const o = bindArgs('SGD', ['lr', 'momentum', 'dampening', 'weightDecay', 'nesterov', 'maximize', 'foreach', 'fused'], args,
      { lr: 1e-3, momentum: 0, dampening: 0, weightDecay: 0, nesterov: false, maximize: false, foreach: null as boolean | null, fused: null as boolean | null }, 1, 5);
    checkFusedOptions('SGD', o);
    super(params, o);
    if (o.nesterov && (!(o.momentum > 0) || o.dampening !== 0)) throw new RangeError('Nesterov momentum requires a momentum and zero dampening');
  }

  protected override fusedStep(group: ParamGroup): Tensor[] {
    const keys = group.momentum ? ['momentumBuffer'] : [];
    const { fused, rest } = partition('SGD', group, (p) => this.stateOf(p), keys);
    if (!fused.length) return rest;
    const list: FusedParam[] = fused.map((p) => {
      const s = this.stateOf(p), first = group.momentum ? s.momentumBuffer === undefined : false;
      if (group.momentum && first) s.momentumBuffer = zerosLike(p);
      return { p, states: group.momentum ? [s.momentumBuffer as Tensor] : [], stepSize: 0, invSqrtBc2: 0, first };
    });
    emitFused('SGD', 'sgd', {
      lr: group.lr, weightDecay: group.weightDecay as number, maximize: !!group.maximize,
      beta1: 0, beta2: 0, eps: 0, decoupled: false, amsgrad: false,
      momentum: group.momentum as number, dampening: group.dampening as number, nesterov: !!group.nesterov,
    }, list);
    return rest;
  }

  protected update(p: Tensor, grad: Tensor, s: ParamState, g: ParamGroup) {
    let d = g.maximize ? unaryOp('neg', grad) : grad;
    if (g.weightDecay) d = add(d, p, g.weightDecay as number);
    const updates: ParamState = {};
    if (g.momentum) {
      const m = g.momentum as number;
      const buf = s.momentumBuffer === undefined ? d.clone() : add(mul(s.momentumBuffer as Tensor, m), d, 1 - (g.dampening as number));
      updates.momentumBuffer = buf;
      d = g.nesterov ? add(d, buf, m) : buf;
    }
    return { value: add(p, d, -g.lr), updates };
  }
}

/** Options of `Adam` and `AdamW`. */
export interface AdamOptions {
  lr?: number; betas?: [number, number]; eps?: number; weightDecay?: number; amsgrad?: boolean;
  /**
   * PyTorch's `capturable`: the step count is a device tensor and the bias corrections are
   * computed on the device, so that `step()` can be captured in a graph (default false).
   */
  capturable?: boolean;
  /** Maximizes the objective instead of minimizing it (default false). */
  maximize?: boolean;
  /** PyTorch's `foreach`: false runs the per-parameter loop of elementwise ops; null or true the multi-tensor step. */
  foreach?: boolean | null;
  /** PyTorch's `fused`: true asks for the fused kernel and raises where a parameter cannot have it (ts/optim/fused.ts). */
  fused?: boolean | null;
}
/** Adam's positional parameters; after `amsgrad` PyTorch's are keyword-only (`capturable` among them). */
type AdamPositional = [lr: number, betas: [number, number], eps: number, weightDecay: number, amsgrad: boolean];
const ADAM_PARAMS = ['lr', 'betas', 'eps', 'weightDecay', 'amsgrad', 'foreach', 'maximize', 'capturable', 'fused'] as const;

/** `torch.optim.Adam(params, lr = 1e-3, betas = [0.9, 0.999], eps = 1e-8, weightDecay = 0, amsgrad = false)`. */
export class Adam extends Optimizer {
  protected readonly decoupled: boolean = false;

  constructor(params: Params, ...args: PyArgs<AdamPositional, AdamOptions>) {
    const decoupled = new.target === AdamW;
    const name = decoupled ? 'AdamW' : 'Adam';
    const o = bindArgs(name, ADAM_PARAMS, args, { lr: 1e-3, betas: [0.9, 0.999] as [number, number], eps: 1e-8, weightDecay: decoupled ? 1e-2 : 0, amsgrad: false,
      foreach: null as boolean | null, maximize: false, capturable: false, fused: null as boolean | null }, 1, 5);
    checkFusedOptions(name, o);
    const [b1, b2] = o.betas;
    if (!(b1 >= 0 && b1 < 1)) throw new RangeError(`Invalid beta parameter at index 0: ${b1}`);
    if (!(b2 >= 0 && b2 < 1)) throw new RangeError(`Invalid beta parameter at index 1: ${b2}`);
    if (!(o.eps >= 0)) throw new RangeError(`Invalid epsilon value: ${o.eps}`);
    if (!(o.weightDecay >= 0)) throw new RangeError(`Invalid weight_decay value: ${o.weightDecay}`);
    super(params, o);
    this.decoupled = decoupled;
  }

  protected override checkCapturable(group: ParamGroup): void {
    if (!group.capturable) {
      throw new Error(`Attempting CUDA graph capture of step() for an instance of ${this.constructor.name} but param_groups' capturable is False. (construct it with {capturable: true})`);
    }
  }

  protected override fusedStep(group: ParamGroup): Tensor[] {
    const keys = group.amsgrad ? ['expAvg', 'expAvgSq', 'maxExpAvgSq'] : ['expAvg', 'expAvgSq'];
    const name = this.constructor.name;
    const { fused, rest } = partition(name, group, (p) => this.stateOf(p), keys);
    if (!fused.length) return rest;
    const [b1, b2] = group.betas as [number, number];
    const list: FusedParam[] = fused.map((p) => {
      const s = this.stateOf(p);
      for (const k of keys) if (s[k] === undefined) s[k] = zerosLike(p);
      const states = keys.map((k) => s[k] as Tensor);
      if (group.capturable) {
        // the step count a float32 device tensor, as PyTorch's capturable one; the command increments it
        if (s.step === undefined) s.step = scalarState(0, p);
        return { p, states, stepSize: 0, invSqrtBc2: 0, first: false, step: s.step as Tensor };
      }
      const step = (s.step = ((s.step as number | undefined) ?? 0) + 1);
      const bc1 = 1 - b1 ** step, bc2 = 1 - b2 ** step;
      return { p, states, stepSize: -group.lr / bc1, invSqrtBc2: 1 / Math.sqrt(bc2), first: false };
    });
    emitFused(name, 'adam', {
      lr: group.lr, weightDecay: group.weightDecay as number, maximize: !!group.maximize,
      beta1: b1, beta2: b2, eps: group.eps as number, decoupled: this.decoupled, amsgrad: !!group.amsgrad,
      momentum: 0, dampening: 0, nesterov: false,
    }, list);
    return rest;
  }

  protected update(p: Tensor, grad: Tensor, s: ParamState, g: ParamGroup) {
    if (g.maximize) grad = unaryOp('neg', grad);
    // A step count that is a tensor (a PyTorch checkpoint's, which keeps it as one) is advanced on the device.
    if (g.capturable || typeof s.step === 'object') return this.deviceUpdate(p, grad, s, g);
    const [b1, b2] = g.betas as [number, number];
    const wd = g.weightDecay as number, lr = g.lr;
    const param = wd && this.decoupled ? mul(p, 1 - lr * wd) : p;
    const d = wd && !this.decoupled ? add(grad, p, wd) : grad;
    const step = ((s.step as number | undefined) ?? 0) + 1;
    const expAvg = ema(s.expAvg, d, b1), expAvgSq = ema(s.expAvgSq, mul(d, d), b2);
    const updates: ParamState = { step, expAvg, expAvgSq };
    let v = expAvgSq;
    if (g.amsgrad) v = updates.maxExpAvgSq = s.maxExpAvgSq === undefined ? expAvgSq.clone() : bin('maximum', s.maxExpAvgSq as Tensor, expAvgSq);
    const bc1 = 1 - b1 ** step, bc2 = 1 - b2 ** step;
    const denom = add(mul(unaryOp('sqrt', v), 1 / Math.sqrt(bc2)), g.eps as number);
    return { value: add(param, bin('div', expAvg, denom), -lr / bc1), updates };
  }

  /** `capturable`: the step count a 0-dim device tensor, the bias corrections b^step computed on the device. */
  private deviceUpdate(p: Tensor, grad: Tensor, s: ParamState, g: ParamGroup) {
    const [b1, b2] = g.betas as [number, number];
    const wd = g.weightDecay as number, lr = g.lr;
    const param = wd && this.decoupled ? mul(p, 1 - lr * wd) : p;
    const d = wd && !this.decoupled ? add(grad, p, wd) : grad;
    const old = s.step;
    const step = typeof old === 'object' ? add(old, 1) : full([], ((old as number | undefined) ?? 0) + 1, { device: p.device, dtype: 'float32' });
    const expAvg = ema(s.expAvg, d, b1), expAvgSq = ema(s.expAvgSq, mul(d, d), b2);
    const updates: ParamState = { step, expAvg, expAvgSq };
    let v = expAvgSq;
    if (g.amsgrad) v = updates.maxExpAvgSq = s.maxExpAvgSq === undefined ? expAvgSq.clone() : bin('maximum', s.maxExpAvgSq as Tensor, expAvgSq);
    // 1 - b^step as 1 - exp(step · ln b)
    const correction = (b: number) => add(mul(unaryOp('exp', mul(step, Math.log(b))), -1), 1);
    const denom = add(bin('div', unaryOp('sqrt', v), unaryOp('sqrt', correction(b2))), g.eps as number);
    return { value: add(param, bin('div', bin('div', expAvg, denom), correction(b1)), -lr), updates };
  }
}

/** `torch.optim.AdamW(params, lr = 1e-3, betas, eps, weightDecay = 0.01, amsgrad)`: Adam with decoupled weight decay. */
export class AdamW extends Adam {}

/** Options of `RMSprop`. */
export interface RMSpropOptions { lr?: number; alpha?: number; eps?: number; weightDecay?: number; momentum?: number; centered?: boolean }

/** `torch.optim.RMSprop(params, lr = 1e-2, alpha = 0.99, eps = 1e-8, weightDecay = 0, momentum = 0, centered = false)`. */
export class RMSprop extends Optimizer {
  constructor(params: Params, ...args: PyArgs<[lr: number, alpha: number, eps: number, weightDecay: number, momentum: number, centered: boolean], RMSpropOptions>) {
    super(params, bindArgs('RMSprop', ['lr', 'alpha', 'eps', 'weightDecay', 'momentum', 'centered'], args,
      { lr: 1e-2, alpha: 0.99, eps: 1e-8, weightDecay: 0, momentum: 0, centered: false }, 1));
  }

  protected update(p: Tensor, grad: Tensor, s: ParamState, g: ParamGroup) {
    const a = g.alpha as number;
    const d = g.weightDecay ? add(grad, p, g.weightDecay as number) : grad;
    const squareAvg = ema(s.squareAvg, mul(d, d), a);
    const updates: ParamState = { squareAvg };
    let avg = squareAvg;
    if (g.centered) {
      const gradAvg = (updates.gradAvg = ema(s.gradAvg, d, a));
      avg = bin('sub', squareAvg, mul(gradAvg, gradAvg));
    }
    const q = bin('div', d, add(unaryOp('sqrt', avg), g.eps as number));
    if (!g.momentum) return { value: add(p, q, -g.lr), updates };
    const buf = (updates.momentumBuffer = s.momentumBuffer === undefined ? q : add(mul(s.momentumBuffer as Tensor, g.momentum as number), q));
    return { value: add(p, buf, -g.lr), updates };
  }
}
