/**
 * Reductions over dims, with `keepdim`. The reduced dims are permuted last and the input made
 * contiguous (a copy only when the layout needs it), so one [outer, inner] → [outer] kernel
 * serves every combination of dims. Output dtypes follow PyTorch: sum/prod of integers and
 * bools give int64, mean needs a float, arg-reductions give int64, all/any give bool.
 */
import { isFloating, scalarName, storageCode, type DType } from '../dtype.js';
import { alloc, launch, ref, sameDevice, place } from '../runtime/dispatch.js';
import { normDim, numel } from '../shape.js';
import type { Tensor } from '../tensor.js';
import { ReduceOp } from '../../wgsl/reduce.js';
import { contiguous, permute, reshape } from './views.js';

/** Which dims to reduce: one, several, or all (undefined). */
export type Dims = number | number[] | undefined;

const NAMES: Record<ReduceOp, string> = {
  [ReduceOp.Sum]: 'sum', [ReduceOp.Prod]: 'prod', [ReduceOp.Max]: 'max', [ReduceOp.Min]: 'min', [ReduceOp.ArgMax]: 'argmax',
  [ReduceOp.ArgMin]: 'argmin', [ReduceOp.All]: 'all', [ReduceOp.Any]: 'any', [ReduceOp.Mean]: 'mean', [ReduceOp.SumSq]: 'sum_sq',
};

function outDType(op: ReduceOp, dt: DType): DType {
  switch (op) {
    case ReduceOp.Sum: case ReduceOp.Prod: case ReduceOp.SumSq:
      return isFloating(dt) ? dt : 'int64';
    case ReduceOp.Mean:
      if (!isFloating(dt)) {
        throw new TypeError(`mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: ${scalarName(dt)}`);
      }
      return dt;
    case ReduceOp.ArgMax: case ReduceOp.ArgMin:
      return 'int64';
    case ReduceOp.All: case ReduceOp.Any:
      return 'bool';
    default:
      return dt;
  }
}

/** Reduces `x` over `dims` with a reduction op. */
export function reduce(op: ReduceOp, x: Tensor, dims: Dims, keepdim = false): Tensor {
  const name = NAMES[op];
  sameDevice(name, [x]);
  const all = dims === undefined;
  const list = all ? x.shape.map((_, i) => i) : (Array.isArray(dims) ? dims : [dims]).map((d) => normDim(d, x.ndim));
  if (new Set(list).size !== list.length) throw new RangeError(`dim ${list.find((d, i) => list.indexOf(d) !== i)} appears multiple times in the list of dims`);
  const reduced = new Set(list);
  const kept = x.shape.map((_, i) => i).filter((i) => !reduced.has(i));
  const inner = numel(list.map((d) => x.shape[d] ?? 1));
  const outer = numel(kept.map((d) => x.shape[d]));
  const outShape = keepdim ? x.shape.map((s, i) => (reduced.has(i) || (all && x.ndim === 0) ? 1 : s)) : kept.map((d) => x.shape[d]);
  if (inner === 0 && op !== ReduceOp.Sum && op !== ReduceOp.Prod && op !== ReduceOp.All && op !== ReduceOp.Any && op !== ReduceOp.SumSq) {
    throw new RangeError(`${name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument. (input shape [${x.shape.join(', ')}])`);
  }
  const outDt = outDType(op, x.dtype);
  const perm = x.ndim ? [...kept, ...list] : [];
  const permuted = perm.every((p, i) => p === i) ? x : permute(x, perm);
  const src = contiguous(permuted);
  const out = alloc(outShape, outDt, x.device);
  if (outer > 0) {
    launch(x.device, {
      k: 'reduce', op, a: ref(src), dt: storageCode(x.dtype), out: place(out), outDt: storageCode(outDt), outer, inner,
    });
  }
  if (src !== permuted) src.dispose();
  if (permuted !== x) permuted.dispose();
  return out;
}

/** The values and indices that `max(dim)` / `min(dim)` return. */
export interface ValuesIndices {
  values: Tensor;
  indices: Tensor;
}

/** `max()` over everything, or `{values, indices}` over one dim. */
export function maxMin(isMax: boolean, x: Tensor, dim?: number, keepdim = false): Tensor | ValuesIndices {
  const v = isMax ? ReduceOp.Max : ReduceOp.Min, a = isMax ? ReduceOp.ArgMax : ReduceOp.ArgMin;
  if (dim === undefined) return reduce(v, x, undefined);
  return { values: reduce(v, x, dim, keepdim), indices: reduce(a, x, dim, keepdim) };
}

/** `argmax`/`argmin`: over one dim, or over the flattened tensor when `dim` is undefined. */
export function argReduce(isMax: boolean, x: Tensor, dim?: number, keepdim = false): Tensor {
  const op = isMax ? ReduceOp.ArgMax : ReduceOp.ArgMin;
  if (dim !== undefined) return reduce(op, x, dim, keepdim);
  const flat = reshape(x, [-1]);
  const out = reduce(op, flat, 0, false);
  flat.dispose();
  if (!keepdim) return out;
  const shaped = reshape(out, x.shape.map(() => 1));
  out.dispose();
  return shaped;
}
