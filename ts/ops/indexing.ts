/**
 * The index family: `indexSelect`, `gather`, `scatter`, `scatterAdd`, `take`, `embedding`,
 * `oneHot`, `maskedFill`, `cumsum`/`cumprod`, `sort` and `topk`.
 *
 * The hard part is that index values are device data. What shapes and dtypes decide is checked
 * here, at the call, with PyTorch's messages; index ranges are checked by the kernels, and the
 * first bad index fails the next sync point (`await t.data()`, `gpu.synchronize()`, …) with the
 * message given here, naming the op (see wgsl/index.ts). Most ops are one gather: an output
 * shape, a view of x over it with the indexed dim's stride zeroed, a view of the index over it
 * and the dim's stride, so transposed, sliced or expanded inputs are read without a copy.
 */
import { checkFits, isFloating, scalarName, type DType } from '../dtype.js';
import { alloc, code, emit, place, ref, sameDevice } from '../runtime/dispatch.js';
import { broadcastShapes, broadcastStrides, contiguousStrides, fmt, MAX_KERNEL_RANK, normDim, numel } from '../shape.js';
import { Tensor } from '../tensor.js';
import { ReduceOp } from '../ir/ops.js';
import { arange, full } from './creation.js';
import { op as recorded } from '../autograd/graph.js';
import { binaryOp, where } from './elementwise.js';
import { reduce, valuesIndices, type ValuesIndices } from './reduce.js';
import { sumTo } from './reduce-kernel.js';
import { expand, reshape, slice } from './views.js';
import { cast, contiguous } from './cast.js';
import { bindArgs } from '../args.js';
import { autocastCall, autocasting } from '../amp/autocast.js';

function checkRank(op: string, shape: readonly number[]): void {
  if (shape.length > MAX_KERNEL_RANK) throw new RangeError(`${op}: tensors of more than ${MAX_KERNEL_RANK} dims are not supported (got ${shape.length})`);
}

/** A tensor's strides over a shape of `rank` dims (a 0-d tensor is read with stride 0). */
const stridesOver = (t: Tensor, rank: number): number[] => (t.ndim === rank ? t._strides.slice() : new Array<number>(rank).fill(0));
/** The size and stride of dim `d`, with a 0-d tensor as one element. */
const dimOf = (t: Tensor, d: number): [number, number] => (t.ndim ? [t.shape[d], t._strides[d]] : [1, 0]);
const outOfBounds = (op: string, d: number, size: number) => `${op}(): index %d is out of bounds for dimension ${d} with size ${size}`;

/** One gather kernel: out[i] = x[xView(i) + index[indexView(i)] * dimStride], both views over `shape`. */
function gatherInto(op: string, x: Tensor, index: Tensor, shape: number[], xStrides: number[], iStrides: number[], dimStride: number, size: number, message: string, wrap = false): Tensor {
  checkRank(op, shape);
  const out = alloc(shape, x.dtype, x.device);
  if (out.numel()) {
    if (index.dtype !== 'int64') throw new Error(`${op}: the index kernels read int64 indices (got ${index.dtype}; widen it first)`);
    emit(x.device, {
      k: 'gather', x: ref(x, xStrides), idx: ref(index, iStrides), dt: code(x), out: place(out), shape: shape.slice(), dimStride,
      check: { size, wrap, message },
    });
  }
  return out;
}

/**
 * A device-side range check of `index` against [0, size) that reads nothing else: a gather of
 * one element at stride 0 over the index's shape. The next sync point raises `message` with the
 * first bad value (PyTorch's device-side assert), naming `op`.
 */
export function checkIndexRange(op: string, index: Tensor, size: number, message: string): void {
  if (!index.numel()) return;
  const probe = full([1], 0, { dtype: 'float32', device: index.device });
  const out = gatherInto(op, probe, index, index.shape.slice(), index.shape.map(() => 0), index._strides.slice(), 0, size, message);
  out.dispose();
  probe.dispose();
}

