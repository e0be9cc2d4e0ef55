/**
 * Advanced indexing and flip: `x.index(...)` with integer tensors, `x.indexAsync(...)` with
 * bool masks, `x.indexPut_(...)`, `torch.nonzero`, `torch.maskedSelect` and `torch.flip`.
 *
 * Note [picks]: k index tensors pick along dims d_1..d_k of a tensor v. They broadcast to a
 * shape B; the output is v's other dims with B in place of the picked dims when those are
 * adjacent, else B first (PyTorch's rule). Reading is one `gather` command over the output
 * shape: v's strides on the kept dims, 0 on B, plus an offset read from an index tensor laid
 * over B. With one index tensor the offset is the index itself (times v's stride on d_1), and
 * the kernel wraps negative indices and checks the range on the device. With several, each is
 * first wrapped and checked by a tiny gather from `arange(size)` (so an out-of-range index
 * fails the next sync point with PyTorch's message), then the offsets are summed. Writing
 * (`indexPut_`, and the gradient of a read) is the same layout through one `scatter` command,
 * so views, transposes and expanded inputs are read without copies.
 *
 * Note [data-dependent shapes]: the number of elements a bool mask selects is device data.
 * PyTorch syncs with the device to learn it; here a sync is a Promise, so the mask forms
 * (`indexAsync`, `nonzero`, `maskedSelect`) are async, and `index` refuses masks and says why.
 * A mask's positions come from a stable descending sort of the mask (true first, in order) and
 * its count from a sum: one scalar is read back, never the mask.
 */
import { dataDependentShape } from '../runtime/graphs.js';
import { isFloating, type DType } from '../dtype.js';
import { device as toDevice } from '../device.js';
import { alloc, code, emit, place, ref, sameDevice } from '../runtime/dispatch.js';
import { broadcastFor, broadcastStrides, contiguousStrides, fmt, MAX_KERNEL_RANK, normDim } from '../shape.js';
import { Tensor } from '../tensor.js';
import { ReduceOp } from '../ir/ops.js';
import { isGradEnabled, op as recorded, withGradMode } from '../autograd/graph.js';
import { to, copyInto } from './copy.js';
import { arange, full } from './creation.js';
import { binaryOp, where } from './elementwise.js';
import { indexSelect, maskedFill, sort } from './indexing.js';
import { reduce } from './reduce.js';
import { sumTo } from './reduce-kernel.js';
import { tidy } from './scoped.js';
import { stack } from './shape.js';
import { expand, index, reshape, select, setAdvancedIndex, slice, unsqueeze, type Index } from './views.js';
import { cast } from './cast.js';

/** The check of a command whose offsets are already known to be in range. */
const NO_CHECK = { size: 2 ** 31 - 1, wrap: false, message: 'internal offset %d out of range' };
const outOfBounds = (j: number, size: number) => `index %d is out of bounds for dimension ${j} with size ${size}`;

function checkRank(op: string, shape: readonly number[]): void {
  if (shape.length > MAX_KERNEL_RANK) throw new RangeError(`${op}: tensors of more than ${MAX_KERNEL_RANK} dims are not supported (got ${shape.length})`);
}

/** Index tensors picking along `dims`: the tensors (on the device), their broadcast shape, and when k > 1 each one wrapped and checked. */
interface Picks {
  dims: number[];
  /** Each index tensor's ndim: a 0-d index acts as a number (PyTorch selects with it), so it does not decide where B goes. */
  ranks: number[];
  idx: Tensor[];
  B: number[];
  /** int64, negatives wrapped, range-checked on the device; null for one index read by a gather (the kernel wraps and checks it). */
  wrapped: Tensor[] | null;
}

/** An index tensor on `dev`: a cpu index is copied there, as PyTorch accepts cpu indices for a CUDA tensor. */
function onDevice(i: Tensor, dev: Tensor['device']): Tensor {
  if (i.device === dev) return i;
  if (i.device !== toDevice('cpu')) throw new Error(`indices should be either on cpu or on the same device as the indexed tensor (${dev})`);
  return to(i, dev);
}

/** `I` wrapped to [0, size) as int64, each value checked on the device (a gather from arange(size)). */
function wrapChecked(I: Tensor, size: number, j: number): Tensor {
  const out = alloc(I.shape, 'int64', I.device);
  if (!out.numel()) return out;
  const table = arange(Math.max(size, 1), undefined, 1, { dtype: 'int64', device: I.device });
  emit(I.device, {
    k: 'gather', x: ref(table, I.shape.map(() => 0)), idx: ref(I), dt: code(table), out: place(out), shape: I.shape.slice(), dimStride: 1,
    check: { size, wrap: true, message: outOfBounds(j, size) },
  });
  table.dispose();
  return out;
}

