/**
 * The messages between the facade and a device worker: the API a worker exposes, what it reports,
 * and the wire form of a batch of IR commands (ts/ir/commands.ts). A batch arrives in one
 * `submit` per microtask. Each command belongs to a stream (`Batch` carries the switches) or to
 * the device as a whole (`DEVICE_KINDS`, ts/ir/kinds.ts); the worker's scheduler
 * (ts/worker/streams/scheduler.ts) runs each stream in order, and `read`/`sync` resolve once the
 * commands they wait for have run.
 */
import type { Command, DeviceCheck, Operand, ViewRef } from '../ir/commands.js';
import type { ComposableKind } from '../ir/kinds.js';

/** What a sync waits for: everything, one stream's work so far, or one event's record. */
export type SyncTarget = { all: true } | { stream: number } | { slot: number; version: number };

/** What a captured graph holds (`WorkerApi.graphInfo`). */
export interface GraphInfo {
  /** The commands captured. */
  commands: number;
  /** The kernel launches a replay makes (fewer than the commands where elementwise chains were fused). */
  dispatches: number;
}

/** What a device reports about itself. */
export interface DeviceInfo {
  name: string;
  kind: 'cpu' | 'gpu';
  /** A GPU device on a CPU adapter (lavapipe), where some kernels take another form; false for `cpu`. */
  cpuAdapter: boolean;
  /** The composable kinds this device runs as one command (Note [composable kinds], ts/ir/kinds.ts); the backend's choice. */
  kernels: ComposableKind[];
  vendor: string;
  architecture: string;
  /** `GPUAdapterInfo.device`: the adapter's identifier of the GPU (e.g. `nvidia-h100-80gb-hbm3`); '' where unknown or on `cpu`. */
  device?: string;
  description: string;
  /** The adapter's PCI bus (`'0000:00:07.0'`) where the adapter names it; null where it does not (every adapter in Dawn's Node build: `GPUAdapterInfo` has no bus). */
  pciBusId?: string | null;
  features: string[];
  limits: Record<string, number>;
  /** True when float16 kernels load and store with `shader-f16` (the adapter has it and `WEBTORCH_F16` is not `storage`); otherwise 16-bit words are unpacked. Arithmetic is f32 either way. */
  nativeF16: boolean;
  /** The counter of the worker's scratch buffers (ts/worker/scratch.ts); null where SharedArrayBuffer does not exist or on cpu. */
  scratch?: SharedArrayBuffer | null;
  /**
   * How `Event.elapsedTime` is measured: by the GPU's own timestamps (`timestamp-query`), or on
   * the worker's clock when the work is seen to finish.
   */
  eventTiming: 'gpu-timestamp' | 'host';
  /** The stream board (ts/worker/streams/board.ts), kept out of `info`; null where there is no SharedArrayBuffer. */
  board?: SharedArrayBuffer | null;
  /** The cpu device: whether its memory is shared, so that other workers can read and write pinned tensors in it. */
  pinnable?: boolean;
  /**
   * The cpu device's shared memory and segment addresses, kept out of `info`: the calling thread
   * reads and writes tensors in it directly while the device is idle (ts/runtime/client.ts).
   */
  host?: HostMemory | null;
}

/**
 * The cpu device's memory as other device workers see it (sent over their port at `connect`):
 * the shared WebAssembly memory, and each segment's byte address in it (`addresses[id]`).
 */
export interface HostMemory {
  memory: WebAssembly.Memory;
  addresses: Uint32Array;
}

/** The API every device worker exposes through comlink. */
export interface WorkerApi {
  /**
   * Starts the device; resolves with its description, or rejects with why it cannot start.
   * `board`: where the worker posts its stream board's updates when it has no shared memory.
   * `calls`: the port every later call comes in on, and `slot` the shared reply slot for small
   * answers (ts/worker/channel.ts). `lost` (GPU workers): the device-loss port (ts/worker/gpu-lost.ts).
   */
  init(options: { name: string; index: number; board?: MessagePort; calls?: MessagePort; slot?: SharedArrayBuffer | null; lost?: MessagePort }): Promise<DeviceInfo>;
  /** Appends a batch of commands to the device's streams. */
  submit(batch: Batch): void;
  /**
   * Resolves with `bytes` bytes of a segment from `byteOffset`, after the earlier commands of
   * `stream` ran. `batch` (the commands queued since the last submit) runs first: a read costs
   * one message.
   */
  read(id: number, byteOffset: number, bytes: number, batch: Batch | null, stream?: number): Promise<ArrayBuffer>;
  /**
   * Resolves when the work `target` names (and `batch`, as for `read`) has finished on the
   * device (for an event, with its time); rejects with the first error since the last sync.
   * Default: everything.
   */
  sync(batch: Batch | null, target?: SyncTarget): Promise<number | void>;
  /**
   * Turns the worker's own profile on (`on`, which also clears it) or off. Turning it off
   * resolves, after `batch` and everything before it have finished on the device, with the
   * profile since it was turned on; null when it was not on.
   */
  profile(on: boolean, batch: Batch | null): Promise<WorkerProfile | null>;
  /**
   * What graph `graph` holds once the commands before this call on `stream` (with `batch`) have
   * run: its captured commands, and the dispatches (kernel launches) a replay makes; rejects
   * with why the capture failed, if it did.
   */
  graphInfo(graph: number, batch: Batch | null, stream: number): Promise<GraphInfo>;
  /** Releases the device. */
  close(): Promise<void>;
}

