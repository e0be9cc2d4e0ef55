/**
 * `torch.gpu.comm` (PyTorch's `torch.cuda.comm`, plus the NCCL-style all-reduce family): collectives
 * over a list of tensors, one per device, in one process. They are the building block for
 * data-parallel training without a process group.
 *
 * Why there are no events here: every step is a worker-to-worker `to()`/`copy_()` (ts/ops/copy.ts),
 * queued on the source device (a `send`) and on the destination (a `recv`) in program order on the
 * current streams. Each device's queue therefore runs the collective's steps in the order they
 * were issued, and later work on each device sees the result, with no wait in the calling thread.
 *
 * `allReduce` and `reduceScatter` use a ring: the flattened tensor (or the rows, for
 * reduceScatter) is cut into one part per device (`torch.tensor_split` sizes, so any size works);
 * in k-1 steps each device passes one part to the next device, which combines it with its own;
 * then (all-reduce) k-1 more steps pass the finished parts around. Every device sends and receives
 * the same amount, about 2(k-1)/k of the tensor, instead of the k-1 whole tensors a naive
 * reduce-then-broadcast puts on one device.
 */
import { CPU, Device, currentDevice, device as toDevice, type DeviceLike } from '../device.js';
import { withGradMode } from '../autograd/graph.js';
import { fmt } from '../shape.js';
import { Tensor } from '../tensor.js';
import { binaryOp } from '../ops/elementwise.js';
import { copyInto, to } from '../ops/copy.js';
import { bindArgs, type PyArgs } from '../args.js';
import { tidy } from '../ops/scoped.js';
import { cat, chunk, split } from '../ops/shape.js';
import { narrow, reshape } from '../ops/views.js';
import { cast } from '../ops/cast.js';

/** A reduction of the all-reduce family (PyTorch's `ReduceOp`, lower case). */
export type ReduceOpName = 'sum' | 'avg' | 'max' | 'min' | 'product';

/**
 * PyTorch's `dist.ReduceOp` names for the reductions: `ReduceOp.AVG` is `'avg'`, so code written
 * as in PyTorch (`allReduce(t, ReduceOp.SUM)`) and the lower-case names both work.
 */
export const ReduceOp = Object.freeze({ SUM: 'sum', AVG: 'avg', PRODUCT: 'product', MIN: 'min', MAX: 'max' } as const);

/** Each reduction's elementwise op (`avg` is `sum`, then a division). */
export const COMBINE: Record<Exclude<ReduceOpName, 'avg'>, string> = { sum: 'add', max: 'maximum', min: 'minimum', product: 'mul' };
const FLOATS = new Set(['float32', 'float16', 'bfloat16']);

/** Checks a list of tensors for a collective: tensors, on distinct devices, one dtype, (optionally) one shape. */
function checkList(op: string, tensors: unknown, sameShape: boolean): Tensor[] {
  if (!Array.isArray(tensors) || tensors.length === 0) throw new TypeError(`${op}: expected a non-empty list of tensors`);
  tensors.forEach((t, i) => {
    if (!(t instanceof Tensor)) throw new TypeError(`${op}: expected a list of tensors, but element ${i} is ${typeof t}`);
    t._check(op);
  });
  const ts = tensors as Tensor[];
  const seen = new Map<Device, number>();
  ts.forEach((t, i) => {
    const j = seen.get(t.device);
    if (j !== undefined) throw new RangeError(`${op}: expected one tensor per device, but tensors ${j} and ${i} are both on ${t.device}`);
    seen.set(t.device, i);
    if (t.dtype !== ts[0].dtype) throw new TypeError(`${op}: expected all tensors to have the same dtype, but tensor 0 is ${ts[0].dtype} and tensor ${i} is ${t.dtype} (on ${t.device})`);
    if (sameShape && t.shape.join() !== ts[0].shape.join()) {
      throw new RangeError(`${op}: expected all tensors to have the same shape, but tensor 0 has ${fmt(ts[0].shape)} and tensor ${i} has ${fmt(t.shape)} (on ${t.device})`);
    }
  });
  return ts;
}

function checkOp(op: string, name: unknown, dtype: string): ReduceOpName {
  if (typeof name !== 'string' || !(name in COMBINE || name === 'avg')) {
    throw new RangeError(`${op}: unknown reduction ${JSON.stringify(name)} (expected 'sum', 'avg', 'max', 'min' or 'product')`);
  }
  if (name === 'avg' && !FLOATS.has(dtype)) throw new TypeError(`${op}: op 'avg' needs a floating-point tensor, got ${dtype}`);
  return name as ReduceOpName;
}