/**
 * Validates index tensors picking along `dims` of a tensor of `shape` (call inside `tidy`: moved
 * and wrapped tensors are temporaries). `wrap` wraps and checks even a single index, which a
 * scatter needs (the cpu scatter kernel takes no negative indices).
 */
function makePicks(shape: readonly number[], dev: Tensor['device'], dims: number[], tensors: Tensor[], wrap = false): Picks {
  // the index kernels read int64 indices: int32 ones are widened here (a temporary of the scope)
  const idx = tensors.map((i) => onDevice(i, dev)).map((i) => (i.dtype === 'int64' ? i : cast(i, 'int64')));
  let B: number[];
  try {
    B = idx.reduce<number[]>((acc, i) => broadcastOne(acc, i.shape), []);
  } catch {
    throw new RangeError(`shape mismatch: indexing tensors could not be broadcast together with shapes ${idx.map((i) => fmt(i.shape)).join(', ')}`);
  }
  const wrapped = idx.length > 1 || wrap ? idx.map((I, j) => wrapChecked(I, shape[dims[j]], j)) : null;
  return { dims, ranks: idx.map((i) => i.ndim), idx, B, wrapped };
}

function broadcastOne(a: readonly number[], b: readonly number[]): number[] {
  const n = Math.max(a.length, b.length);
  return Array.from({ length: n }, (_, i) => {
    const x = a[a.length - n + i] ?? 1, y = b[b.length - n + i] ?? 1;
    if (x !== y && x !== 1 && y !== 1) throw new RangeError('broadcast');
    return x === 1 ? y : x;
  });
}

/**
 * The output layout of picks over a tensor of `shape`: its shape, the kept dims, and where B
 * goes among them: in place of the picked dims when they are adjacent once the 0-d indices'
 * dims are gone (as PyTorch, which selects with a 0-d index), else first.
 */
function layout(shape: readonly number[], p: Picks): { out: number[]; kept: number[]; at: number } {
  const kept = shape.map((_, i) => i).filter((i) => !p.dims.includes(i));
  const scalars = p.dims.filter((_, j) => p.ranks[j] === 0);
  const placed = p.dims.filter((_, j) => p.ranks[j] > 0).map((d) => d - scalars.filter((z) => z < d).length);
  const adjacent = placed.every((d, j) => j === 0 || d === placed[j - 1] + 1);
  const at = adjacent && placed.length ? placed[0] : 0;
  const out = [...kept.slice(0, at).map((i) => shape[i]), ...p.B, ...kept.slice(at).map((i) => shape[i])];
  return { out, kept, at };
}

/** Strides over the output layout: `keptStrides` on the kept dims, `bStrides` on B's. */
const over = (l: { kept: number[]; at: number }, keptStrides: number[], bStrides: number[]): number[] =>
  [...keptStrides.slice(0, l.at), ...bStrides, ...keptStrides.slice(l.at)];

/**
 * The index view and dim stride that address the picks in a tensor with `strides`: the one
 * index itself (the kernel wraps and checks it), the one wrapped index, or the summed offsets
 * of several; `temp` when it is a new tensor to dispose.
 */
function offsets(p: Picks, strides: readonly number[]): { idx: Tensor; dimStride: number; checked: boolean; temp: boolean } {
  const d = p.dims[0];
  if (!p.wrapped) return { idx: p.idx[0], dimStride: strides[d], checked: false, temp: false };
  if (p.wrapped.length === 1) return { idx: p.wrapped[0], dimStride: strides[d], checked: true, temp: false };
  let sum: Tensor | null = null;
  p.wrapped.forEach((w, j) => {
    const term = binaryOp('mul', w, strides[p.dims[j]]);
    if (sum) {
      const s = binaryOp('add', sum, term);
      sum.dispose();
      term.dispose();
      sum = s;
    } else sum = term;
  });
  return { idx: sum!, dimStride: 1, checked: true, temp: true };
}

