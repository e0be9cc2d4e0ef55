/**
 * Tensor methods. Each is a one-line forward to the functional op, so `x.add(y)` and
 * `torch.add(x, y)` are the same code; the table ops are attached in a loop.
 */
import type { DeviceLike } from '../device.js';
import type { DType } from '../dtype.js';
import { Tensor } from '../tensor.js';
import { clone, copyInto, to, toGpu, type ToOptions } from './copy.js';
import { isPinned, pinMemory } from '../runtime/pinned.js';
import { binaryApi, binaryOp, clamp, div, gelu, nanToNum, softplus, unaryApi, unaryOp, where, type TensorOrScalar } from './elementwise.js';
import { matmul } from './matmul.js';
import { argReduce, maxMin, reduce, reduceApi, type Dims, type ValuesIndices } from './reduce.js';
import { ELEMENTWISE } from './table.js';
import * as V from './views.js';
import * as R from './random.js';
import { bernoulli, multinomial } from './sampling.js';
import { ReduceOp } from '../ir/ops.js';
import { bindArgs, bindDim, REQUIRED, type DimArgs, type PyArgs } from '../args.js';
import { fill_, inPlace } from './inplace.js';

/** snake_case table names to the camelCase API names. */
export const camel = (s: string): string => s.replace(/_(\w)/g, (_, c: string) => c.toUpperCase());

type Unary = () => Tensor;
type Binary = (other: TensorOrScalar) => Tensor;

