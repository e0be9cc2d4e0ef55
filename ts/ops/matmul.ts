/**
 * `matmul` with PyTorch's rules: 1-D operands gain and then lose a dim, batch dims broadcast.
 * The kernel takes (batch, row, col) strides for each operand, so transposed operands and
 * broadcast batches reach it without a copy; only batch dims that cannot be folded into one
 * stride are made contiguous first.
 */
import { isFloating } from '../dtype.js';
import { alloc, code, emit, ref, sameDevice, place } from '../runtime/dispatch.js';
import { broadcastShapes, fmt, numel, viewStrides } from '../shape.js';
import type { Tensor } from '../tensor.js';
import { op as recorded } from '../autograd/graph.js';
import { binaryOp } from './elementwise.js';
import { reduce } from './reduce.js';
import { sumTo } from './reduce-kernel.js';
import { ReduceOp } from '../ir/ops.js';
import { checkDtypes } from './registry.js';
import { expand, reshape, transpose, unsqueeze } from './views.js';
import { cast, contiguous } from './cast.js';
import { autocastCall, autocasting } from '../amp/autocast.js';

/** Folds an operand to [batch, rows, cols] strides, copying only when batch dims cannot fold. */
function fold(t: Tensor, batch: number[], temps: Tensor[]): [Tensor, [number, number, number]] {
  const rows = t.shape[t.ndim - 2], cols = t.shape[t.ndim - 1];
  let e = expand(t, [...batch, rows, cols]);
  temps.push(e);
  // (No batch dims fold trivially; viewStrides has no dims to fold then, and would say no.)
  let bs = batch.length ? viewStrides(batch, e._strides.slice(0, batch.length), [numel(batch)]) : [0];
  if (!bs) {
    e = contiguous(e);
    temps.push(e);
    bs = [rows * cols];
  }
  return [e, [bs[0], e._strides[batch.length], e._strides[batch.length + 1]]];
}

/** Whether a 2-D operand is a transposed row-major matrix (`W.T`, as `linear` multiplies by). */
const columnMajor = (t: Tensor): boolean => t.ndim === 2 && t._strides[0] === 1 && t._strides[1] !== 1 && t.shape[0] > 1;

/** The transpose of a fresh product, as a view (the product is disposed with it). */
function transposed(p: Tensor): Tensor {
  const v = transpose(p, -1, -2);
  p.dispose();
  return v;
}

/**
 * `torch.matmul(a, b)`; gradients `g·Bᵀ` and `Aᵀ·g`, summed over broadcast batch dims. For a
 * column-major B (`x @ W.T`), B's gradient is computed as `(gᵀ·A)ᵀ`, as PyTorch does: the same
 * numbers, laid out like B, so that the transpose's own gradient hands W a row-major gradient
 * with no copy.
 */
export function matmul(a: Tensor, b: Tensor): Tensor {
  if (autocasting()) return autocastCall('matmul', [a, b], matmul);
  const folded = foldBatchIntoRows(a, b);
  if (folded) return folded;
  return mm(a, b);
}

/**
 * `matmul` past the autocast point. Its gradient rule calls it again: recorded when the backward
 * runs with `createGraph` (the gradient differentiable, as PyTorch's), plain otherwise.
 */
function mm(a: Tensor, b: Tensor): Tensor {
  return recorded('mm', [a, b], () => matmulForward(a, b), (ctx) => {
    const sa = b.requiresGrad ? ctx.save(a) : a, sb = a.requiresGrad ? ctx.save(b) : b;
    return ([g]) => {
      const a2 = a.ndim === 1 ? unsqueeze(sa, 0) : sa, b2 = b.ndim === 1 ? unsqueeze(sb, 1) : sb;
      const gShape = [...g!.shape.slice(0, g!.ndim - (a.ndim === 1 ? 0 : 1) - (b.ndim === 1 ? 0 : 1)), a2.shape[a2.ndim - 2], b2.shape[b2.ndim - 1]];
      const g2 = reshape(g!, gShape);
      const back = (shape: readonly number[], full: Tensor, padded: number[]) => reshape(sumTo(full, shape.length === 1 ? padded : shape), shape.slice());
      return [
        a.requiresGrad ? back(a.shape, mm(g2, transpose(b2, -1, -2)), [1, ...a.shape]) : null,
        b.requiresGrad ? back(b.shape, columnMajor(b2) ? transposed(mm(transpose(g2, -1, -2), a2)) : mm(transpose(a2, -1, -2), g2), [...b.shape, 1]) : null,
      ];
    };
  });
}

