/**
 * `torch.nn.utils`: `clipGradNorm_` and `clipGradValue_`, which scale or clamp the parameters'
 * gradients in place, as PyTorch's do (grad mode off, each gradient on its own device; the total
 * norm lives on the first gradient's device).
 */
import { withGradMode } from '../autograd/graph.js';
import { ReduceOp } from '../ir/ops.js';
import { full } from '../ops/creation.js';
import { binaryOp, clamp, unaryOp } from '../ops/elementwise.js';
import { bindArgs, type PyArgs } from '../args.js';
import { reduce } from '../ops/reduce.js';
import { tidy } from '../ops/scoped.js';
import { stack } from '../ops/shape.js';
import { Tensor } from '../tensor.js';

/** What the clipping functions take: a tensor or an iterable of them (a module's `parameters()`). */
export type ParamsLike = Tensor | Iterable<Tensor>;

const gradsOf = (op: string, parameters: ParamsLike): Tensor[] => {
  if (parameters instanceof Tensor) return parameters.grad ? [parameters.grad] : [];
  if (parameters == null || typeof (parameters as Iterable<Tensor>)[Symbol.iterator] !== 'function') {
    throw new TypeError(`${op}(): expected parameters to be a Tensor or an iterable of Tensors, but got ${parameters === null ? 'null' : typeof parameters}`);
  }
  return [...parameters].filter((p) => p.grad).map((p) => p.grad!);
};

/** The vector p-norm of all of `x`'s elements (p > 0, or Infinity). */
function pNorm(x: Tensor, p: number): Tensor {
  const a = unaryOp('abs', x);
  if (p === Infinity) return reduce(ReduceOp.Max, a, undefined);
  if (p === 1) return reduce(ReduceOp.Sum, a, undefined);
  if (p === 2) return unaryOp('sqrt', reduce(ReduceOp.SumSq, x, undefined));
  return binaryOp('pow', reduce(ReduceOp.Sum, binaryOp('pow', a, p), undefined), 1 / p);
}

/** Options of `clipGradNorm_` after (parameters, maxNorm). */
export interface ClipGradNormOptions { normType?: number | 'inf'; errorIfNonfinite?: boolean; foreach?: boolean | null }

/**
 * `nn.utils.clip_grad_norm_(parameters, maxNorm, normType = 2, errorIfNonfinite = false, foreach = null)`:
 * scales every gradient by `min(1, maxNorm / (total + 1e-6))`, the total being the norm of the
 * gradients' norms; returns the total norm (a 0-d tensor). With `errorIfNonfinite` the check needs
 * the total's value, so the call returns a Promise of it (and raises PyTorch's error when it is
 * NaN or infinite, before scaling).
 */
export function clipGradNorm_(parameters: ParamsLike, maxNorm: number, ...args: PyArgs<[normType: number | 'inf', errorIfNonfinite: boolean, foreach: boolean | null], ClipGradNormOptions>): Tensor | Promise<Tensor> {
  const op = 'clip_grad_norm_';
  const o = bindArgs(op, ['normType', 'errorIfNonfinite', 'foreach'], args, { normType: 2, errorIfNonfinite: false, foreach: null } as ClipGradNormOptions, 2);
  const p = o.normType === 'inf' ? Infinity : Number(o.normType);
  if (!(p > 0)) throw new RangeError(`${op}(): normType must be positive (or 'inf'), got ${String(o.normType)}`);
  if (typeof maxNorm !== 'number' || Number.isNaN(maxNorm)) throw new TypeError(`${op}(): maxNorm must be a number, got ${String(maxNorm)}`);
  const grads = gradsOf(op, parameters);
  if (!grads.length) return full([], 0);
  const total = withGradMode(false, () => tidy(() => {
    const dev = grads[0].device;
    const norms = grads.map((g) => {
      const n = pNorm(g, p);
      return n.device === dev ? n : n.to(dev);
    });
    return pNorm(stack(norms, 0), p);
  }));
  const scale = () => withGradMode(false, () => {
    const coef = tidy(() => clamp(binaryOp('div', maxNorm, binaryOp('add', total, 1e-6)), null, 1));
    for (const g of grads) {
      const c = coef.device === g.device ? coef : coef.to(g.device);
      g.mul_(c.dtype === g.dtype ? c : c.to({ dtype: g.dtype }));
      if (c !== coef) c.dispose();
    }
    coef.dispose();
    return total;
  });
  if (!o.errorIfNonfinite) return scale();
  return total.item().then((v) => {
    if (!Number.isFinite(v)) {
      total.dispose();
      throw new Error(`The total norm of order ${String(o.normType)} for gradients from \`parameters\` is non-finite, so it cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set \`error_if_nonfinite=False\``);
    }
    return scale();
  });
}

/** `nn.utils.clip_grad_value_(parameters, clipValue, foreach = null)`: clamps every gradient to [-clipValue, clipValue] in place. */
export function clipGradValue_(parameters: ParamsLike, clipValue: number, ...args: PyArgs<[foreach: boolean | null], { foreach?: boolean | null }>): void {
  bindArgs('clip_grad_value_', ['foreach'], args, { foreach: null as boolean | null }, 2);
  if (typeof clipValue !== 'number' || Number.isNaN(clipValue)) throw new TypeError(`clip_grad_value_(): clipValue must be a number, got ${String(clipValue)}`);
  const v = Math.abs(clipValue);
  withGradMode(false, () => {
    for (const g of gradsOf('clip_grad_value_', parameters)) g.clamp_(-v, v);
  });
}