declare module '../tensor.js' {
  interface Tensor {
    neg: Unary; abs: Unary; exp: Unary; expm1: Unary; log: Unary; log1p: Unary; sqrt: Unary; rsqrt: Unary;
    sin: Unary; cos: Unary; tanh: Unary; sigmoid: Unary; relu: Unary; silu: Unary; erf: Unary; floor: Unary;
    ceil: Unary; round: Unary; sign: Unary; reciprocal: Unary; logicalNot: Unary; isnan: Unary; square: Unary; trunc: Unary;
    mul: Binary; pow: Binary; maximum: Binary; minimum: Binary; remainder: Binary; atan2: Binary; floorDivide: Binary;
    eq: Binary; ne: Binary; lt: Binary; le: Binary; gt: Binary; ge: Binary; logicalAnd: Binary; logicalOr: Binary; logicalXor: Binary;
    /** `~x`, `x & other`, `x | other`, `x ^ other` (bool and integer tensors; `other` a tensor, a number or a boolean). */
    bitwiseNot: Unary; bitwiseAnd: Binary; bitwiseOr: Binary; bitwiseXor: Binary;
    /** In place: `x = ~x`. */
    bitwiseNot_(): Tensor;
    /** In place: `x &= other`. */
    bitwiseAnd_(other: TensorOrScalar): Tensor;
    /** In place: `x |= other`. */
    bitwiseOr_(other: TensorOrScalar): Tensor;
    /** In place: `x ^= other`. */
    bitwiseXor_(other: TensorOrScalar): Tensor;
    /** `x.add(other, {alpha})`: alpha is keyword-only, as PyTorch's. */
    add(other: TensorOrScalar, options?: { alpha?: number }): Tensor;
    sub(other: TensorOrScalar, options?: { alpha?: number }): Tensor;
    div(other: TensorOrScalar, options?: { roundingMode?: 'floor' | 'trunc' | null }): Tensor;
    gelu(...args: PyArgs<[approximate: 'none' | 'tanh'], { approximate?: 'none' | 'tanh' }>): Tensor;
    softplus(...args: PyArgs<[beta: number, threshold: number], { beta?: number; threshold?: number }>): Tensor;
    clamp(...args: PyArgs<[min: number | null, max: number | null], { min?: number | null; max?: number | null }>): Tensor;
    nanToNum(options?: { nan?: number; posinf?: number; neginf?: number }): Tensor;
    where(condition: Tensor, other: TensorOrScalar): Tensor;
    /** In place (ts/ops/inplace.ts): `x += alpha·other`; returns `x`. */
    add_(other: TensorOrScalar, options?: { alpha?: number }): Tensor;
    /** In place: `x -= alpha·other`. */
    sub_(other: TensorOrScalar, options?: { alpha?: number }): Tensor;
    /** In place: `x *= other`. */
    mul_(other: TensorOrScalar): Tensor;
    /** In place: `x /= other` (`roundingMode` as `div`). */
    div_(other: TensorOrScalar, options?: { roundingMode?: 'floor' | 'trunc' | null }): Tensor;
    /** In place: `clamp(min, max)`. */
    clamp_(...args: PyArgs<[min: number | null, max: number | null], { min?: number | null; max?: number | null }>): Tensor;
    /** In place: `x = -x`. */
    neg_(): Tensor;
    /** In place: every element `value` (a number, or a 0-dim tensor). */
    fill_(value: number | boolean | Tensor): Tensor;
    /** In place: every element 0. */
    zero_(): Tensor;
    sum(...args: DimArgs<Dims>): Tensor;
    mean(...args: DimArgs<Dims>): Tensor;
    prod(...args: DimArgs<number>): Tensor;
    all(...args: DimArgs<number>): Tensor;
    any(...args: DimArgs<number>): Tensor;
    max(): Tensor;
    max(other: Tensor): Tensor;
    max(...args: DimArgs<number>): ValuesIndices;
    min(): Tensor;
    min(other: Tensor): Tensor;
    min(...args: DimArgs<number>): ValuesIndices;
    argmax(...args: DimArgs<number>): Tensor;
    argmin(...args: DimArgs<number>): Tensor;
    matmul(other: Tensor): Tensor;
    reshape(...shape: number[] | [number[]]): Tensor;
    view(...shape: number[] | [number[]]): Tensor;
    permute(...dims: number[] | [number[]]): Tensor;
    transpose(dim0: number, dim1: number): Tensor;
    /** The transpose of a 2-D tensor. */
    readonly T: Tensor;
    /** `t.t()`: the transpose of a tensor of at most 2 dimensions (0-D and 1-D as they are), as `T`. */
    t(): Tensor;
    /** `t.mT`: the last two dimensions swapped (a batch of matrices transposed). */
    readonly mT: Tensor;
    expand(...shape: number[] | [number[]]): Tensor;
    expandAs(other: Tensor): Tensor;
    squeeze(dim?: number): Tensor;
    unsqueeze(dim: number): Tensor;
    flatten(startDim?: number, endDim?: number): Tensor;
    slice(dim: number, start?: number | null, end?: number | null, step?: number): Tensor;
    select(dim: number, index: number): Tensor;
    narrow(dim: number, start: number, length: number): Tensor;
    asStrided(shape: number[], strides: number[], storageOffset?: number): Tensor;
    /** `x[...]`: numbers, slices ('1:3', ':'), '...' and int32/int64 index tensors (advanced indexing); masks go through `indexAsync`. */
    index(...idx: V.Index[]): Tensor;
    contiguous(): Tensor;
    clone(): Tensor;
    to(target: DeviceLike | DType | ToOptions, options?: ToOptions): Tensor;
    cuda(...args: PyArgs<[device: DeviceLike | null, nonBlocking: boolean], { device?: DeviceLike | null; nonBlocking?: boolean }>): Tensor;
    gpu(...args: PyArgs<[device: DeviceLike | null, nonBlocking: boolean], { device?: DeviceLike | null; nonBlocking?: boolean }>): Tensor;
    cpu(): Tensor;
    /** `t.normal_(mean = 0, std = 1, {generator})`, in place, on t's device. */
    normal_(...args: Parameters<typeof R.normal_> extends [Tensor, ...infer A] ? A : never): Tensor;
    /** `t.uniform_(from = 0, to = 1, {generator})`, in place, on t's device. */
    uniform_(...args: Parameters<typeof R.uniform_> extends [Tensor, ...infer A] ? A : never): Tensor;
    /** `t.bernoulli_(p = 0.5, {generator})`, in place, on t's device. */
    bernoulli_(...args: Parameters<typeof R.bernoulli_> extends [Tensor, ...infer A] ? A : never): Tensor;
    /** `t.bernoulli({generator})` or `t.bernoulli(p, {generator})` (`torch.bernoulli`). */
    bernoulli(...args: Parameters<typeof bernoulli> extends [Tensor, ...infer A] ? A : never): Tensor;
    /** `t.multinomial(numSamples, replacement = false, {generator})` (`torch.multinomial`). */
    multinomial(...args: Parameters<typeof multinomial> extends [Tensor, ...infer A] ? A : never): Tensor;
    /** `copy_(src, nonBlocking)`: see `ToOptions.nonBlocking`. */
    copy_(src: Tensor, ...args: PyArgs<[nonBlocking: boolean], { nonBlocking?: boolean }>): Tensor;
    /** A copy in pinned memory (`pin_memory()`; ts/runtime/pinned.ts). */
    pinMemory(): Tensor;
    /** Whether the tensor is in pinned memory (`is_pinned()`). */
    isPinned(): boolean;
    float(): Tensor; half(): Tensor; bfloat16(): Tensor; int(): Tensor; long(): Tensor; bool(): Tensor; byte(): Tensor;
  }
}

