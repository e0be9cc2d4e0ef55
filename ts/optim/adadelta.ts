/**
 * `torch.optim.Adadelta` (d2l ch. 12.9), with PyTorch's update rule and defaults:
 * `v ← ρ·v + (1−ρ)·g²`, `Δ = √(u + ε)/√(v + ε)·g`, `u ← ρ·u + (1−ρ)·Δ²`, `p ← p − lr·Δ`
 * (v, u start at zero). Each update is a few elementwise ops on the parameter's device.
 */
import { binaryOp as bin, unaryOp } from '../ops/elementwise.js';
import type { Tensor } from '../tensor.js';
import { bindArgs, type PyArgs } from '../args.js';
import { Optimizer, type Params, type ParamGroup, type ParamState } from './optimizer.js';

/** Options of `Adadelta`. */
export interface AdadeltaOptions { lr?: number; rho?: number; eps?: number; weightDecay?: number; maximize?: boolean }

/** `torch.optim.Adadelta(params, lr = 1, rho = 0.9, eps = 1e-6, weightDecay = 0, {maximize})`. */
export class Adadelta extends Optimizer {
  constructor(params: Params, ...args: PyArgs<[lr: number, rho: number, eps: number, weightDecay: number], AdadeltaOptions>) {
    const o = bindArgs('Adadelta', ['lr', 'rho', 'eps', 'weightDecay', 'maximize'], args, { lr: 1, rho: 0.9, eps: 1e-6, weightDecay: 0, maximize: false }, 1, 4);
    if (!(o.lr >= 0)) throw new RangeError(`Invalid learning rate: ${o.lr}`);
    if (!(o.rho >= 0 && o.rho <= 1)) throw new RangeError(`Invalid rho value: ${o.rho}`);
    if (!(o.eps >= 0)) throw new RangeError(`Invalid epsilon value: ${o.eps}`);
    if (!(o.weightDecay >= 0)) throw new RangeError(`Invalid weight_decay value: ${o.weightDecay}`);
    super(params, o);
  }

  protected update(p: Tensor, grad: Tensor, s: ParamState, g: ParamGroup) {
    const rho = g.rho as number, eps = g.eps as number;
    let d = g.maximize ? unaryOp('neg', grad) : grad;
    if (g.weightDecay) d = bin('add', d, p, g.weightDecay as number);
    const sq = bin('mul', d, d);
    const squareAvg = s.squareAvg === undefined ? bin('mul', sq, 1 - rho) : bin('add', bin('mul', s.squareAvg as Tensor, rho), sq, 1 - rho);
    const std = unaryOp('sqrt', bin('add', squareAvg, eps));
    const accEps = s.accDelta === undefined ? Math.sqrt(eps) : unaryOp('sqrt', bin('add', s.accDelta as Tensor, eps));
    const delta = bin('mul', bin('div', accEps, std), d);
    const dsq = bin('mul', delta, delta);
    const accDelta = s.accDelta === undefined ? bin('mul', dsq, 1 - rho) : bin('add', bin('mul', s.accDelta as Tensor, rho), dsq, 1 - rho);
    return { value: bin('add', p, delta, -g.lr), updates: { squareAvg, accDelta } };
  }
}
