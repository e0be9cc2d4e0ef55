/**
 * DDP communication hooks: `dist.GradBucket` (what a hook receives) and PyTorch's default hooks,
 * `torch.distributed.algorithms.ddp_comm_hooks.default_hooks` (`allreduce_hook`,
 * `fp16_compress_hook`, `bf16_compress_hook`), as
 * `distributed.algorithms.ddpCommHooks.defaultHooks.{allreduceHook, fp16CompressHook, bf16CompressHook}`.
 *
 * A hook is `hook(state, bucket)` and returns a `torch.futures.Future` of the reduced bucket (a
 * tensor, or a list whose first element is it), completed in stream order (Note [Futures in stream
 * order] in ts/futures.ts), or the tensor itself. DDP calls it inside `backward()` as soon as a
 * bucket is complete, and copies the result into the bucket, whose slices are the gradients.
 */
import { withGradMode } from '../autograd/graph.js';
import { Future } from '../futures.js';
import { cast } from '../ops/cast.js';
import { copyInto } from '../ops/copy.js';
import { binaryOp } from '../ops/elementwise.js';
import { tidy } from '../ops/scoped.js';
import { cat } from '../ops/shape.js';
import { zeros } from '../ops/creation.js';
import { narrow, reshape } from '../ops/views.js';
import { untrack } from '../scope.js';
import { Tensor } from '../tensor.js';
import type { DType } from '../dtype.js';
import { allReduce } from './collectives.js';
import { defaultGroup, type Group, type Work } from './group.js';

/** `dist.GradBucket`: one bucket of DDP's flattened gradients, as a comm hook sees it. */
export class GradBucket {
  private buf: Tensor;
  /** @internal */
  constructor(private readonly idx: number, buffer: Tensor, private readonly params: Tensor[], private readonly offsets: number[], private readonly last: boolean) {
    this.buf = buffer;
  }

  /** The bucket's index (0 is the bucket of the last parameters, reduced first). */
  index(): number {
    return this.idx;
  }

  /** The flattened gradients: one 1-D tensor holding every gradient of the bucket. */
  buffer(): Tensor {
    return this.buf;
  }

  /** `set_buffer(buffer)`: replaces the bucket's flat tensor (same size and dtype). */
  setBuffer(buffer: Tensor): void {
    if (!(buffer instanceof Tensor) || buffer.numel() !== this.buf.numel() || buffer.dtype !== this.buf.dtype) {
      throw new RangeError(`GradBucket.setBuffer(): expected a tensor of ${this.buf.numel()} ${this.buf.dtype} elements, got ${buffer instanceof Tensor ? `${buffer.numel()} ${buffer.dtype} elements` : typeof buffer}`);
    }
    this.buf = buffer;
  }

  /** Each parameter's gradient: views of `buffer()` shaped as the parameters (new handles; dispose them). */
  gradients(): Tensor[] {
    return this.params.map((p, i) => reshape(narrow(this.buf, 0, this.offsets[i], p.numel()), p.shape.slice()));
  }

  /** The bucket's parameters, in the order of `gradients()`. */
  parameters(): Tensor[] {
    return this.params.slice();
  }

  /** Whether this is the last bucket of the iteration to be reduced. */
  isLast(): boolean {
    return this.last;
  }
}

/** A comm hook: `hook(state, bucket)` → the reduced bucket, as a stream-ordered `Future` (or the tensor). */
export type CommHook<S = unknown> = (state: S, bucket: GradBucket) => Future<Tensor | Tensor[]> | Tensor;

/** A sum all-reduce of `t` as PyTorch's `dist.all_reduce(t, async_op=True).get_future()`: a future of `[t]`. */
function allReduceFuture(t: Tensor, group: Group): Future<Tensor[]> {
  const work = allReduce(t, { op: 'sum', group, asyncOp: true }) as Work;
  return Future._inStreamOrder([t], work.wait());
}

/**
 * `allreduce_hook(processGroup, bucket)`: the bucket divided by the world size, then sum-all-reduced
 * (what DDP does without a hook).
 */
