/**
 * Views: new handles on the same storage with other (shape, strides, offset). No kernel runs,
 * except in `reshape`/`flatten` when the layout cannot be viewed and `contiguous` makes a copy,
 * exactly where PyTorch would copy.
 */
import { code, emit, alloc, ref, sameDevice, place } from '../runtime/dispatch.js';
import { sumTo } from './reduce-kernel.js';
import { contiguousStrides, fmt, inferShape, isContiguous, normDim, numel, viewStrides } from '../shape.js';
import { op as recorded } from '../autograd/graph.js';
import { Tensor, view } from '../tensor.js';
import { full } from './creation.js';
import { cast, contiguous } from './cast.js';

// The namespace of views (`import * as views`) keeps the two copies it has always offered.
export { cast, contiguous };

/**
 * Records a view op. Views that reach every element of their input (reshapes and permutations)
 * pass the gradient back as the inverse view of it, `inverse(g)`, with no kernel, as PyTorch's
 * do. The others (slices, selections) never map two elements to one, and have one rule: replay
 * the same view on zeros of the input's shape and copy the gradient into it.
 */
function viewOp(name: string, t: Tensor, make: (src: Tensor) => Tensor, inverse?: (g: Tensor) => Tensor): Tensor {
  return recorded(name, [t], () => make(t), () => ([g]) => {
    if (inverse) return [inverse(g!)];
    const z = full(t.shape.slice(), 0, { dtype: g!.dtype, device: g!.device });
    const zv = make(z);
    emit(z.device, {
      k: 'copyInto', src: ref(g!), srcDt: code(g!), dst: ref(zv), dt: code(zv), shape: zv.shape.slice(),
    });
    zv.dispose();
    return [z];
  });
}

/** The gradient rule of a view with the same elements as `t`: the gradient reshaped to `t`'s shape. */
const reshapeTo = (t: Tensor) => (g: Tensor): Tensor => reshape(g, t.shape.slice());

/** `view`: reshape without copying, or PyTorch's error when the strides do not allow it. */
export function viewAs(t: Tensor, shape: number[]): Tensor {
  sameDevice('view', [t]);
  const target = inferShape(shape, t.numel(), 'view');
  const strides = viewStrides(t.shape, t._strides, target);
  if (!strides) {
    throw new Error(`view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead. (input ${fmt(t.shape)}, strides ${fmt(t._strides)}, requested ${fmt(shape)})`);
  }
  return viewOp('view', t, (src) => view(src, target, viewStrides(src.shape, src._strides, target)!), reshapeTo(t));
}

/** `reshape`: a view when possible, else a contiguous copy. */
export function reshape(t: Tensor, shape: number[]): Tensor {
  sameDevice('reshape', [t]);
  const target = inferShape(shape, t.numel(), 'reshape');
  return viewOp('reshape', t, (src) => {
    const strides = viewStrides(src.shape, src._strides, target);
    if (strides) return view(src, target, strides);
    const c = contiguous(src);
    const out = view(c, target, contiguousStrides(target));
    if (c !== src) c.dispose(); // contiguous() returns src itself when it already is (a 0-d tensor)
    return out;
  }, reshapeTo(t));
}

/** Reorders dims. */
export function permute(t: Tensor, dims: number[]): Tensor {
  sameDevice('permute', [t]);
  const nd = dims.map((d) => normDim(d, t.ndim));
  if (nd.length !== t.ndim || new Set(nd).size !== nd.length) {
    throw new RangeError(`permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = ${t.ndim} is not equal to len(dims) = ${dims.length}`.replace('(sparse_coo)', ''));
  }
  const back = nd.map((_, i) => nd.indexOf(i));
  return viewOp('permute', t, (src) => view(src, nd.map((d) => src.shape[d]), nd.map((d) => src._strides[d])), (g) => permute(g, back));
}