/** `torch.tensor_split` sizes: `n` cut into `k` parts whose sizes differ by at most one. */
export function splitSizes(n: number, k: number): number[] {
  return Array.from({ length: k }, (_, i) => Math.floor(n / k) + (i < n % k ? 1 : 0));
}

/**
 * The ring reduce-scatter over dim 0 of `acc` (contiguous working copies, one per device): when it
 * returns, `acc[i]`'s part `i` holds the reduction of every device's part `i`.
 */
function ringReduceScatter(acc: Tensor[], sizes: number[], combine: string): void {
  const k = acc.length;
  const offs = sizes.map((_, c) => sizes.slice(0, c).reduce((a, b) => a + b, 0));
  const part = (i: number, c: number) => narrow(acc[i], 0, offs[c], sizes[c]);
  for (let s = 0; s < k - 1; s++) {
    for (let i = 0; i < k; i++) {
      const c = (((i - s - 1) % k) + k) % k, j = (i + 1) % k;
      if (!sizes[c]) continue;
      const mine = part(j, c);
      copyInto(mine, binaryOp(combine, mine, to(part(i, c), acc[j].device)));
    }
  }
}

/** The ring all-gather after `ringReduceScatter`: every device's `acc` gets every finished part. */
function ringAllGather(acc: Tensor[], sizes: number[]): void {
  const k = acc.length;
  const offs = sizes.map((_, c) => sizes.slice(0, c).reduce((a, b) => a + b, 0));
  for (let s = 0; s < k - 1; s++) {
    for (let i = 0; i < k; i++) {
      const c = (((i - s) % k) + k) % k, j = (i + 1) % k;
      if (sizes[c]) copyInto(narrow(acc[j], 0, offs[c], sizes[c]), narrow(acc[i], 0, offs[c], sizes[c]));
    }
  }
}

/**
 * `allReduce(tensors, op = 'sum')`: every tensor becomes the reduction (`'sum'`, `'avg'`,
 * `'max'`, `'min'`, `'product'`) of all of them, in place, as `torch.cuda.nccl.all_reduce` and
 * `dist.all_reduce` do. One tensor per device, same shape and dtype. Returns `tensors`.
 */
export function allReduce(tensors: Tensor[], ...args: PyArgs<[op: ReduceOpName], { op?: ReduceOpName }>): Tensor[] {
  const ts = checkList('allReduce', tensors, true);
  const op = checkOp('allReduce', bindArgs('allReduce', ['op'], args, { op: 'sum' as ReduceOpName }, 1).op, ts[0].dtype);
  const n = ts[0].numel(), k = ts.length;
  if (n === 0) return ts;
  withGradMode(false, () => tidy(() => {
    const acc = ts.map((t) => reshape(cast(t, t.dtype), [n]));
    const sizes = splitSizes(n, k);
    ringReduceScatter(acc, sizes, COMBINE[op === 'avg' ? 'sum' : op]);
    ringAllGather(acc, sizes);
    ts.forEach((t, i) => copyInto(t, reshape(op === 'avg' ? binaryOp('div', acc[i], k) : acc[i], t.shape.slice())));
  }));
  return ts;
}

/**
 * `reduceScatter(tensors, op = 'sum')`: the reduction of all tensors, cut along dim 0 into one
 * part per device (`torch.tensor_split` sizes: they differ by at most one row, so any size
 * works); returns part i on tensor i's device, as new tensors.
 */
export function reduceScatter(tensors: Tensor[], ...args: PyArgs<[op: ReduceOpName], { op?: ReduceOpName }>): Tensor[] {
  const ts = checkList('reduceScatter', tensors, true);
  const op = checkOp('reduceScatter', bindArgs('reduceScatter', ['op'], args, { op: 'sum' as ReduceOpName }, 1).op, ts[0].dtype);
  if (ts[0].ndim === 0) throw new RangeError('reduceScatter: expected tensors with at least one dimension, got 0-dim tensors');
  const k = ts.length, sizes = splitSizes(ts[0].shape[0], k);
  return withGradMode(false, () => tidy(() => {
    const acc = ts.map((t) => cast(t, t.dtype));
    ringReduceScatter(acc, sizes, COMBINE[op === 'avg' ? 'sum' : op]);
    let at = 0;
    return acc.map((a, i) => {
      const p = narrow(a, 0, at, sizes[i]);
      at += sizes[i];
      return op === 'avg' ? binaryOp('div', p, k) : cast(p, p.dtype);
    });
  }));
}

