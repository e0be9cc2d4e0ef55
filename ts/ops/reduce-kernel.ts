/**
 * The forward of every reduction over dims, with `keepdim`, and `sumTo`: no autograd here, so
 * that views, elementwise ops and copies (whose gradients sum over broadcast dims) build on it
 * without importing the differentiable reductions (ts/ops/reduce.ts), which build on them.
 *
 * The reduced dims are permuted last and the input made contiguous (a copy only when the layout
 * needs it), so one [outer, inner] → [outer] kernel serves every combination of dims. Output
 * dtypes follow PyTorch: sum/prod of integers and bools give int64, mean needs a float (the mean
 * of nothing is NaN), arg-reductions give int64 and refuse bool, all/any give bool (uint8 for
 * uint8).
 */
import { isFloating, scalarName, storageCode, type DType } from '../dtype.js';
import { alloc, emit, ref, sameDevice, place } from '../runtime/dispatch.js';
import { contiguousStrides, normDim, numel } from '../shape.js';
import { view, type Tensor } from '../tensor.js';
import { ReduceOp } from '../ir/ops.js';
import { full } from './creation.js';
import { contiguous } from './cast.js';
import { needsGrad } from '../autograd/graph.js';

/** Which dims to reduce: one, several, or all (undefined). */
export type Dims = number | number[] | undefined;

export const NAMES: Record<ReduceOp, string> = {
  [ReduceOp.Sum]: 'sum', [ReduceOp.Prod]: 'prod', [ReduceOp.Max]: 'max', [ReduceOp.Min]: 'min', [ReduceOp.ArgMax]: 'argmax',
  [ReduceOp.ArgMin]: 'argmin', [ReduceOp.All]: 'all', [ReduceOp.Any]: 'any', [ReduceOp.Mean]: 'mean', [ReduceOp.SumSq]: 'sum_sq',
};

export function outDType(op: ReduceOp, dt: DType): DType {
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
      return dt === 'uint8' ? 'uint8' : 'bool'; // PyTorch keeps uint8 for all/any
    default:
      return dt;
  }
}

/** The input shape with reduced dims set to 1 (the shape a keepdim result has). */
export function keptShape(x: Tensor, dims: Dims): number[] {
  if (dims === undefined) return x.shape.map(() => 1);
  const list = (Array.isArray(dims) ? dims : [dims]).map((d) => normDim(d, x.ndim));
  return x.shape.map((s, i) => (list.includes(i) ? 1 : s));
}

/** The recorded sum to a shape, from ts/ops/reduce.ts (it builds on this file: no import back). */
let recordedSumTo: ((g: Tensor, dims: number[], shape: number[]) => Tensor) | null = null;

/** @internal Gives `sumTo` the recorded sum it takes for a `g` that needs a gradient. */
export function setRecordedSumTo(fn: typeof recordedSumTo): void {
  recordedSumTo = fn;
}

/**
 * Sums `g` down to `shape` (the reverse of broadcasting); returns `g` itself when nothing to do.
 * A `g` that needs a gradient (a backward with `createGraph`) is summed by the recorded op.
 */
export function sumTo(g: Tensor, shape: readonly number[]): Tensor {
  if (g.shape.length === shape.length && g.shape.every((s, i) => s === shape[i])) return g;
  const lead = g.ndim - shape.length;
  const dims = g.shape.map((_, i) => i).filter((i) => i < lead || (shape[i - lead] === 1 && g.shape[i] !== 1));
  if (recordedSumTo && needsGrad(g)) return recordedSumTo(g, dims, shape.slice());
  const s = reduceForward(ReduceOp.Sum, g, dims, true);
  if (s.ndim === shape.length) return s;
  // `s` is contiguous and records no gradient: dropping its kept dims is a plain view.
  const r = view(s, shape.slice(), contiguousStrides(shape.slice()));
  s.dispose();
  return r;
}

/** max/min/argmax/argmin refuse an empty reduction, in PyTorch's words (`name`: the op called). */
export function checkNonEmpty(op: ReduceOp, name: string, x: Tensor, dims: Dims, inner: number): void {
  if (inner !== 0 || ![ReduceOp.Max, ReduceOp.Min, ReduceOp.ArgMax, ReduceOp.ArgMin].includes(op)) return;
  if (dims === undefined) {
    throw new RangeError(`${name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument. (input shape [${x.shape.join(', ')}])`);
  }
  const d = (Array.isArray(dims) ? dims : [dims]).map((v) => normDim(v, x.ndim)).find((v) => x.shape[v] === 0);
  throw new RangeError(`${name}(): Expected reduction dim ${d} to have non-zero size. (input shape [${x.shape.join(', ')}])`);
}

export function reduceForward(op: ReduceOp, x: Tensor, dims: Dims, keepdim = false, name = NAMES[op]): Tensor {
  sameDevice(name, [x]);
  const all = dims === undefined;
  const list = all ? x.shape.map((_, i) => i) : (Array.isArray(dims) ? dims : [dims]).map((d) => normDim(d, x.ndim));
  if (new Set(list).size !== list.length) throw new RangeError(`dim ${list.find((d, i) => list.indexOf(d) !== i)} appears multiple times in the list of dims`);
  const reduced = new Set(list);
  const kept = x.shape.map((_, i) => i).filter((i) => !reduced.has(i));
  const inner = numel(list.map((d) => x.shape[d] ?? 1));
  const outer = numel(kept.map((d) => x.shape[d]));
  const outShape = keepdim ? x.shape.map((s, i) => (reduced.has(i) || (all && x.ndim === 0) ? 1 : s)) : kept.map((d) => x.shape[d]);
  checkNonEmpty(op, name, x, dims, inner);
  const outDt = outDType(op, x.dtype);
  // The mean of nothing is NaN, as in PyTorch (0 / 0).
  if (op === ReduceOp.Mean && inner === 0) return full(outShape, NaN, { dtype: outDt, device: x.device });
  const perm = x.ndim ? [...kept, ...list] : [];
  const permuted = perm.every((p, i) => p === i) ? x : view(x, perm.map((d) => x.shape[d]), perm.map((d) => x._strides[d]));
  const src = contiguous(permuted);
  const out = alloc(outShape, outDt, x.device);
  if (outer > 0) emitReduce(op, src, out, outer, inner);
  if (src !== permuted) src.dispose();
  if (permuted !== x) permuted.dispose();
  return out;
}

/** Queues the reduction of a contiguous [outer, inner] block into `out` (in how many passes is the device's choice: ts/worker/gpu/rows.ts). */
function emitReduce(op: ReduceOp, src: Tensor, out: Tensor, outer: number, inner: number): void {
  emit(src.device, { k: 'reduce', op, a: ref(src), dt: storageCode(src.dtype), out: place(out), outDt: storageCode(out.dtype), outer, inner });
}
