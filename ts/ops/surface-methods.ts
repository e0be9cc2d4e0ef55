/**
 * The tensor methods of the everyday surface (ts/ops/{linalg,einsum,surface,host-shaped,fused}.ts):
 * `x.mm(y)`, `x.bmm(y)`, `x.mv(v)`, `x.dot(y)`, `x.outer(y)`, `x.addmm(a, b)`, `x.unbind()`,
 * `x.argsort()`, `x.amax()`, `x.lerp_(end, w)`, …: each a one-line forward to the function.
 */
import { Tensor } from '../tensor.js';
import type { DType } from '../dtype.js';
import type { TensorOrScalar } from './elementwise.js';
import * as E from './extras.js';
import * as Fu from './fused.js';
import * as H from './host-shaped.js';
import * as L from './linalg.js';
import * as S from './surface.js';

/** The arguments of `fn` after its first (the tensor the method is called on). */
type After<F> = F extends (first: Tensor, ...rest: infer A) => unknown ? A : never;

declare module '../tensor.js' {
  interface Tensor {
    /** `x.mm(mat2)` (`torch.mm`). */
    mm(...args: After<typeof L.mm>): Tensor;
    /** `x.bmm(mat2)` (`torch.bmm`). */
    bmm(...args: After<typeof L.bmm>): Tensor;
    /** `x.mv(vec)` (`torch.mv`). */
    mv(...args: After<typeof L.mv>): Tensor;
    /** `x.dot(other)` (`torch.dot`). */
    dot(...args: After<typeof L.dot>): Tensor;
    /** `x.outer(vec2)` (`torch.outer`). */
    outer(...args: After<typeof L.outer>): Tensor;
    /** `x.addmm(mat1, mat2, {beta, alpha})` (`torch.addmm`). */
    addmm(...args: After<typeof L.addmm>): Tensor;
    /** `x.baddbmm(batch1, batch2, {beta, alpha})` (`torch.baddbmm`). */
    baddbmm(...args: After<typeof L.baddbmm>): Tensor;
    /** `x.addmv(mat, vec, {beta, alpha})` (`torch.addmv`). */
    addmv(...args: After<typeof L.addmv>): Tensor;
    /** `x.diagonal(offset, dim1, dim2)`: a view (`torch.diagonal`). */
    diagonal(...args: After<typeof L.diagonal>): Tensor;
    /** `x.diag(diagonal)` (`torch.diag`). */
    diag(...args: After<typeof L.diag>): Tensor;
    /** `x.unbind(dim)`: views of the slices along dim (`torch.unbind`). */
    unbind(...args: After<typeof S.unbind>): Tensor[];
    /** `x.argsort(dim, descending, {stable})` (`torch.argsort`). */
    argsort(...args: After<typeof S.argsort>): Tensor;
    /** `x.amax(dim, keepdim)` (`torch.amax`). */
    amax(...args: After<typeof S.amax>): Tensor;
    /** `x.amin(dim, keepdim)` (`torch.amin`). */
    amin(...args: After<typeof S.amin>): Tensor;
    /** `x.isinf()` (`torch.isinf`). */
    isinf(): Tensor;
    /** `x.isfinite()` (`torch.isfinite`). */
    isfinite(): Tensor;
    /** `x.isclose(other, rtol, atol, equalNan)` (`torch.isclose`). */
    isclose(...args: After<typeof S.isclose>): Tensor;
    /** `x.allclose(other, rtol, atol, equalNan)`: a Promise of a boolean (`torch.allclose`). */
    allclose(...args: After<typeof S.allclose>): Promise<boolean>;
    /** `x.unique(sorted, returnInverse, returnCounts, dim)`: a Promise (`torch.unique`). */
    unique(...args: After<typeof H.unique>): Promise<Tensor | Tensor[]>;
    /** `x.bincount(weights, minlength)`: a Promise (`torch.bincount`). */
    bincount(...args: After<typeof H.bincount>): Promise<Tensor>;
    /** `x.repeatInterleave(repeats, dim)`: a Tensor for a number of repeats, a Promise for a tensor of them. */
    repeatInterleave(...args: H.RepeatArgs<number>): Tensor;
    repeatInterleave(...args: H.RepeatArgs<Tensor>): Promise<Tensor>;
    /** `x.lerp(end, weight)` (`torch.lerp`). */
    lerp(end: Tensor, weight: TensorOrScalar): Tensor;
    /** `x.addcmul(tensor1, tensor2, {value})` (`torch.addcmul`). */
    addcmul(...args: After<typeof Fu.addcmul>): Tensor;
    /** `x.addcdiv(tensor1, tensor2, {value})` (`torch.addcdiv`). */
    addcdiv(...args: After<typeof Fu.addcdiv>): Tensor;
    /** `x.indexAdd(dim, index, source, {alpha})` (`torch.index_add`). */
    indexAdd(...args: After<typeof Fu.indexAdd>): Tensor;
    /** `x.maskedFill_(mask, value)`: in place. */
    maskedFill_(...args: After<typeof Fu.maskedFill_>): Tensor;
    /** `x.scatter_(dim, index, src)`: in place. */
    scatter_(...args: After<typeof Fu.scatter_>): Tensor;
    /** `x.scatterAdd_(dim, index, src)`: in place. */
    scatterAdd_(...args: After<typeof Fu.scatterAdd_>): Tensor;
    /** `x.indexAdd_(dim, index, source, {alpha})`: in place. */
    indexAdd_(...args: After<typeof Fu.indexAdd_>): Tensor;
    /** `x.addcmul_(tensor1, tensor2, {value})`: in place. */
    addcmul_(...args: After<typeof Fu.addcmul_>): Tensor;
    /** `x.addcdiv_(tensor1, tensor2, {value})`: in place. */
    addcdiv_(...args: After<typeof Fu.addcdiv_>): Tensor;
    /** `x.lerp_(end, weight)`: in place. */
    lerp_(end: Tensor, weight: TensorOrScalar): Tensor;
    /** `x.cosh()` (`torch.cosh`). */
    cosh(): Tensor;
    /** `x.sinh()` (`torch.sinh`). */
    sinh(): Tensor;
    /** `x.swapaxes(axis0, axis1)` (`transpose`). */
    swapaxes(...args: After<typeof E.swapaxes>): Tensor;
    /** `x.swapdims(dim0, dim1)` (`transpose`). */
    swapdims(...args: After<typeof E.swapdims>): Tensor;
    /** `x.t_()`: x becomes its transpose, in place. */
    t_(): Tensor;
    /** `x.type()`: the legacy type name (`'torch.FloatTensor'`). */
    type(): string;
    /** `x.type(dtype)`: x in that dtype (`x.to(dtype)`). */
    type(dtype: DType): Tensor;
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Fn = (first: Tensor, ...rest: any[]) => unknown;
/** The method calling `fn` with `this` first. */
const method = (fn: Fn) => function (this: Tensor, ...rest: unknown[]) { return fn(this, ...rest); };

const table: Record<string, Fn> = {
  mm: L.mm, bmm: L.bmm, mv: L.mv, dot: L.dot, outer: L.outer, addmm: L.addmm, baddbmm: L.baddbmm, addmv: L.addmv,
  diagonal: L.diagonal, diag: L.diag, unbind: S.unbind, argsort: S.argsort, amax: S.amax, amin: S.amin,
  isinf: S.isinf, isfinite: S.isfinite, isclose: S.isclose, allclose: S.allclose,
  unique: H.unique, bincount: H.bincount, repeatInterleave: H.repeatInterleave as Fn,
  lerp: Fu.lerp, addcmul: Fu.addcmul, addcdiv: Fu.addcdiv, indexAdd: Fu.indexAdd,
  maskedFill_: Fu.maskedFill_, scatter_: Fu.scatter_, scatterAdd_: Fu.scatterAdd_, indexAdd_: Fu.indexAdd_,
  addcmul_: Fu.addcmul_, addcdiv_: Fu.addcdiv_, lerp_: Fu.lerp_,
  cosh: E.cosh, sinh: E.sinh, swapaxes: E.swapaxes, swapdims: E.swapdims, t_: E.t_, type: E.type as Fn,
};
for (const [name, fn] of Object.entries(table)) (Tensor.prototype as unknown as Record<string, unknown>)[name] = method(fn);
