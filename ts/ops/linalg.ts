/**
 * The named matrix products and their fused-add forms: `mm`, `bmm`, `mv`, `dot`, `outer`,
 * `addmm`, `baddbmm`, `addmv`, and the diagonal views `diagonal`/`diag`.
 *
 * Each checks the ranks, sizes and dtypes PyTorch checks, with PyTorch's messages, and then is
 * `matmul` (ts/ops/matmul.ts), whose kernels take strided operands and whose gradient rule
 * serves them all. The fused forms are `beta·input + alpha·product`, with PyTorch's rule that
 * `beta = 0` ignores `input` (its NaN does not propagate).
 */
import { scalarName } from '../dtype.js';
import { op as recorded } from '../autograd/graph.js';
import { sameDevice } from '../runtime/dispatch.js';
import { normDim } from '../shape.js';
import { Tensor, view } from '../tensor.js';
import { copyInto } from './copy.js';
import { full } from './creation.js';
import { cast } from './cast.js';
import { binaryOp } from './elementwise.js';
import { matmul } from './matmul.js';
import { bindArgs, type PyArgs } from '../args.js';
import { tidy } from './scoped.js';
import { expand, unsqueeze } from './views.js';

const isTensor = (op: string, name: string, t: unknown): Tensor => {
  if (!(t instanceof Tensor)) throw new TypeError(`${op}(): argument '${name}' must be Tensor, not ${t === null ? 'null' : typeof t}`);
  return t;
};

/** PyTorch's "expected scalar type X but found Y" for operands of a product. */
function sameDtype(op: string, a: Tensor, b: Tensor): void {
  if (a.dtype !== b.dtype) throw new TypeError(`${op}: expected scalar type ${scalarName(a.dtype)} but found ${scalarName(b.dtype)}`);
}

/** PyTorch's "mat1 and mat2 shapes cannot be multiplied" for two matrices. */
function shapesMultiply(op: string, a: Tensor, b: Tensor): void {
  if (a.shape[1] !== b.shape[0]) throw new RangeError(`${op}: mat1 and mat2 shapes cannot be multiplied (${a.shape.join('x')} and ${b.shape.join('x')})`);
}

/** `torch.mm(input, mat2)`: the product of two matrices (no broadcasting). */
export function mm(input: Tensor, mat2: Tensor, ...rest: []): Tensor {
  bindArgs('mm', [], rest, {}, 2);
  isTensor('mm', 'input', input);
  isTensor('mm', 'mat2', mat2);
  if (input.ndim !== 2) throw new RangeError(`mm: self must be a matrix (got a ${input.ndim}-D tensor)`);
  if (mat2.ndim !== 2) throw new RangeError(`mm: mat2 must be a matrix (got a ${mat2.ndim}-D tensor)`);
  sameDevice('mm', [input, mat2]);
  sameDtype('mm', input, mat2);
  shapesMultiply('mm', input, mat2);
  return matmul(input, mat2);
}

/** The rank and size checks of a batched product (`bmm`, `baddbmm`). */
function checkBatches(op: string, b1: Tensor, b2: Tensor): void {
  isTensor(op, 'batch1', b1);
  isTensor(op, 'batch2', b2);
  if (b1.ndim !== 3) throw new RangeError(`${op}: batch1 must be a 3D tensor (got ${b1.ndim}-D)`);
  if (b2.ndim !== 3) throw new RangeError(`${op}: batch2 must be a 3D tensor (got ${b2.ndim}-D)`);
  if (b2.shape[0] !== b1.shape[0] || b2.shape[1] !== b1.shape[2]) {
    throw new RangeError(`${op}: Expected size for first two dimensions of batch2 tensor to be: [${b1.shape[0]}, ${b1.shape[2]}] but got: [${b2.shape[0]}, ${b2.shape[1]}].`);
  }
  sameDevice(op, [b1, b2]);
  sameDtype(op, b1, b2);
}

/** `torch.bmm(input, mat2)`: products of two batches of matrices, [b, n, m] · [b, m, p]. */
export function bmm(input: Tensor, mat2: Tensor, ...rest: []): Tensor {
  bindArgs('bmm', [], rest, {}, 2);
  checkBatches('bmm', input, mat2);
  return matmul(input, mat2);
}

