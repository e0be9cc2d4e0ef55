/**
 * `torch.nn.utils`: `clipGradNorm_` and `clipGradValue_`, which scale or clamp the parameters'
 * gradients in place, as PyTorch's do (grad mode off, each gradient on its own device; the total
 * norm lives on the first gradient's device), on the multi-tensor commands of ts/ops/foreach.ts.
 */
import { withGradMode } from '../autograd/graph.js';
import type { Device } from '../device.js';
import type { DType } from '../dtype.js';
import { full } from '../ops/creation.js';
import { binaryOp, clamp } from '../ops/elementwise.js';
import { bindArgs, type PyArgs } from '../args.js';
import { byDevice, composedNorm, foreachClamp_, foreachMul_, foreachNormOf, normable } from '../ops/foreach.js';
import { tidy } from '../ops/scoped.js';
import { cat } from '../ops/shape.js';
import * as V from '../ops/views.js';
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

/** Options of `clipGradNorm_` after (parameters, maxNorm). */
export interface ClipGradNormOptions { normType?: number | 'inf'; errorIfNonfinite?: boolean; foreach?: boolean | null }

/** The dtype of `torch.stack` of the gradients' norms: theirs when they agree, else float32. */
function normsDtype(grads: Tensor[]): DType {
  return grads.every((g) => g.dtype === grads[0].dtype) ? grads[0].dtype : 'float32';
}

/**
 * The norms of all gradients, as one 1-D tensor on `dev` in `dtype`: per device one `foreachNorm`
 * command over the contiguous float32, float16 and bfloat16 gradients (unless `foreach` is
 * false), and the composed norm of each other one.
 */
function gradNorms(op: string, grads: Tensor[], p: number, foreach: boolean | null | undefined, dev: Device, dtype: DType): Tensor {
  const parts: Tensor[] = [];
  for (const [, list] of byDevice(grads)) {
    const fused = foreach === false ? [] : list.filter(normable), taken = new Set(fused);
    if (fused.length) parts.push(foreachNormOf(op, fused, p));
    for (const g of list) if (!taken.has(g)) parts.push(V.reshape(composedNorm(g, p), [1]));
  }
  const moved = parts.map((t) => (t.device === dev && t.dtype === dtype ? t : t.to({ device: dev, dtype })));
  return moved.length === 1 ? moved[0] : cat(moved, 0);
}

/**
 * `nn.utils.clip_grad_norm_(parameters, maxNorm, normType = 2, errorIfNonfinite = false, foreach = null)`:
 * scales every gradient by `min(1, maxNorm / (total + 1e-6))`, the total being the norm of the
 * gradients' norms; returns the total norm (a 0-d tensor on the first gradient's device). As
 * PyTorch's foreach path: one `foreachNorm` and one `foreachMul` command per device for the
 * float32 contiguous gradients, and a few commands for the total and the coefficient, all on the
 * device (nothing is read). `foreach: false` composes each gradient's norm and scale instead.
 * With `errorIfNonfinite` the check needs the total's value, so the call returns a Promise of it
 * (and raises PyTorch's error when it is NaN or infinite, before scaling).
 */
export function clipGradNorm_(parameters: ParamsLike, maxNorm: number, ...args: PyArgs<[normType: number | 'inf', errorIfNonfinite: boolean, foreach: boolean | null], ClipGradNormOptions>): Tensor | Promise<Tensor> {
  const op = 'clip_grad_norm_';
  const o = bindArgs(op, ['normType', 'errorIfNonfinite', 'foreach'], args, { normType: 2, errorIfNonfinite: false, foreach: null } as ClipGradNormOptions, 2);
  const p = o.normType === 'inf' ? Infinity : Number(o.normType);
  if (!(p > 0)) throw new RangeError(`${op}(): normType must be positive (or 'inf'), got ${String(o.normType)}`);
  if (typeof maxNorm !== 'number' || Number.isNaN(maxNorm)) throw new TypeError(`${op}(): maxNorm must be a number, got ${String(maxNorm)}`);
  if (o.foreach != null && typeof o.foreach !== 'boolean') throw new TypeError(`${op}(): foreach must be a boolean or null, got ${typeof o.foreach}`);
  const grads = gradsOf(op, parameters);
  if (!grads.length) return full([], 0);
  const dev = grads[0].device;
  const total = withGradMode(false, () => tidy(() => composedNorm(gradNorms(op, grads, p, o.foreach, dev, normsDtype(grads)), p)));
  const scale = () => withGradMode(false, () => {
    const coef = tidy(() => clamp(binaryOp('div', maxNorm, binaryOp('add', total, 1e-6)), null, 1));
    // float32 gradients: one foreachMul a device (unless foreach: false); the others (16-bit) by the coefficient in their dtype
    const kernel = new Set(o.foreach === false ? [] : grads.filter((g) => g.dtype === 'float32'));
    if (kernel.size) foreachMul_([...kernel], coef);
    for (const g of grads) {
      if (kernel.has(g)) continue;
      const c = tidy(() => (coef.device === g.device && coef.dtype === g.dtype ? coef : coef.to({ device: g.device, dtype: g.dtype })));
      g.mul_(c);
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

/**
 * `nn.utils.clip_grad_value_(parameters, clipValue, foreach = null)`: clamps every gradient to
 * [-clipValue, clipValue] in place: one `foreachClamp` command per device for the float32
 * contiguous gradients (PyTorch's `_foreach_clamp_min_`/`_foreach_clamp_max_`), `clamp_` for the
 * others and for all with `foreach: false`.
 */
export function clipGradValue_(parameters: ParamsLike, clipValue: number, ...args: PyArgs<[foreach: boolean | null], { foreach?: boolean | null }>): void {
  const o = bindArgs('clip_grad_value_', ['foreach'], args, { foreach: null as boolean | null }, 2);
  if (typeof clipValue !== 'number' || Number.isNaN(clipValue)) throw new TypeError(`clip_grad_value_(): clipValue must be a number, got ${String(clipValue)}`);
  if (o.foreach != null && typeof o.foreach !== 'boolean') throw new TypeError(`clip_grad_value_(): foreach must be a boolean or null, got ${typeof o.foreach}`);
  // PyTorch's clamp_min_(-v) then clamp_max_(v): a negative v leaves every value at v
  const v = clipValue;
  withGradMode(false, () => {
    const grads = gradsOf('clip_grad_value_', parameters);
    if (o.foreach === false) for (const g of grads) g.clamp_(-v, v);
    else foreachClamp_(grads, -v, v);
  });
}