export function allreduceHook(processGroup: Group | null, bucket: GradBucket): Future<Tensor> {
  const g = defaultGroup(processGroup);
  const t = bucket.buffer();
  withGradMode(false, () => tidy(() => copyInto(t, binaryOp('div', t, g.worldSize))));
  return allReduceFuture(t, g).then((f) => f.value()[0]);
}

/**
 * The 16-bit compression hooks: cast to `dtype`, divide there, sum-all-reduce in `dtype`, copy back
 * into the bucket. The compressed tensor is padded with zeros to a multiple of 2 × the world size
 * elements, so that every part of the ring all-reduce starts on a 4-byte boundary: a GPU copies
 * between devices only from and to such offsets (the padding adds nothing to the sums).
 */
function compressHook(dtype: DType, processGroup: Group | null, bucket: GradBucket): Future<Tensor> {
  const g = defaultGroup(processGroup);
  const n = bucket.buffer().numel(), unit = 2 * g.worldSize, pad = Math.ceil(n / unit) * unit - n;
  // `bucket.buffer().to(dtype).div_(world_size)`: the division is rounded to `dtype` too, as PyTorch's.
  const compressed = withGradMode(false, () => tidy(() => {
    let c = binaryOp('div', cast(bucket.buffer(), dtype), g.worldSize);
    if (c.dtype !== dtype) c = cast(c, dtype);
    return pad ? cat([c, zeros([pad], { dtype, device: c.device })], 0) : c;
  }));
  untrack(compressed);
  return allReduceFuture(compressed, g).then((f) => {
    const out = bucket.buffer();
    // decompress in place, as PyTorch's (to save the peak memory)
    withGradMode(false, () => tidy(() => copyInto(out, narrow(f.value()[0], 0, 0, n))));
    compressed.dispose();
    return out;
  });
}

/** `fp16_compress_hook(processGroup, bucket)`: the bucket all-reduced as float16 (half the bytes), divided by the world size. */
export function fp16CompressHook(processGroup: Group | null, bucket: GradBucket): Future<Tensor> {
  return compressHook('float16', processGroup, bucket);
}

/** `bf16_compress_hook(processGroup, bucket)`: the bucket all-reduced as bfloat16, divided by the world size. */
export function bf16CompressHook(processGroup: Group | null, bucket: GradBucket): Future<Tensor> {
  return compressHook('bfloat16', processGroup, bucket);
}

/**
 * @internal Runs `hook` on a bucket and returns the reduced tensor, in stream order; PyTorch's
 * result rules, and webtorch's one: a Promise cannot be the result (DDP would have to wait for it
 * in the calling thread, and the optimizer step queued after `backward()` would read the
 * gradients before it settled).
 */
export function runCommHook(hook: CommHook, state: unknown, bucket: GradBucket): Tensor {
  let r: unknown = hook(state, bucket);
  if (r instanceof Future) {
    if (!r.done()) throw new Error('DistributedDataParallel: the communication hook returned a Future that is not completed: webtorch runs hooks inside backward() and needs the result in stream order (a Future completed at once, as dist.allReduce\'s in a hook, or the tensor itself)');
    r = r.value();
    if (Array.isArray(r)) r = r[0];
  } else if (r && typeof (r as { then?: unknown }).then === 'function') {
    throw new TypeError('DistributedDataParallel: the communication hook returned a Promise; return a torch.futures.Future completed in stream order (new torch.futures.Future() and setResult(tensor) after queuing the collective) or the tensor itself');
  }
  if (!(r instanceof Tensor)) throw new TypeError(`DistributedDataParallel: the communication hook must return a Future of a tensor (or a tensor), got ${r === null ? 'null' : typeof r}`);
  const buf = bucket.buffer();
  if (r.numel() !== buf.numel()) throw new RangeError(`DistributedDataParallel: the communication hook's result has ${r.numel()} elements but the bucket has ${buf.numel()}`);
  return r;
}

/** `torch.distributed.algorithms`: `ddpCommHooks.defaultHooks` (PyTorch's `ddp_comm_hooks.default_hooks`). */
export const algorithms = {
  ddpCommHooks: {
    defaultHooks: { allreduceHook, fp16CompressHook, bf16CompressHook },
  },
};
