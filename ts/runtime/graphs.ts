/**
 * Graphs: PyTorch's `torch.cuda.CUDAGraph` and `torch.cuda.graph`, on every device.
 *
 * Capture, as PyTorch orders it: `graph(g, fn)` synchronizes the device, then makes a side
 * stream current (a fresh non-default stream; the cpu has only its one) and begins capture on
 * it. From `captureBegin` to `captureEnd` the stream's commands travel to the worker as usual,
 * which keeps them under the graph's id instead of running them (as CUDA runs nothing during
 * capture); `captureEnd` has the worker prepare them (ts/worker/gpu/graphs.ts: pipelines, bind
 * groups and params built once). `replay()` is one command on the current stream.
 *
 * Note [capture hook]: the hard parts, all in the capture hook that the device client consults (`CaptureHook`):
 * - memory: the stream's allocations come from the graph's private pool, a stream id of the
 *   caching allocator's own (`POOL_STREAM_BASE` + pool), whose segments the allocator keeps from
 *   emptyCache while the pool lives; a block of the general pool freed during capture is held
 *   until the graph is reset (the replayed kernels may still use it);
 * - what cannot be captured raises at once and discards the capture: a sync point (a read,
 *   `synchronize`), a host or cross-device copy, work on the default stream in the 'global'
 *   and 'threadLocal' modes, a fork (another stream waiting on an event of the capture) that
 *   was not joined back by capture end;
 * - a forked stream's work is captured into the same graph (it is rerouted to the capture
 *   stream: the worker keeps one ordered list, which respects every event the program waited on).
 */
import { clientOf, currentDevice, device as toDevice, type Device, type DeviceLike } from '../device.js';
import type { Command } from '../ir/commands.js';
import { BOOKKEEPING_KINDS, COPY_KINDS } from '../ir/kinds.js';
import type { Generator } from '../random.js';
import { allocatorOf } from './memory.js';
import { currentStream, Stream, withStream } from './streams.js';

/** Pools' allocator streams start here (real streams are below `STREAM_SLOTS`). */
const POOL_STREAM_BASE = 2 ** 30;
let nextPool = 1;
let nextGraph = 1;

/**
 * A private memory pool of the caching allocator (`torch.cuda.graph_pool_handle()`): graphs
 * captured with the same handle share its memory, as in PyTorch. Opaque.
 */
export class GraphPool {
  /** @internal The pool's number. */
  readonly id = nextPool++;
  /** @internal Graphs (and captures) using the pool, per device. */
  readonly users = new Map<Device, number>();

  /** @internal The allocator stream of the pool. */
  get stream(): number {
    return POOL_STREAM_BASE + this.id;
  }

  /** @internal A graph starts using the pool on `d`. */
  use(d: Device): void {
    const n = this.users.get(d) ?? 0;
    if (n === 0) allocatorOf(d).keepPool(this.stream, true);
    this.users.set(d, n + 1);
  }

  /** @internal A graph stops using the pool on `d`: the last one lets its free segments go. */
  drop(d: Device): void {
    const n = (this.users.get(d) ?? 1) - 1;
    if (n > 0) return void this.users.set(d, n);
    this.users.delete(d);
    const a = allocatorOf(d);
    a.keepPool(this.stream, false);
    a.releasePool(this.stream);
  }

  toString(): string {
    return `<torch.gpu graph pool ${this.id}>`;
  }
}

/** `torch.cuda.graph_pool_handle()`: a new pool handle, to share one pool between graphs. */
export function graphPoolHandle(): GraphPool {
  return new GraphPool();
}

/** PyTorch's capture error modes (camelCase: 'global', 'threadLocal', 'relaxed'). */
export type CaptureErrorMode = 'global' | 'threadLocal' | 'thread_local' | 'relaxed';

