/**
 * `nn.parallel.DistributedDataParallel` over the in-process process group (ts/distributed/group.ts).
 *
 * At construction rank 0's parameters and buffers are broadcast to every rank. Each forward (with
 * grad enabled, outside `noSync`) runs the module with every parameter replaced by a recorded
 * identity of it; when backward reaches that identity, the parameter's total gradient (plus any
 * gradient accumulated under `noSync`) is copied into its slot of a flat bucket (parameters in
 * reverse order, `bucketCapMb` per bucket, as PyTorch), and the parameter's `.grad` becomes a
 * view of that slot. When a bucket's last gradient arrives, its averaging all-reduce is issued
 * at once, in bucket order, still inside `backward()`.
 *
 * The all-reduces run on a stream of their own (on a GPU; the cpu has one stream), as PyTorch's
 * NCCL work does: each bucket's waits for the compute stream's work so far (its gradients
 * written), and the compute stream waits for the last bucket's once it is issued. So a `recv`
 * that waits for a peer's bytes holds only the comm stream: backward's later kernels run
 * meanwhile, and the optimizer step (queued after backward) still reads the averages. Memory
 * needs no `recordStream`: what the reduction makes is allocated and freed on the comm stream,
 * and the buckets (and a joined rank's count) are freed on the compute stream only after it has
 * waited for the comm stream (at the end of backward, or at the next forward or release when a
 * backward stopped early). (A comm stream per bucket, so that a bucket's download need not queue
 * behind the previous bucket's receives, measured 5-10% slower on the GPT between two H200s:
 * both buckets reach the host together at the end of backward anyway; BENCHMARKS.md.)
 *
 * A registered comm hook (`registerCommHook`, ts/distributed/comm-hooks.ts) replaces that
 * all-reduce; `join(fn)` lets ranks with fewer batches shadow the others' collectives
 * (ts/distributed/ddp-join.ts). With `gradientAsBucketView` the buckets are kept from one
 * iteration to the next, so `.grad` stays a view of its bucket (the all-reduce writes the
 * gradients themselves, and no bucket is allocated per iteration).
 */
import { isGradEnabled, op, withStandIns } from '../autograd/graph.js';
import { Tensor } from '../tensor.js';
import { binaryOp } from '../ops/elementwise.js';
import { copyInto } from '../ops/copy.js';
import { checkOptions } from '../args.js';
import { narrow, reshape } from '../ops/views.js';
import { cat, split } from '../ops/shape.js';
import { alloc } from '../runtime/dispatch.js';
import { elementSize } from '../dtype.js';
import { Module } from '../nn/module.js';
import { untrack } from '../scope.js';
import { allReduce, broadcast } from './collectives.js';
import { defaultGroup, type Group, type Work } from './group.js';
import { GradBucket, runCommHook, type CommHook } from './comm-hooks.js';
import { joinedRank, notifyNotJoined, notifyWillSync, syncBuffersFromCommonRank, type JoinState } from './ddp-join.js';
import { bindArgs, type PyArgs } from '../args.js';
import { zeros } from '../ops/creation.js';
import { withGradMode } from '../autograd/graph.js';
import { tidy } from '../ops/scoped.js';
import { SocketGroup } from './socket-group.js';
import type { Device, DeviceLike } from '../device.js';
import { device as toDevice } from '../device.js';
import { currentStream, Stream, withStream } from '../runtime/streams.js';

/**
 * The buffers as PyTorch's `_broadcast_coalesced` sends them at each forward: the tensors of one
 * dtype form one run, broadcast as one flat tensor (a ResNet's 60 batch-norm buffers take two
 * broadcasts, not 60; between processes each is a round trip through the host).
 */
function coalescedRuns(tensors: Tensor[]): Tensor[][] {
  const runs = new Map<string, Tensor[]>();
  for (const t of tensors) if (t.numel() > 0) runs.set(t.dtype, [...(runs.get(t.dtype) ?? []), t]);
  return [...runs.values()];
}

/** `DistributedDataParallel`'s keywords (PyTorch's, camelCase). */
export interface DDPOptions {
  /** `[this rank's device]` or omitted. */
  deviceIds?: DeviceLike[] | null;
  outputDevice?: DeviceLike | null;
  /** Broadcast rank 0's buffers at each forward (default true). */
  broadcastBuffers?: boolean;
  processGroup?: Group | null;
  /** The most megabytes of gradients per all-reduce (default 25). */
  bucketCapMb?: number;
  /** Only false: every parameter must take part in each backward. */
  findUnusedParameters?: boolean;
  /**
   * Keep each bucket for the whole training, `.grad` a view of it (default false: a bucket per
   * iteration, freed once reduced; `.grad` is then a view of that iteration's bucket).
   */
  gradientAsBucketView?: boolean;
}

