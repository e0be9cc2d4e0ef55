/**
 * Joining, splitting and rearranging: `cat`, `stack`, `split`, `chunk`, `roll`, `repeat`,
 * `tril`, `triu`.
 *
 * `cat` is a recorded op: it copies each input into a slice of one fresh output, and a copy
 * into a slice is invisible to autograd (views here do not track their base), so its rule
 * slices the output gradient back apart. `split` (and `chunk`) is one recorded op too, of narrow
 * views, as PyTorch's SplitBackward0: its rule is one `cat` of the pieces' gradients, where a
 * view each would give its base a zero-filled gradient per piece, then sum them. Everything
 * else composes: `stack` is `cat` of unsqueezed views, `roll` is `cat` of two slices, `repeat`
 * is expand + reshape, and `tril`/`triu` are `where` with a mask built from two aranges.
 */
import { resultType } from '../dtype.js';
import { op as recorded, withGradMode } from '../autograd/graph.js';
import { alloc, sameDevice } from '../runtime/dispatch.js';
import { fmt, normDim } from '../shape.js';
import { Tensor, view } from '../tensor.js';
import { copyInto } from './copy.js';
import { arange, full } from './creation.js';
import { binaryOp, where } from './elementwise.js';
import { tidy } from './scoped.js';
import * as V from './views.js';
import { autocastCall, autocasting } from '../amp/autocast.js';

function tensorList(op: string, tensors: Tensor[]): void {
  if (!Array.isArray(tensors)) throw new TypeError(`${op}(): argument 'tensors' must be an array of Tensors, but got ${typeof tensors}`);
  if (tensors.length === 0) throw new RangeError(op === 'stack' ? 'stack expects a non-empty TensorList' : 'torch.cat(): expected a non-empty list of Tensors');
  tensors.forEach((t, i) => {
    if (!(t instanceof Tensor)) throw new TypeError(`${op}(): argument 'tensors' must be an array of Tensors, but element ${i} is ${t === null ? 'null' : typeof t}`);
  });
  sameDevice(op, tensors);
}

/** `torch.cat(tensors, dim)`: joins along an existing dim (dtypes promote; 1-D empty tensors are skipped, as in PyTorch). */
export function cat(tensors: Tensor[], dim = 0): Tensor {
  if (autocasting()) return autocastCall('cat', [tensors, dim], cat);
  tensorList('cat', tensors);
  const used = tensors.map((t) => !(t.ndim === 1 && t.shape[0] === 0));
  const parts = tensors.filter((_, i) => used[i]);
  const first = parts[0] ?? tensors[0];
  tensors.forEach((t, i) => {
    if (t.ndim === 0) throw new RangeError(`zero-dimensional tensor (at position ${i}) cannot be concatenated (cat)`);
  });
  const d = normDim(dim, first.ndim);
  tensors.forEach((t, i) => {
    if (!used[i]) return;
    if (t.ndim !== first.ndim) throw new RangeError(`Tensors must have same number of dimensions: got ${first.ndim} and ${t.ndim}`);
    t.shape.forEach((n, j) => {
      if (j !== d && n !== first.shape[j]) {
        throw new RangeError(`Sizes of tensors must match except in dimension ${d}. Expected size ${first.shape[j]} but got size ${n} for tensor number ${i} in the list. (in cat, shapes ${parts.map((p) => fmt(p.shape)).join(' and ')})`);
      }
    });
  });
  const dtype = resultType(...tensors.map((t) => ({ dtype: t.dtype, ndim: t.ndim })));
  const offsets: number[] = [];
  let total = 0;
  for (const t of tensors) {
    offsets.push(total);
    if (t.ndim === first.ndim) total += t.shape[d] ?? 0;
  }
  const shape = first.shape.map((n, j) => (j === d ? total : n));
  const slab = (t: Tensor, at: number, size: number) => {
    const s = shape.slice();
    s[d] = size;
    return view(t, s, t._strides, t._offset + at * t._strides[d]);
  };
  return recorded('cat', tensors, () => {
    const out = alloc(shape, dtype, first.device);
    tensors.forEach((t, i) => {
      if (!used[i] || !t.numel()) return;
      const dst = slab(out, offsets[i], t.shape[d]);
      copyInto(dst, t);
      dst.dispose();
    });
    return out;
  }, () => ([g]) => withGradMode(false, () => tensors.map((t, i) => {
    if (!t.requiresGrad) return null;
    if (!used[i]) return full([0], 0, { dtype: t.dtype, device: t.device });
    const s = slab(g!, offsets[i], t.shape[d]);
    const c = t.dtype === g!.dtype ? V.contiguous(s) : V.cast(s, t.dtype);
    if (c !== s) s.dispose();
    return c;
  })));
}

