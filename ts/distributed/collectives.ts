/**
 * The collectives of `torch.distributed`, each rank issuing its own side (see ts/distributed/
 * group.ts): `allReduce` and `reduceScatter` as a ring over `torch.tensor_split` parts (so any
 * size works), `broadcast` and `allGather` directly, `barrier` on the host.
 *
 * Without `asyncOp` a collective returns a promise that resolves once every rank has issued its
 * side (PyTorch's call blocks until then too; the data moves in the devices' stream order either
 * way); with `asyncOp: true` it returns a `Work` whose `wait()` is that promise.
 */
import { clientOf, type Device } from '../device.js';
import { withGradMode } from '../autograd/graph.js';
import { Tensor } from '../tensor.js';
import { binaryOp } from '../ops/elementwise.js';
import { copyInto } from '../ops/copy.js';
import { tidy } from '../ops/scoped.js';
import { cat } from '../ops/shape.js';
import { narrow, reshape } from '../ops/views.js';
import { cast, contiguous } from '../ops/cast.js';
import { alloc } from '../runtime/dispatch.js';
import { bindArgs, type PyArgs } from '../args.js';
import { COMBINE, splitSizes, type ReduceOpName } from './comm.js';
import { defaultGroup, recvFrom, sendTo, signature, type Group, type ProcessGroup, type Work } from './group.js';
import { SocketGroup } from './socket-group.js';
import { socketAllGather, socketAllReduce, socketBarrier, socketBroadcast, socketReduceScatter } from './socket-collectives.js';

const FLOATS = new Set(['float32', 'float16', 'bfloat16']);
const mod = (a: number, k: number) => ((a % k) + k) % k;

/** Options every collective takes. */
export interface CollectiveOptions {
  group?: Group | null;
  /** Return a `Work` handle at once instead of a promise. */
  asyncOp?: boolean;
}

/** The trailing arguments of a reduction: PyTorch's `(op, group, async_op)`, positional or as keywords. */
type ReduceArgs = PyArgs<[op: ReduceOpName, group: Group | null, asyncOp: boolean], CollectiveOptions & { op?: ReduceOpName }>;
/** The trailing arguments of `allGather` and `barrier`: `(group, async_op)`. */
type GroupArgs = PyArgs<[group: Group | null, asyncOp: boolean], CollectiveOptions>;
const GROUP = ['group', 'asyncOp'] as const;
const bindReduce = (what: string, args: readonly unknown[], lead: number) =>
  bindArgs<CollectiveOptions & { op: ReduceOpName }>(what, ['op', ...GROUP], args, { op: 'sum', group: undefined, asyncOp: undefined }, lead);

/**
 * A collective's tensor. Ranks in one process are devices, so a rank's tensors must be on its
 * device. Ranks as processes (or threads) reach any of their devices through the bridge, as
 * PyTorch's backends take the tensor's device: there the tensors of one call must share one
 * device, `on` (the first tensor's).
 */
function checkTensor(what: string, t: unknown, g: Group, on?: Device): Tensor {
  if (!(t instanceof Tensor)) throw new TypeError(`${what}: expected a tensor, got ${typeof t}`);
  t._check(what);
  if (!(g instanceof SocketGroup)) {
    if (t.device !== g.device) throw new RangeError(`${what}: rank ${g.rank}'s tensor is on ${t.device}, but the rank's device is ${g.device}`);
  } else if (on && t.device !== on) {
    throw new RangeError(`${what}: expected all tensors to be on the same device, but found at least two devices, ${on} and ${t.device}!`);
  }
  return t;
}

function checkOp(what: string, op: unknown, dtype: string): ReduceOpName {
  if (typeof op !== 'string' || !(op in COMBINE || op === 'avg')) throw new RangeError(`${what}: unknown reduction ${JSON.stringify(op)} (expected 'sum', 'avg', 'max', 'min' or 'product')`);
  if (op === 'avg' && !FLOATS.has(dtype)) throw new TypeError(`${what}: op 'avg' needs a floating-point tensor, got ${dtype}`);
  return op as ReduceOpName;
}