/** `ddp.join()`'s keywords (PyTorch's, camelCase). */
export interface JoinOptions {
  /** Divide the gradients by the world size (true, the default) or by the ranks not yet joined. */
  divideByInitialWorldSize?: boolean;
  /** false: `fn` runs as it is, without join's collectives. */
  enable?: boolean;
  /** Only false: webtorch does not raise on the ranks when one runs out of inputs. */
  throwOnEarlyTermination?: boolean;
}

interface Bucket {
  params: Tensor[];
  offsets: number[];
  numel: number;
  flat: Tensor | null;
  ready: Set<Tensor>;
}

/** `v` with every tensor in it (through arrays and plain objects) on `dev`. */
function moveTo(v: unknown, dev: Device): unknown {
  if (v instanceof Tensor) return v.device === dev ? v : v.to(dev);
  if (Array.isArray(v)) return v.map((x) => moveTo(x, dev));
  if (v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, moveTo(x, dev)]));
  }
  return v;
}

/**
 * `nn.parallel.DistributedDataParallel(module, {deviceIds, outputDevice, broadcastBuffers,
 * processGroup, bucketCapMb, gradientAsBucketView})`: data parallelism across the ranks of a process group, one module
 * per rank on the rank's device (`deviceIds` and `outputDevice`, where given, must name it). Gradients are averaged across ranks during `backward()`; `noSync(fn)`
 * accumulates them locally instead; `join(fn)` lets ranks run different numbers of batches;
 * `registerCommHook(state, hook)` replaces the averaging all-reduce. `ddp.module` is the wrapped module.
 */
export class DistributedDataParallel<M extends Module = Module> extends Module {
  module!: M;
  /** The group the gradients are reduced over. */
  readonly processGroup: Group;
  /** The bucket size limit in MB. */
  readonly bucketCapMb: number;
  readonly broadcastBuffers: boolean;
  /** The device of the module (and of its gradient buckets). */
  readonly device: Device;
  /** Whether `deviceIds` was given: inputs then move to the module's device. */
  private readonly _moveInputs: boolean;
  private readonly _buckets: Bucket[] = [];
  private readonly _bucketOf = new Map<Tensor, [Bucket, number]>();
  private _next = 0;
  private _sync = true;
  /** Whether buckets are kept across iterations (`gradientAsBucketView`). */
  readonly gradientAsBucketView: boolean;
  private _hook: { hook: CommHook; state: unknown } | null = null;
  private _join: JoinState | null = null;
  /** @internal The stream the gradient all-reduces run on (null on the cpu: they run in its one stream). */
  readonly _commStream: Stream | null;
  /** Whether reductions were queued on the comm stream that the compute stream has not waited for. */
  private _commPending = false;

  constructor(module: M, options: DDPOptions = {}) {
    super();
    checkOptions('DistributedDataParallel', options, ['deviceIds', 'outputDevice', 'broadcastBuffers', 'processGroup', 'bucketCapMb', 'findUnusedParameters', 'gradientAsBucketView']);
    if (!(module instanceof Module)) throw new TypeError(`DistributedDataParallel(): expected module to be an nn.Module, but got ${typeof module}`);
    const g = defaultGroup(options.processGroup);
    this.processGroup = g;
    this.registerModule('module', module);
    this.bucketCapMb = options.bucketCapMb ?? 25;
    this.broadcastBuffers = options.broadcastBuffers ?? true;
    this.gradientAsBucketView = options.gradientAsBucketView ?? false;
    if (!(this.bucketCapMb > 0)) throw new RangeError(`DistributedDataParallel(): bucketCapMb must be positive, got ${String(options.bucketCapMb)}`);
    if (options.findUnusedParameters) throw new RangeError('DistributedDataParallel(): findUnusedParameters is not supported by webtorch: every parameter must take part in each backward');
    // The module's device: the rank's, for ranks in one process (its device is the rank); between
    // processes, wherever the module is, as PyTorch takes it (`setDevice` may come after the group).
    const state = [...module.parameters(), ...module.buffers()];
    const dev = g instanceof SocketGroup ? (state[0]?.device ?? g.device) : g.device;
    this.device = dev;
    this._commStream = dev.type === 'gpu' ? new Stream(dev) : null;
    this._moveInputs = options.deviceIds != null;
    if (options.deviceIds != null && (options.deviceIds.length !== 1 || toDevice(options.deviceIds[0]) !== dev)) {
      throw new RangeError(`DistributedDataParallel(): deviceIds must be [${dev}] (the module's device), got [${options.deviceIds.map(String).join(', ')}]`);
    }
    // PyTorch's outputDevice places the output of a module that spans devices; a webtorch rank's
    // module lives on one device, where its output already is: any other device is refused, not ignored.
    if (options.outputDevice != null && toDevice(options.outputDevice) !== dev) {
      throw new RangeError(`DistributedDataParallel(): outputDevice must be ${dev} (the module's device, where its output is), got ${String(options.outputDevice)}`);
    }
    for (const t of state) {
      if (t.device === dev) continue;
      if (g instanceof SocketGroup) throw new Error(`DistributedDataParallel: module must have its parameters and buffers on one device, but found ${dev} and ${t.device}`);
      throw new Error(`DistributedDataParallel: module must have its parameters and buffers on rank ${g.rank}'s device ${g.device} but found one of them on device: ${t.device}`);
    }
    // Every rank starts from rank 0's state (in stream order: nothing waits here).
    // (one broadcast each, received in place: see `syncBuffers` on a flat temporary's lifetime)
    for (const t of [...module.parameters(), ...module.buffers()]) broadcast(t, { src: 0, group: g, asyncOp: true });
    this.buildBuckets(module.parameters().filter((p) => p.requiresGrad));
  }

