/**
 * `torch.optim.Adagrad`, with PyTorch's update rule and defaults: the sum of squared gradients
 * (starting at `initialAccumulatorValue`) scales each step, and the lr decays as
 * `lr / (1 + (step - 1)·lrDecay)`.
 */
import { full } from '../ops/creation.js';
import { binaryOp as bin, unaryOp } from '../ops/elementwise.js';
import { bindArgs, type PyArgs } from '../args.js';
import type { Tensor } from '../tensor.js';
import { Optimizer, type ParamGroup, type ParamState, type Params } from './optimizer.js';

/** Options of `Adagrad`. */
export interface AdagradOptions {
  lr?: number; lrDecay?: number; weightDecay?: number; initialAccumulatorValue?: number; eps?: number; foreach?: boolean | null; maximize?: boolean;
}

/**
 * `torch.optim.Adagrad(params, lr = 1e-2, lrDecay = 0, weightDecay = 0, initialAccumulatorValue = 0,
 * eps = 1e-10, foreach = null, {maximize})`.
 */
export class Adagrad extends Optimizer {
  constructor(params: Params, ...args: PyArgs<[lr: number, lrDecay: number, weightDecay: number, initialAccumulatorValue: number, eps: number, foreach: boolean | null], AdagradOptions>) {
    const { foreach: _foreach, ...o } = bindArgs('Adagrad', ['lr', 'lrDecay', 'weightDecay', 'initialAccumulatorValue', 'eps', 'foreach', 'maximize'], args,
      { lr: 1e-2, lrDecay: 0, weightDecay: 0, initialAccumulatorValue: 0, eps: 1e-10, foreach: null, maximize: false } as Required<AdagradOptions>, 1, 6);
    const checks: [string, number][] = [['learning rate', o.lr], ['lr_decay value', o.lrDecay], ['weight_decay value', o.weightDecay],
      ['initial_accumulator_value value', o.initialAccumulatorValue], ['epsilon value', o.eps]];
    for (const [what, v] of checks) if (!(v >= 0)) throw new RangeError(`Invalid ${what}: ${v}`);
    super(params, o);
  }

  protected update(p: Tensor, grad: Tensor, s: ParamState, g: ParamGroup) {
    const step = ((s.step as number | undefined) ?? 0) + 1;
    let d = g.maximize ? unaryOp('neg', grad) : grad;
    if (g.weightDecay) d = bin('add', d, p, g.weightDecay as number);
    const clr = g.lr / (1 + (step - 1) * (g.lrDecay as number));
    const old = (s.sum as Tensor | undefined) ?? full(p.shape.slice(), g.initialAccumulatorValue as number, { dtype: p.dtype, device: p.device });
    const sum = bin('add', old, bin('mul', d, d));
    const std = bin('add', unaryOp('sqrt', sum), g.eps as number);
    return { value: bin('sub', p, bin('mul', bin('div', d, std), clr)), updates: { step, sum } };
  }
}
