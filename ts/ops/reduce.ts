/**
 * Reductions over dims, with `keepdim`. The reduced dims are permuted last and the input made
 * contiguous (a copy only when the layout needs it), so one [outer, inner] → [outer] kernel
 * serves every combination of dims. Output dtypes follow PyTorch: sum/prod of integers and
 * bools give int64, mean needs a float (the mean of nothing is NaN), arg-reductions give int64 and
 * refuse bool, all/any give bool (uint8 for uint8).
 */
import { isFloating, scalarName, storageCode, type DType } from '../dtype.js';
import { alloc, launch, ref, sameDevice, place } from '../runtime/dispatch.js';
import { normDim, numel } from '../shape.js';
import type { Tensor } from '../tensor.js';
import { ReduceOp } from '../ir/ops.js';
import { op as recorded } from '../autograd/graph.js';
import { arange, full } from './creation.js';
import { checkDtypes } from './registry.js';
import { binaryOp, where } from './elementwise.js';
import { cast, contiguous, expand, permute, reshape } from './views.js';
import { autocastCall, autocasting } from '../amp/autocast.js';

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
      return dt === 'uint8' ? 'uint8' : 'bool'; // PyTorch keeps uint8 for all/any
    default:
      return dt;
  }
}

/** The input shape with reduced dims set to 1 (the shape a keepdim result has). */
function keptShape(x: Tensor, dims: Dims): number[] {
  if (dims === undefined) return x.shape.map(() => 1);
  const list = (Array.isArray(dims) ? dims : [dims]).map((d) => normDim(d, x.ndim));
  return x.shape.map((s, i) => (list.includes(i) ? 1 : s));
}

/** Broadcasts a reduction's gradient back over the input's shape (contiguous). */
function spread(g: Tensor, x: Tensor, dims: Dims): Tensor {
  const r = reshape(g, keptShape(x, dims));
  const e = expand(r, x.shape.slice());
  const c = cast(e, x.dtype);
  r.dispose();
  e.dispose();
  return c;
}

/** Sums `g` down to `shape` (the reverse of broadcasting); returns `g` itself when nothing to do. */
export function sumTo(g: Tensor, shape: readonly number[]): Tensor {
  if (g.shape.length === shape.length && g.shape.every((s, i) => s === shape[i])) return g;
  const lead = g.ndim - shape.length;
  const dims = g.shape.map((_, i) => i).filter((i) => i < lead || (shape[i - lead] === 1 && g.shape[i] !== 1));
  const s = reduceForward(ReduceOp.Sum, g, dims, true);
  if (s.ndim === shape.length) return s;
  const r = reshape(s, shape.slice());
  s.dispose();
  return r;
}

/**
 * `torch.sum`, `torch.prod`, … and their methods: `reduce` behind the autocast point (the sums
 * ops make inside themselves are not autocast, as in PyTorch).
 */
export function reduceApi(name: string, op: ReduceOp, x: Tensor, dims: Dims, keepdim = false): Tensor {
  if (autocasting()) return autocastCall(name, [x, dims, keepdim], (x2: Tensor, d: Dims, k: boolean) => reduce(op, x2, d, k));
  return reduce(op, x, dims, keepdim);
}

