/**
 * Reductions over dims as differentiable ops (`torch.sum`, `mean`, `prod`, `max`, `min`, the
 * arg-reductions, `all`/`any`); their forward, and `sumTo`, are in ts/ops/reduce-kernel.ts.
 */
import { normDim } from '../shape.js';
import type { Tensor } from '../tensor.js';
import { ReduceOp } from '../ir/ops.js';
import { op as recorded } from '../autograd/graph.js';
import { arange } from './creation.js';
import { checkDtypes } from './registry.js';
import { checkNonEmpty, keptShape, NAMES, reduceForward, setRecordedSumTo, type Dims } from './reduce-kernel.js';

export type { Dims } from './reduce-kernel.js';
import { binaryOp, where } from './elementwise.js';
import { expand, reshape } from './views.js';
import { cast } from './cast.js';
import { autocastCall, autocasting } from '../amp/autocast.js';

/** Broadcasts a reduction's gradient back over the input's shape (contiguous). */
setRecordedSumTo((g, dims, shape) => {
  const s = reduce(ReduceOp.Sum, g, dims, true), r = reshape(s, shape);
  s.dispose();
  return r;
});

function spread(g: Tensor, x: Tensor, dims: Dims): Tensor {
  const r = reshape(g, keptShape(x, dims));
  const e = expand(r, x.shape.slice());
  const c = cast(e, x.dtype);
  r.dispose();
  e.dispose();
  return c;
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