  private buildBuckets(params: Tensor[]): void {
    const cap = this.bucketCapMb * 1024 * 1024;
    let cur: Bucket | null = null, bytes = 0;
    for (const p of [...params].reverse()) {
      const b = p.numel() * elementSize(p.dtype);
      if (!cur || (bytes + b > cap && cur.params.length) || cur.params[0].dtype !== p.dtype) {
        cur = { params: [], offsets: [], numel: 0, flat: null, ready: new Set() };
        this._buckets.push(cur);
        bytes = 0;
      }
      this._bucketOf.set(p, [cur, cur.params.length]);
      cur.params.push(p);
      cur.offsets.push(cur.numel);
      cur.numel += p.numel();
      bytes += b;
    }
  }

  /** The buckets' sizes in parameters, in reduction order (for tests and tuning). */
  get bucketSizes(): number[] {
    return this._buckets.map((b) => b.params.length);
  }

  /**
   * `with ddp.no_sync():` as `ddp.noSync(() => …)` (sync or async): forwards and backwards inside
   * accumulate gradients locally; the next synchronised backward reduces the accumulated total.
   */
  noSync<T>(fn: () => T): T {
    this._sync = false;
    let r: T;
    try {
      r = fn();
    } catch (e) {
      this._sync = true;
      throw e;
    }
    if (r && typeof (r as { then?: unknown }).then === 'function') {
      return (r as unknown as Promise<unknown>).finally(() => {
        this._sync = true;
      }) as T;
    }
    this._sync = true;
    return r;
  }

  /** Runs the module on this rank's inputs, with the parameters hooked for the gradient all-reduce. */
  forward(...args: unknown[]): any {
    const g = this.processGroup;
    this.joinCommStream(); // a backward that stopped early: its buckets may be freed from here on
    // With deviceIds, as PyTorch's DDP: tensors among the inputs (in arrays and plain objects too) move to the module's device.
    const inputs = this._moveInputs ? args.map((a) => moveTo(a, this.device)) : args;
    const joining = this._join !== null && g.worldSize > 1;
    const sync = isGradEnabled() && this._sync && g.worldSize > 1;
    if (joining) {
      // Note [Shadowing joined ranks] (ts/distributed/ddp-join.ts): the calls joined ranks pair with.
      this._join!.count?.dispose();
      this._join!.count = notifyNotJoined(g, this.device);
      if (this.broadcastBuffers) syncBuffersFromCommonRank(this.module, g, this.device, true);
      notifyWillSync(sync, g, this.device);
    } else if (this.broadcastBuffers && g.worldSize > 1) {
      this.syncBuffers();
    }
    if (!sync) return this.module.forward(...inputs);
    this.prepare();
    const hooked = new Map<Tensor, Tensor>();
    const restore: [Record<string, unknown>, string, Tensor][] = [];
    for (const m of this.module.modules()) {
      const own = m as unknown as Record<string, unknown>;
      for (const k of (m as unknown as { _params: Map<string, unknown> })._params.keys()) {
        const p = own[k];
        if (!(p instanceof Tensor) || !this._bucketOf.has(p)) continue;
        if (!hooked.has(p)) hooked.set(p, this.hook(p));
        restore.push([own, k, p]);
        own[k] = hooked.get(p);
      }
    }
    try {
      // a checkpoint inside recomputes with the parameters themselves: their gradients go to the hooks
      return withStandIns(hooked, () => this.module.forward(...inputs));
    } finally {
      for (const [own, k, p] of restore) own[k] = p;
      for (const h of hooked.values()) h.dispose();
    }
  }

