/**
 * PyTorch's multi-tensor `_foreach_norm`, `_foreach_mul_` (by a scalar or a 1-element tensor) and
 * the clamps of `clip_grad_value_`: one `foreachNorm`, `foreachMul` or `foreachClamp` command per device for the float32 contiguous tensors of the
 * list (16-bit ones too for the norm; ts/ir/commands.ts; the kernels are wgsl/foreach.ts and
 * assembly/kernels/foreach.ts), where the per-tensor form is a few commands per tensor. `nn.utils.clipGradNorm_` is built on them
 * (ts/nn/utils.ts). The other tensors (16-bit or float64, non-contiguous, or needing a gradient
 * through an in-place op) take the per-tensor ops, with the same results.
 */
import { needsGrad } from '../autograd/graph.js';
import { isFloating, storageCode } from '../dtype.js';
import type { Device } from '../device.js';
import { alloc, emit, place, sameDevice } from '../runtime/dispatch.js';
import { overlapsAny, rounds } from '../runtime/overlap.js';
import { Tensor } from '../tensor.js';
import { ReduceOp } from '../ir/ops.js';
import { full } from './creation.js';
import { binaryOp, unaryOp } from './elementwise.js';
import { reduce } from './reduce.js';
import { tidy } from './scoped.js';
import * as V from './views.js';

/** Whether `t` goes into an in-place multi-tensor command: float32 and contiguous. */
export const foreachable = (t: Tensor): boolean => t.dtype === 'float32' && t.isContiguous();

/** Whether `foreachNorm` takes `t`: float32, float16 or bfloat16, contiguous. */
export const normable = (t: Tensor): boolean => (t.dtype === 'float32' || t.dtype === 'float16' || t.dtype === 'bfloat16') && t.isContiguous();

/** The vector p-norm of all of `x`'s elements, composed (p > 0, or Infinity), in `x`'s dtype. */
export function composedNorm(x: Tensor, p: number): Tensor {
  if (p === 2) return unaryOp('sqrt', reduce(ReduceOp.SumSq, x, undefined));
  const a = unaryOp('abs', x);
  if (p === Infinity) return reduce(ReduceOp.Max, a, undefined);
  if (p === 1) return reduce(ReduceOp.Sum, a, undefined);
  return binaryOp('pow', reduce(ReduceOp.Sum, binaryOp('pow', a, p), undefined), 1 / p);
}

/** Groups `tensors` by device, in order of first appearance. */
export function byDevice(tensors: Tensor[]): Map<Device, Tensor[]> {
  const groups = new Map<Device, Tensor[]>();
  for (const t of tensors) {
    const list = groups.get(t.device) ?? [];
    list.push(t);
    groups.set(t.device, list);
  }
  return groups;
}

/**
 * The norms of `normable` tensors of one device as one [tensors.length] float32 tensor: one
 * `foreachNorm` command.
 */
export function foreachNormOf(op: string, tensors: Tensor[], ord: number): Tensor {
  const device = sameDevice(op, tensors);
  const out = alloc([tensors.length], 'float32', device);
  emit(device, { k: 'foreachNorm', ord, tensors: tensors.map((t) => ({ at: place(t), n: t.numel(), dt: storageCode(t.dtype) })), out: place(out) });
  return out;
}

/** Checks a norm's order: positive, or Infinity ('inf' is taken too). */
export function normOrder(op: string, ord: unknown): number {
  const p = ord === 'inf' ? Infinity : Number(ord);
  if (typeof ord !== 'number' && ord !== 'inf') throw new TypeError(`${op}(): ord must be a number or 'inf', got ${typeof ord}`);
  if (!(p > 0)) throw new RangeError(`${op}(): webtorch takes a positive order or inf, got ${String(ord)}`);
  return p;
}

/**
 * `torch._foreach_norm(tensors, ord = 2)`: the vector norm of each tensor, as a list of 0-d
 * tensors (views of one tensor per device for the float32 contiguous ones). Floating tensors only.
 */
