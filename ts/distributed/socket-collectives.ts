/**
 * Each collective's device side for a group of processes (ts/distributed/socket-group.ts): the
 * rank's device sends its bytes to the calling thread and queues a receive of the result, both in
 * stream order (ts/distributed/bridge.ts); the host exchanges the bytes with the other ranks
 * (ts/distributed/host-ops.ts) and posts the result. float16 and bfloat16 travel as float32.
 *
 * Note [a receive outlives its call]: a collective returns before its receive has landed (the
 * device writes the bytes when the host posts them). Training went wrong on the second step when
 * DDP's flat copy of the buffers, the target of a broadcast's receive, was freed in stream order
 * at the end of the call (a `tidy`): kept until the broadcast's Work completed, it trained as one
 * GPU. (That flat held the parameters, coalesced at construction; reproduced on lavapipe with
 * `webtorch-run --nproc 2 bench/models.mjs --model gpt --batch 1 --steps 2`, not with buffers
 * alone: test/device/distributed-process.test.ts 'ddp-buffers' passes either way.) Why a
 * stream-ordered free was not enough is not found yet; until it is, a temporary that a receive
 * writes is freed after the collective's Work (DDP's `syncBuffers`). The temporaries
 * here (the all-reduce's float32 copy, `receiveInto`'s) are freed in stream order as before, and
 * train correctly in the tests and the models bench.
 *
 * `WEBTORCH_TRACE_COLLECTIVES=1` prints a JSON line per all-reduce to stderr: when it was
 * issued, when its bytes were on the host, exchanged, and posted back (ms since the epoch; the
 * device workers add a line per large send and receive, ts/worker/peers.ts).
 * (Cutting a large all-reduce into pieces, each its own download, exchange and upload, measured
 * slower on two H200s: the worker runs reads one at a time, so the pieces' downloads did not
 * overlap, and each paid a read's fixed cost; a large read already streams through the download
 * ring of ts/worker/gpu/transfers.ts.)
 */
import { withGradMode } from '../autograd/graph.js';
import type { DType } from '../dtype.js';
import { copyInto } from '../ops/copy.js';
import { tidy } from '../ops/scoped.js';
import { cat } from '../ops/shape.js';
import { reshape } from '../ops/views.js';
import { cast, contiguous } from '../ops/cast.js';
import { alloc } from '../runtime/dispatch.js';
import { env } from '../platform.js';
import type { Tensor } from '../tensor.js';
import { fromHost, toHost } from './bridge.js';
import { binaryOp } from '../ops/elementwise.js';
import { COMBINE, type ReduceOpName } from './comm.js';
import { hostAllGather, hostAllReduce, hostBroadcast, hostReduceScatter, hostSwap } from './host-ops.js';
import type { SocketGroup } from './socket-group.js';

const wire = (d: DType): DType => (d === 'float16' || d === 'bfloat16' ? 'float32' : d);

/** Runs `fn` (which queues device work and starts the host part) with grad off, inside a `tidy`; its promise. */
function issue(fn: () => Promise<void>): Promise<void> {
  let p!: Promise<void>;
  withGradMode(false, () => tidy(() => {
    p = fn();
  }));
  return p;
}

/** A flat contiguous copy of `t` in its wire dtype (a new tensor, owned by the caller's tidy). */
const flatCopy = (t: Tensor): Tensor => reshape(cast(t, wire(t.dtype)), [t.numel()]);

/** Receives into `t` (through a temporary when it is not contiguous or travels as float32); returns the poster. */
function receiveInto(t: Tensor): (d: Uint8Array | Error) => void {
  if (t.isContiguous() && wire(t.dtype) === t.dtype) return fromHost(t);
  const tmp = alloc(t.shape, wire(t.dtype), t.device);
  const post = fromHost(tmp);
  copyInto(t, tmp);
  return post;
}

/** The host's part: runs after every rank arrived; a failure also releases the device's receives with the error. */
function run(g: SocketGroup, what: string, sig: string, posts: ((d: Uint8Array | Error) => void)[], work: (key: string) => Promise<void>): Promise<void> {
  let op: ReturnType<SocketGroup['_begin']>;
  try {
    op = g._begin(what, sig);
  } catch (e) {
    // Never leave a queued receive waiting: it would hold the device's stream.
    posts.forEach((p) => p(e as Error));
    throw e;
  }
  void op.finish(() => work(op.key), (e) => posts.forEach((p) => p(e)));
  return op.done;
}

const trace = env('WEBTORCH_TRACE_COLLECTIVES') ? (o: object) => console.error(JSON.stringify(o)) : null;
/** The trace's clock: ms since the epoch, the same in every thread (the device workers' lines too). */
const clock = () => performance.timeOrigin + performance.now();

/**
 * `allReduce` between processes.
 *
 * Note [two ranks reduce on the device]: a floating-point all-reduce of two ranks sends each
 * rank's whole tensor to the other, and each device sums the two, in rank order (so both get the
 * same bits), and divides for `avg`. The host then only moves bytes: its reduction in
 * JavaScript (the ring of ts/distributed/host-ops.ts) cost as much as the transport on the H200
 * hosts, over threads as over sockets, where the devices add two buffers in next to no time
 * (bench/probe-host-allreduce.mjs; BENCHMARKS.md, "Two GPUs, sixth session"). With more ranks,
 * where this would send every rank's tensor to every other, the host's ring stays.
 */