/**
 * `[..., m, k] @ [k, n]` (or `@ [k]`) as one 2-D product `[(...·m), k] @ [k, n]`, as PyTorch
 * folds it, when `a`'s leading dims are one stride apart (a view, no copy). Then B's gradient is
 * one product over all rows, laid out like B, instead of a product per batch summed over the
 * batch (a reduction, and copies to make its input and the leaf's gradient row-major).
 */
function foldBatchIntoRows(a: Tensor, b: Tensor): Tensor | null {
  if (a.ndim < 3 || b.ndim > 2 || b.ndim === 0 || a.dtype !== b.dtype || a.device !== b.device) return null;
  const k = a.shape[a.ndim - 1], n = numel(a.shape);
  if (k !== b.shape[0] || n === 0 || !viewStrides(a.shape, a._strides, [n / k, k])) return null;
  const rows = reshape(a, [-1, k]);
  const p = matmul(rows, b);
  rows.dispose();
  const out = reshape(p, [...a.shape.slice(0, -1), ...(b.ndim === 2 ? [b.shape[1]] : [])]);
  p.dispose();
  return out;
}

function matmulForward(a: Tensor, b: Tensor): Tensor {
  const dev = sameDevice('matmul', [a, b]);
  if (a.ndim === 0 || b.ndim === 0) {
    throw new RangeError(`both arguments to matmul need to be at least 1D, but they are ${a.ndim}D and ${b.ndim}D`);
  }
  if (a.dtype !== b.dtype) {
    throw new TypeError(`expected m1 and m2 to have the same dtype, but got: ${a.dtype} != ${b.dtype}`);
  }
  checkDtypes('matmul', a);
  const aShape = a.ndim === 1 ? [1, a.shape[0]] : a.shape, bShape = b.ndim === 1 ? [b.shape[0], 1] : b.shape;
  const [m, k] = aShape.slice(-2), [k2, n] = bShape.slice(-2);
  if (k !== k2) {
    const s = (t: readonly number[]) => t.join('x');
    throw new RangeError(a.ndim <= 2 && b.ndim <= 2
      ? `mat1 and mat2 shapes cannot be multiplied (${s(aShape)} and ${s(bShape)})`
      : `Expected size for first two dimensions of batch2 tensor to be: [${k}] but got: [${k2}] (matmul of ${fmt(a.shape)} and ${fmt(b.shape)})`);
  }
  if (!isFloating(a.dtype)) return integerMatmul(a, b);
  const batch = broadcastShapes(aShape.slice(0, -2), bShape.slice(0, -2));
  const temps: Tensor[] = [];
  const a2 = a.ndim === 1 ? unsqueeze(a, 0) : a, b2 = b.ndim === 1 ? unsqueeze(b, 1) : b;
  if (a2 !== a) temps.push(a2);
  if (b2 !== b) temps.push(b2);
  const [af, aStrides] = fold(a2, batch, temps), [bf, bStrides] = fold(b2, batch, temps);
  const out = alloc([...batch, m, n], a.dtype, dev);
  const nb = numel(batch);
  // how (tiles, split K, operand copies) is the device's choice (ts/worker/gpu/matmul.ts, ts/worker/cpu/matmul.ts)
  if (nb * m * n) emit(dev, { k: 'matmul', a: ref(af), b: ref(bf), dt: code(a), out: place(out), batch: nb, m, n, kk: k, aStrides, bStrides });
  temps.forEach((t) => t.dispose());
  const shape = [...batch, ...(a.ndim === 1 ? [] : [m]), ...(b.ndim === 1 ? [] : [n])];
  if (shape.length === out.ndim) return out;
  const r = reshape(out, shape);
  out.dispose();
  return r;
}

/**
 * Integer matmul (PyTorch computes it on the CPU; the matmul kernels are float): the products
 * a[..., m, k, 1] · b[..., 1, k, n] summed over k, exact and wrapping like PyTorch's. It holds
 * m·k·n products at once, so it suits the small integer products it is meant for.
 */
function integerMatmul(a: Tensor, b: Tensor): Tensor {
  const a2 = a.ndim === 1 ? unsqueeze(a, 0) : a, b2 = b.ndim === 1 ? unsqueeze(b, 1) : b;
  const a3 = unsqueeze(a2, -1), b3 = unsqueeze(b2, -3);
  const prod = binaryOp('mul', a3, b3);
  const sum = reduce(ReduceOp.Sum, prod, -2);
  const out = cast(sum, a.dtype);
  const shape = out.shape.slice(0, out.ndim - 2).concat(a.ndim === 1 ? [] : [out.shape[out.ndim - 2]], b.ndim === 1 ? [] : [out.shape[out.ndim - 1]]);
  const r = reshape(out, shape);
  for (const t of new Set([a2, b2, a3, b3, prod, sum, out])) if (t !== a && t !== b && t !== r) t.dispose();
  return r;
}