export function foreachNorm(tensors: Tensor[], ord: number | 'inf' = 2): Tensor[] {
  const op = '_foreach_norm';
  if (!Array.isArray(tensors)) throw new TypeError(`${op}(): argument 'self' must be a list of Tensors, not ${tensors === null ? 'null' : typeof tensors}`);
  tensors.forEach((t, i) => {
    if (!(t instanceof Tensor)) throw new TypeError(`${op}(): argument 'self' must be a list of Tensors, but element ${i} is ${t === null ? 'null' : typeof t}`);
    if (!isFloating(t.dtype)) throw new TypeError(`${op}(): expected floating point tensors, got ${t.dtype} at position ${i}`);
  });
  const p = normOrder(op, ord);
  const out: Tensor[] = new Array(tensors.length);
  const groups = new Map<Device, number[]>();
  tensors.forEach((t, i) => {
    if (!normable(t)) return;
    if (!groups.has(t.device)) groups.set(t.device, []);
    groups.get(t.device)!.push(i);
  });
  for (const [, idx] of groups) {
    const norms = foreachNormOf(op, idx.map((i) => tensors[i]), p);
    idx.forEach((i, k) => {
      // a 16-bit tensor's norm in its dtype, as PyTorch's
      const v = V.select(norms, 0, k), c = tensors[i].dtype === 'float32' ? v : V.cast(v, tensors[i].dtype);
      if (c !== v) v.dispose();
      out[i] = c;
    });
    norms.dispose();
  }
  tensors.forEach((t, i) => {
    if (!out[i]) out[i] = tidy(() => composedNorm(t.detach(), p));
  });
  return out;
}

/**
 * `torch._foreach_mul_(tensors, scalar)`: multiplies every tensor in place by a number or by a
 * 0-d tensor (on any device: it is copied to each tensor's device once). One `foreachMul` command
 * per device for the float32 contiguous tensors that need no gradient; `t.mul_` for the rest.
 */
export function foreachMul_(tensors: Tensor[], scalar: number | Tensor): void {
  const op = '_foreach_mul_';
  if (!Array.isArray(tensors)) throw new TypeError(`${op}(): argument 'self' must be a list of Tensors, not ${tensors === null ? 'null' : typeof tensors}`);
  tensors.forEach((t, i) => {
    if (!(t instanceof Tensor)) throw new TypeError(`${op}(): argument 'self' must be a list of Tensors, but element ${i} is ${t === null ? 'null' : typeof t}`);
  });
  if (scalar instanceof Tensor) {
    if (scalar.ndim !== 0) throw new RangeError(`scalar tensor expected to be 0 dim but it has ${scalar.ndim} dimensions and ${scalar.numel()} elements.`);
  } else if (typeof scalar !== 'number') {
    throw new TypeError(`${op}(): argument 'scalar' must be a Number or a Tensor, not ${scalar === null ? 'null' : typeof scalar}`);
  }
  // a scalar tensor that is one of the listed tensors' memory is read as it was at the call
  // (the kernel would otherwise read it while another invocation rewrites it)
  const s = scalar instanceof Tensor && overlapsAny(scalar, tensors) ? tidy(() => scalar.detach().clone()) : scalar;
  for (const [device, list] of byDevice(tensors)) {
    const fused = list.filter((t) => foreachable(t) && !needsGrad(t) && (typeof s === 'number' || isFloating(s.dtype)));
    const taken = new Set(fused), rest = list.filter((t) => !taken.has(t));
    if (fused.length) {
      const c = typeof s === 'number' ? full([], s, { device, dtype: 'float32' })
        : s.device === device && s.dtype === 'float32' ? s : s.to({ device, dtype: 'float32' });
      sameDevice(op, [...fused, c]);
      // tensors that share memory (one listed twice, overlapping views) go into further commands,
      // in order, as PyTorch's loop multiplies them (Note [overlapping tensors in one multi-tensor command])
      for (const round of rounds(fused, (t) => [t])) emit(device, { k: 'foreachMul', tensors: round.map((t) => ({ at: place(t), n: t.numel() })), scalar: place(c) });
      for (const t of fused) t.storage.version++;
      if (c !== s) c.dispose();
    }
    for (const t of rest) {
      if (typeof s === 'number' || s.device === t.device) t.mul_(s);
      else {
        const sd = s.to(t.device);
        t.mul_(sd);
        sd.dispose();
      }
    }
  }
  if (s !== scalar) (s as Tensor).dispose();
}

/**
 * Clamps every tensor to [lo, hi] in place (PyTorch's `_foreach_clamp_min_` then
 * `_foreach_clamp_max_`, the foreach path of `clip_grad_value_`): one `foreachClamp` command per
 * device for the float32 contiguous tensors that need no gradient; `t.clamp_` for the rest.
 */
export function foreachClamp_(tensors: Tensor[], lo: number, hi: number): void {
  for (const [device, list] of byDevice(tensors)) {
    const fused = list.filter((t) => foreachable(t) && !needsGrad(t));
    if (fused.length) {
      sameDevice('_foreach_clamp_', fused);
      // a clamp twice is the clamp once, but two invocations must not rewrite one element at once
      for (const round of rounds(fused, (t) => [t])) emit(device, { k: 'foreachClamp', tensors: round.map((t) => ({ at: place(t), n: t.numel() })), lo, hi });
      for (const t of fused) t.storage.version++;
    }
    const taken = new Set(fused);
    for (const t of list) if (!taken.has(t)) t.clamp_(lo, hi);
  }
}