const shapeArgs = (args: number[] | [number[]]): number[] => (Array.isArray(args[0]) ? args[0] : (args as number[]));
const P = Tensor.prototype as unknown as Record<string, unknown>;

for (const op of ELEMENTWISE) {
  if (op.scalars || op.name === 'gelu_tanh' || op.name.endsWith('_backward')) continue; // modes of gelu, and gradient kernels
  const name = camel(op.name);
  P[name] = op.arity === 1
    ? function (this: Tensor, ...rest: unknown[]) { bindArgs(name, [], rest, {}, 0); return unaryApi(op.name, this); }
    : function (this: Tensor, other: TensorOrScalar, ...rest: unknown[]) { bindArgs(name, [], rest, {}, 1); return binaryApi(op.name, this, other); };
}

Object.assign(Tensor.prototype, {
  add(this: Tensor, o: TensorOrScalar, ...args: unknown[]) { return binaryApi('add', this, o, bindArgs('add', ['alpha'], args, { alpha: 1 }, 1, 0).alpha); },
  sub(this: Tensor, o: TensorOrScalar, ...args: unknown[]) { return binaryApi('sub', this, o, bindArgs('sub', ['alpha'], args, { alpha: 1 }, 1, 0).alpha); },
  div(this: Tensor, o: TensorOrScalar, opt?: { roundingMode?: 'floor' | 'trunc' | null }) { return div(this, o, opt); },
  gelu(this: Tensor, ...args: unknown[]) { return (gelu as (x: Tensor, ...a: unknown[]) => Tensor)(this, ...args); },
  softplus(this: Tensor, ...args: unknown[]) { return (softplus as (x: Tensor, ...a: unknown[]) => Tensor)(this, ...args); },
  clamp(this: Tensor, ...a: unknown[]) { const o = bindArgs('clamp', ['min', 'max'], a, { min: null as number | null, max: null as number | null }); return clamp(this, o.min, o.max); },
  nanToNum(this: Tensor, opt?: { nan?: number; posinf?: number; neginf?: number }) { return nanToNum(this, opt); },
  where(this: Tensor, c: Tensor, other: TensorOrScalar) { return where(c, this, other); },
  add_(this: Tensor, o: TensorOrScalar, ...args: unknown[]) { const { alpha } = bindArgs('add_', ['alpha'], args, { alpha: 1 }, 1, 0); return inPlace('add_', this, (x) => binaryApi('add', x, o, alpha)); },
  sub_(this: Tensor, o: TensorOrScalar, ...args: unknown[]) { const { alpha } = bindArgs('sub_', ['alpha'], args, { alpha: 1 }, 1, 0); return inPlace('sub_', this, (x) => binaryApi('sub', x, o, alpha)); },
  mul_(this: Tensor, o: TensorOrScalar, ...rest: unknown[]) { bindArgs('mul_', [], rest, {}, 1); return inPlace('mul_', this, (x) => binaryApi('mul', x, o)); },
  div_(this: Tensor, o: TensorOrScalar, opt?: { roundingMode?: 'floor' | 'trunc' | null }) { return inPlace('div_', this, (x) => div(x, o, opt)); },
  clamp_(this: Tensor, ...a: unknown[]) { const o = bindArgs('clamp_', ['min', 'max'], a, { min: null as number | null, max: null as number | null }); return inPlace('clamp_', this, (x) => clamp(x, o.min, o.max)); },
  neg_(this: Tensor, ...rest: unknown[]) { bindArgs('neg_', [], rest, {}, 0); return inPlace('neg_', this, (x) => unaryApi('neg', x)); },
  bitwiseNot_(this: Tensor, ...rest: unknown[]) { bindArgs('bitwise_not_', [], rest, {}, 0); return inPlace('bitwise_not_', this, (x) => unaryApi('bitwise_not', x)); },
  bitwiseAnd_(this: Tensor, o: TensorOrScalar, ...rest: unknown[]) { bindArgs('bitwise_and_', [], rest, {}, 1); return inPlace('bitwise_and_', this, (x) => binaryApi('bitwise_and', x, o)); },
  bitwiseOr_(this: Tensor, o: TensorOrScalar, ...rest: unknown[]) { bindArgs('bitwise_or_', [], rest, {}, 1); return inPlace('bitwise_or_', this, (x) => binaryApi('bitwise_or', x, o)); },
  bitwiseXor_(this: Tensor, o: TensorOrScalar, ...rest: unknown[]) { bindArgs('bitwise_xor_', [], rest, {}, 1); return inPlace('bitwise_xor_', this, (x) => binaryApi('bitwise_xor', x, o)); },
  fill_(this: Tensor, value: number | boolean | Tensor, ...rest: unknown[]) { bindArgs('fill_', [], rest, {}, 1); return fill_(this, value); },
  zero_(this: Tensor, ...rest: unknown[]) { bindArgs('zero_', [], rest, {}, 0); return fill_(this, 0); },
  sum(this: Tensor, ...a: unknown[]) { const { dim, keepdim } = bindDim<Dims>('sum', a, 0); return reduceApi('sum', ReduceOp.Sum, this, dim, keepdim); },
  mean(this: Tensor, ...a: unknown[]) { const { dim, keepdim } = bindDim<Dims>('mean', a, 0); return reduce(ReduceOp.Mean, this, dim, keepdim); },
  prod(this: Tensor, ...a: unknown[]) { const { dim, keepdim } = bindDim<number>('prod', a, 0); return reduceApi('prod', ReduceOp.Prod, this, dim, keepdim); },
  all(this: Tensor, ...a: unknown[]) { const { dim, keepdim } = bindDim<number>('all', a, 0); return reduce(ReduceOp.All, this, dim, keepdim); },
  any(this: Tensor, ...a: unknown[]) { const { dim, keepdim } = bindDim<number>('any', a, 0); return reduce(ReduceOp.Any, this, dim, keepdim); },
  max(this: Tensor, ...a: unknown[]) { if (a[0] instanceof Tensor) return binaryApi('maximum', this, a[0]); const { dim, keepdim } = bindDim<number>('max', a, 0); return maxMin(true, this, dim, keepdim); },
  min(this: Tensor, ...a: unknown[]) { if (a[0] instanceof Tensor) return binaryApi('minimum', this, a[0]); const { dim, keepdim } = bindDim<number>('min', a, 0); return maxMin(false, this, dim, keepdim); },
  argmax(this: Tensor, ...a: unknown[]) { const { dim, keepdim } = bindDim<number>('argmax', a, 0); return argReduce(true, this, dim, keepdim); },
  argmin(this: Tensor, ...a: unknown[]) { const { dim, keepdim } = bindDim<number>('argmin', a, 0); return argReduce(false, this, dim, keepdim); },
  matmul(this: Tensor, o: Tensor) { return matmul(this, o); },
  reshape(this: Tensor, ...s: number[] | [number[]]) { return V.reshape(this, shapeArgs(s)); },
  view(this: Tensor, ...s: number[] | [number[]]) { return V.viewAs(this, shapeArgs(s)); },
  permute(this: Tensor, ...d: number[] | [number[]]) { return V.permute(this, shapeArgs(d)); },
  transpose(this: Tensor, a: number, b: number) { return V.transpose(this, a, b); },
  t(this: Tensor) { return V.t2(this); },
  expand(this: Tensor, ...s: number[] | [number[]]) { return V.expand(this, shapeArgs(s)); },
  expandAs(this: Tensor, o: Tensor) { return V.expand(this, o.shape.slice()); },
  squeeze(this: Tensor, dim?: number) { return V.squeeze(this, dim); },
  unsqueeze(this: Tensor, dim: number) { return V.unsqueeze(this, dim); },
  flatten(this: Tensor, s?: number, e?: number) { return V.flatten(this, s, e); },
  slice(this: Tensor, d: number, s?: number | null, e?: number | null, st?: number) { return V.slice(this, d, s, e, st); },
  select(this: Tensor, d: number, i: number) { return V.select(this, d, i); },
  narrow(this: Tensor, d: number, s: number, l: number) { return V.narrow(this, d, s, l); },
  asStrided(this: Tensor, s: number[], st: number[], o?: number) { return V.asStrided(this, s, st, o); },
  index(this: Tensor, ...idx: V.Index[]) { return V.index(this, ...idx); },
  contiguous(this: Tensor) { return V.contiguous(this); },
  clone(this: Tensor) { return clone(this); },
  to(this: Tensor, target: DeviceLike | DType | ToOptions, opt?: ToOptions) { return to(this, target, opt); },
  cuda(this: Tensor, ...args: PyArgs<[device: DeviceLike | null, nonBlocking: boolean], { device?: DeviceLike | null; nonBlocking?: boolean }>) { return toGpu(this, ...args); },
  gpu(this: Tensor, ...args: PyArgs<[device: DeviceLike | null, nonBlocking: boolean], { device?: DeviceLike | null; nonBlocking?: boolean }>) { return toGpu(this, ...args); },
  cpu(this: Tensor) { return to(this, 'cpu'); },
  normal_(this: Tensor, ...a: never[]) { return (R.normal_ as (t: Tensor, ...a: unknown[]) => Tensor)(this, ...a); },
  uniform_(this: Tensor, ...a: never[]) { return (R.uniform_ as (t: Tensor, ...a: unknown[]) => Tensor)(this, ...a); },
  bernoulli_(this: Tensor, ...a: never[]) { return (R.bernoulli_ as (t: Tensor, ...a: unknown[]) => Tensor)(this, ...a); },
  bernoulli(this: Tensor, ...a: never[]) { return (bernoulli as (t: Tensor, ...a: unknown[]) => Tensor)(this, ...a); },
  multinomial(this: Tensor, ...a: never[]) { return (multinomial as (t: Tensor, ...a: unknown[]) => Tensor)(this, ...a); },
  copy_(this: Tensor, src: Tensor, ...args: PyArgs<[nonBlocking: boolean], { nonBlocking?: boolean }>) {
    return copyInto(this, src, !!bindArgs('copy_', ['nonBlocking'], args, { nonBlocking: false }).nonBlocking);
  },
  pinMemory(this: Tensor) { return pinMemory(this); },
  isPinned(this: Tensor) { return isPinned(this); },
  float(this: Tensor) { return to(this, 'float32'); },
  half(this: Tensor) { return to(this, 'float16'); },
  bfloat16(this: Tensor) { return to(this, 'bfloat16'); },
  int(this: Tensor) { return to(this, 'int32'); },
  long(this: Tensor) { return to(this, 'int64'); },
  bool(this: Tensor) { return to(this, 'bool'); },
  byte(this: Tensor) { return to(this, 'uint8'); },
});