/**
 * The promise, or with `asyncOp` the `Work`, of a collective whose device work was just queued on
 * `dev`'s current stream. `wait()` resolves once every rank has issued its side (the data then
 * moves in stream order, as NCCL's work does after `wait()` on the host); `isCompleted()` is true
 * once, in addition, `dev` has finished that work: the bytes have arrived.
 */
function result(p: { done: Promise<void> }, asyncOp: boolean | undefined, dev?: Device): Work | Promise<void> {
  let completed = false;
  const done = p.done.then(() => {
    completed = true;
  });
  done.catch(() => {}); // a Work nobody waits on does not make an unhandled rejection
  if (!asyncOp) return done;
  if (!dev) return { wait: () => done, isCompleted: () => completed };
  // The stream's mark is taken at the first ask, not at every collective (DDP never asks): it
  // stands for the collective and whatever was queued after it, so the answer may come late but
  // never early. Later asks keep that mark, so work queued meanwhile cannot hold the answer back.
  const client = clientOf(dev), stream = client.stream;
  let mark = -1;
  return {
    wait: () => done,
    isCompleted: () => {
      if (mark < 0) mark = client.markStream(stream);
      return completed && client.board.streamMark(stream) >= mark;
    },
  };
}

/** This rank's side of the ring reduce-scatter over `acc` (flat, contiguous): part `rank` ends reduced. */
function ringReduceScatter(g: ProcessGroup, acc: Tensor, sizes: number[], combine: string, tag: (s: number, from: number) => number): void {
  const k = g.worldSize, r = g.rank, next = g._deviceOf(mod(r + 1, k)), prev = g._deviceOf(mod(r - 1, k));
  const offs = sizes.map((_, c) => sizes.slice(0, c).reduce((a, b) => a + b, 0));
  const part = (c: number) => narrow(acc, 0, offs[c], sizes[c]);
  for (let s = 0; s < k - 1; s++) {
    const cs = mod(r - s - 1, k), cr = mod(r - s - 2, k);
    if (sizes[cs]) sendTo(part(cs), next, tag(s, r));
    if (sizes[cr]) {
      const tmp = alloc([sizes[cr]], acc.dtype, acc.device);
      recvFrom(tmp, prev, tag(s, mod(r - 1, k)));
      const mine = part(cr);
      copyInto(mine, binaryOp(combine, mine, tmp));
    }
  }
}

/**
 * `dist.allReduce(tensor, op = 'sum', group = null, asyncOp = false)` (positional or as keywords):
 * `tensor` becomes the reduction (`'sum'`, `'avg'`, `'max'`, `'min'`, `'product'`, or
 * `ReduceOp.SUM` …) of every rank's tensor, in place.
 */
export function allReduce(tensor: Tensor, ...args: ReduceArgs): Work | Promise<void> {
  const options = bindReduce('allReduce', args, 1);
  const g = defaultGroup(options.group);
  const t = checkTensor('allReduce', tensor, g);
  const op = checkOp('allReduce', options.op, t.dtype);
  const k = g.worldSize, n = t.numel();
  if (g instanceof SocketGroup) return result({ done: socketAllReduce(g, t, op, signature('allReduce', t, op)) }, options.asyncOp, t.device);
  const p = g._collective('allReduce', signature('allReduce', t, op), Math.max(1, 2 * k * k), (base) => {
    if (k > 1 && n > 0) allReduceSide(g, t, op, base);
    else if (op === 'avg' && n > 0) withGradMode(false, () => tidy(() => copyInto(t, binaryOp('div', t, k))));
  });
  return result(p, options.asyncOp, g.device);
}