/** Swaps two dims. */
export function transpose(t: Tensor, d0: number, d1: number): Tensor {
  if (t.ndim === 0) return viewOp('transpose', t, (src) => view(src, [], []), reshapeTo(t));
  const a = normDim(d0, t.ndim), b = normDim(d1, t.ndim);
  const perm = t.shape.map((_, i) => i);
  [perm[a], perm[b]] = [perm[b], perm[a]];
  return permute(t, perm);
}

/** `t.T` for 2-D tensors (`t()` in PyTorch). */
export function t2(t: Tensor): Tensor {
  if (t.ndim > 2) throw new RangeError(`t() expects a tensor with <= 2 dimensions, but self is ${t.ndim}D`);
  return t.ndim < 2 ? viewOp('t', t, (src) => view(src, src.shape, src._strides), reshapeTo(t)) : transpose(t, 0, 1);
}

/** Broadcasts to a larger shape without copying (`-1` keeps a size). */
export function expand(t: Tensor, shape: number[]): Tensor {
  sameDevice('expand', [t]);
  if (shape.length < t.ndim) {
    throw new RangeError(`expand: the number of sizes provided (${shape.length}) must be greater or equal to the number of dimensions in the tensor (${t.ndim})`);
  }
  const off = shape.length - t.ndim;
  const strides = shape.map((s, i) => {
    const j = i - off;
    if (j < 0) {
      if (s < 0) throw new RangeError(`expand: -1 is not allowed in a leading, non-existing dimension (${fmt(shape)})`);
      return 0;
    }
    const have = t.shape[j];
    if (s === -1 || s === have) return t._strides[j];
    if (have === 1) return 0;
    throw new RangeError(`The expanded size of the tensor (${s}) must match the existing size (${have}) at non-singleton dimension ${i}.  Target sizes: ${fmt(shape)}.  Tensor sizes: ${fmt(t.shape)}`);
  });
  const target = shape.map((s, i) => (s === -1 ? t.shape[i - off] : s));
  return recorded('expand', [t], () => view(t, target, strides), () => ([g]) => {
    const r = sumTo(g!, t.shape);
    return [r === g ? cast(g!, g!.dtype) : r];
  });
}

/** Removes size-1 dims (all, or one). */
export function squeeze(t: Tensor, dim?: number): Tensor {
  sameDevice('squeeze', [t]);
  const keep = t.shape.map((s, i) => (dim === undefined ? s !== 1 : i !== normDim(dim, t.ndim) || s !== 1));
  return viewOp('squeeze', t, (src) => view(src, src.shape.filter((_, i) => keep[i]), src._strides.filter((_, i) => keep[i])), reshapeTo(t));
}

/** Inserts a size-1 dim. */
export function unsqueeze(t: Tensor, dim: number): Tensor {
  sameDevice('unsqueeze', [t]);
  const d = normDim(dim, t.ndim + 1);
  return viewOp('unsqueeze', t, (src) => {
    const shape = src.shape.slice(), strides = src._strides.slice();
    shape.splice(d, 0, 1);
    strides.splice(d, 0, d < src.ndim ? src._strides[d] * src.shape[d] : 1);
    return view(src, shape, strides);
  }, reshapeTo(t));
}

/** Flattens dims `start..end` into one. */
export function flatten(t: Tensor, start = 0, end = -1): Tensor {
  if (t.ndim === 0) return reshape(t, [1]);
  const s = normDim(start, t.ndim), e = normDim(end, t.ndim);
  if (s > e) throw new RangeError('flatten() has invalid args: start_dim cannot come after end_dim');
  return reshape(t, [...t.shape.slice(0, s), numel(t.shape.slice(s, e + 1)), ...t.shape.slice(e + 1)]);
}