Object.defineProperty(Tensor.prototype, 'T', {
  get(this: Tensor) { return V.t2(this); },
});
Object.defineProperty(Tensor.prototype, 'mT', {
  get(this: Tensor) {
    if (this.ndim < 2) throw new RangeError(`tensor.mT is only supported on matrices or batches of matrices. Got ${this.ndim}-D tensor.`);
    return V.transpose(this, -2, -1);
  },
});

// ---- NN, statistics and shape methods (ts/ops/{nn,stats,shape}.ts) ----
import { logSoftmax, softmax, type SoftmaxArgs } from './nn.js';
import { chunk, repeat, roll, split, tril, triu } from './shape.js';
import { logsumexp, norm, std, variance, type NormOrd, type VarOptions } from './stats.js';

declare module '../tensor.js' {
  interface Tensor {
    softmax(...args: SoftmaxArgs): Tensor;
    logSoftmax(...args: SoftmaxArgs): Tensor;
    var(dim?: Dims, options?: VarOptions): Tensor;
    std(dim?: Dims, options?: VarOptions): Tensor;
    logsumexp(dim: Dims, keepdim?: boolean): Tensor;
    norm(p?: NormOrd, dim?: Dims, keepdim?: boolean): Tensor;
    split(splitSizeOrSections: number | number[], dim?: number): Tensor[];
    chunk(chunks: number, dim?: number): Tensor[];
    roll(shifts: number | number[], dims?: number | number[]): Tensor;
    repeat(...repeats: number[] | [number[]]): Tensor;
    tril(diagonal?: number): Tensor;
    triu(diagonal?: number): Tensor;
  }
}