/**
 * Where a device worker's time went while its profile was on (`bench/profile-step.mjs` reads
 * it): what ran, for how long on the worker's thread, and for how long on the GPU.
 */
export interface WorkerProfile {
  /** Milliseconds from turning the profile on to turning it off. */
  wallMs: number;
  /** Batches (messages) run. */
  batches: number;
  /** Commands run, and the worker-thread milliseconds spent running them, by command kind. */
  commands: Record<string, { count: number; ms: number }>;
  /** Worker-thread milliseconds spent ending batches (the GPU: encoding passes and submitting them). */
  flushMs: number;
  /** Milliseconds that reads and syncs waited for the device (the GPU finishing, a buffer mapping). */
  waitMs: number;
  /**
   * The GPU's dispatches and its milliseconds inside them, by command (kind, and the op or
   * shape), from timestamp queries around a pass per dispatch; null where the device cannot tell.
   */
  gpu: Record<string, { count: number; ms: number }> | null;
  /**
   * The profiler's timeline (ts/profiler): each kernel command run, in order, with the caller op
   * it belongs to (`opTag`), its stream, and when the worker ran it (`t0`..`t1`, milliseconds
   * since the epoch, `performance.timeOrigin + performance.now()`; on the cpu device this is the
   * kernel's own time).
   */
  trace: TraceEntry[];
  /**
   * The GPU's timed passes, one per dispatch: the `trace` entry it belongs to (`seq`), its label,
   * and its start and end in milliseconds on the GPU's clock (relative to the first pass);
   * null where the device has no timestamp queries.
   */
  passes: { seq: number; label: string; start: number; end: number }[] | null;
}

/** One command in a worker profile's `trace`. */
export interface TraceEntry {
  /** Its number, unique in the worker (GPU passes name it). */
  seq: number;
  op: number;
  stream: number;
  name: string;
  t0: number;
  t1: number;
}

/** An error raised inside a worker, carried back to the next sync point. */
export interface WorkerFailure {
  op: string;
  message: string;
}

// ---- The wire form of a batch ----

/**
 * A batch as it crosses to the worker: the frequent commands (`binary`, `unary`, `fill`,
 * `copy`, `segment`, `release`) encoded as numbers in `words`, whose buffer is transferred, and
 * every other command as an object in `objects`, each marked in `words` where it belongs. The
 * commands that follow a `Tag.Stream` word belong to that stream (a batch starts on stream 0). A
 * structured clone of command objects costs the caller and the worker about a microsecond per
 * object (each key is serialised), while a Float64Array moves as one memcpy.
 */
export interface Batch {
  words: Float64Array;
  objects: Command[];
}

/** Record tags in `Batch.words`. */
const enum Tag { Object, Binary, Unary, Segment, Release, Fill, Copy, Stream }

/** Builds a batch command by command (the caller's queue). */
export class BatchWriter {
  private words = new Float64Array(1 << 14);
  private n = 0;
  private objects: Command[] = [];
  /** The stream the commands now being written belong to. */
  private current = 0;

  /** Whether no command was written since the last `take`. */
  get empty(): boolean {
    return this.n === 0;
  }

  /** How many words were written since the last `take`. */
  get size(): number {
    return this.n;
  }

  /** Appends a command of `stream` (ignored for device commands). */
  push(cmd: Command, stream = 0): void {
    if (stream !== this.current) {
      this.reserve(2);
      this.put(Tag.Stream);
      this.put(stream);
      this.current = stream;
    }
    switch (cmd.k) {
      case 'binary': {
        if (cmd.check) break;
        const r = cmd.shape.length;
        this.reserve(14 + 3 * r);
        this.put6(Tag.Binary, cmd.op, cmd.dt, cmd.outDt, cmd.out.id, cmd.out.offset);
        this.put(cmd.alpha);
        this.shape(cmd.shape);
        this.operand(cmd.a, r);
        this.operand(cmd.b, r);
        return;
      }
      case 'unary': {
        if (cmd.check) break;
        const r = cmd.shape.length;
        this.reserve(12 + 2 * r);
        this.put6(Tag.Unary, cmd.op, cmd.dt, cmd.outDt, cmd.out.id, cmd.out.offset);
        this.put(cmd.s[0]);
        this.put(cmd.s[1]);
        this.put(cmd.s[2]);
        this.shape(cmd.shape);
        this.view(cmd.a, r);
        return;
      }
      case 'copy': {
        if (cmd.check) break;
        const r = cmd.shape.length;
        this.reserve(8 + 2 * r);
        this.put6(Tag.Copy, cmd.srcDt, cmd.dt, cmd.out.id, cmd.out.offset, r);
        for (let d = 0; d < r; d++) this.words[this.n++] = cmd.shape[d];
        this.view(cmd.src, r);
        return;
      }
      case 'fill':
        this.reserve(6);
        this.put6(Tag.Fill, cmd.out.id, cmd.out.offset, cmd.dt, cmd.n, cmd.value);
        return;
      case 'segment':
        this.reserve(3);
        this.put(Tag.Segment);
        this.put(cmd.id);
        this.put(cmd.bytes);
        return;
      case 'release':
        this.reserve(2);
        this.put(Tag.Release);
        this.put(cmd.id);
        return;
    }
    this.reserve(1);
    this.put(Tag.Object);
    this.objects.push(cmd);
  }