/** `t[:, start:end:step]` along one dim (Python slice semantics, negative indices allowed). */
export function slice(t: Tensor, dim: number, start?: number | null, end?: number | null, step = 1): Tensor {
  sameDevice('slice', [t]);
  const d = normDim(dim, t.ndim), size = t.shape[d];
  if (!Number.isInteger(step) || step <= 0) throw new RangeError(`slice step must be positive, got ${step}`);
  const clampIdx = (i: number) => Math.min(Math.max(i < 0 ? i + size : i, 0), size);
  const s = start == null ? 0 : clampIdx(start), e = end == null ? size : clampIdx(end);
  const len = Math.max(0, Math.ceil((e - s) / step));
  return viewOp('slice', t, (src) => {
    const shape = src.shape.slice(), strides = src._strides.slice();
    shape[d] = len;
    strides[d] = src._strides[d] * step;
    return view(src, shape, strides, src._offset + (len ? s * src._strides[d] : 0));
  });
}

/** `t[..., i, ...]`: selects one index of a dim, removing it. */
export function select(t: Tensor, dim: number, index: number): Tensor {
  sameDevice('select', [t]);
  if (t.ndim === 0) throw new RangeError('select() cannot be applied to a 0-dim tensor.');
  const d = normDim(dim, t.ndim), size = t.shape[d];
  if (!Number.isInteger(index) || index < -size || index >= size) {
    throw new RangeError(`index ${index} is out of bounds for dimension ${d} with size ${size}`);
  }
  const i = index < 0 ? index + size : index;
  return viewOp('select', t, (src) => view(src, src.shape.filter((_, k) => k !== d), src._strides.filter((_, k) => k !== d), src._offset + i * src._strides[d]));
}

/** `narrow(dim, start, length)`. */
export function narrow(t: Tensor, dim: number, start: number, length: number): Tensor {
  const d = normDim(dim, t.ndim);
  if (start < 0) start += t.shape[d];
  if (start < 0 || length < 0 || start + length > t.shape[d]) {
    throw new RangeError(`start (${start}) + length (${length}) exceeds dimension size (${t.shape[d]}).`);
  }
  return slice(t, d, start, start + length);
}

/**
 * One entry of `t.index(...)`: a number selects (removing the dim), `null`/`':'` keeps the dim,
 * `'a:b:c'` or `[a, b, c]` slices, `'...'` stands for every dim not named, and an int32/int64
 * tensor picks entries along its dim (advanced indexing, ts/ops/advanced.ts). Bool/uint8 masks
 * are accepted by `indexAsync` only, since the result's shape depends on their values.
 */
export type Index = number | null | string | [number?, number?, number?] | Tensor;

/** What `index` leaves to advanced indexing: the tensor indices and the dims of `view` they pick along. */
export interface IndexParts {
  view: Tensor;
  dims: number[];
  tensors: Tensor[];
}

type AdvancedIndex = (view: Tensor, dims: number[], tensors: Tensor[]) => Tensor;
let advanced: AdvancedIndex | null = null;

/** @internal ts/ops/advanced.ts registers the gather of integer-tensor indices (no import cycle). */
export function setAdvancedIndex(fn: AdvancedIndex): void {
  advanced = fn;
}

/** PyTorch's dtype rule for index tensors, and the pointer to `indexAsync` for masks. */
function checkIndexTensor(i: Tensor): void {
  i._check('index');
  if (i.dtype === 'bool' || i.dtype === 'uint8') {
    throw new TypeError(
      `index(): a ${i.dtype} mask index ${fmt(i.shape)} selects a number of elements that depends on its values, which live on the device; ` +
        'reading them is a sync point (PyTorch syncs here too), so use `await x.indexAsync(...)` (or `torch.maskedSelect`, `torch.nonzero`)',
    );
  }
  if (i.dtype !== 'int32' && i.dtype !== 'int64') throw new TypeError('tensors used as indices must be long, int, byte or bool tensors');
}

/**
 * Applies the basic entries of an index (numbers, slices, `'...'`) as views and returns the
 * view with the tensor entries and the dims of the view they pick along. Numbers select
 * first, as in PyTorch, so `x[0, :, idx]` picks along dim 1 of `x[0]`.
 */