Object.assign(Tensor.prototype, {
  softmax(this: Tensor, ...args: SoftmaxArgs) { return softmax(this, ...args); },
  logSoftmax(this: Tensor, ...args: SoftmaxArgs) { return logSoftmax(this, ...args); },
  var(this: Tensor, dim?: Dims, o?: VarOptions) { return variance(this, dim, o); },
  std(this: Tensor, dim?: Dims, o?: VarOptions) { return std(this, dim, o); },
  logsumexp(this: Tensor, dim: Dims, keepdim?: boolean) { return logsumexp(this, dim, keepdim); },
  norm(this: Tensor, p?: NormOrd, dim?: Dims, keepdim?: boolean) { return norm(this, p, dim, keepdim); },
  split(this: Tensor, s: number | number[], dim?: number) { return split(this, s, dim); },
  chunk(this: Tensor, n: number, dim?: number) { return chunk(this, n, dim); },
  roll(this: Tensor, s: number | number[], d?: number | number[]) { return roll(this, s, d); },
  repeat(this: Tensor, ...r: number[] | [number[]]) { return repeat(this, shapeArgs(r)); },
  tril(this: Tensor, d?: number) { return tril(this, d); },
  triu(this: Tensor, d?: number) { return triu(this, d); },
});

// ---- The index family (ts/ops/indexing.ts) ----
import * as IX from './indexing.js';

