/**
 * SGD, Adam, AdamW and RMSprop, with PyTorch's update rules and defaults. Each update is a few
 * elementwise ops on the parameter's device, run inside `torch.tidy` by the base class.
 */
import { binaryOp as bin, unaryOp } from '../ops/elementwise.js';
import type { Tensor } from '../tensor.js';
import { Optimizer, type ParamGroup, type ParamState } from './optimizer.js';

const add = (a: Tensor, b: Tensor | number, alpha = 1) => bin('add', a, b, alpha);
const mul = (a: Tensor, b: Tensor | number) => bin('mul', a, b);
/** `decay·old + (1 − decay)·x`, or `(1 − decay)·x` when there is no old value (PyTorch's lerp of zeros). */
const ema = (old: Tensor | number | undefined, x: Tensor, decay: number, scale = 1 - decay) =>
  old === undefined ? mul(x, scale) : add(mul(old as Tensor, decay), x, scale);

/** `torch.optim.SGD(params, {lr, momentum, dampening, weightDecay, nesterov, maximize})`. */
export class SGD extends Optimizer {
  constructor(params: Iterable<Tensor>, o: { lr?: number; momentum?: number; dampening?: number; weightDecay?: number; nesterov?: boolean; maximize?: boolean } = {}) {
    super(params, { lr: o.lr ?? 1e-3, momentum: o.momentum ?? 0, dampening: o.dampening ?? 0, weightDecay: o.weightDecay ?? 0, nesterov: o.nesterov ?? false, maximize: o.maximize ?? false });
    if (o.nesterov && (!((o.momentum ?? 0) > 0) || (o.dampening ?? 0) !== 0)) throw new RangeError('Nesterov momentum requires a momentum and zero dampening');
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

/** `torch.optim.Adam` (and, with `decoupled`, AdamW). */
export class Adam extends Optimizer {
  constructor(params: Iterable<Tensor>, o: { lr?: number; betas?: [number, number]; eps?: number; weightDecay?: number; amsgrad?: boolean } = {}, protected readonly decoupled = false) {
    super(params, { lr: o.lr ?? 1e-3, betas: o.betas ?? [0.9, 0.999], eps: o.eps ?? 1e-8, weightDecay: o.weightDecay ?? (decoupled ? 1e-2 : 0), amsgrad: o.amsgrad ?? false });
  }

  protected update(p: Tensor, grad: Tensor, s: ParamState, g: ParamGroup) {
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
}

/** `torch.optim.AdamW`: Adam with decoupled weight decay (default 0.01). */
export class AdamW extends Adam {
  constructor(params: Iterable<Tensor>, o: { lr?: number; betas?: [number, number]; eps?: number; weightDecay?: number; amsgrad?: boolean } = {}) {
    super(params, o, true);
  }
}

/** `torch.optim.RMSprop(params, {lr, alpha, eps, weightDecay, momentum, centered})`. */
export class RMSprop extends Optimizer {
  constructor(params: Iterable<Tensor>, o: { lr?: number; alpha?: number; eps?: number; weightDecay?: number; momentum?: number; centered?: boolean } = {}) {
    super(params, { lr: o.lr ?? 1e-2, alpha: o.alpha ?? 0.99, eps: o.eps ?? 1e-8, weightDecay: o.weightDecay ?? 0, momentum: o.momentum ?? 0, centered: o.centered ?? false });
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