export function applyIndices(t: Tensor, idx: Index[]): IndexParts {
  t._check('index');
  const ellipses = idx.filter((i) => i === '...').length;
  if (ellipses > 1) throw new RangeError("an index can only have a single ellipsis ('...')");
  // `null` is Python's None: a new axis of size 1, which takes no dim of `t`
  const named = idx.length - ellipses - idx.filter((i) => i === null).length;
  if (named > t.ndim) throw new RangeError(`too many indices for tensor of dimension ${t.ndim}`);
  for (const i of idx) if (i instanceof Tensor) checkIndexTensor(i);
  let out = t, dim = 0;
  const dims: number[] = [], tensors: Tensor[] = [];
  for (const i of idx) {
    let next: Tensor;
    if (i === '...') { dim += t.ndim - named; continue; }
    if (i instanceof Tensor) { dims.push(dim++); tensors.push(i); continue; }
    if (typeof i === 'number') next = select(out, dim, i);
    else if (i === ':') { dim++; continue; }
    else if (i === null) next = unsqueeze(out, dim++);
    else {
      if (typeof i !== 'string' && !(Array.isArray(i) && i.length <= 3)) {
        throw new TypeError(`index: unsupported entry ${String(i)}; expected a number, 'start:end[:step]', [start, end, step], ':', null (a new axis, Python's None), '...' or an index tensor (a bool mask as a tensor, through indexAsync)`);
      }
      const parts = typeof i === 'string' ? i.split(':').map((p) => (p.trim() === '' ? undefined : Number(p))) : i;
      if (typeof i === 'string' && (parts.length < 2 || parts.length > 3 || parts.some((p) => p !== undefined && !Number.isInteger(p)))) {
        throw new TypeError(`index: cannot parse slice ${JSON.stringify(i)}; expected 'start:end[:step]'`);
      }
      next = slice(out, dim, parts[0], parts[1], parts[2] ?? 1);
      dim++;
    }
    if (out !== t) out.dispose();
    out = next;
  }
  return { view: out, dims, tensors };
}

/**
 * Python-like indexing: `t.index(0, '1:3', null)` is `t[0, 1:3, None]`, a view (`null` is a new
 * axis of size 1, as Python's None; `':'` keeps a dim whole). With int32/int64
 * tensor entries it is PyTorch's advanced indexing (`t.index(idx, '...', 0)` is
 * `t[idx, ..., 0]`), a gather: the index tensors broadcast together, their result dims replace
 * them when they are adjacent and go first otherwise; negative indices count from the end; an
 * out-of-range index fails the next sync point. Differentiable either way.
 */
export function index(t: Tensor, ...idx: Index[]): Tensor {
  const { view: v, dims, tensors } = applyIndices(t, idx);
  if (tensors.length) {
    if (!advanced) throw new Error('index: advanced indexing is not loaded (import webtorch, not ts/ops/views.js alone)');
    const out = advanced(v, dims, tensors);
    if (v !== t) v.dispose();
    return out;
  }
  return v === t ? viewOp('alias', t, (src) => view(src, src.shape, src._strides), reshapeTo(t)) : v;
}

/** `as_strided`: a view with explicit sizes, strides and storage offset (elements). */
export function asStrided(t: Tensor, shape: number[], strides: number[], offset = t._offset): Tensor {
  sameDevice('as_strided', [t]);
  if (shape.length !== strides.length) throw new RangeError(`as_strided: mismatch in length of strides (${strides.length}) and shape (${shape.length})`);
  const extent = offset + shape.reduce((a, s, i) => a + (s - 1) * strides[i], 0);
  const capacity = t.storage.bytes / t.elementSize();
  if (shape.some((s) => s === 0) ? offset > capacity : extent >= capacity || offset < 0 || strides.some((s) => s < 0)) {
    throw new RangeError(`setStorage: sizes ${fmt(shape)}, strides ${fmt(strides)}, storage offset ${offset} require a storage of ${extent + 1} elements, but the storage has ${capacity}`);
  }
  return view(t, shape, strides, offset);
}
