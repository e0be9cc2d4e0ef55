/**
 * The everyday `torch.*` functions that are other ops under another name or in a few steps:
 * the function forms of the view methods (`torch.transpose(x, 0, 1)`, `torch.reshape`, …),
 * `unbind`, `argsort`, `amax`/`amin`, `meshgrid`, `repeatInterleave` by a number, `isinf`,
 * `isfinite`, `isclose`/`allclose`. All compose from differentiable ops, so autograd needs no
 * rules here; each binds PyTorch's signature (positional or keywords, unknown keys raise).
 */
import { isFloating, scalarName } from '../dtype.js';
import { Tensor } from '../tensor.js';
import { normDim } from '../shape.js';
import { full } from './creation.js';
import { binaryOp, unaryOp } from './elementwise.js';
import { sort } from './indexing.js';
import { bindArgs, REQUIRED, type PyArgs } from '../args.js';
import { reduce } from './reduce.js';
import { tidy } from './scoped.js';
import * as V from './views.js';
import { ReduceOp } from '../ir/ops.js';

const R = REQUIRED;
const tensorArg = (op: string, t: unknown, what = 'input'): Tensor => {
  if (!(t instanceof Tensor)) throw new TypeError(`${op}(): argument '${what}' must be Tensor, not ${t === null ? 'null' : typeof t}`);
  return t;
};

/** `torch.transpose(input, dim0, dim1)`. */
export function transpose(input: Tensor, ...args: PyArgs<[dim0: number, dim1: number], { dim0?: number; dim1?: number }>): Tensor {
  const o = bindArgs('transpose', ['dim0', 'dim1'], args, { dim0: R as number, dim1: R as number }, 1);
  return V.transpose(tensorArg('transpose', input), o.dim0, o.dim1);
}

/** `torch.permute(input, dims)`: dims as one array. */
export function permute(input: Tensor, ...args: PyArgs<[dims: number[]], { dims?: number[] }>): Tensor {
  const o = bindArgs('permute', ['dims'], args, { dims: R as number[] }, 1);
  if (!Array.isArray(o.dims)) throw new TypeError(`permute(): argument 'dims' must be a sequence of ints, not ${typeof o.dims}`);
  return V.permute(tensorArg('permute', input), o.dims);
}

/** `torch.reshape(input, shape)`: a view when the strides allow, else a copy. */
export function reshape(input: Tensor, ...args: PyArgs<[shape: number[]], { shape?: number[] }>): Tensor {
  const o = bindArgs('reshape', ['shape'], args, { shape: R as number[] }, 1);
  if (!Array.isArray(o.shape)) throw new TypeError(`reshape(): argument 'shape' must be a sequence of ints, not ${typeof o.shape}`);
  return V.reshape(tensorArg('reshape', input), o.shape);
}

/** `torch.squeeze(input, dim?)`: size-1 dims removed (all, or the one named). */
export function squeeze(input: Tensor, ...args: PyArgs<[dim: number | null], { dim?: number | null }>): Tensor {
  const o = bindArgs('squeeze', ['dim'], args, { dim: null as number | null }, 1);
  return V.squeeze(tensorArg('squeeze', input), o.dim ?? undefined);
}

/** `torch.unsqueeze(input, dim)`. */
export function unsqueeze(input: Tensor, ...args: PyArgs<[dim: number], { dim?: number }>): Tensor {
  const o = bindArgs('unsqueeze', ['dim'], args, { dim: R as number }, 1);
  return V.unsqueeze(tensorArg('unsqueeze', input), o.dim);
}

/** `torch.flatten(input, startDim = 0, endDim = -1)`. */
export function flatten(input: Tensor, ...args: PyArgs<[startDim: number, endDim: number], { startDim?: number; endDim?: number }>): Tensor {
  const o = bindArgs('flatten', ['startDim', 'endDim'], args, { startDim: 0, endDim: -1 }, 1);
  return V.flatten(tensorArg('flatten', input), o.startDim, o.endDim);
}

/** `torch.narrow(input, dim, start, length)`: a view of `length` entries from `start`. */
export function narrow(input: Tensor, ...args: PyArgs<[dim: number, start: number, length: number], { dim?: number; start?: number; length?: number }>): Tensor {
  const o = bindArgs('narrow', ['dim', 'start', 'length'], args, { dim: R as number, start: R as number, length: R as number }, 1);
  tensorArg('narrow', input);
  if (input.ndim === 0) throw new RangeError('narrow() cannot be applied to a 0-dim tensor.');
  const size = input.shape[normDim(o.dim, input.ndim)], start = o.start < 0 ? o.start + size : o.start;
  if (start < 0 || start > size) throw new RangeError(`narrow(): start out of range (expected to be in range of [${-size}, ${size}], but got ${o.start})`);
  if (o.length < 0 || start + o.length > size) throw new RangeError(`narrow(): start (${start}) + length (${o.length}) exceeds dimension size (${size}).`);
  return V.narrow(input, o.dim, start, o.length);
}