/** Reads the picks of `v` (Note [picks]): one gather. */
function gatherPicks(v: Tensor, p: Picks): Tensor {
  const l = layout(v.shape, p);
  checkRank('index', l.out);
  const out = alloc(l.out, v.dtype, v.device);
  if (!out.numel()) return out;
  const o = offsets(p, v._strides);
  const size = v.shape[p.dims[0]];
  const check = o.checked ? NO_CHECK : { size, wrap: true, message: outOfBounds(0, size) };
  emit(v.device, {
    k: 'gather', x: ref(v, over(l, l.kept.map((i) => v._strides[i]), p.B.map(() => 0))),
    idx: ref(o.idx, over(l, l.kept.map(() => 0), broadcastStrides(o.idx.shape, o.idx._strides, p.B))),
    dt: code(v), out: place(out), shape: l.out, dimStride: o.dimStride, check,
  });
  if (o.temp) o.idx.dispose();
  return out;
}

/**
 * Writes at the picks (Note [picks]): a contiguous copy of `base` (read with `baseStrides` over
 * `shape`) with `src` (broadcast over the picked layout) written or added there, or zeros
 * written there without `src`. With `into`, the result goes to that contiguous tensor, which
 * may be `base` itself (the in-place `indexPut_`). The picks must be wrapped and checked.
 */
function scatterPicks(base: Tensor, baseStrides: number[], shape: number[], dtype: DType, p: Picks, src: Tensor | null, add: boolean, into?: Tensor): Tensor {
  const l = layout(shape, p);
  checkRank('index_put_', l.out);
  checkRank('index_put_', shape);
  const out = into ?? alloc(shape, dtype, base.device);
  if (!out.numel()) return out;
  const cs = contiguousStrides(shape);
  if (!p.wrapped) throw new Error('index_put_: internal: a scatter needs wrapped indices');
  const o = offsets(p, cs);
  emit(base.device, {
    k: 'scatter', add, x: ref(base, baseStrides), dt: code(dtype), out: place(out), shape: shape.slice(),
    dstStrides: over(l, l.kept.map((i) => cs[i]), p.B.map(() => 0)),
    idx: ref(o.idx, over(l, l.kept.map(() => 0), broadcastStrides(o.idx.shape, o.idx._strides, p.B))),
    src: src ? ref(src, broadcastStrides(src.shape, src._strides, l.out)) : null, value: 0, idxShape: l.out, dimStride: o.dimStride,
    check: NO_CHECK,
  });
  if (o.temp) o.idx.dispose();
  return out;
}

/** Handles on the picks' tensors for a gradient rule. */
function savePicks(save: (t: Tensor) => Tensor, p: Picks): Picks {
  return { dims: p.dims, ranks: p.ranks, B: p.B, idx: p.wrapped ? [] : [save(p.idx[0])], wrapped: p.wrapped ? p.wrapped.map(save) : null };
}

/** `v[..., idx_1, ..., idx_k, ...]` along `dims` (the advanced part of `index`); its gradient adds g back at the picks. */
function advancedIndex(v: Tensor, dims: number[], tensors: Tensor[]): Tensor {
  return tidy(() => {
    const p = makePicks(v.shape, v.device, dims, tensors);
    return recorded('index', [v], () => gatherPicks(v, p), (ctx) => {
      const saved = savePicks((t) => ctx.save(t), p);
      return ([g]) => {
        const zero = full([], 0, { dtype: g!.dtype, device: g!.device });
        const wrapped = saved.wrapped ?? [wrapChecked(saved.idx[0], v.shape[dims[0]], 0)];
        return [scatterPicks(zero, v.shape.map(() => 0), v.shape.slice(), g!.dtype, { ...saved, wrapped }, g!, true)];
      };
    });
  });
}

setAdvancedIndex(advancedIndex);

// ---- Masks: the sync points (Note [data-dependent shapes]) ----

/** The row-major positions (int64 [n]) of the nonzero elements of x; reads one count from the device. */
async function flatNonzero(op: string, x: Tensor): Promise<Tensor> {
  sameDevice(op, [x]);
  dataDependentShape(op, x.device); // (graphs: raises under capture)
  const { count, order } = withGradMode(false, () => tidy(() => {
    const m = x.dtype === 'bool' ? x : binaryOp('ne', x, 0);
    const flat = reshape(m, [-1]);
    return { count: reduce(ReduceOp.Sum, flat, undefined), order: sort(flat, 0, true).indices };
  }));
  let n: number;
  try {
    n = Number(await count.item());
  } catch (e) {
    order.dispose();
    throw e;
  } finally {
    count.dispose();
  }
  const out = slice(order, 0, 0, n);
  order.dispose();
  return out;
}