/** What a device client asks of the capture running on it (ts/runtime/client.ts, ts/runtime/storage.ts). */
export interface CaptureHook {
  /** The stream to queue `cmd` on (a forked stream's work goes to the capture stream); throws what cannot be captured. */
  route(cmd: Command, stream: number): number;
  /** Throws: `what` is a sync point, which a capture cannot contain. */
  syncPoint(what: string, stream: number | null): void;
  /** The allocator stream of an allocation made on `stream`. */
  allocStream(stream: number): number;
  /** Whether the free of a block of allocator stream `allocStream` waits for the graph (`free` runs then). */
  holdFree(allocStream: number, free: () => void): boolean;
  /** A storage allocated during capture (what is alive at capture end goes with `captureEnd`, for fusion). */
  noteAlloc(s: CapturedStorage): void;
}

/** What the capture needs of a storage. */
export interface CapturedStorage {
  readonly id: number;
  readonly byteOffset: number;
  readonly bytes: number;
  readonly freed: boolean;
}


/** A capture in progress on one device. */
class Capture implements CaptureHook {
  /** Streams whose work is captured: the capture stream and the streams forked from it. */
  readonly streams = new Set<number>();
  /** Per forked stream: work queued since capture began, and up to where the capture stream joined it. */
  private readonly work = new Map<number, number>();
  private readonly joined = new Map<number, number>();
  /** Events recorded on captured streams during capture: `slot:version` -> (stream, its work then). */
  private readonly events = new Map<string, { stream: number; work: number }>();
  /** Frees of general-pool blocks held until the graph is reset. */
  readonly heldFrees: (() => void)[] = [];
  /** Storages allocated during capture. */
  readonly allocated: CapturedStorage[] = [];
  /** Why the capture was discarded, once it was. */
  error: Error | null = null;
  /** The generator the captured random ops draw from, and the counter offset of the first draw. */
  generator: Generator | null = null;
  rngStart = 0;

  constructor(readonly graph: Graph, readonly device: Device, readonly stream: number, readonly pool: GraphPool, readonly mode: CaptureErrorMode) {
    this.streams.add(stream);
  }

  route(cmd: Command, stream: number): number {
    if (BOOKKEEPING_KINDS.has(cmd.k)) {
      this.track(cmd, stream);
      return stream;
    }
    const captured = this.streams.has(stream);
    if (captured && COPY_KINDS.has(cmd.k)) {
      this.fail(`a ${cmd.k === 'write' ? 'copy from the host' : 'copy between devices'} ('${cmd.k}') cannot be captured: a graph replays device work only; copy into a static input tensor before replay instead`);
    }
    if (!captured) {
      if (stream === 0 && this.device.type === 'gpu' && this.mode !== 'relaxed') this.defaultStreamWork();
      return stream;
    }
    if (stream !== this.stream) {
      this.work.set(stream, (this.work.get(stream) ?? 0) + 1);
      return this.stream;
    }
    return stream;
  }

  /** Follows events between streams: forks (a stream waits on the capture) and joins (the capture waits on a fork). */
  private track(cmd: Command, stream: number): void {
    if (cmd.k === 'record' && this.streams.has(stream)) {
      this.events.set(`${cmd.slot}:${cmd.version}`, { stream, work: this.work.get(stream) ?? 0 });
    } else if (cmd.k === 'wait') {
      const e = this.events.get(`${cmd.slot}:${cmd.version}`);
      if (!e) return;
      if (!this.streams.has(stream)) {
        // a fork: the stream's later work belongs to the capture
        this.streams.add(stream);
        this.work.set(stream, 0);
        this.joined.set(stream, 0);
      } else if (stream === this.stream && e.stream !== this.stream) {
        this.joined.set(e.stream, Math.max(this.joined.get(e.stream) ?? 0, e.work));
      }
    }
  }

  /** The forked streams whose work the capture stream never waited for. */
  unjoined(): number[] {
    return [...this.work].filter(([s, n]) => n > (this.joined.get(s) ?? 0)).map(([s]) => s);
  }