/** Runs `fn` on `index` as int64 (the index kernels read int64; an int32 index is widened into a temporary). */
function withLong<R>(index: Tensor, fn: (index: Tensor) => R): R {
  if (index.dtype === 'int64') return fn(index);
  const long = cast(index, 'int64');
  try {
    return fn(long);
  } finally {
    long.dispose();
  }
}

/** gather along dim `d` with an index of x's rank whose sizes fit x's apart from `d`. */
function gatherAlong(op: string, x: Tensor, d: number, index: Tensor): Tensor {
  const rank = index.ndim;
  const xStrides = stridesOver(x, rank).map((s, i) => (i === d ? 0 : s));
  const [size, dimStride] = dimOf(x, d);
  return gatherInto(op, x, index, index.shape.slice(), xStrides, index._strides.slice(), dimStride, size, outOfBounds(op, d, size));
}

/** `torch.index_select(x, dim, index)`: the entries `index` (int64 or int32, at most 1-D) of dim `dim`. */
function indexSelectForward(x: Tensor, dim: number, index: Tensor): Tensor {
  sameDevice('index_select', [x, index]);
  if (index.dtype !== 'int64' && index.dtype !== 'int32') throw new TypeError(`index_select(): Expected dtype int32 or int64 for index (got ${index.dtype})`);
  if (index.ndim > 1) throw new RangeError('index_select(): Index is supposed to be a vector');
  const d = normDim(dim, x.ndim), m = index.numel();
  if (x.ndim === 0 && m !== 1) throw new RangeError(`index_select(): Index to scalar can have only 1 value, got ${m} value(s)`);
  const shape = x.shape.slice();
  if (x.ndim) shape[d] = m;
  const [size, dimStride] = dimOf(x, d);
  const xStrides = x._strides.map((s, i) => (i === d ? 0 : s));
  return withLong(index, (index) => {
    const iStrides = shape.map((_, i) => (i === d && index.ndim ? index._strides[0] : 0));
    return gatherInto('index_select', x, index, shape, xStrides, iStrides, dimStride, size,
      `index_select(): index %d is out of range for dimension ${d} with size ${size} (index out of range in self)`);
  });
}

/** Checks that an index (and src) fits x apart from `d`, as PyTorch's gather/scatter do. */
function checkIndexShape(op: string, x: Tensor, d: number, index: Tensor, src?: Tensor): void {
  const nd = (t: Tensor) => Math.max(t.ndim, 1);
  if (nd(index) !== nd(x)) throw new RangeError(`Index tensor must have the same number of dimensions as ${op === 'gather' ? 'input' : 'self'} tensor`);
  if (src && nd(src) !== nd(index)) throw new RangeError('Index tensor must have the same number of dimensions as src tensor');
  if (!index.numel()) return;
  const size = (t: Tensor, i: number) => t.shape[i] ?? 1;
  for (let i = 0; i < nd(index); i++) {
    if ((i !== d && size(index, i) > size(x, i)) || (src && size(index, i) > size(src, i))) {
      if (op === 'gather') throw new RangeError(`Size does not match at dimension ${i} expected index ${fmt(index.shape)} to be smaller than self ${fmt(x.shape)} apart from dimension ${d}`);
      throw new RangeError(`Expected index ${fmt(index.shape)} to be smaller than self ${fmt(x.shape)} apart from dimension ${d}${src ? ` and to be smaller size than src ${fmt(src.shape)}` : ''}`);
    }
  }
}

/** `torch.gather(x, dim, index)`: out[i][j] = x[index[i][j]][j] (dim 0); index is int64 of x's rank. */
function gatherForward(x: Tensor, dim: number, index: Tensor): Tensor {
  sameDevice('gather', [x, index]);
  if (index.dtype !== 'int64') throw new TypeError(`gather(): Expected dtype int64 for index (got ${index.dtype})`);
  const d = normDim(dim, x.ndim);
  checkIndexShape('gather', x, d, index);
  return gatherAlong('gather', x, d, index);
}

