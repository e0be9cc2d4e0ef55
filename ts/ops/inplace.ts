/**
 * PyTorch's in-place arithmetic: `x.add_(y)`, `sub_`, `mul_`, `div_`, `clamp_`, `neg_`, `fill_`,
 * `zero_`. Each is its out-of-place op written back into `x` with `copy_`, so it is the same
 * kernels, and the write moves `x`'s version counter (ts/runtime/storage.ts).
 *
 * The hard part is autograd. On the tape, the op's rule may save what it read (`mul` saves its
 * operands), and the write into `x` would change it under the rule, which the version counter
 * would then refuse at backward. PyTorch saves the original where a rule needs it; here, when `x`
 * is on the tape, the op reads a clone of `x`, so what a rule saved is never written. Off the tape
 * (`torch.noGrad`, or tensors that need no gradient, the common case: an optimizer written by
 * hand, `p.grad.zero_()`) there is no clone.
 */
import { isFloating, scalarName, type DType } from '../dtype.js';
import { isGradEnabled } from '../autograd/graph.js';
import { Tensor } from '../tensor.js';
import { clone, copyInto } from './copy.js';
import { full } from './creation.js';
import { tidy } from './scoped.js';

/** PyTorch's `can_cast`: no float into an integer, nothing but bool into bool. */
const kind = (d: DType): number => (d === 'bool' ? 0 : isFloating(d) ? 2 : 1);

/** Writes `compute(x)` back into `x`, with PyTorch's checks; returns `x`. */
export function inPlace(op: string, x: Tensor, compute: (src: Tensor) => Tensor): Tensor {
  x._check(op);
  if (x.requiresGrad && x.isLeaf && isGradEnabled()) throw new Error(`a leaf Variable that requires grad is being used in an in-place operation. (${op})`);
  const tracked = x.requiresGrad && isGradEnabled();
  tidy(() => {
    const r = compute(tracked ? clone(x) : x);
    if (String(r.shape) !== String(x.shape)) {
      throw new RangeError(`${op}: output with shape [${x.shape.join(', ')}] doesn't match the broadcast shape [${r.shape.join(', ')}]`);
    }
    if (kind(r.dtype) > kind(x.dtype)) throw new TypeError(`${op}: result type ${scalarName(r.dtype)} can't be cast to the desired output type ${scalarName(x.dtype)}`);
    copyInto(x, r);
  });
  return x;
}

/** `x.fill_(value)`: every element set to `value` (a number, or a 0-dim tensor). */
export function fill_(x: Tensor, value: number | boolean | Tensor): Tensor {
  if (value instanceof Tensor && value.ndim) throw new RangeError(`fill_ only supports 0-dimension value tensor but got tensor with ${value.ndim} dimensions.`);
  return inPlace('fill_', x, (src) => (value instanceof Tensor ? value.to(src.device).expand(src.shape.slice()).to(src.dtype) : full(src.shape.slice(), value, { dtype: src.dtype, device: src.device })));
}