  syncPoint(what: string, stream: number | null): void {
    if (this.mode === 'relaxed' && stream !== null && !this.streams.has(stream)) return;
    this.fail(`${what} is a sync point, which cannot be captured (operation not permitted when stream is capturing): it would wait for work that capture does not run; read static output tensors after replay() instead`);
  }

  allocStream(stream: number): number {
    if (this.streams.has(stream)) return this.pool.stream;
    // (before the op's output is allocated, so that nothing is left over)
    if (stream === 0 && this.device.type === 'gpu' && this.mode !== 'relaxed') this.defaultStreamWork();
    return stream;
  }

  private defaultStreamWork(): never {
    this.fail(`work on the default stream of ${this.device} while another stream of it is capturing would make the default stream depend on the capture (operation not permitted when stream is capturing; run it on another stream, or capture with captureErrorMode 'relaxed')`);
  }

  noteAlloc(s: CapturedStorage): void {
    this.allocated.push(s);
  }

  /** The blocks allocated during capture and alive now: (segment, byte offset, bytes) triples. */
  live(): number[] {
    return this.allocated.filter((s) => !s.freed).flatMap((s) => [s.id, s.byteOffset, s.bytes]);
  }

  holdFree(allocStream: number, free: () => void): boolean {
    if (allocStream === this.pool.stream || allocStream >= POOL_STREAM_BASE) return false;
    this.heldFrees.push(free);
    return true;
  }

  /** Discards the capture and throws why (the runtime stays usable: the next capture starts clean). */
  fail(why: string): never {
    const e = new Error(`${this.graph.label()}: capture on ${this.device} discarded: ${why}`);
    this.error = e;
    this.graph._abort(this);
    throw e;
  }
}

/** Which devices have a capture running (at most one each). */
const captures = new Map<Device, Capture>();

/** What a graph holds once captured. */
interface Captured {
  device: Device;
  pool: GraphPool;
  heldFrees: (() => void)[];
  /** The captured draws: their generator, first counter offset, and the blocks they span. */
  rng: { g: Generator; start: number; span: number } | null;
}

/** Resets graphs that were garbage-collected without `reset()` (as tensors free their storage). */
const collected = new FinalizationRegistry<{ id: number; at: Captured }>(({ id, at }) => releaseGraph(id, at));

function releaseGraph(id: number, at: Captured): void {
  const client = clientOf(at.device);
  // runs after every command any stream received before it (ts/worker/streams/scheduler.ts)
  client.enqueue({ k: 'graphReset', graph: id });
  for (const free of at.heldFrees.splice(0)) free();
  at.pool.drop(at.device);
}

/** Options of `captureBegin` beyond PyTorch's (webtorch's fusion flag). */
export interface CaptureOptions {
  /**
   * Fuse chains of float32 elementwise ops whose intermediates are dead at capture end into one
   * kernel each, where the backend can (the gpu; default true). `false` replays every op's kernel.
   */
  fuse?: boolean;
}

/**
 * A captured graph (`torch.cuda.CUDAGraph`): `new torch.gpu.Graph()` captures on the current
 * GPU, `new torch.cpu.Graph()` on the cpu. Capture with `torch.gpu.graph(g, fn)` or
 * `captureBegin()`/`captureEnd()` on a non-default stream; `replay()` runs it on the current
 * stream; `reset()` (or `Symbol.dispose`, or the garbage collector) frees it and its pool's use.
 */
export class Graph {
  /** @internal The graph's id (per process). */
  readonly id = nextGraph++;
  readonly #kind: 'gpu' | 'cpu';
  #capture: Capture | null = null;
  #captured: Captured | null = null;
  #fuse = true;

  constructor(kind: 'gpu' | 'cpu' = 'gpu') {
    this.#kind = kind;
  }

  /** @internal The graph's name in errors. */
  label(): string {
    return `${this.#kind === 'cpu' ? 'torch.cpu' : 'torch.gpu'}.Graph ${this.id}`;
  }