/** A JS number as a value of a dtype, as PyTorch converts a scalar on a write. */
function scalarAs(v: number | boolean, dtype: DType, op: string): number {
  const n = Number(v);
  if (dtype === 'bool') return n !== 0 ? 1 : 0;
  if (isFloating(dtype)) return n;
  const t = Math.trunc(n);
  checkFits(t, dtype === 'uint8' ? 'int64' : dtype, op);
  return dtype === 'uint8' ? ((t % 256) + 256) % 256 : t;
}

function scatterOp(op: 'scatter' | 'scatter_add', add: boolean, x: Tensor, dim: number, index: Tensor, src: Tensor | number | boolean): Tensor {
  const srcT = src instanceof Tensor ? src : undefined;
  sameDevice(op, srcT ? [x, index, srcT] : [x, index]);
  if (index.dtype !== 'int64') throw new TypeError(`${op}(): Expected dtype int64 for index (got ${index.dtype})`);
  if (srcT && srcT.dtype !== x.dtype) throw new TypeError(`${op}(): Expected self.dtype to be equal to src.dtype`);
  const d = normDim(dim, x.ndim);
  checkIndexShape(op, x, d, index, srcT);
  checkRank(op, x.shape);
  checkRank(op, index.shape);
  const out = alloc(x.shape, x.dtype, x.device);
  if (!out.numel()) return out;
  const rank = index.ndim, [size] = dimOf(x, d);
  const cs = contiguousStrides(x.shape);
  const dstStrides = new Array<number>(rank).fill(0).map((_, i) => (i === d || x.ndim === 0 ? 0 : cs[i]));
  emit(x.device, {
    k: 'scatter', add, x: ref(x), dt: code(x), out: place(out), shape: x.shape.slice(), dstStrides, idx: ref(index),
    src: srcT ? ref(srcT, stridesOver(srcT, rank)) : null, value: srcT ? 0 : scalarAs(src as number, x.dtype, op),
    idxShape: index.shape.slice(), dimStride: x.ndim ? cs[d] : 0, check: { size, wrap: false, message: outOfBounds(op, d, size) },
  });
  return out;
}

/**
 * `torch.scatter(x, dim, index, src)`, out of place: a copy of x with out[index[i][j]][j] =
 * src[i][j] (dim 0). `src` is a tensor of x's dtype or a number. Where indices repeat, which
 * write wins is unspecified, as in PyTorch.
 */
function scatterForward(x: Tensor, dim: number, index: Tensor, src: Tensor | number | boolean): Tensor {
  return scatterOp('scatter', false, x, dim, index, src);
}

/**
 * `torch.scatter_add(x, dim, index, src)`, out of place: a copy of x with src[i][j] added at
 * out[index[i][j]][j] (dim 0). On a GPU, float sums are accumulated with atomics, so their
 * rounding order is not deterministic (as with CUDA); float16/bfloat16 sums round once.
 */
function scatterAddForward(x: Tensor, dim: number, index: Tensor, src: Tensor): Tensor {
  if (!(src instanceof Tensor)) throw new TypeError('scatter_add(): src must be a tensor (use scatter() to write a number)');
  return scatterOp('scatter_add', true, x, dim, index, src);
}

/** `torch.take(x, index)`: x read as 1-D at int64 `index` (negative counts from the end); out has index's shape. */
function takeForward(x: Tensor, index: Tensor): Tensor {
  sameDevice('take', [x, index]);
  if (index.dtype !== 'int64') throw new TypeError(`take(): Expected a long tensor for index, but got ${scalarName(index.dtype)}`);
  const n = x.numel();
  if (!n && index.numel()) throw new RangeError('take(): tried to take from an empty tensor');
  const flat = reshape(x, [-1]);
  const out = gatherInto('take', flat, index, index.shape.slice(), index.shape.map(() => 0), index._strides.slice(), flat._strides[0], n,
    `take(): out of range: tried to access index %d on a tensor of ${n} elements.`, true);
  flat.dispose();
  return out;
}