/** Row-major positions in `shape` to coordinates, int64 [n, ndim]. */
function coordinates(flat: Tensor, shape: readonly number[]): Tensor {
  const n = flat.shape[0];
  if (!shape.length || !n) return full([n, shape.length], 0, { dtype: 'int64', device: flat.device });
  const cs = contiguousStrides(shape);
  const cols = shape.map((s, d) => {
    const q = cs[d] === 1 ? flat : binaryOp('floor_divide', flat, cs[d]);
    return d === 0 ? q : binaryOp('remainder', q, s);
  });
  return stack(cols, 1);
}

/**
 * `torch.nonzero(x)`: the coordinates of x's nonzero (true, NaN, ...) elements in row-major
 * order, int64 of shape [n, x.ndim]. n is device data, so this is a sync point: a Promise.
 */
export async function nonzero(x: Tensor): Promise<Tensor> {
  const flat = await flatNonzero('nonzero', x);
  try {
    return tidy(() => coordinates(flat, x.shape));
  } finally {
    flat.dispose();
  }
}

/**
 * `torch.masked_select(x, mask)`: the elements of x where the bool (or uint8) mask is true, as
 * a 1-D tensor; x and mask broadcast together. A sync point (the count is device data), so a
 * Promise. Differentiable: the gradient goes back to the selected elements of x.
 */
export async function maskedSelect(x: Tensor, mask: Tensor): Promise<Tensor> {
  sameDevice('masked_select', [x, mask]);
  if (mask.dtype !== 'bool' && mask.dtype !== 'uint8') throw new TypeError(`masked_select: expected BoolTensor for mask, but got ${mask.dtype}`);
  const S = broadcastFor('masked_select', [x.shape, mask.shape]);
  const m = expand(mask, S);
  let pos: Tensor;
  try {
    pos = await flatNonzero('masked_select', m);
  } finally {
    m.dispose();
  }
  try {
    return tidy(() => indexSelect(reshape(expand(x, S), [-1]), 0, pos));
  } finally {
    pos.dispose();
  }
}

/** The dims an index entry names: a mask names its ndim, '...' none (it takes the rest), everything else one. */
const isMask = (i: Index): i is Tensor => i instanceof Tensor && (i.dtype === 'bool' || i.dtype === 'uint8');
const names = (i: Index) => (i === '...' ? 0 : isMask(i) ? i.ndim : 1);

/**
 * `x[idx]` for every index `index` takes plus bool/uint8 masks (PyTorch's `x[mask]`): a mask
 * over k dims stands for the k coordinate columns of its nonzero elements, and must match
 * those dims of x. The count is device data, so this is a sync point: a Promise. Without a
 * mask it resolves to `x.index(...idx)`. Differentiable.
 */
export async function indexAsync(x: Tensor, ...idx: Index[]): Promise<Tensor> {
  x._check('indexAsync');
  if (!idx.some(isMask)) return index(x, ...idx);
  const named = idx.reduce<number>((a, i) => a + names(i), 0);
  if (idx.filter((i) => i === '...').length > 1) throw new RangeError("an index can only have a single ellipsis ('...')");
  if (named > x.ndim) throw new RangeError(`too many indices for tensor of dimension ${x.ndim}`);
  // Each mask's first dim of x, checking its shape there.
  const starts = new Map<Tensor, number>();
  let at = 0;
  for (const i of idx) {
    if (i === '...') { at += x.ndim - named; continue; }
    if (isMask(i)) {
      i._check('indexAsync');
      i.shape.forEach((s, j) => {
        if (s !== x.shape[at + j]) {
          throw new RangeError(`The shape of the mask ${fmt(i.shape)} at index ${j} does not match the shape of the indexed tensor ${fmt(x.shape)} at index ${at + j}`);
        }
      });
      starts.set(i, at);
    }
    at += names(i);
  }
  const masks = idx.filter(isMask);
  const found = await Promise.all(masks.map((m) => {
    if (m.ndim) return nonzero(m);
    const r = reshape(m, [1]);
    return nonzero(r).finally(() => r.dispose());
  }));
  const temps: Tensor[] = [...found];
  try {
    return tidy(() => {
      // A 0-d mask adds a dim of size 1 there (x[True]) and picks it with its one column.
      let xu = x, shift = 0;
      const entries: Index[] = [];
      idx.forEach((i) => {
        if (!isMask(i)) return entries.push(i);
        const nz = found[masks.indexOf(i)];
        if (!i.ndim) {
          xu = unsqueeze(xu, starts.get(i)! + shift++);
          return entries.push(select(nz, 1, 0));
        }
        for (let j = 0; j < i.ndim; j++) entries.push(select(nz, 1, j));
      });
      return index(xu, ...entries);
    });
  } finally {
    temps.forEach((t) => t.dispose());
  }
}

