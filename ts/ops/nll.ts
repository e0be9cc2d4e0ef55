/**
 * The negative log likelihood of class indices, fused: `F.nll_loss` and the NLL half of
 * `F.cross_entropy` (label smoothing included) as one `nll` command forward (the target range
 * check and the reduction inside it) and one `nllGrad` command backward, where composing it
 * took about 15 generic ops each way (ts/worker/protocol.ts `NllCommand`; kernels in
 * wgsl/loss.ts and assembly/kernels/loss.ts).
 *
 * The composed form stays for what the kernels do not take (16-bit inputs, a weight that
 * requires grad, class probabilities: ts/ops/nn.ts), and for a gradient that is itself
 * differentiated (`createGraph`): `nllGradComposed` builds the same numbers from
 * differentiable ops. Both forms read the class mask from `classMask`.
 *
 * The mean is PyTorch's weighted mean, Σ loss / Σ w[target] over rows not ignored, so a batch
 * whose rows are all ignored gives NaN. The kernel also writes that Σ weight, into a tensor of
 * its own that the gradient rule keeps and divides by (as PyTorch's `total_weight`).
 */
import { needsGrad, op as recorded } from '../autograd/graph.js';
import { alloc, emit, place } from '../runtime/dispatch.js';
import { numel } from '../shape.js';
import type { Device } from '../device.js';
import type { Tensor } from '../tensor.js';
import { ReduceOp } from '../ir/ops.js';
import { arange } from './creation.js';
import { binaryOp, unaryOp, where } from './elementwise.js';
import { reduce } from './reduce.js';
import { tidy } from './scoped.js';
import * as V from './views.js';

/** How the NLL is reduced. */
export type NllReduction = 'mean' | 'sum' | 'none';

/** The NLL's arguments once the API has checked them (`cdim` is the class dim: 0 for a [C] input, else 1). */
export interface NllArgs {
  op: string;
  target: Tensor;
  weight: Tensor | null;
  ignore: number;
  eps: number;
  reduction: NllReduction;
  cdim: number;
}

/**
 * The one-hot mask of each row's target over the classes (`arange(C) == target`, false on
 * ignored rows), the rows not ignored, and the weight shaped to broadcast along the class dim.
 */
export function classMask(shape: readonly number[], device: Device, a: NllArgs): { mask: Tensor; valid: Tensor; w: Tensor | null; expandClass: (t: Tensor) => Tensor } {
  const C = shape[a.cdim], classShape = shape.map((s, i) => (i === a.cdim ? s : 1));
  const classes = V.reshape(arange(C, undefined, 1, { device, dtype: 'int64' }), classShape);
  const valid = binaryOp('ne', a.target, a.ignore);
  const expandClass = (t: Tensor) => (shape.length === 1 ? t : V.unsqueeze(t, a.cdim));
  const mask = binaryOp('logical_and', binaryOp('eq', classes, expandClass(a.target)), expandClass(valid));
  return { mask, valid, w: a.weight ? V.reshape(a.weight, classShape) : null, expandClass };
}

/** Whether the fused kernels take this call: f32 log-probabilities, and an f32 weight that needs no gradient. */
export const fusable = (lsm: Tensor, a: NllArgs): boolean =>
  lsm.dtype === 'float32' && (!a.weight || (a.weight.dtype === 'float32' && !needsGrad(a.weight)));

/** [outer, C, inner] of the input: the rows are outer·inner, their classes `inner` apart. */
function blocks(lsm: Tensor): [number, number, number] {
  return lsm.ndim === 1 ? [1, lsm.shape[0], 1] : [lsm.shape[0], lsm.shape[1], numel(lsm.shape.slice(2))];
}

/**
 * The fused NLL of log-probabilities `lsm` (f32) at `a.target`: one `nll` command, recorded with
 * its gradient rule (one `nllGrad` command). Out-of-range targets fail the next sync point.
 */
export function nllFused(lsm: Tensor, a: NllArgs): Tensor {
  const [outer, classes, inner] = blocks(lsm);
  const common = { outer, classes, inner, ignore: a.ignore, eps: a.eps, reduction: a.reduction };
  const target = V.contiguous(a.target), weight = a.weight && V.contiguous(a.weight);
  let total: Tensor | null = null;
  return recorded(a.op, [lsm], () => {
    const x = V.contiguous(lsm);
    const out = alloc(a.reduction === 'none' ? a.target.shape.slice() : [], 'float32', lsm.device);
    if (a.reduction === 'mean') total = alloc([], 'float32', lsm.device);
    if (a.reduction !== 'none' || out.numel()) {
      emit(lsm.device, { k: 'nll', x: place(x), target: place(target), w: weight && place(weight), out: place(out), total: total && place(total), ...common,
        check: { message: `${a.op}(): Target %d is out of bounds.` } });
    }
    return out;
  }, (ctx) => {
    const t = ctx.save(target), w = weight && ctx.save(weight), tot = total && ctx.save(total);
    return ([g]) => {
      if (needsGrad(g)) return [nllGradComposed(lsm.shape.slice(), lsm.device, g!, tot, { ...a, target: t, weight: w })];
      const grad = alloc(lsm.shape, 'float32', lsm.device);
      if (!grad.numel()) return [grad];
      const gc = tidy(() => V.contiguous(g!.dtype === 'float32' ? g! : V.cast(g!, 'float32')));
      emit(lsm.device, { k: 'nllGrad', g: place(gc), target: place(t), w: w && place(w), total: tot && place(tot), out: place(grad), ...common });
      if (gc !== g) gc.dispose();
      return [grad];
    };
  });
}

/**
 * The NLL's input gradient from differentiable ops (for `createGraph`):
 * `-s·((1-eps)·w[t]·[c = t] + eps/C·w[c])` on rows not ignored, s the upstream gradient
 * (divided by Σ weight for the mean).
 */
function nllGradComposed(shape: number[], device: Device, g: Tensor, total: Tensor | null, a: NllArgs): Tensor {
  return tidy(() => {
    const { mask, valid, w, expandClass } = classMask(shape, device, a);
    let s = a.reduction === 'none' ? expandClass(g) : g;
    if (total) s = binaryOp('div', s, total);
    let per = w ? where(mask, w, 0) : V.cast(mask, 'float32');
    if (a.eps > 0) {
      const spread = binaryOp('mul', expandClass(V.cast(valid, 'float32')), a.eps / shape[a.cdim]);
      per = binaryOp('add', binaryOp('mul', per, 1 - a.eps), w ? binaryOp('mul', spread, w) : spread);
    }
    return unaryOp('neg', binaryOp('mul', per, s));
  });
}