declare module '../tensor.js' {
  interface Tensor {
    indexSelect(dim: number, index: Tensor): Tensor;
    gather(dim: number, index: Tensor): Tensor;
    scatter(dim: number, index: Tensor, src: Tensor | number | boolean): Tensor;
    scatterAdd(dim: number, index: Tensor, src: Tensor): Tensor;
    take(index: Tensor): Tensor;
    maskedFill(mask: Tensor, value: number | boolean | Tensor): Tensor;
    /** `x.cumsum(dim)` or `x.cumsum({dim})`. */
    cumsum(...args: PyArgs<[dim: number], { dim?: number }>): Tensor;
    /** `x.cumprod(dim)` or `x.cumprod({dim})`. */
    cumprod(...args: PyArgs<[dim: number], { dim?: number }>): Tensor;
    sort(...args: PyArgs<[dim: number, descending: boolean, stable: boolean], { dim?: number; descending?: boolean; stable?: boolean }>): ValuesIndices;
    topk(k: number, ...args: PyArgs<[dim: number, largest: boolean, sorted: boolean], { dim?: number; largest?: boolean; sorted?: boolean }>): ValuesIndices;
  }
}

Object.assign(Tensor.prototype, {
  indexSelect(this: Tensor, dim: number, index: Tensor) { return IX.indexSelect(this, dim, index); },
  gather(this: Tensor, dim: number, index: Tensor) { return IX.gather(this, dim, index); },
  scatter(this: Tensor, dim: number, index: Tensor, src: Tensor | number | boolean) { return IX.scatter(this, dim, index, src); },
  scatterAdd(this: Tensor, dim: number, index: Tensor, src: Tensor) { return IX.scatterAdd(this, dim, index, src); },
  take(this: Tensor, index: Tensor) { return IX.take(this, index); },
  maskedFill(this: Tensor, mask: Tensor, value: number | boolean | Tensor) { return IX.maskedFill(this, mask, value); },
  cumsum(this: Tensor, ...a: unknown[]) { return IX.cumsum(this, bindArgs('cumsum', ['dim'], a, { dim: REQUIRED as number }).dim); },
  cumprod(this: Tensor, ...a: unknown[]) { return IX.cumprod(this, bindArgs('cumprod', ['dim'], a, { dim: REQUIRED as number }).dim); },
  sort(this: Tensor, ...a: unknown[]) { const o = bindArgs('sort', ['dim', 'descending', 'stable'], a, { dim: -1, descending: false, stable: false }); return IX.sort(this, o.dim, o.descending); },
  topk(this: Tensor, k: number, ...a: unknown[]) { const o = bindArgs('topk', ['dim', 'largest', 'sorted'], a, { dim: -1, largest: true, sorted: true }, 1); return IX.topk(this, k, o.dim, o.largest, o.sorted); },
});

