/**
 * Names the tutorials and d2l use that are other ops in a few steps: `torch.cosh`, `torch.sinh`
 * (from `exp`/`expm1`, so small arguments keep their precision), `torch.normal` (PyTorch's three
 * forms), `torch.swapaxes`/`swapdims` (`transpose`), and the methods `t_()` and `type()`.
 */
import { DTYPES, type DType } from '../dtype.js';
import { scopedGradMode } from '../autograd/graph.js';
import { Tensor } from '../tensor.js';
import { broadcastShapes } from '../shape.js';
import { randn, type RandomOptions } from './creation.js';
import { binaryOp, unaryApi, unaryOp } from './elementwise.js';
import { bindArgs, REQUIRED, type PyArgs } from '../args.js';
import { normal_ } from './random.js';
import { tidy } from './scoped.js';
import { to } from './copy.js';
import * as V from './views.js';

const tensorArg = (op: string, t: unknown): Tensor => {
  if (!(t instanceof Tensor)) throw new TypeError(`${op}(): argument 'input' must be Tensor, not ${t === null ? 'null' : typeof t}`);
  return t;
};

/** `torch.cosh(input)`: (eˣ + e⁻ˣ)/2; integer inputs give float32. */
export function cosh(input: Tensor, ...rest: []): Tensor {
  bindArgs('cosh', [], rest, {}, 1);
  return tidy(() => binaryOp('mul', binaryOp('add', unaryApi('exp', tensorArg('cosh', input)), unaryOp('exp', unaryOp('neg', floated(input)))), 0.5));
}

/** `torch.sinh(input)`: (expm1(x) − expm1(−x))/2, exact to rounding near 0; integer inputs give float32. */
export function sinh(input: Tensor, ...rest: []): Tensor {
  bindArgs('sinh', [], rest, {}, 1);
  return tidy(() => binaryOp('mul', binaryOp('sub', unaryApi('expm1', tensorArg('sinh', input)), unaryOp('expm1', unaryOp('neg', floated(input)))), 0.5));
}
const floated = (x: Tensor): Tensor => (x.dtype === 'float32' || x.dtype === 'float16' || x.dtype === 'bfloat16' ? x : V.cast(x, 'float32'));

/**
 * `torch.normal`: `normal(mean, std, size, {generator, dtype, device, requiresGrad})` with
 * numbers (d2l's `torch.normal(0, 0.01, [n, 1])`), or `normal(mean, std, {generator})` with a
 * tensor mean and/or std (broadcast; differentiable in both, as `mean + std·z`).
 */
export function normal(mean: Tensor | number, std: Tensor | number, ...args: PyArgs<[size: number[]], { size?: number[] } & RandomOptions>): Tensor {
  const o = bindArgs('normal', ['size', 'generator', 'dtype', 'device', 'requiresGrad'], args, { size: null as number[] | null } as { size: number[] | null } & RandomOptions, 2, 1);
  const { size, requiresGrad, ...opts } = o;
  if (typeof mean === 'number' && typeof std === 'number') {
    if (size === null) throw new TypeError("normal() missing 1 required argument: 'size' (with a number mean and std)");
    if (!(std >= 0)) throw new RangeError(`normal expects std >= 0.0, but found std ${std}`);
    const t = randn(size, opts);
    if (mean !== 0 || std !== 1) scopedGradMode(false, () => normal_(t, mean, std, { generator: opts.generator ?? null }));
    return requiresGrad ? t.requiresGrad_() : t;
  }
  if (size !== null) throw new TypeError('normal(): size is taken only with a number mean and std');
  if (opts.dtype !== undefined || opts.device !== undefined || requiresGrad) throw new TypeError("normal(): dtype, device and requiresGrad are taken only with a number mean and std (the tensors' are used)");
  const like = (mean instanceof Tensor ? mean : std) as Tensor;
  const shape = broadcastShapes(mean instanceof Tensor ? mean.shape : [], std instanceof Tensor ? std.shape : []);
  return tidy(() => binaryOp('add', mean, binaryOp('mul', randn(shape, { dtype: like.dtype, device: like.device, generator: opts.generator }), std)));
}

/** `torch.swapaxes(input, axis0, axis1)` (NumPy's name for `transpose`; `swapdims` is the same). */
export function swapaxes(input: Tensor, ...args: PyArgs<[axis0: number, axis1: number], { axis0?: number; axis1?: number }>): Tensor {
  const o = bindArgs('swapaxes', ['axis0', 'axis1'], args, { axis0: REQUIRED as number, axis1: REQUIRED as number }, 1);
  return V.transpose(tensorArg('swapaxes', input), o.axis0, o.axis1);
}
/** `torch.swapdims(input, dim0, dim1)`. */
export function swapdims(input: Tensor, ...args: PyArgs<[dim0: number, dim1: number], { dim0?: number; dim1?: number }>): Tensor {
  const o = bindArgs('swapdims', ['dim0', 'dim1'], args, { dim0: REQUIRED as number, dim1: REQUIRED as number }, 1);
  return V.transpose(tensorArg('swapdims', input), o.dim0, o.dim1);
}

/** `x.t_()`: x becomes its own transpose (≤ 2 dims), in place; refused for tensors that require grad. */
export function t_(x: Tensor): Tensor {
  x._check('t_');
  if (x.ndim > 2) throw new RangeError(`t_() expects a tensor with <= 2 dimensions, but self is ${x.ndim}D`);
  if (x.requiresGrad) {
    throw new Error(x.isLeaf ? 'a leaf Variable that requires grad is being used in an in-place operation. (t_)' : 't_(): an in-place transpose of a tensor on the autograd tape is not supported; use t()');
  }
  const v = V.t2(x);
  x._setData(v);
  v.dispose();
  return x;
}

/** PyTorch's legacy type names of the dtypes. */
const LEGACY: Record<DType, string> = {
  float32: 'FloatTensor', float16: 'HalfTensor', bfloat16: 'BFloat16Tensor', int64: 'LongTensor', int32: 'IntTensor', uint8: 'ByteTensor', bool: 'BoolTensor',
} as Record<DType, string>;

/**
 * `x.type()`: the legacy type name (`'torch.FloatTensor'`, `'torch.cuda.FloatTensor'` on a GPU);
 * `x.type(dtype)`: x in that dtype (x itself when it already is), as `x.to(dtype)`.
 */
export function type(x: Tensor, dtype?: DType): string | Tensor {
  x._check('type');
  if (dtype === undefined) return `torch.${x.device.type === 'cpu' ? '' : 'cuda.'}${LEGACY[x.dtype]}`;
  if (typeof dtype !== 'string' || !DTYPES.includes(dtype)) throw new TypeError(`type(): expected a dtype such as 'float32', got ${String(dtype)}`);
  return to(x, dtype);
}