/** Reduces `x` over `dims` with a reduction op (differentiable for sum, mean, prod, max, min). */
export function reduce(op: ReduceOp, x: Tensor, dims: Dims, keepdim = false): Tensor {
  const name = NAMES[op];
  // An empty list of dims reduces over every dim, as in PyTorch 1.x (`x.sum(dim=[])`).
  if (Array.isArray(dims) && dims.length === 0) dims = undefined;
  if (op === ReduceOp.Sum || op === ReduceOp.Mean) {
    return recorded(name, [x], () => reduceForward(op, x, dims, keepdim), () => ([g]) => {
      const gx = spread(g!, x, dims);
      if (op === ReduceOp.Sum) return [gx];
      const n = x.numel() / Math.max(1, g!.numel());
      const r = binaryOp('div', gx, n);
      gx.dispose();
      return [r];
    });
  }
  if (op === ReduceOp.Prod || op === ReduceOp.Max || op === ReduceOp.Min) {
    return recorded(name, [x], () => reduceForward(op, x, dims, keepdim), (ctx, out) => {
      const sx = ctx.save(x), so = ctx.save(out);
      return ([g]) => {
        const gx = spread(g!, x, dims), ox = spread(so, x, dims);
        if (op === ReduceOp.Prod) return [binaryOp('div', binaryOp('mul', gx, ox), sx)];
        // max/min: the gradient is shared evenly among the elements equal to the extreme.
        const mask = binaryOp('eq', sx, ox);
        const count = spread(reduceForward(ReduceOp.Sum, mask, dims, true), x, dims);
        return [binaryOp('div', binaryOp('mul', gx, mask), count)];
      };
    });
  }
  return reduceForward(op, x, dims, keepdim);
}

/** max/min/argmax/argmin refuse an empty reduction, in PyTorch's words (`name`: the op called). */
function checkNonEmpty(op: ReduceOp, name: string, x: Tensor, dims: Dims, inner: number): void {
  if (inner !== 0 || ![ReduceOp.Max, ReduceOp.Min, ReduceOp.ArgMax, ReduceOp.ArgMin].includes(op)) return;
  if (dims === undefined) {
    throw new RangeError(`${name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument. (input shape [${x.shape.join(', ')}])`);
  }
  const d = (Array.isArray(dims) ? dims : [dims]).map((v) => normDim(v, x.ndim)).find((v) => x.shape[v] === 0);
  throw new RangeError(`${name}(): Expected reduction dim ${d} to have non-zero size. (input shape [${x.shape.join(', ')}])`);
}

function reduceForward(op: ReduceOp, x: Tensor, dims: Dims, keepdim = false, name = NAMES[op]): Tensor {
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
  const permuted = perm.every((p, i) => p === i) ? x : permute(x, perm);
  const src = contiguous(permuted);
  const out = alloc(outShape, outDt, x.device);
  if (outer > 0) launchReduce(op, src, out, outer, inner);
  if (src !== permuted) src.dispose();
  if (permuted !== x) permuted.dispose();
  return out;
}

/** What the second pass of a split reduction does with the first pass's partial results. */
const SECOND_PASS: Partial<Record<ReduceOp, ReduceOp>> = {
  [ReduceOp.Sum]: ReduceOp.Sum, [ReduceOp.SumSq]: ReduceOp.Sum, [ReduceOp.Mean]: ReduceOp.Mean, [ReduceOp.Prod]: ReduceOp.Prod,
  [ReduceOp.Max]: ReduceOp.Max, [ReduceOp.Min]: ReduceOp.Min, [ReduceOp.All]: ReduceOp.All, [ReduceOp.Any]: ReduceOp.Any,
};

/**
 * How many pieces to cut each row of a GPU reduction into. The kernel gives one workgroup to a
 * row, so a few long rows leave most of a GPU idle (64 rows of 512K: 0.02× PyTorch on an H100).
 * Long rows are then reduced in two passes: `outer·pieces` rows of `inner/pieces`, then the
 * partial results. Only where the partial results keep full precision (not 16-bit floats) and
 * the pieces are equal (the mean of equal pieces' means is the mean).
 */
function rowPieces(op: ReduceOp, x: Tensor, outer: number, inner: number): number {
  if (x.device.type !== 'gpu' || SECOND_PASS[op] === undefined || outer >= 256 || inner < 1 << 16) return 1;
  if ((x.dtype === 'float16' || x.dtype === 'bfloat16') && op !== ReduceOp.Max && op !== ReduceOp.Min) return 1;
  let pieces = 1;
  while (outer * pieces < 512 && inner % (pieces * 2) === 0 && inner / (pieces * 2) >= 4096) pieces *= 2;
  return pieces;
}