/** `torch.unbind(input, dim = 0)`: the slices along `dim`, as views. */
export function unbind(input: Tensor, ...args: PyArgs<[dim: number], { dim?: number }>): Tensor[] {
  const o = bindArgs('unbind', ['dim'], args, { dim: 0 }, 1);
  tensorArg('unbind', input);
  if (input.ndim === 0) throw new RangeError('unbind(): Dimension specified as 0 but tensor has no dimensions');
  const d = normDim(o.dim, input.ndim);
  return Array.from({ length: input.shape[d] }, (_, i) => V.select(input, d, i));
}

/** `torch.argsort(input, dim = -1, descending = false, {stable})`: the indices that sort `input` (always stable here). */
export function argsort(input: Tensor, ...args: PyArgs<[dim: number, descending: boolean], { dim?: number; descending?: boolean; stable?: boolean }>): Tensor {
  const o = bindArgs('argsort', ['dim', 'descending', 'stable'], args, { dim: -1, descending: false, stable: false }, 1, 2);
  const r = sort(tensorArg('argsort', input), o.dim, o.descending);
  r.values.dispose();
  return r.indices;
}

/** `amax`/`amin`: the max/min over `dim` (all dims when empty); ties share the gradient evenly. */
function extreme(op: 'amax' | 'amin', input: Tensor, args: readonly unknown[]): Tensor {
  const o = bindArgs(op, ['dim', 'keepdim'], args, { dim: [] as number | number[], keepdim: false }, 1);
  tensorArg(op, input);
  const dims = typeof o.dim === 'number' ? [o.dim] : o.dim;
  const reduced = dims.length ? dims.map((d) => normDim(d, Math.max(1, input.ndim))) : input.shape.map((_, i) => i);
  for (const d of reduced) {
    if (input.ndim && input.shape[d] === 0) throw new RangeError(`${op}(): Expected reduction dim ${d} to have non-zero size.`);
  }
  if (input.ndim === 0 && input.numel() === 0) throw new RangeError(`${op}(): Expected reduction dim 0 to have non-zero size.`);
  return reduce(op === 'amax' ? ReduceOp.Max : ReduceOp.Min, input, dims.length ? dims : undefined, o.keepdim);
}
type ExtremeArgs = PyArgs<[dim: number | number[], keepdim: boolean], { dim?: number | number[]; keepdim?: boolean }>;
/** `torch.amax(input, dim = [], keepdim = false)`. */
export const amax = (input: Tensor, ...args: ExtremeArgs): Tensor => extreme('amax', input, args);
/** `torch.amin(input, dim = [], keepdim = false)`. */
export const amin = (input: Tensor, ...args: ExtremeArgs): Tensor => extreme('amin', input, args);

/**
 * `torch.meshgrid(...tensors, {indexing = 'ij'})` (or one array of tensors): coordinate grids
 * as expanded views; 'xy' swaps the first two dims of the grids (Cartesian indexing).
 */
export function meshgrid(...args: (Tensor | Tensor[] | { indexing?: 'ij' | 'xy' })[]): Tensor[] {
  let rest = args;
  let indexing: string = 'ij';
  const last = args[args.length - 1];
  if (last && !(last instanceof Tensor) && !Array.isArray(last)) {
    indexing = bindArgs('meshgrid', ['indexing'], [last], { indexing: 'ij' as string }).indexing;
    rest = args.slice(0, -1);
  }
  const ts = (rest.length === 1 && Array.isArray(rest[0]) ? rest[0] : rest) as Tensor[];
  if (indexing !== 'ij' && indexing !== 'xy') throw new RangeError(`torch.meshgrid: indexing must be one of "xy" or "ij", but received: ${indexing}`);
  if (!ts.length) throw new RangeError('torch.meshgrid: Expected at least one tensor');
  ts.forEach((t) => {
    tensorArg('meshgrid', t, 'tensors');
    if (t.ndim > 1) throw new RangeError(`torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: ${t.ndim}D tensor`);
    if (t.dtype !== ts[0].dtype) throw new TypeError(`torch.meshgrid: Expected all tensors in the tensor list to have the same dtype, but got ${scalarName(ts[0].dtype)} and ${scalarName(t.dtype)}`);
    if (t.device !== ts[0].device) throw new RangeError(`torch.meshgrid: Expected all tensors in the tensor list to have the same device, but got ${ts[0].device} and ${t.device}`);
  });
  const swap = indexing === 'xy' && ts.length >= 2;
  const sizes = ts.map((t) => t.numel());
  const axis = (i: number) => (swap && i < 2 ? 1 - i : i);
  const shape = ts.map((_, j) => sizes[ts.findIndex((__, i) => axis(i) === j)]);
  return ts.map((t, i) => tidy(() => V.expand(V.reshape(t, shape.map((s, j) => (j === axis(i) ? s : 1))), shape)));
}