/** `torch.mv(input, vec)`: a matrix times a vector. */
export function mv(input: Tensor, vec: Tensor, ...rest: []): Tensor {
  bindArgs('mv', [], rest, {}, 2);
  isTensor('mv', 'input', input);
  isTensor('mv', 'vec', vec);
  if (input.ndim !== 2 || vec.ndim !== 1) throw new RangeError(`mv: vector + matrix @ vector expected, got 1, ${input.ndim}, ${vec.ndim}`);
  if (input.shape[1] !== vec.shape[0]) throw new RangeError(`mv: size mismatch, got ${input.shape[0]}, ${input.shape[0]}x${input.shape[1]},${vec.shape[0]}`);
  sameDevice('mv', [input, vec]);
  sameDtype('mv', input, vec);
  return matmul(input, vec);
}

/** `torch.dot(input, other)`: the inner product of two 1-D tensors of one dtype. */
export function dot(input: Tensor, other: Tensor, ...rest: []): Tensor {
  bindArgs('dot', [], rest, {}, 2);
  isTensor('dot', 'input', input);
  isTensor('dot', 'other', other);
  if (input.ndim !== 1 || other.ndim !== 1) throw new RangeError(`dot: 1D tensors expected, but got ${input.ndim}D and ${other.ndim}D tensors`);
  if (input.shape[0] !== other.shape[0]) {
    throw new RangeError(`dot: inconsistent tensor size, expected tensor [${input.shape[0]}] and src [${other.shape[0]}] to have the same number of elements, but got ${input.shape[0]} and ${other.shape[0]} elements respectively`);
  }
  if (input.dtype !== other.dtype) throw new TypeError(`dot : expected both vectors to have same dtype, but found ${scalarName(input.dtype)} and ${scalarName(other.dtype)}`);
  sameDevice('dot', [input, other]);
  return matmul(input, other);
}

/** `torch.outer(input, vec2)`: the outer product of two vectors (dtypes promote, as in `mul`). */
export function outer(input: Tensor, vec2: Tensor, ...rest: []): Tensor {
  bindArgs('outer', [], rest, {}, 2);
  isTensor('outer', 'input', input);
  isTensor('outer', 'vec2', vec2);
  if (input.ndim !== 1) throw new RangeError(`outer: Expected 1-D argument self, but got ${input.ndim}-D`);
  if (vec2.ndim !== 1) throw new RangeError(`outer: Expected 1-D argument vec2, but got ${vec2.ndim}-D`);
  return tidy(() => binaryOp('mul', unsqueeze(input, 1), unsqueeze(vec2, 0)));
}

/** Keywords of the fused products. */
export interface BetaAlpha { beta?: number; alpha?: number }

/** `beta·input + alpha·product`, with `input` broadcast to the product's shape; beta = 0 ignores input. */
function fused(op: string, input: Tensor, product: () => Tensor, beta: number, alpha: number): Tensor {
  isTensor(op, 'input', input);
  return tidy(() => {
    const p = product();
    const scaled = alpha === 1 ? p : binaryOp('mul', p, alpha);
    const shape = p.shape.slice();
    let inp: Tensor;
    try {
      inp = expand(input, shape);
    } catch {
      throw new RangeError(`${op}: The expanded size of the tensor (${shape[shape.length - 1]}) must match the existing size (${input.shape[input.ndim - 1]}) at non-singleton dimension ${shape.length - 1}.  Target sizes: [${shape.join(', ')}].  Tensor sizes: [${input.shape.join(', ')}]`);
    }
    if (beta === 0) return scaled;
    return binaryOp('add', scaled, beta === 1 ? inp : binaryOp('mul', inp, beta));
  });
}

type FusedArgs = PyArgs<[], BetaAlpha>;

/** `torch.addmm(input, mat1, mat2, {beta = 1, alpha = 1})`: `beta·input + alpha·(mat1 @ mat2)`. */
export function addmm(input: Tensor, mat1: Tensor, mat2: Tensor, ...args: FusedArgs): Tensor {
  const { beta, alpha } = bindArgs('addmm', ['beta', 'alpha'], args, { beta: 1, alpha: 1 }, 3, 0);
  isTensor('addmm', 'mat1', mat1);
  isTensor('addmm', 'mat2', mat2);
  if (mat1.ndim !== 2) throw new RangeError(`addmm: mat1 must be a matrix, got ${mat1.ndim}-D tensor`);
  if (mat2.ndim !== 2) throw new RangeError(`addmm: mat2 must be a matrix, got ${mat2.ndim}-D tensor`);
  sameDtype('addmm', mat1, mat2);
  shapesMultiply('addmm', mat1, mat2);
  return fused('addmm', input, () => matmul(mat1, mat2), beta, alpha);
}