/** This rank's side of the ring all-reduce of `t` (its tags from `base`). */
function allReduceSide(g: ProcessGroup, t: Tensor, op: ReduceOpName, base: number): void {
  const k = g.worldSize, n = t.numel();
  const tag = (phase: number) => (s: number, from: number) => base + (phase * k + s) * k + from;
  withGradMode(false, () => tidy(() => {
    const acc = reshape(cast(t, t.dtype), [n]);
    const sizes = splitSizes(n, k);
    ringReduceScatter(g, acc, sizes, COMBINE[op === 'avg' ? 'sum' : op], tag(0));
    const offs = sizes.map((_, c) => sizes.slice(0, c).reduce((a, b) => a + b, 0));
    const next = g._deviceOf(mod(g.rank + 1, k)), prev = g._deviceOf(mod(g.rank - 1, k));
    for (let s = 0; s < k - 1; s++) {
      const cs = mod(g.rank - s, k), cr = mod(g.rank - 1 - s, k);
      if (sizes[cs]) sendTo(narrow(acc, 0, offs[cs], sizes[cs]), next, tag(1)(s, g.rank));
      if (sizes[cr]) recvFrom(narrow(acc, 0, offs[cr], sizes[cr]), prev, tag(1)(s, mod(g.rank - 1, k)));
    }
    copyInto(t, reshape(op === 'avg' ? binaryOp('div', acc, k) : acc, t.shape.slice()));
  }));
}

/**
 * `dist.broadcast(tensor, src = 0, group = null, asyncOp = false)` (positional or as keywords):
 * every rank's `tensor` gets rank `src`'s values, in place.
 */
export function broadcast(tensor: Tensor, ...args: PyArgs<[src: number, group: Group | null, asyncOp: boolean], CollectiveOptions & { src?: number }>): Work | Promise<void> {
  const options = bindArgs<CollectiveOptions & { src: number }>('broadcast', ['src', ...GROUP], args, { src: 0, group: undefined, asyncOp: undefined }, 1);
  const g = defaultGroup(options.group);
  const t = checkTensor('broadcast', tensor, g);
  const src = options.src;
  if (!Number.isInteger(src) || src < 0 || src >= g.worldSize) throw new RangeError(`broadcast: src must be a rank in [0, ${g.worldSize}), got ${String(src)}`);
  if (g instanceof SocketGroup) return result({ done: socketBroadcast(g, t, src, signature('broadcast', t, `src=${src}`)) }, options.asyncOp, t.device);
  const p = g._collective('broadcast', signature('broadcast', t, `src=${src}`), g.worldSize, (base) => withGradMode(false, () => tidy(() => {
    if (g.rank === src) {
      const c = t.isContiguous() ? t : contiguous(t);
      for (let j = 0; j < g.worldSize; j++) if (j !== src) sendTo(c, g._deviceOf(j), base + j);
    } else if (t.isContiguous()) {
      recvFrom(t, g._deviceOf(src), base + g.rank);
    } else {
      const tmp = alloc(t.shape, t.dtype, t.device);
      recvFrom(tmp, g._deviceOf(src), base + g.rank);
      copyInto(t, tmp);
    }
  })));
  return result(p, options.asyncOp, g.device);
}

/** `dist.allGather(tensorList, tensor, group = null, asyncOp = false)`: `tensorList[j]` gets rank j's `tensor`, on every rank. */
export function allGather(tensorList: Tensor[], tensor: Tensor, ...args: GroupArgs): Work | Promise<void> {
  const options = bindArgs<CollectiveOptions>('allGather', GROUP, args, { group: undefined, asyncOp: undefined }, 2);
  const g = defaultGroup(options.group);
  const t = checkTensor('allGather', tensor, g), k = g.worldSize;
  if (!Array.isArray(tensorList) || tensorList.length !== k) throw new RangeError(`allGather: tensorList must hold ${k} tensors (one per rank), got ${Array.isArray(tensorList) ? tensorList.length : typeof tensorList}`);
  tensorList.forEach((o, j) => {
    checkTensor('allGather', o, g, t.device);
    if (o.shape.join() !== t.shape.join() || o.dtype !== t.dtype) throw new RangeError(`allGather: tensorList[${j}] is ${signature('', o)} but the input is ${signature('', t)}`);
  });
  if (g instanceof SocketGroup) return result({ done: socketAllGather(g, tensorList, t, signature('allGather', t)) }, options.asyncOp, t.device);
  const p = g._collective('allGather', signature('allGather', t), k * k, (base) => withGradMode(false, () => tidy(() => {
    const c = t.isContiguous() ? t : contiguous(t);
    for (let j = 0; j < k; j++) if (j !== g.rank) sendTo(c, g._deviceOf(j), base + g.rank * k + j);
    for (let j = 0; j < k; j++) {
      const o = tensorList[j];
      if (j === g.rank) copyInto(o, t);
      else if (o.isContiguous()) recvFrom(o, g._deviceOf(j), base + j * k + g.rank);
      else {
        const tmp = alloc(o.shape, o.dtype, o.device);
        recvFrom(tmp, g._deviceOf(j), base + j * k + g.rank);
        copyInto(o, tmp);
      }
    }
  })));
  return result(p, options.asyncOp, g.device);
}