// ---- Writing: index_put_ ----

/** A JS number as a 0-d tensor of a dtype, converted as PyTorch converts a scalar on a write. */
function scalarTensor(v: number | boolean, dtype: DType, dev: Tensor['device']): Tensor {
  const n = Number(v);
  const value = dtype === 'bool' ? n !== 0 : isFloating(dtype) ? n : dtype === 'uint8' ? ((Math.trunc(n) % 256) + 256) % 256 : Math.trunc(n);
  return full([], value, { dtype, device: dev });
}

/** x[mask] = values (or += with accumulate) for a bool mask over x's leading dims: a where, no sync. */
function maskPut(x: Tensor, mask: Tensor, values: Tensor | number | boolean, accumulate: boolean): Tensor {
  mask.shape.forEach((s, j) => {
    if (s !== x.shape[j]) throw new RangeError(`The shape of the mask ${fmt(mask.shape)} at index ${j} does not match the shape of the indexed tensor ${fmt(x.shape)} at index ${j}`);
  });
  const rest = x.shape.slice(mask.ndim);
  const b = mask.dtype === 'bool' ? mask : cast(mask, 'bool');
  const cond = reshape(b, [...mask.shape, ...rest.map(() => 1)]);
  if (!(values instanceof Tensor)) {
    if (!accumulate) return maskedFill(x, cond, values);
    const zero = full(x.shape.slice(), 0, { dtype: x.dtype, device: x.device });
    return binaryOp('add', x, maskedFill(zero, cond, values));
  }
  // values broadcast to x[mask]'s shape [n, ...rest]; without a sync only n = 1 is known to fit.
  if (!broadcastFits(values.shape, [1, ...rest])) {
    throw new RangeError(
      `index_put_: values of shape ${fmt(values.shape)} for a bool mask must broadcast to one masked element (${fmt([1, ...rest])}): ` +
        'the number of masked elements is device data; read the positions with `await torch.nonzero(mask)` and put with them',
    );
  }
  const lead = values.ndim - rest.length;
  const v = lead > 0 ? reshape(values, values.shape.slice(lead)) : values;
  return accumulate ? binaryOp('add', x, where(cond, v, 0)) : where(cond, v, x);
}

/** x[idx_1, ..., idx_k] = values (or +=), integer index tensors over x's leading dims, out of place; differentiable. */
function intPut(x: Tensor, tensors: Tensor[], values: Tensor, accumulate: boolean, into?: Tensor): Tensor {
  const p = makePicks(x.shape, x.device, tensors.map((_, j) => j), tensors, true);
  const l = layout(x.shape, p);
  if (broadcastFits(values.shape, l.out) === false) {
    throw new RangeError(`shape mismatch: value tensor of shape ${fmt(values.shape)} cannot be broadcast to indexing result of shape ${fmt(l.out)}`);
  }
  return recorded('index_put', [x, values], () => scatterPicks(x, x._strides.slice(), x.shape.slice(), x.dtype, p, values, accumulate, into), (ctx) => {
    const saved = savePicks((t) => ctx.save(t), p);
    return ([g]) => [
      !x.requiresGrad ? null : accumulate ? cast(g!, g!.dtype) : scatterPicks(g!, g!._strides.slice(), g!.shape.slice(), g!.dtype, saved, null, false),
      values.requiresGrad ? sumTo(gatherPicks(g!, saved), values.shape) : null,
    ];
  });
}

const broadcastFits = (from: readonly number[], target: readonly number[]): boolean =>
  from.length <= target.length && from.every((s, i) => s === 1 || s === target[target.length - from.length + i]);

/**
 * `x.index_put_(indices, values, accumulate=false)`: `x[indices] = values` in place (or `+=`
 * with accumulate, where repeated indices add up; without it, which of repeated writes wins is
 * unspecified, as in PyTorch). `indices` are int32/int64 tensors over x's leading dims (as
 * `index` picks them), or one bool/uint8 mask, whose values must then be a number or
 * broadcast to a single masked element (anything larger needs the count: a sync). `values` is
 * a number or a tensor of x's dtype broadcastable to the result of `x.index(...indices)`.
 * Differentiable for x (a non-leaf) and values. Returns x.
 */