  /** The batch so far (its `words` buffer is new, to be transferred); starts a new one. */
  take(): Batch {
    const batch = { words: this.words.slice(0, this.n), objects: this.objects };
    this.n = 0;
    this.objects = [];
    this.current = 0;
    return batch;
  }

  private reserve(words: number): void {
    if (this.n + words <= this.words.length) return;
    const grown = new Float64Array(Math.max(this.words.length * 2, this.n + words));
    grown.set(this.words.subarray(0, this.n));
    this.words = grown;
  }

  private put(v: number): void {
    this.words[this.n++] = v;
  }

  private put6(a: number, b: number, c: number, d: number, e: number, f: number): void {
    const w = this.words, n = this.n;
    w[n] = a;
    w[n + 1] = b;
    w[n + 2] = c;
    w[n + 3] = d;
    w[n + 4] = e;
    w[n + 5] = f;
    this.n = n + 6;
  }

  private shape(shape: number[]): void {
    this.words[this.n++] = shape.length;
    for (let d = 0; d < shape.length; d++) this.words[this.n++] = shape[d];
  }

  private view(v: ViewRef, rank: number): void {
    this.words[this.n++] = v.id;
    this.words[this.n++] = v.offset;
    for (let d = 0; d < rank; d++) this.words[this.n++] = v.strides[d];
  }

  private operand(o: Operand, rank: number): void {
    if (typeof o === 'number') {
      this.words[this.n++] = 1;
      this.words[this.n++] = o;
    } else {
      this.words[this.n++] = 0;
      this.view(o, rank);
    }
  }
}

/**
 * The commands of a batch, in order (the worker's side of `BatchWriter`), and the stream of each
 * (`streams[i]` for `cmds[i]`).
 */
export function readBatch(batch: Batch): { cmds: Command[]; streams: number[] } {
  const w = batch.words, cmds: Command[] = [], streams: number[] = [];
  let i = 0, obj = 0, stream = 0;
  const shape = (): number[] => {
    const r = w[i++], s = new Array<number>(r);
    for (let d = 0; d < r; d++) s[d] = w[i++];
    return s;
  };
  const view = (r: number): ViewRef => {
    const id = w[i++], offset = w[i++], strides = new Array<number>(r);
    for (let d = 0; d < r; d++) strides[d] = w[i++];
    return { id, offset, strides };
  };
  const operand = (r: number): Operand => (w[i++] === 1 ? w[i++] : view(r));
  while (i < w.length) {
    const tag = w[i++] as Tag;
    if (tag === Tag.Stream) {
      stream = w[i++];
      continue;
    }
    streams.push(stream);
    switch (tag) {
      case Tag.Binary: {
        const op = w[i++], dt = w[i++], outDt = w[i++], out = { id: w[i++], offset: w[i++] }, alpha = w[i++], s = shape();
        const a = operand(s.length), b = operand(s.length);
        cmds.push({ k: 'binary', op, dt, outDt, out, alpha, shape: s, a, b });
        break;
      }
      case Tag.Unary: {
        const op = w[i++], dt = w[i++], outDt = w[i++], out = { id: w[i++], offset: w[i++] };
        const sc: [number, number, number] = [w[i++], w[i++], w[i++]], s = shape();
        cmds.push({ k: 'unary', op, dt, outDt, out, s: sc, shape: s, a: view(s.length) });
        break;
      }
      case Tag.Copy: {
        const srcDt = w[i++], dt = w[i++], out = { id: w[i++], offset: w[i++] }, r = w[i++], s = new Array<number>(r);
        for (let d = 0; d < r; d++) s[d] = w[i++];
        cmds.push({ k: 'copy', srcDt, dt, out, shape: s, src: view(r) });
        break;
      }
      case Tag.Fill:
        cmds.push({ k: 'fill', out: { id: w[i++], offset: w[i++] }, dt: w[i++], n: w[i++], value: w[i++] });
        break;
      case Tag.Segment:
        cmds.push({ k: 'segment', id: w[i++], bytes: w[i++] });
        break;
      case Tag.Release:
        cmds.push({ k: 'release', id: w[i++] });
        break;
      default:
        cmds.push(batch.objects[obj++]);
    }
  }
  return { cmds, streams };
}