/** `torch.nn.functional.embedding(indices, weight)`: rows of the 2-D `weight`; out is indices.shape + [dim]. */
function embeddingForward(weight: Tensor, indices: Tensor): Tensor {
  sameDevice('embedding', [weight, indices]);
  if (indices.dtype !== 'int64' && indices.dtype !== 'int32') {
    throw new TypeError(`Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got torch.${scalarName(indices.dtype)}Tensor instead (while checking arguments for embedding) (got ${indices.dtype} indices)`);
  }
  if (weight.ndim !== 2) throw new RangeError("'weight' must be 2-D");
  const rows = weight.shape[0];
  return withLong(indices, (indices) => gatherInto('embedding', weight, indices, [...indices.shape, weight.shape[1]], [...indices.shape.map(() => 0), weight._strides[1]],
    [...indices._strides, 0], weight._strides[0], rows, `embedding(): index %d is out of range for a weight of ${rows} rows (index out of range in self)`));
}

function oneHotOf(indices: Tensor, classes: number): Tensor {
  const src = contiguous(indices);
  const out = alloc([...indices.shape, classes], 'int64', indices.device);
  if (out.numel()) {
    emit(indices.device, {
      k: 'oneHot', idx: place(src), out: place(out), n: indices.numel(), classes,
      check: { size: classes, wrap: false, message: `one_hot(): class value %d is out of range [0, ${classes}) (Class values must be non-negative and smaller than num_classes.)` },
    });
  }
  if (src !== indices) src.dispose();
  return out;
}

/**
 * `torch.nn.functional.one_hot(indices, num_classes)`: int64 indices to an int64 tensor of
 * shape indices.shape + [numClasses]. Without `numClasses` it is inferred as max + 1, which
 * reads the device (a sync point, as in PyTorch), so the result is a Promise.
 */
export function oneHot(indices: Tensor, numClasses: number | { numClasses: number }): Tensor;
export function oneHot(indices: Tensor, numClasses?: -1 | { numClasses?: -1 }): Promise<Tensor>;
export function oneHot(indices: Tensor, ...args: unknown[]): Tensor | Promise<Tensor> {
  const { numClasses } = bindArgs('one_hot', ['numClasses'], args, { numClasses: -1 }, 1);
  sameDevice('one_hot', [indices]);
  if (indices.dtype !== 'int64') throw new TypeError(`one_hot is only applicable to index tensor. (got ${indices.dtype}; one_hot takes int64)`);
  if (!Number.isInteger(numClasses) || numClasses < -1) throw new RangeError(`one_hot(): num_classes must be -1 or a non-negative integer, got ${numClasses}`);
  if (!indices.numel() && numClasses <= 0) throw new RangeError('Can not infer total number of classes from empty tensor.');
  if (numClasses === 0) throw new RangeError('Class values must be smaller than num_classes.');
  checkRank('one_hot', [...indices.shape, 1]);
  if (numClasses > 0) return oneHotOf(indices, numClasses);
  const m = reduce(ReduceOp.Max, indices, undefined);
  return m.item().then((top) => {
    m.dispose();
    if ((top as number) < 0) throw new RangeError('Class values must be non-negative.');
    return oneHotOf(indices, (top as number) + 1);
  });
}

/** `torch.masked_fill(x, mask, value)`: x where the bool `mask` (broadcast) is false, else `value` (a number or 0-d tensor) in x's dtype. */
function maskedFillForward(x: Tensor, mask: Tensor, value: number | boolean | Tensor): Tensor {
  sameDevice('masked_fill', value instanceof Tensor ? [x, mask, value] : [x, mask]);
  if (mask.dtype !== 'bool') throw new TypeError(`masked_fill_ only supports boolean masks, but got mask with dtype ${mask.dtype}`);
  if (value instanceof Tensor && value.ndim !== 0) {
    throw new RangeError(`masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ${value.ndim} dimension(s).`);
  }
  const shape = broadcastShapes(x.shape, mask.shape);
  checkRank('masked_fill', shape);
  const v = value instanceof Tensor ? (value.dtype === x.dtype ? value : cast(value, x.dtype)) : full([], scalarAs(value, x.dtype, 'masked_fill'), { dtype: x.dtype, device: x.device });
  const out = alloc(shape, x.dtype, x.device);
  const r = (t: Tensor) => ref(t, broadcastStrides(t.shape, t._strides, shape));
  if (out.numel()) emit(x.device, { k: 'where', c: r(mask), a: r(v), b: r(x), dt: code(x), out: place(out), shape });
  if (v !== value) v.dispose();
  return out;
}