/** `torch.baddbmm(input, batch1, batch2, {beta = 1, alpha = 1})`: `beta·input + alpha·bmm(batch1, batch2)`. */
export function baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, ...args: FusedArgs): Tensor {
  const { beta, alpha } = bindArgs('baddbmm', ['beta', 'alpha'], args, { beta: 1, alpha: 1 }, 3, 0);
  checkBatches('baddbmm', batch1, batch2);
  return fused('baddbmm', input, () => matmul(batch1, batch2), beta, alpha);
}

/** `torch.addmv(input, mat, vec, {beta = 1, alpha = 1})`: `beta·input + alpha·(mat @ vec)`. */
export function addmv(input: Tensor, mat: Tensor, vec: Tensor, ...args: FusedArgs): Tensor {
  const { beta, alpha } = bindArgs('addmv', ['beta', 'alpha'], args, { beta: 1, alpha: 1 }, 3, 0);
  return fused('addmv', input, () => mv(mat, vec), beta, alpha);
}

/**
 * `torch.diagonal(input, offset = 0, dim1 = 0, dim2 = 1)`: a view of the diagonal of the
 * (dim1, dim2) planes, as a last dim. Its gradient writes `g` into the diagonal of zeros.
 */
export function diagonal(input: Tensor, ...args: PyArgs<[offset: number, dim1: number, dim2: number], { offset?: number; dim1?: number; dim2?: number }>): Tensor {
  const o = bindArgs('diagonal', ['offset', 'dim1', 'dim2'], args, { offset: 0, dim1: 0, dim2: 1 }, 1);
  isTensor('diagonal', 'input', input);
  const d1 = normDim(o.dim1, input.ndim), d2 = normDim(o.dim2, input.ndim);
  if (d1 === d2) throw new RangeError(`diagonal dimensions cannot be identical ${o.dim1}, ${o.dim2}`);
  const make = (t: Tensor): Tensor => {
    const off = o.offset;
    const n = Math.max(0, off >= 0 ? Math.min(t.shape[d1], t.shape[d2] - off) : Math.min(t.shape[d1] + off, t.shape[d2]));
    const start = n === 0 ? t._offset : t._offset + (off >= 0 ? off * t._strides[d2] : -off * t._strides[d1]);
    const keep = t.shape.map((_, i) => i).filter((i) => i !== d1 && i !== d2);
    return view(t, [...keep.map((i) => t.shape[i]), n], [...keep.map((i) => t._strides[i]), t._strides[d1] + t._strides[d2]], start);
  };
  sameDevice('diagonal', [input]);
  return recorded('diagonal', [input], () => make(input), () => ([g]) => {
    const z = full(input.shape.slice(), 0, { dtype: g!.dtype, device: g!.device });
    const zv = make(z);
    copyInto(zv, g!);
    zv.dispose();
    return [z];
  });
}

/**
 * `torch.diag(input, diagonal = 0)`: of a vector, the square matrix with it on the `diagonal`-th
 * diagonal; of a matrix, that diagonal as a vector (a copy, as in PyTorch).
 */
export function diag(input: Tensor, ...args: PyArgs<[diagonal: number], { diagonal?: number }>): Tensor {
  const { diagonal: k } = bindArgs('diag', ['diagonal'], args, { diagonal: 0 }, 1);
  isTensor('diag', 'input', input);
  if (input.ndim === 2) return tidy(() => cast(diagonal(input, k), input.dtype));
  if (input.ndim !== 1) throw new RangeError(`diag: matrix or a vector expected (got a ${input.ndim}-D tensor)`);
  const n = input.shape[0] + Math.abs(k);
  return recorded('diag', [input], () => {
    const z = full([n, n], 0, { dtype: input.dtype, device: input.device });
    const dv = diagonal(z, k);
    copyInto(dv, input);
    dv.dispose();
    return z;
  }, () => ([g]) => [tidy(() => cast(diagonal(g!, k), g!.dtype))]);
}