/** `torch.stack(tensors, dim)`: joins equal-shaped tensors along a new dim. */
export function stack(tensors: Tensor[], dim = 0): Tensor {
  if (autocasting()) return autocastCall('stack', [tensors, dim], stack);
  tensorList('stack', tensors);
  tensors.forEach((t, i) => {
    if (t.shape.join() !== tensors[0].shape.join() || t.ndim !== tensors[0].ndim) {
      throw new RangeError(`stack expects each tensor to be equal size, but got ${fmt(tensors[0].shape)} at entry 0 and ${fmt(t.shape)} at entry ${i}`);
    }
  });
  const d = normDim(dim, tensors[0].ndim + 1);
  return tidy(() => cat(tensors.map((t) => V.unsqueeze(t, d)), d));
}

/**
 * `torch.split(x, splitSizeOrSections, dim)`: views of `splitSize` along `dim` (the last may be
 * smaller), or of the listed sizes.
 */
export function split(x: Tensor, splitSizeOrSections: number | number[], dim = 0): Tensor[] {
  if (!(x instanceof Tensor)) throw new TypeError(`split(): expected input to be a Tensor, but got ${typeof x}`);
  sameDevice('split', [x]);
  if (x.ndim === 0) throw new RangeError('split(): expected a tensor with at least 1 dimension, but got a 0-dim tensor');
  const d = normDim(dim, x.ndim), n = x.shape[d];
  let sizes: number[];
  if (Array.isArray(splitSizeOrSections)) {
    sizes = splitSizeOrSections;
    if (sizes.some((s) => !Number.isInteger(s) || s < 0)) throw new RangeError(`split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=${fmt(sizes)}`);
    if (sizes.reduce((a, b) => a + b, 0) !== n) {
      throw new RangeError(`split_with_sizes expects split_sizes to sum exactly to ${n} (input tensor's size at dimension ${d}), but got split_sizes=${fmt(sizes)}`);
    }
  } else {
    const s = splitSizeOrSections;
    if (!Number.isInteger(s) || s < 0) throw new RangeError(`split expects split_size be non-negative, but got split_size=${s}`);
    if (s === 0 && n !== 0) throw new RangeError(`split_size can only be 0 if dimension size is 0, but got dimension size of ${n}`);
    sizes = s === 0 ? [0] : Array.from({ length: Math.max(1, Math.ceil(n / s)) }, (_, i) => Math.min(s, n - i * s));
  }
  const pieces = () => {
    let at = 0;
    return sizes.map((s) => {
      const v = V.narrow(x, d, at, s);
      at += s;
      return v;
    });
  };
  // the rule keeps the pieces' sizes, not the pieces (the node would hold its own outputs)
  const shape = x.shape.slice(), device = x.device;
  return recorded(Array.isArray(splitSizeOrSections) ? 'split_with_sizes' : 'split', [x], pieces, () => (gs) => {
    // pieces that got no gradient are holes or missing at the end of `gs`: zeros in the cat
    const dtype = gs.find((g) => g)?.dtype ?? 'float32';
    return [cat(sizes.map((s, i) => gs[i] ?? full(shape.map((n, j) => (j === d ? s : n)), 0, { dtype, device })), d)];
  });
}

/** `torch.chunk(x, chunks, dim)`: `split` into pieces of `ceil(size / chunks)` (possibly fewer than `chunks`). */
export function chunk(x: Tensor, chunks: number, dim = 0): Tensor[] {
  if (!Number.isInteger(chunks) || chunks <= 0) throw new RangeError(`chunk expects \`chunks\` to be greater than 0, got: ${chunks}`);
  if (!(x instanceof Tensor)) throw new TypeError(`chunk(): expected input to be a Tensor, but got ${typeof x}`);
  if (x.ndim === 0) throw new RangeError('chunk expects at least a 1-dimensional tensor');
  const n = x.shape[normDim(dim, x.ndim)];
  if (n === 0) return Array.from({ length: chunks }, () => V.narrow(x, dim, 0, 0));
  return split(x, Math.ceil(n / chunks), dim);
}