function cumulative(op: string, prod: boolean, x: Tensor, dim: number): Tensor {
  sameDevice(op, [x]);
  checkRank(op, x.shape);
  const d = normDim(dim, x.ndim);
  const outDt: DType = isFloating(x.dtype) ? x.dtype : 'int64';
  const out = alloc(x.shape, outDt, x.device);
  if (out.numel()) {
    const [len, dimStride] = dimOf(x, d);
    emit(x.device, {
      k: 'cumulative', prod, x: ref(x, x._strides.filter((_, i) => i !== d)), dt: code(x), out: place(out), outDt: code(outDt),
      lines: x.shape.filter((_, i) => i !== d), len, dimStride, inner: numel(x.shape.slice(d + 1)),
    });
  }
  return out;
}

/** `torch.cumsum(x, dim)`: running sums along `dim`; integer and bool inputs give int64. */
const cumsumForward = (x: Tensor, dim: number): Tensor => cumulative('cumsum', false, x, dim);
/** `torch.cumprod(x, dim)`: running products along `dim`; integer and bool inputs give int64. */
const cumprodForward = (x: Tensor, dim: number): Tensor => cumulative('cumprod', true, x, dim);

/** The stable sort order of x along dim `d` (int64, x's shape). */
function sortOrder(x: Tensor, d: number, descending: boolean): Tensor {
  const src = contiguous(x);
  const indices = alloc(x.shape, 'int64', x.device);
  if (indices.numel()) {
    const len = x.ndim ? x.shape[d] : 1;
    emit(x.device, {
      k: 'sort', x: place(src), dt: code(x), descending, out: place(indices), outer: numel(x.shape.slice(0, d)), len, inner: numel(x.shape.slice(d + 1)),
    });
  }
  if (src !== x) src.dispose();
  return indices;
}

/**
 * `torch.sort(x, dim=-1, descending=false, stable=true)`: `{values, indices}` along `dim`.
 * The sort is stable (equal elements keep their order, also when descending); NaN is larger
 * than every number (last ascending, first descending) and -0 equals 0, as in PyTorch.
 */
function sortForward(x: Tensor, dim = -1, descending = false): ValuesIndices {
  sameDevice('sort', [x]);
  checkRank('sort', x.shape);
  const d = normDim(dim, x.ndim);
  const indices = sortOrder(x, d, descending);
  return valuesIndices(gatherAlong('sort', x, d, indices), indices);
}

/**
 * `torch.topk(x, k, dim=-1, largest=true, sorted=true)`: the k largest (or smallest) entries
 * along `dim` and their indices, always in sorted order. Ties go to the lower index (PyTorch
 * leaves their order unspecified); NaN counts as the largest value.
 */
function topkForward(x: Tensor, k: number, dim = -1, largest = true, _sorted = true): ValuesIndices {
  sameDevice('topk', [x]);
  checkRank('topk', x.shape);
  const d = normDim(dim, x.ndim), size = x.ndim ? x.shape[d] : 1;
  if (!Number.isInteger(k) || k < 0 || k > size) throw new RangeError(`selected index k out of range (k = ${k}, dim ${d} has size ${size})`);
  if (x.dtype === 'bool') throw new TypeError(`"topk" not implemented for 'Bool'`);
  const order = sortOrder(x, d, largest);
  let indices = order;
  if (k < size) {
    const part = slice(order, d, 0, k);
    indices = contiguous(part);
    if (part !== indices) part.dispose();
    order.dispose();
  }
  return valuesIndices(gatherAlong('topk', x, d, indices), indices);
}