  /**
   * Begins capture on the current stream of the current device (PyTorch's `capture_begin`):
   * into `pool`'s memory (a new private pool by default). The stream must not be a GPU's default stream.
   */
  captureBegin(pool: GraphPool | null = null, captureErrorMode: CaptureErrorMode = 'global', options: CaptureOptions = {}): void {
    if (this.#captured || this.#capture) throw new Error(`${this.label()}: capture_begin on a graph that was already captured; reset() it first`);
    if (pool !== null && !(pool instanceof GraphPool)) throw new TypeError(`capture_begin: pool must be a handle from graphPoolHandle() or another graph's pool(), got ${String(pool)}`);
    if (!['global', 'threadLocal', 'thread_local', 'relaxed'].includes(captureErrorMode)) {
      throw new TypeError(`capture_begin: captureErrorMode must be 'global', 'threadLocal' or 'relaxed', got ${String(captureErrorMode)}`);
    }
    const dev = this.#kind === 'cpu' ? toDevice('cpu') : toDevice(currentDevice());
    const stream = this.#kind === 'cpu' ? 0 : currentStream(dev).streamId;
    if (this.#kind === 'gpu' && stream === 0) {
      throw new Error("CUDA graphs must be captured on a non-default stream. (However, after capture, it's ok to replay them on the default stream.) Capture inside torch.gpu.graph(g, fn), or torch.gpu.stream(new torch.gpu.Stream(), ...)");
    }
    if (captures.has(dev)) throw new Error(`${this.label()}: ${dev} is already capturing a graph; one capture per device at a time`);
    const p = pool ?? new GraphPool();
    p.use(dev);
    const c = new Capture(this, dev, stream, p, captureErrorMode);
    this.#capture = c;
    this.#fuse = options.fuse ?? true;
    captures.set(dev, c);
    const client = clientOf(dev);
    client.enqueue({ k: 'captureBegin', graph: this.id }, undefined, stream);
    client.capture = c;
  }

  /** Ends capture (PyTorch's `capture_end`); raises if the capture was discarded or a fork was not joined. */
  captureEnd(): void {
    const c = this.#capture;
    if (!c) throw new Error(`${this.label()}: capture_end without a capture in progress${this.#lastError ? ` (the capture was discarded: ${this.#lastError.message})` : ''}`);
    const unjoined = c.unjoined();
    if (unjoined.length) {
      c.fail(`the capture forked stream${unjoined.length > 1 ? 's' : ''} ${unjoined.join(', ')} and never joined ${unjoined.length > 1 ? 'them' : 'it'} back (capture sequence contains a fork that was not joined to the primary stream): make the capture stream wait for its work (stream.waitStream(forked))`);
    }
    const client = clientOf(c.device);
    client.capture = null;
    captures.delete(c.device);
    client.enqueue({ k: 'captureEnd', graph: this.id, fuse: this.#fuse, live: this.#fuse ? c.live() : [] }, undefined, c.stream);
    this.#capture = null;
    let rng: Captured['rng'] = null;
    if (c.generator) {
      const end = c.generator._draw(0).counter;
      rng = { g: c.generator, start: c.rngStart, span: end[0] + end[1] * 2 ** 32 - c.rngStart };
    }
    this.#captured = { device: c.device, pool: c.pool, heldFrees: c.heldFrees, rng };
    collected.register(this, { id: this.id, at: this.#captured }, this);
  }

  #lastError: Error | null = null;

  /** @internal Discards capture `c` (a capture error): the worker forgets what it kept. */
  _abort(c: Capture): void {
    if (this.#capture !== c) return;
    const client = clientOf(c.device);
    client.capture = null;
    captures.delete(c.device);
    client.enqueue({ k: 'captureEnd', graph: this.id, fuse: false }, undefined, c.stream);
    this.#capture = null;
    this.#lastError = c.error;
    releaseGraph(this.id, { device: c.device, pool: c.pool, heldFrees: c.heldFrees, rng: null });
  }

  /** Replays the captured work on the current stream of the graph's device (one command). */
  replay(): void {
    const at = this.#captured;
    if (!at) {
      throw new Error(`${this.label()}: Called CUDAGraph::replay without a preceding successful capture${this.#lastError ? ` (the capture was discarded: ${this.#lastError.message})` : this.#wasReset ? ' (the graph was reset)' : ''}.`);
    }
    const client = clientOf(at.device);
    let rng: { key: [number, number]; delta: number } | undefined;
    if (at.rng) {
      // this replay's draws: the next `span` blocks of the generator, `delta` past the captured ones
      const { key, counter } = at.rng.g._draw(at.rng.span * 4);
      rng = { key, delta: counter[0] + counter[1] * 2 ** 32 - at.rng.start };
    }
    client.enqueue({ k: 'replay', graph: this.id, rng }, undefined, at.device.type === 'cpu' ? 0 : client.stream);
  }

  #wasReset = false;

  /** Frees the graph: the worker forgets it, and its pool's memory goes once no graph uses the pool. */
  reset(): void {
    if (this.#capture) this.#capture.fail('the graph was reset during capture');
    const at = this.#captured;
    if (!at) return;
    this.#captured = null;
    this.#wasReset = true;
    collected.unregister(this);
    releaseGraph(this.id, at);
  }

  /** `Symbol.dispose`: `reset()`. */
  [Symbol.dispose](): void {
    this.reset();
  }

  /** The graph's memory pool (PyTorch's `pool()`), to share with another capture. */
  pool(): GraphPool {
    const p = this.#captured?.pool ?? this.#capture?.pool;
    if (!p) throw new Error(`${this.label()}: Called CUDAGraph::pool without a preceding successful capture.`);
    return p;
  }

  /** Whether the graph holds a capture (captured and not reset). */
  get captured(): boolean {
    return this.#captured !== null;
  }

  /**
   * How many kernel launches (dispatches) a replay makes, and how many commands were captured
   * (elementwise chains fused at capture make the launches fewer). Resolves once capture end has run.
   */
  async info(): Promise<{ commands: number; dispatches: number }> {
    const at = this.#captured;
    if (!at) throw new Error(`${this.label()}: info() without a preceding successful capture`);
    return clientOf(at.device).graphInfo(this.id, at.device.type === 'cpu' ? 0 : clientOf(at.device).stream);
  }

  /** How many dispatches a replay makes (see `info`). */
  async dispatchCount(): Promise<number> {
    return (await this.info()).dispatches;
  }

  /** Whether a capture into this graph is in progress. */
  get capturing(): boolean {
    return this.#capture !== null;
  }

  /** @internal Discards the capture in progress (the captured function threw `why`). */
  _abortNow(why: unknown): void {
    const c = this.#capture;
    if (!c) return;
    c.error = why instanceof Error ? why : new Error(String(why));
    this._abort(c);
  }
}

/** Options of `torch.gpu.graph`. */
export interface GraphOptions extends CaptureOptions {
  /** A pool handle to share memory with other graphs (`graphPoolHandle()` or `g.pool()`). */
  pool?: GraphPool | null;
  /** The capture stream (default: a side stream made once per device, as PyTorch's). */
  stream?: Stream | null;
  /** 'global' (default), 'threadLocal' or 'relaxed'. */
  captureErrorMode?: CaptureErrorMode;
}

const sideStreams = new Map<Device, Stream>();

/**
 * `with torch.cuda.graph(g):` as `await torch.gpu.graph(g, fn, options)`: synchronizes the
 * device, empties the cache, makes the capture stream current, captures `fn` (sync or async)
 * into `g`, and restores the stream. A capture error discards the capture and is rethrown.
 */
export async function graph<T>(g: Graph, fn: () => T | Promise<T>, options: GraphOptions = {}): Promise<T> {
  if (!(g instanceof Graph)) throw new TypeError(`torch.gpu.graph: expected a torch.gpu.Graph, got ${String(g)}`);
  const known = ['pool', 'stream', 'captureErrorMode', 'fuse'];
  for (const k of Object.keys(options)) if (!known.includes(k)) throw new TypeError(`torch.gpu.graph: unknown option '${k}' (expected ${known.join(', ')})`);
  const kind = g.label().startsWith('torch.cpu') ? 'cpu' : 'gpu';
  const dev = kind === 'cpu' ? toDevice('cpu') : options.stream?.device ?? toDevice(currentDevice());
  const client = clientOf(dev);
  if (client.inUse) await client.sync();
  allocatorOf(dev).emptyCache();
  let s: Stream | null = null;
  if (kind === 'gpu') {
    s = options.stream ?? sideStreams.get(dev) ?? null;
    if (!s) sideStreams.set(dev, (s = new Stream(dev)));
  }
  return withStream(s, async () => {
    g.captureBegin(options.pool ?? null, options.captureErrorMode ?? 'global', { fuse: options.fuse });
    let out: T;
    try {
      out = await fn();
    } catch (e) {
      g._abortNow(e);
      throw e;
    }
    g.captureEnd();
    return out;
  });
}

/** `torch.cuda.is_current_stream_capturing()`: whether the current stream of the current GPU (or `device`) is capturing. */
export function isCurrentStreamCapturing(device?: DeviceLike): boolean {
  const dev = device === undefined ? toDevice(currentDevice()) : toDevice(device);
  const c = captures.get(dev);
  if (!c) return false;
  return c.streams.has(dev.type === 'cpu' ? 0 : clientOf(dev).stream);
}

/**
 * Raises under capture on `device`'s current stream: op `op`'s output shape depends on the data
 * (`nonzero`, `maskedSelect`), which a graph cannot have (its shapes are fixed at capture).
 */
export function dataDependentShape(op: string, device: Device): void {
  const c = captures.get(device);
  if (c && c.streams.has(device.type === 'cpu' ? 0 : clientOf(device).stream)) {
    c.fail(`${op}'s output shape depends on the data (a sync point), so it cannot be captured: a graph's shapes are fixed at capture; use a static-shape form (e.g. where() with a mask) instead`);
  }
}

/**
 * A random op on `device` drew from `g` at counter offset `first`. Under capture, the graph
 * notes it: each replay then draws fresh numbers, as PyTorch's graph-safe generators do (the
 * worker adds the replay's offset to every captured draw's Philox counter).
 */
export function noteDraw(device: Device, g: Generator, first: number): void {
  const c = captures.get(device);
  if (!c || !c.streams.has(device.type === 'cpu' ? 0 : clientOf(device).stream)) return;
  if (c.generator && c.generator !== g) {
    c.fail('the captured random ops draw from two generators; a graph replays the draws of one (the default generator, or one torch.Generator)');
  }
  if (!c.generator) {
    c.generator = g;
    c.rngStart = first;
  }
}

/** Tensors that captured graphs read as static inputs (makeGraphedCallables' parameters). */
const graphStatic = new WeakSet<object>();

/** @internal Marks `t` as read by a graph: its data must change in place (an optimizer copies into it). */
export function markGraphStatic(t: object): void {
  graphStatic.add(t);
}

/** @internal Whether a graph reads `t` (see `markGraphStatic`). */
export function isGraphStatic(t: object): boolean {
  return graphStatic.has(t);
}

/** `torch.cpu`'s: whether the cpu is capturing a graph. */
export function cpuIsCurrentStreamCapturing(): boolean {
  return captures.has(toDevice('cpu'));
}

/** `torch.cpu.graph(g, fn, options)`: `graph` for a `torch.cpu.Graph`. */
export const cpuGraph = graph;

/** `new torch.cpu.Graph()`: a graph captured on the cpu device. */
export class CpuGraph extends Graph {
  constructor() {
    super('cpu');
  }
}