/** `torch.roll(x, shifts, dims)`: rotates along `dims` (the flattened tensor when omitted). */
export function roll(x: Tensor, shifts: number | number[], dims?: number | number[]): Tensor {
  if (!(x instanceof Tensor)) throw new TypeError(`roll(): expected input to be a Tensor, but got ${typeof x}`);
  sameDevice('roll', [x]);
  const sh = Array.isArray(shifts) ? shifts : [shifts], ds = dims === undefined ? [] : Array.isArray(dims) ? dims : [dims];
  if (sh.some((s) => !Number.isInteger(s))) throw new TypeError(`roll(): shifts must be integers, but got ${JSON.stringify(shifts)}`);
  if (ds.length === 0) {
    if (sh.length !== 1) throw new RangeError(`shifts and dimensions must align. shifts: ${sh.length}, dims:0`);
    return tidy(() => V.reshape(roll(V.reshape(x, [-1]), sh[0], 0), x.shape.slice()));
  }
  if (sh.length !== ds.length) throw new RangeError(`shifts and dimensions must align. shifts: ${sh.length}, dims:${ds.length}`);
  return tidy(() => {
    let cur = x;
    ds.forEach((dim, i) => {
      const d = normDim(dim, x.ndim), n = x.shape[d], s = n ? ((sh[i] % n) + n) % n : 0;
      if (s === 0) return;
      cur = cat([V.narrow(cur, d, n - s, s), V.narrow(cur, d, 0, n - s)], d);
    });
    return cur === x ? V.index(x) : cur;
  });
}

/** `x.repeat(...repeats)`: tiles x `repeats[i]` times along dim i (leading repeats add dims). */
export function repeat(x: Tensor, repeats: number[]): Tensor {
  if (!(x instanceof Tensor)) throw new TypeError(`repeat(): expected input to be a Tensor, but got ${typeof x}`);
  sameDevice('repeat', [x]);
  if (!Array.isArray(repeats) || repeats.some((r) => !Number.isInteger(r))) throw new TypeError(`repeat(): repeats must be integers, but got ${JSON.stringify(repeats)}`);
  if (repeats.length < x.ndim) {
    throw new RangeError(`Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor (repeats ${fmt(repeats)} for a tensor of shape ${fmt(x.shape)})`);
  }
  if (repeats.some((r) => r < 0)) throw new RangeError(`Trying to create tensor with negative dimension ${repeats.find((r) => r < 0)}: ${fmt(repeats)}`);
  const shape = [...new Array<number>(repeats.length - x.ndim).fill(1), ...x.shape];
  return tidy(() => {
    const spread = V.reshape(x, shape.flatMap((n) => [1, n]));
    const tiled = V.expand(spread, shape.flatMap((n, i) => [repeats[i], n]));
    return V.reshape(tiled, shape.map((n, i) => n * repeats[i]));
  });
}

function triangle(op: 'tril' | 'triu', x: Tensor, diagonal: number): Tensor {
  if (!(x instanceof Tensor)) throw new TypeError(`${op}(): expected input to be a Tensor, but got ${typeof x}`);
  sameDevice(op, [x]);
  if (x.ndim < 2) throw new RangeError(`${op}: input tensor must have at least 2 dimensions (got shape ${fmt(x.shape)})`);
  if (!Number.isInteger(diagonal)) throw new TypeError(`${op}(): diagonal must be an integer, but got ${diagonal}`);
  const [r, c] = x.shape.slice(-2), opts = { device: x.device, dtype: 'int64' };
  return tidy(() => {
    const rows = V.reshape(arange(r, undefined, 1, opts), [r, 1]), cols = arange(c, undefined, 1, opts);
    const offset = binaryOp('sub', cols, rows);
    const mask = binaryOp(op === 'tril' ? 'le' : 'ge', offset, diagonal);
    return where(mask, x, full([], 0, { dtype: x.dtype, device: x.device }));
  });
}

/** `torch.tril(x, diagonal)`: keeps the elements on and below the diagonal of the last two dims. */
export const tril = (x: Tensor, diagonal = 0): Tensor => triangle('tril', x, diagonal);

/** `torch.triu(x, diagonal)`: keeps the elements on and above the diagonal of the last two dims. */
export const triu = (x: Tensor, diagonal = 0): Tensor => triangle('triu', x, diagonal);