/** Queues the reduction of a contiguous [outer, inner] block into `out`, in one or two passes. */
function launchReduce(op: ReduceOp, src: Tensor, out: Tensor, outer: number, inner: number): void {
  const pieces = rowPieces(op, src, outer, inner);
  const cmd = (o: ReduceOp, a: Tensor, to: Tensor, rows: number, len: number) => launch(src.device, {
    k: 'reduce', op: o, a: ref(a), dt: storageCode(a.dtype), out: place(to), outDt: storageCode(to.dtype), outer: rows, inner: len,
  });
  if (pieces === 1) return cmd(op, src, out, outer, inner);
  const partial = alloc([outer * pieces], outDType(op, src.dtype), src.device);
  cmd(op, src, partial, outer * pieces, inner / pieces);
  cmd(SECOND_PASS[op]!, partial, out, outer, pieces);
  partial.dispose();
}

/**
 * The values and indices that `max(dim)`, `min(dim)`, `sort`, `topk` and `maxPool2d(…,
 * {returnIndices: true})` return: like PyTorch's named tuple, by name (`r.values`, `r.indices`),
 * by position (`r[0]`, `r[1]`) and unpacked (`const [values, indices] = torch.max(x, 1)`).
 */
export interface ValuesIndices extends Iterable<Tensor> {
  readonly values: Tensor;
  readonly indices: Tensor;
  readonly 0: Tensor;
  readonly 1: Tensor;
  readonly length: 2;
}

/** A `ValuesIndices`: a two-element array with the two names. */
export function valuesIndices(values: Tensor, indices: Tensor): ValuesIndices {
  return Object.assign([values, indices], { values, indices }) as unknown as ValuesIndices;
}

/** `max()` over everything, or `{values, indices}` over one dim. */
export function maxMin(isMax: boolean, x: Tensor, dim?: number, keepdim = false): Tensor | ValuesIndices {
  const v = isMax ? ReduceOp.Max : ReduceOp.Min, a = isMax ? ReduceOp.ArgMax : ReduceOp.ArgMin;
  if (dim === undefined) return reduce(v, x, undefined);
  const indices = reduceForward(a, x, dim, keepdim, NAMES[v]);
  const values = recorded(NAMES[v], [x], () => reduceForward(v, x, dim, keepdim), (ctx) => {
    const si = ctx.save(indices);
    return ([g]) => {
      if (x.ndim === 0) return [reshape(g!, [])]; // a 0-d input is its own max
      // The gradient goes to the element each index names: a one-hot mask along `dim`.
      const d = normDim(dim, x.ndim);
      const pos = arange(x.shape[d], undefined, 1, { device: x.device, dtype: 'int64' });
      const posShape = x.shape.map((s, i) => (i === d ? s : 1));
      const mask = binaryOp('eq', reshape(pos, posShape), reshape(si, keptShape(x, dim)));
      return [where(mask, expand(reshape(g!, keptShape(x, dim)), x.shape.slice()), 0)];
    };
  });
  return valuesIndices(values, indices);
}

/** `argmax`/`argmin`: over one dim, or over the flattened tensor when `dim` is undefined. */
export function argReduce(isMax: boolean, x: Tensor, dim?: number, keepdim = false): Tensor {
  const op = isMax ? ReduceOp.ArgMax : ReduceOp.ArgMin;
  checkDtypes(NAMES[op], x);
  if (dim !== undefined) return reduce(op, x, dim, keepdim);
  checkNonEmpty(op, NAMES[op], x, undefined, x.numel());
  const flat = reshape(x, [-1]);
  const out = reduce(op, flat, 0, false);
  flat.dispose();
  if (!keepdim) return out;
  const shaped = reshape(out, x.shape.map(() => 1));
  out.dispose();
  return shaped;
}