// ---- Gradient rules: each differentiable op of this family, recorded around its forward ----

const zerosOf = (t: Tensor) => full(t.shape.slice(), 0, { dtype: t.dtype, device: t.device });
/** `x + g` scattered along `d` at `index` into zeros shaped like `like` (the gradient of a gather). */
const scatterBack = (like: Tensor, d: number, index: Tensor, g: Tensor) => scatterAddForward(zerosOf(like), d, index, g);
/** `y` reversed along `d`. */
function flipDim(y: Tensor, d: number): Tensor {
  const n = y.ndim ? y.shape[d] : 1;
  return indexSelectForward(y, d, arange(n - 1, -1, -1, { device: y.device, dtype: 'int64' }));
}
/** Cumulative sum from the end along `d` (flipped, so long lines keep their precision). */
const reverseCumsum = (y: Tensor, d: number) => flipDim(cumsumForward(flipDim(y, d), d), d);

/** `torch.index_select(x, dim, index)` (int64 or int32 index, at most 1-D); its gradient adds rows back. */
export function indexSelect(x: Tensor, dim: number, index: Tensor): Tensor {
  return recorded('index_select', [x], () => indexSelectForward(x, dim, index), (ctx) => {
    const idx = ctx.save(index);
    return ([g]) => {
      if (x.ndim === 0) return [reshape(g!, [])];
      const d = normDim(dim, x.ndim);
      const long = idx.dtype === 'int64' ? idx : cast(idx, 'int64');
      const full = expand(reshape(long, g!.shape.map((s, i) => (i === d ? s : 1))), g!.shape.slice());
      return [scatterBack(x, d, full, g!)];
    };
  });
}

/** `torch.gather(x, dim, index)`; its gradient is a scatter-add of the output gradient. */
export function gather(x: Tensor, dim: number, index: Tensor): Tensor {
  return recorded('gather', [x], () => gatherForward(x, dim, index), (ctx) => {
    const idx = ctx.save(index);
    return ([g]) => [scatterBack(x, normDim(dim, x.ndim), idx, g!)];
  });
}

/** `torch.scatter(x, dim, index, src)`, out of place; gradients: g with the written places zeroed, and g gathered for src. */
export function scatter(x: Tensor, dim: number, index: Tensor, src: Tensor | number | boolean): Tensor {
  return recorded('scatter', [x, src as Tensor], () => scatterForward(x, dim, index, src), (ctx) => {
    const idx = ctx.save(index);
    return ([g]) => {
      const d = normDim(dim, x.ndim);
      return [scatter(g!, d, idx, 0), src instanceof Tensor ? gather(g!, d, idx) : null];
    };
  });
}

/** `torch.scatter_add(x, dim, index, src)`, out of place; gradients: g for x, g gathered for src. */
export function scatterAdd(x: Tensor, dim: number, index: Tensor, src: Tensor): Tensor {
  return recorded('scatter_add', [x, src], () => scatterAddForward(x, dim, index, src), (ctx) => {
    const idx = ctx.save(index);
    return ([g]) => [binaryOp('mul', g!, 1), gather(g!, normDim(dim, x.ndim), idx)];
  });
}

/**
 * `torch.embedding(weight, indices, paddingIdx = -1)` (the aten order; `F.embedding` takes
 * `(input, weight)`): rows of `weight`; its gradient adds each output row into its weight row,
 * except rows looked up at `paddingIdx` (negative: none), which get no gradient.
 */