export function indexPut_(x: Tensor, indices: Tensor | Tensor[], values: Tensor | number | boolean, accumulate = false): Tensor {
  const list = Array.isArray(indices) ? indices : [indices];
  sameDevice('index_put_', [x]);
  if (!list.length) throw new RangeError('index_put_: expected at least one index tensor');
  if (list.length > x.ndim) throw new RangeError(`too many indices for tensor of dimension ${x.ndim}`);
  if (values instanceof Tensor && values.dtype !== x.dtype) {
    throw new TypeError(`Index put requires the source and destination dtypes match, got ${x.dtype} for the destination and ${values.dtype} for the source.`);
  }
  if (x.requiresGrad && x.isLeaf && isGradEnabled()) {
    throw new Error('a leaf Variable that requires grad is being used in an in-place operation.');
  }
  const masks = list.filter((i) => i.dtype === 'bool' || i.dtype === 'uint8');
  if (masks.length && (list.length > 1 || !masks[0].ndim)) {
    throw new TypeError('index_put_: a bool mask is supported alone (x[mask] = v); mixed with other indices the positions are device data: read them with `await torch.nonzero(mask)`');
  }
  tidy(() => {
    if (masks.length) {
      const res = maskPut(x, onDevice(masks[0], x.device), values, accumulate);
      copyInto(x, res);
      return;
    }
    list.forEach((i) => {
      i._check('index_put_');
      if (i.dtype !== 'int32' && i.dtype !== 'int64') throw new TypeError('tensors used as indices must be long, int, byte or bool tensors');
    });
    const v = values instanceof Tensor ? onSame(values, x) : scalarTensor(values, x.dtype, x.device);
    const grad = isGradEnabled() && (x.requiresGrad || v.requiresGrad);
    if (!grad && x.isContiguous()) {
      // In place: the scatter command copies x onto itself, then writes.
      x.storage.version++;
      intPut(x, list, v, accumulate, x);
      return;
    }
    copyInto(x, intPut(x, list, v, accumulate));
  });
  return x;
}

function onSame(v: Tensor, x: Tensor): Tensor {
  sameDevice('index_put_', [x, v]);
  return v;
}

// ---- flip ----

function flipForward(x: Tensor, dims: number[]): Tensor {
  checkRank('flip', x.shape);
  // Flipping a dim of size 1 or stride 0 changes nothing.
  const live = dims.filter((d) => x.shape[d] > 1 && x._strides[d] !== 0);
  if (!live.length || !x.numel()) return cast(x, x.dtype);
  return tidy(() => {
    // Offsets of the flipped element along each live dim, summed over a [n_1, ..., n_k] grid.
    let grid: Tensor | null = null;
    live.forEach((d, j) => {
      const n = x.shape[d], s = x._strides[d];
      const a = reshape(arange((n - 1) * s, -1, -s, { dtype: 'int64', device: x.device }), live.map((_, k) => (k === j ? n : 1)));
      grid = grid ? binaryOp('add', grid, a) : a;
    });
    const g = grid!;
    const out = alloc(x.shape, x.dtype, x.device);
    const gridStrides = x.shape.map((_, d) => (live.includes(d) ? g._strides[live.indexOf(d)] : 0));
    emit(x.device, {
      k: 'gather', x: ref(x, x._strides.map((s, d) => (live.includes(d) ? 0 : s))), idx: ref(g, gridStrides), dt: code(x), out: place(out),
      shape: x.shape.slice(), dimStride: 1, check: NO_CHECK,
    });
    return out;
  });
}

/**
 * `torch.flip(x, dims)`: a copy of x with the order of elements reversed along each of `dims`
 * (negative dims count from the end; a dim listed twice is an error). One gather, for any
 * layout and dtype; differentiable (the gradient is flipped back).
 */
export function flip(x: Tensor, dims: number | number[]): Tensor {
  sameDevice('flip', [x]);
  const list = typeof dims === 'number' ? [dims] : dims;
  const nd = list.map((d) => normDim(d, x.ndim));
  nd.forEach((d, i) => {
    if (nd.indexOf(d) !== i) throw new RangeError(`dim ${d} appears multiple times in the list of dims`);
  });
  const real = x.ndim ? nd : [];
  return recorded('flip', [x], () => flipForward(x, real), () => ([g]) => [flip(g!, real)]);
}