  /**
   * Rank 0's buffers on every rank, one broadcast per dtype (`coalescedRuns`), in stream order.
   * Each run travels in a flat tensor that is freed only once its broadcast has completed: freed
   * at once (stream-ordered, as a tidy would), its late receive overwrote the block's next user
   * between processes (Note [a receive outlives its call] in ts/distributed/socket-collectives.ts).
   */
  private syncBuffers(): void {
    const g = this.processGroup;
    for (const run of coalescedRuns(this.module.buffers())) {
      if (run.length === 1) {
        broadcast(run[0], { src: 0, group: g, asyncOp: true });
        continue;
      }
      let work!: Work;
      const flat = withGradMode(false, () => tidy(() => {
        const f = cat(run.map((t) => reshape(t, [t.numel()])), 0);
        work = broadcast(f, { src: 0, group: g, asyncOp: true }) as Work;
        if (g.rank !== 0) split(f, run.map((t) => t.numel())).forEach((part, j) => copyInto(run[j], reshape(part, run[j].shape.slice())));
        return f;
      }));
      void work.wait().then(() => flat.dispose(), () => flat.dispose());
    }
  }

  /** Starts an iteration's buckets; PyTorch's error when the last one did not finish its reduction. */
  private prepare(): void {
    const partial = this._buckets.some((b) => b.ready.size > 0 && b.ready.size < b.params.length);
    if (partial) {
      // The unfinished buckets are dropped (every rank drops the same ones), then PyTorch's error.
      for (const b of this._buckets) {
        b.flat?.dispose();
        b.flat = null;
        b.ready.clear();
      }
      throw new Error('Expected to have finished reduction in the prior iteration before starting a new one. This error indicates that your module has parameters that were not used in producing loss (webtorch\'s DistributedDataParallel needs every parameter in each backward).');
    }
    for (const b of this._buckets) {
      b.ready.clear();
      if (!b.flat) {
        b.flat = alloc([b.numel], b.params[0].dtype, this.device);
        untrack(b.flat); // the bucket outlives a torch.tidy around the forward
      }
    }
    this._next = 0;
  }

  /** An identity of `p` whose gradient rule hands the gradient to its bucket. */
  private hook(p: Tensor): Tensor {
    return op('ddpBucket', [p], () => new Tensor(p.storage, p.shape.slice(), p._strides.slice(), p._offset, p.dtype), () => ([g]) => [this.arrive(p, g!)]);
  }

  private arrive(p: Tensor, g: Tensor): Tensor {
    const [b, i] = this._bucketOf.get(p)!;
    if (!b.flat || b.ready.has(p)) throw new Error('DistributedDataParallel: a parameter\'s gradient arrived twice in one iteration (backward twice after one forward?)');
    const slot = narrow(b.flat, 0, b.offsets[i], p.numel());
    copyInto(slot, reshape(p.grad ? binaryOp('add', p.grad, g) : g, [p.numel()]));
    if (p.grad) {
      p.grad.dispose();
      p.grad = null;
    }
    b.ready.add(p);
    // Buckets are reduced in order, each as soon as it and the ones before it are complete.
    while (this._next < this._buckets.length && this._buckets[this._next].ready.size === this._buckets[this._next].params.length) {
      const i = this._next++, done = this._buckets[i];
      try {
        this.onCommStream(() => this.reduceBucket(i, done.flat!, false), this._next === this._buckets.length);
      } finally {
        if (!this.gradientAsBucketView) {
          done.flat!.dispose(); // the gradients' views keep the storage
          done.flat = null;
        }
      }
    }
    return reshape(slot, p.shape.slice());
  }

  /**
   * Reduces bucket `i`'s flat gradients `flat` in place (queued in stream order): through the comm
   * hook when one is registered, else averaged (PyTorch's: divided by the world size, or under
   * `join` with `divideByInitialWorldSize` false by the ranks not joined). `shadow`: a joined
   * rank's zeros (Note [Shadowing joined ranks]).
   */
  private reduceBucket(i: number, flat: Tensor, shadow: boolean): void {
    const g = this.processGroup, b = this._buckets[i];
    if (this._hook) {
      const bucket = new GradBucket(i, flat, b.params, b.offsets, i === this._buckets.length - 1);
      const r = runCommHook(this._hook.hook, this._hook.state, bucket);
      if (r !== flat) withGradMode(false, () => tidy(() => copyInto(flat, reshape(r, [flat.numel()]))));
      return;
    }
    const join = this._join;
    if (!join || join.divideByInitialWorldSize) {
      allReduce(flat, { op: 'avg', group: g, asyncOp: true });
      return;
    }
    allReduce(flat, { op: 'sum', group: g, asyncOp: true });
    if (!shadow && join.count) withGradMode(false, () => tidy(() => copyInto(flat, binaryOp('div', flat, join.count!))));
  }