// ---- Advanced indexing and flip (ts/ops/advanced.ts); `index` with tensor entries is in views.ts ----
import * as AD from './advanced.js';

declare module '../tensor.js' {
  interface Tensor {
    /** `x.flip(0, -1)` or `x.flip([0, -1])`: a copy reversed along the dims. */
    flip(...dims: number[] | [number[]]): Tensor;
    /** `x[idx]` with bool/uint8 masks too (a sync point: the result's shape depends on the mask's values). */
    indexAsync(...idx: V.Index[]): Promise<Tensor>;
    /** `x[indices] = values` (or `+=` with accumulate), in place; returns x. */
    indexPut_(indices: Tensor | Tensor[], values: Tensor | number | boolean, accumulate?: boolean): Tensor;
    /** `torch.nonzero(x)`: int64 [n, ndim] coordinates (a sync point). */
    nonzero(): Promise<Tensor>;
    /** `torch.masked_select(x, mask)` (a sync point). */
    maskedSelect(mask: Tensor): Promise<Tensor>;
  }
}

Object.assign(Tensor.prototype, {
  flip(this: Tensor, ...d: number[] | [number[]]) { return AD.flip(this, shapeArgs(d)); },
  indexAsync(this: Tensor, ...idx: V.Index[]) { return AD.indexAsync(this, ...idx); },
  indexPut_(this: Tensor, i: Tensor | Tensor[], v: Tensor | number | boolean, acc?: boolean) { return AD.indexPut_(this, i, v, acc); },
  nonzero(this: Tensor) { return AD.nonzero(this); },
  maskedSelect(this: Tensor, mask: Tensor) { return AD.maskedSelect(this, mask); },
});