/**
 * `dist.reduceScatter(output, inputList, op = 'sum', group = null, asyncOp = false)`: `output` on
 * rank r gets the reduction over ranks of `inputList[r]` (inputs may differ in size; ranks must agree).
 */
export function reduceScatter(output: Tensor, inputList: Tensor[], ...args: ReduceArgs): Work | Promise<void> {
  const options = bindReduce('reduceScatter', args, 2);
  const g = defaultGroup(options.group);
  const out = checkTensor('reduceScatter', output, g), k = g.worldSize;
  if (!Array.isArray(inputList) || inputList.length !== k) throw new RangeError(`reduceScatter: inputList must hold ${k} tensors (one per rank), got ${Array.isArray(inputList) ? inputList.length : typeof inputList}`);
  inputList.forEach((t) => checkTensor('reduceScatter', t, g, out.device));
  const mine = inputList[g.rank];
  if (mine.numel() !== out.numel() || mine.dtype !== out.dtype) throw new RangeError(`reduceScatter: output is ${signature('', out)} but inputList[${g.rank}] is ${signature('', mine)}`);
  const op = checkOp('reduceScatter', options.op, out.dtype);
  const sizes = inputList.map((t) => t.numel());
  if (g instanceof SocketGroup) return result({ done: socketReduceScatter(g, out, inputList, op, `reduceScatter([${sizes.join(', ')}], ${out.dtype}, ${op})`) }, options.asyncOp, out.device);
  const p = g._collective('reduceScatter', `reduceScatter([${sizes.join(', ')}], ${out.dtype}, ${op})`, Math.max(1, k * k), (base) => withGradMode(false, () => tidy(() => {
    const acc = cat(inputList.map((t) => reshape(cast(t, t.dtype), [t.numel()])), 0);
    if (k > 1) ringReduceScatter(g, acc, sizes, COMBINE[op === 'avg' ? 'sum' : op], (s, from) => base + s * k + from);
    const off = sizes.slice(0, g.rank).reduce((a, b) => a + b, 0);
    const part = narrow(acc, 0, off, sizes[g.rank]);
    copyInto(out, reshape(op === 'avg' ? binaryOp('div', part, k) : part, out.shape.slice()));
  })));
  return result(p, options.asyncOp, g.device);
}

/** `dist.barrier(group = null, asyncOp = false)`: resolves when every rank has reached it (host-side). */
export function barrier(...args: GroupArgs): Work | Promise<void> {
  const options = bindArgs<CollectiveOptions>('barrier', GROUP, args, { group: undefined, asyncOp: undefined });
  const g = defaultGroup(options.group);
  if (g instanceof SocketGroup) return result({ done: socketBarrier(g) }, options.asyncOp);
  return result(g._collective('barrier', 'barrier()', 1), options.asyncOp);
}

/** @internal The devices of a group, in rank order. */
export const groupDevices = (g: ProcessGroup): Device[] => Array.from({ length: g.worldSize }, (_, r) => g._deviceOf(r));