export function socketAllReduce(g: SocketGroup, t: Tensor, op: ReduceOpName, sig: string): Promise<void> {
  g._check('allReduce');
  const n = t.numel();
  // Nothing to move: no elements, or one rank (whose reduction is its own tensor, avg included).
  if (n === 0 || g.worldSize === 1) return run(g, 'allReduce', sig, [], async () => {});
  if (g.worldSize === 2 && wire(t.dtype) === 'float32') return deviceAllReduce(g, t, op, sig);
  return issue(() => {
    const issued = clock();
    const acc = flatCopy(t);
    const sent = toHost(acc);
    const post = fromHost(acc);
    copyInto(t, reshape(acc, t.shape.slice()));
    return run(g, 'allReduce', sig, [post], async (key) => {
      const bytes = await sent, onHost = clock(), size = bytes.byteLength; // (posting hands the buffer over)
      const reduced = await hostAllReduce(g.mesh, key, bytes, acc.dtype, op);
      const exchanged = clock();
      post(reduced);
      trace?.({ collective: 'allReduce', rank: g.rank, bytes: size, issued, onHost, exchanged, posted: clock() });
    });
  });
}

/** Two ranks' floating-point `allReduce`: Note [two ranks reduce on the device]. */
function deviceAllReduce(g: SocketGroup, t: Tensor, op: ReduceOpName, sig: string): Promise<void> {
  return issue(() => {
    const issued = clock();
    const mine = flatCopy(t);
    const sent = toHost(mine);
    const theirs = alloc(mine.shape, mine.dtype, mine.device);
    const post = fromHost(theirs);
    const [a, b] = g.rank === 0 ? [mine, theirs] : [theirs, mine];
    const sum = binaryOp(COMBINE[op === 'avg' ? 'sum' : op], a, b);
    copyInto(t, reshape(op === 'avg' ? binaryOp('div', sum, 2) : sum, t.shape.slice()));
    return run(g, 'allReduce', sig, [post], async (key) => {
      const bytes = await sent, onHost = clock(), size = bytes.byteLength;
      const other = await hostSwap(g.mesh, key, bytes);
      const exchanged = clock();
      post(other);
      trace?.({ collective: 'allReduce', rank: g.rank, bytes: size, issued, onHost, exchanged, posted: clock() });
    });
  });
}

/** `broadcast` between processes. */
export function socketBroadcast(g: SocketGroup, t: Tensor, src: number, sig: string): Promise<void> {
  g._check('broadcast');
  if (t.numel() === 0 || g.worldSize === 1) return run(g, 'broadcast', sig, [], async () => {});
  return issue(() => {
    if (g.rank === src) {
      const sent = toHost(t.isContiguous() ? t : contiguous(t));
      return run(g, 'broadcast', sig, [], async (key) => void (await hostBroadcast(g.mesh, key, await sent, src)));
    }
    const post = t.isContiguous() ? fromHost(t) : receiveInto(t);
    return run(g, 'broadcast', sig, [post], async (key) => post(await hostBroadcast(g.mesh, key, null, src)));
  });
}

/** `allGather` between processes. */
export function socketAllGather(g: SocketGroup, list: Tensor[], t: Tensor, sig: string): Promise<void> {
  g._check('allGather');
  if (t.numel() === 0) return run(g, 'allGather', sig, [], async () => {});
  return issue(() => {
    const acc = flatCopy(t);
    const sent = toHost(acc);
    const posts = list.map((o, j) => (j === g.rank ? null : receiveInto(o)));
    copyInto(list[g.rank], t);
    const live = posts.filter((p): p is NonNullable<typeof p> => p !== null);
    return run(g, 'allGather', sig, live, async (key) => {
      const all = await hostAllGather(g.mesh, key, await sent);
      posts.forEach((p, j) => p?.(all[j]));
    });
  });
}

/** `reduceScatter` between processes. */
export function socketReduceScatter(g: SocketGroup, out: Tensor, inputs: Tensor[], op: ReduceOpName, sig: string): Promise<void> {
  g._check('reduceScatter');
  const sizes = inputs.map((x) => x.numel());
  if (sizes.every((s) => s === 0)) return run(g, 'reduceScatter', sig, [], async () => {});
  return issue(() => {
    const acc = cat(inputs.map((x) => reshape(cast(x, wire(x.dtype)), [x.numel()])), 0);
    const sent = toHost(acc);
    const post = out.numel() ? receiveInto(out) : () => {};
    return run(g, 'reduceScatter', sig, [post], async (key) => post(await hostReduceScatter(g.mesh, key, await sent, sizes, acc.dtype, op)));
  });
}

/** `barrier` between processes: every rank has called it. */
export function socketBarrier(g: SocketGroup): Promise<void> {
  return run(g, 'barrier', 'barrier()', [], async () => {});
}