export function embedding(weight: Tensor, indices: Tensor, paddingIdx: number | null = -1): Tensor {
  const pad = paddingIdx ?? -1;
  return recorded('embedding', [weight], () => embeddingForward(weight, indices), (ctx) => {
    const idx = ctx.save(indices);
    return ([g]) => {
      const dimw = weight.shape[1];
      let rows = reshape(g!, [-1, dimw]);
      const long = idx.dtype === 'int64' ? idx : cast(idx, 'int64');
      if (pad >= 0) rows = binaryOp('mul', rows, cast(reshape(binaryOp('ne', long, pad), [-1, 1]), rows.dtype));
      const at = expand(reshape(long, [-1, 1]), [rows.shape[0], dimw]);
      return [scatterBack(weight, 0, at, rows)];
    };
  });
}

/** `torch.masked_fill(x, mask, value)`; the gradient flows to x where the mask is false, and to a 0-d value tensor where it is true. */
export function maskedFill(x: Tensor, mask: Tensor, value: number | boolean | Tensor): Tensor {
  return recorded('masked_fill', [x, mask, value as Tensor], () => maskedFillForward(x, mask, value), (ctx) => {
    const m = ctx.save(mask);
    return ([g]) => [
      sumTo(where(m, 0, g!), x.shape),
      null,
      value instanceof Tensor && value.requiresGrad ? reduce(ReduceOp.Sum, where(m, g!, 0), undefined) : null,
    ];
  });
}

/** `torch.cumsum(x, dim)`: running sums along `dim`; integer and bool inputs give int64. */
export const cumsum = (x: Tensor, dim: number): Tensor => autocasting() ? autocastCall('cumsum', [x, dim], cumsum) :
  recorded('cumsum', [x], () => cumsumForward(x, dim), () => ([g]) => [reverseCumsum(g!, normDim(dim, x.ndim))]);

/** `torch.cumprod(x, dim)`: running products along `dim`; the gradient assumes x has no zeros. */
export const cumprod = (x: Tensor, dim: number): Tensor => autocasting() ? autocastCall('cumprod', [x, dim], cumprod) :
  recorded('cumprod', [x], () => cumprodForward(x, dim), (ctx, out) => {
    const sx = ctx.save(x), so = ctx.save(out);
    return ([g]) => [binaryOp('div', reverseCumsum(binaryOp('mul', g!, so), normDim(dim, x.ndim)), sx)];
  });

/** Records the values of a sort/topk: their gradient goes back to the positions the indices name. */
function withValueGrad(name: string, x: Tensor, dim: number, forward: () => ValuesIndices): ValuesIndices {
  let indices: Tensor | null = null;
  const values = recorded(name, [x], () => {
    const r = forward();
    indices = r.indices;
    return r.values;
  }, (ctx) => {
    const idx = ctx.save(indices!);
    return ([g]) => [scatterBack(x, normDim(dim, x.ndim), idx, g!)];
  });
  return valuesIndices(values, indices!);
}

/**
 * `torch.sort(x, dim=-1, descending=false, stable=true)`: `{values, indices}` along `dim`,
 * stable; NaN is larger than every number and -0 equals 0, as in PyTorch.
 */
export function sort(x: Tensor, dim = -1, descending = false): ValuesIndices {
  return withValueGrad('sort', x, dim, () => sortForward(x, dim, descending));
}

/** `torch.topk(x, k, dim=-1, largest=true, sorted=true)`: always sorted; ties go to the lower index. */
export function topk(x: Tensor, k: number, dim = -1, largest = true, sorted = true): ValuesIndices {
  return withValueGrad('topk', x, dim, () => topkForward(x, k, dim, largest, sorted));
}

/** `torch.take(x, index)`: x read as 1-D at int64 `index` (negative counts from the end); its gradient adds back into x's flat positions. */
export function take(x: Tensor, index: Tensor): Tensor {
  return recorded('take', [x], () => takeForward(x, index), (ctx) => {
    const idx = ctx.save(index);
    return ([g]) => {
      const n = x.numel();
      const flatIdx = reshape(where(binaryOp('lt', idx, 0), binaryOp('add', idx, n), idx), [-1]);
      const flat = scatterAddForward(full([n], 0, { dtype: x.dtype, device: x.device }), 0, flatIdx, reshape(g!, [-1]));
      return [reshape(flat, x.shape.slice())];
    };
  });
}