  /**
   * Runs `reduce` (one bucket's reduction) on the comm stream, after the compute stream's work so
   * far; with `last`, the compute stream then waits for it (and every bucket before it).
   */
  private onCommStream(reduce: () => void, last: boolean): void {
    const comm = this._commStream;
    if (!comm) return reduce();
    comm.waitStream(currentStream(this.device));
    this._commPending = true;
    try {
      withStream(comm, reduce);
    } finally {
      if (last) this.joinCommStream();
    }
  }

  /** The compute stream waits for the reductions queued so far (before anything frees a bucket). */
  private joinCommStream(): void {
    if (!this._commPending) return;
    this._commPending = false;
    currentStream(this.device).waitStream(this._commStream!);
  }

  /** @internal A joined rank's side of one backward: each bucket's reduction on zeros, in bucket order. */
  _shadowBackward(): void {
    for (let i = 0; i < this._buckets.length; i++) {
      const b = this._buckets[i];
      this.onCommStream(() => {
        const z = zeros([b.numel], { dtype: b.params[0].dtype, device: this.device });
        this.reduceBucket(i, z, true);
        z.dispose();
      }, i === this._buckets.length - 1);
    }
  }

  /**
   * `ddp.registerCommHook(state, hook)`: each bucket is reduced by `hook(state, bucket)` (a
   * `dist.GradBucket`) instead of the averaging all-reduce, e.g. PyTorch's
   * `distributed.algorithms.ddpCommHooks.defaultHooks.fp16CompressHook` with `state` the process
   * group (or null). The hook returns the reduced bucket as a `torch.futures.Future` completed in
   * stream order, or as the tensor (ts/distributed/comm-hooks.ts). Once per DDP module.
   */
  registerCommHook<S>(state: S, hook: CommHook<S>): void {
    if (typeof hook !== 'function') throw new TypeError('Communication hook must be callable.');
    if (this._hook) throw new Error('register_comm_hook or register_builtin_comm_hook can only be called once.');
    this._hook = { hook: hook as CommHook, state };
  }

  /**
   * `with ddp.join():` as `await ddp.join(async () => { …training… }, {divideByInitialWorldSize,
   * enable, throwOnEarlyTermination})`, for ranks with different numbers of batches: when `fn` ends
   * on a rank while others still train, this rank shadows their collectives (contributing zero
   * gradients) until every rank has joined, then every rank takes the model of the last to join.
   * Every rank must call it; resolves with `fn`'s result. See Note [Shadowing joined ranks].
   */
  async join<T>(fn: () => T | Promise<T>, ...args: PyArgs<[divideByInitialWorldSize: boolean, enable: boolean, throwOnEarlyTermination: boolean], JoinOptions>): Promise<T> {
    const o = bindArgs('join', ['divideByInitialWorldSize', 'enable', 'throwOnEarlyTermination'], args, { divideByInitialWorldSize: true, enable: true, throwOnEarlyTermination: false } as Required<JoinOptions>, 1);
    if (typeof fn !== 'function') throw new TypeError(`join(): expected a function to run inside the join context, got ${typeof fn}`);
    if (o.throwOnEarlyTermination) throw new RangeError('join(): throwOnEarlyTermination=true is not supported by webtorch: a forward cannot stop to read whether another rank ran out of inputs (it never waits for the device)');
    if (!o.enable) return await fn();
    if (this._join) throw new Error('join(): this DistributedDataParallel module is already inside join()');
    this._join = { divideByInitialWorldSize: o.divideByInitialWorldSize, count: null };
    try {
      const r = await fn();
      if (this.processGroup.worldSize > 1) await joinedRank(this);
      return r;
    } finally {
      this.joinCommStream();
      this._join.count?.dispose();
      this._join = null;
    }
  }

  /** @internal Frees the kept buckets of `gradientAsBucketView` (the gradients' views keep their storage). */
  _releaseBuckets(): void {
    this.joinCommStream();
    for (const b of this._buckets) {
      b.flat?.dispose();
      b.flat = null;
    }
  }
}