/**
 * `allGather(tensors, dim = 0)`: on every tensor's device, the concatenation of all tensors along
 * `dim` (sizes along `dim` may differ). Returns new tensors, one per input.
 */
export function allGather(tensors: Tensor[], ...args: PyArgs<[dim: number], { dim?: number }>): Tensor[] {
  const ts = checkList('allGather', tensors, false);
  const { dim } = bindArgs('allGather', ['dim'], args, { dim: 0 }, 1);
  return withGradMode(false, () => tidy(() => ts.map((t) => cat(ts.map((u) => to(u, t.device)), dim))));
}

/**
 * `broadcast(tensor, devices)` (or `{devices, out}`): copies of `tensor` on each device; on
 * `tensor`'s own device the result is `tensor` itself, as in PyTorch. With `out`, copies into
 * those tensors instead and returns them.
 */
export function broadcast(tensor: Tensor, ...args: PyArgs<[devices: DeviceLike[] | null], { devices?: DeviceLike[] | null; out?: Tensor[] | null }>): Tensor[] {
  if (!(tensor instanceof Tensor)) throw new TypeError(`broadcast: expected a tensor, got ${typeof tensor}`);
  const o = bindArgs<{ devices: DeviceLike[] | null; out: Tensor[] | null }>('broadcast', ['devices', 'out'] as never, args, { devices: null, out: null }, 1);
  if ((o.devices == null) === (o.out == null)) throw new TypeError('broadcast: exactly one of devices and out must be specified');
  if (o.out) {
    checkList('broadcast', o.out, false).forEach((t) => {
      if (t.shape.join() !== tensor.shape.join()) throw new RangeError(`broadcast: out tensor on ${t.device} has shape ${fmt(t.shape)}, but the source has ${fmt(tensor.shape)}`);
    });
    withGradMode(false, () => o.out!.forEach((t) => copyInto(t, tensor)));
    return o.out;
  }
  const devs = o.devices!.map((d) => toDevice(d));
  return devs.map((d) => to(tensor, d));
}

/** `reduceAdd(inputs, destination?)`: the sum of the inputs (one per device) on `destination` (the current GPU when omitted; -1 or 'cpu' for the cpu). */
export function reduceAdd(inputs: Tensor[], destination: DeviceLike | null = null): Tensor {
  const ts = checkList('reduceAdd', inputs, true);
  const dst = destinationOf(destination);
  return withGradMode(false, () => tidy(() => {
    let sum = cast(to(ts[0], dst), ts[0].dtype);
    for (let i = 1; i < ts.length; i++) sum = binaryOp('add', sum, to(ts[i], dst));
    return sum;
  }));
}

/**
 * `scatter(tensor, devices, chunkSizes?, dim = 0)`: `tensor` cut along `dim` (`torch.chunk`, or
 * the given sizes) with piece i copied to `devices[i]`. Differentiable.
 */
export function scatter(tensor: Tensor, devices: DeviceLike[], chunkSizes: number[] | null = null, dim = 0): Tensor[] {
  if (!(tensor instanceof Tensor)) throw new TypeError(`scatter: expected a tensor, got ${typeof tensor}`);
  const devs = devices.map((d) => toDevice(d));
  if (chunkSizes && chunkSizes.length !== devs.length) {
    throw new RangeError(`scatter: expected one chunk size per device, got ${chunkSizes.length} sizes for ${devs.length} devices`);
  }
  return tidy(() => (chunkSizes ? split(tensor, chunkSizes, dim) : chunk(tensor, devs.length, dim)).map((c, i) => to(c, devs[i])));
}

/** `gather(tensors, dim = 0, destination?)`: the tensors concatenated along `dim` on `destination` (the current GPU when omitted; -1 or 'cpu' for the cpu). Differentiable. */
export function gather(tensors: Tensor[], dim = 0, destination: DeviceLike | null = null): Tensor {
  const ts = checkList('gather', tensors, false);
  const dst = destinationOf(destination);
  return tidy(() => cat(ts.map((t) => to(t, dst)), dim));
}

function destinationOf(d: DeviceLike | null): Device {
  return d === null ? toDevice(currentDevice()) : d === -1 ? CPU : toDevice(d);
}