/**
 * `torch.repeat_interleave(input, repeats, dim = null)` with a number of repeats: each element
 * (along `dim`, or of the flattened input) `repeats` times in a row. A tensor of repeats is in
 * ts/ops/host-shaped.ts (its result's size is device data).
 */
export function repeatInterleaveBy(input: Tensor, repeats: number, dim: number | null): Tensor {
  if (!Number.isInteger(repeats)) throw new TypeError(`repeat_interleave(): argument 'repeats' must be int or Tensor, not ${typeof repeats}`);
  if (repeats < 0) throw new RangeError('repeat_interleave: repeats can not be negative');
  return tidy(() => {
    const x = dim === null ? V.reshape(input, [-1]) : input;
    const d = dim === null ? 0 : normDim(dim, Math.max(1, x.ndim));
    if (x.ndim === 0) return V.reshape(V.expand(V.reshape(x, [1]), [repeats]), [repeats]);
    const u = V.unsqueeze(x, d + 1);
    const shape = u.shape.slice();
    shape[d + 1] = repeats;
    const e = V.expand(u, shape);
    const out = x.shape.slice();
    out[d] *= repeats;
    return V.reshape(e, out);
  });
}

/** `torch.isinf(input)`: true at ±Inf (never for integer and bool tensors). */
export function isinf(input: Tensor, ...rest: []): Tensor {
  bindArgs('isinf', [], rest, {}, 1);
  tensorArg('isinf', input);
  if (!isFloating(input.dtype)) return full(input.shape.slice(), false, { dtype: 'bool', device: input.device });
  return tidy(() => binaryOp('eq', unaryOp('abs', input), Infinity));
}

/** `torch.isfinite(input)`: true where neither NaN nor ±Inf (everywhere for integer and bool tensors). */
export function isfinite(input: Tensor, ...rest: []): Tensor {
  bindArgs('isfinite', [], rest, {}, 1);
  tensorArg('isfinite', input);
  if (!isFloating(input.dtype)) return full(input.shape.slice(), true, { dtype: 'bool', device: input.device });
  return tidy(() => binaryOp('lt', unaryOp('abs', input), Infinity));
}

/** Keywords of `isclose`/`allclose`. */
export interface CloseOptions { rtol?: number; atol?: number; equalNan?: boolean }
type CloseArgs = PyArgs<[rtol: number, atol: number, equalNan: boolean], CloseOptions>;

/**
 * `torch.isclose(input, other, rtol = 1e-5, atol = 1e-8, equalNan = false)`: elementwise
 * `|input − other| ≤ atol + rtol·|other|`, or equal (so equal infinities are close).
 */
export function isclose(input: Tensor, other: Tensor, ...args: CloseArgs): Tensor {
  return closeness('isclose', input, other, args);
}

function closeness(op: string, input: Tensor, other: Tensor, args: readonly unknown[]): Tensor {
  const o = bindArgs(op, ['rtol', 'atol', 'equalNan'], args, { rtol: 1e-5, atol: 1e-8, equalNan: false }, 2);
  tensorArg(op, input);
  tensorArg(op, other, 'other');
  if (input.dtype !== other.dtype) throw new TypeError(`${op}: ${scalarName(input.dtype)} did not match ${scalarName(other.dtype)}`);
  if (o.rtol < 0) throw new RangeError(`${op}: rtol must be greater than or equal to zero, but got ${o.rtol}`);
  if (o.atol < 0) throw new RangeError(`${op}: atol must be greater than or equal to zero, but got ${o.atol}`);
  return tidy(() => {
    const eq = binaryOp('eq', input, other);
    if (input.dtype === 'bool') return eq;
    const a = isFloating(input.dtype) ? input : V.cast(input, 'float32'), b = isFloating(other.dtype) ? other : V.cast(other, 'float32');
    const diff = unaryOp('abs', binaryOp('sub', a, b));
    const bound = binaryOp('add', binaryOp('mul', unaryOp('abs', b), o.rtol), o.atol);
    // An infinite difference is never close (inf <= inf would say so when `other` is infinite).
    let close = binaryOp('logical_or', eq, binaryOp('logical_and', binaryOp('le', diff, bound), binaryOp('lt', diff, Infinity)));
    if (o.equalNan) close = binaryOp('logical_or', close, binaryOp('logical_and', unaryOp('isnan', a), unaryOp('isnan', b)));
    return close;
  });
}

/** `torch.allclose(input, other, rtol, atol, equalNan)`: whether every element is close; a sync point, so a Promise. */
export async function allclose(input: Tensor, other: Tensor, ...args: CloseArgs): Promise<boolean> {
  const all = tidy(() => reduce(ReduceOp.All, closeness('allclose', input, other, args), undefined));
  try {
    return (await all.values())[0] === true;
  } finally {
    all.dispose();
  }
}
