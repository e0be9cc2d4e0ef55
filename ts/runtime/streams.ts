/**
 * Streams: PyTorch's `torch.cuda.Stream` model on every device, in camelCase.
 *
 * A stream is an id on one device; commands carry the id of their device's current stream and
 * the device worker's scheduler (ts/worker/streams/scheduler.ts) runs each stream in order, interleaving
 * them onto the device's one queue. As in PyTorch, `new Stream()` takes the next stream of a
 * pool of 32 per priority, round robin (so the 33rd is the first again, and `===` holds between
 * them, as PyTorch's streams compare equal), and `Stream.priorityRange()` is [0, -1]: a ready
 * high-priority stream's work is recorded first.
 *
 * The current stream of each device is a context variable (ts/runtime/current-stream.ts), so
 * `withStream(s, fn)` scopes it to `fn` and the async work `fn` starts, as `withDevice` scopes the
 * current GPU. `withStream(s, fn)` is `with torch.cuda.stream(s):` (it makes s's device current
 * too, as PyTorch's StreamContext does); inside it, an op on tensors of another GPU device raises
 * (dispatch's `sameDevice`), since its work would silently not be on `s`.
 *
 * `cpu` has one stream, as PyTorch's `torch.cpu.Stream` is a stand-in: every cpu stream is the
 * cpu device's stream 0, so waits between cpu streams are no-ops, while query and synchronize
 * are real (the cpu worker runs asynchronously too).

 *
 * Events (`torch.cuda.Event`) live here too: a stream records and waits on events, and an event
 * records on and is waited on by streams. An event is bound to a device at its first record and
 * takes one of that device's event slots (ts/runtime/event-slots.ts); each record gives it a new
 * version. The worker writes the slot's finished version, and its time, on the board once the
 * device has finished the work recorded before it, so `query()` and `elapsedTime()` are
 * synchronous, as in PyTorch. Waiting on an event of the same device only orders commands (the
 * device's queue does the rest); waiting on another device's event sends that device a `signal`,
 * which answers over the worker-to-worker port once the event has finished, while the waiting
 * stream holds its later work.
 *
 * Note [Events never recorded]. As in PyTorch, an event that was never recorded counts as
 * finished: `query()` is true, `synchronize()` resolves, `wait()` is a no-op.
 */import { clientOf, currentDevice, device as toDevice, Device, withDevice, type DeviceLike } from '../device.js';
import { bindArgs, type PyArgs } from '../args.js';
import { PRIORITIES, priorityOf, STREAMS_PER_PRIORITY } from '../worker/streams/board.js';
import { runWithStream, setStreamId, streamId } from './current-stream.js';
import type { DeviceClient } from './client.js';
import { released, slots } from './event-slots.js';
import { connect, newTag } from './peers.js';

const interned = new Map<string, Stream>();
/** The next stream of each device's pool, per priority. */
const nextInPool = new Map<string, number>();

/** A device's GPU (or the cpu) from a stream argument: the current GPU when null. */
function streamDevice(d: DeviceLike | null | undefined, kind: 'gpu' | 'cpu'): Device {
  if (kind === 'cpu') {
    const dev = d == null ? toDevice('cpu') : toDevice(d);
    if (dev.type !== 'cpu') throw new TypeError(`torch.cpu.Stream: expected the cpu device, got ${dev}`);
    return dev;
  }
  const dev = d == null ? toDevice(currentDevice()) : toDevice(typeof d === 'number' ? Device.of('gpu', d) : d);
  if (dev.type !== 'gpu') throw new TypeError(`Expected a gpu device, but got: ${dev} (torch.gpu.Stream; use torch.cpu.Stream for the cpu)`);
  return dev;
}

/**
 * A stream of a device (`torch.cuda.Stream`): `new torch.gpu.Stream(device?, {priority})`.
 * Ops run on their device's current stream; make one current with `torch.gpu.stream(s, fn)`.
 */
export class Stream {
  /** The device the stream belongs to. */
  readonly device!: Device;
  /** The stream's id on its device (0: the default stream). */
  readonly streamId!: number;
  /** Its priority: 0 or -1 (higher). */
  readonly priority!: number;

  constructor(...args: PyArgs<[device: DeviceLike | null, priority: number], { device?: DeviceLike | null; priority?: number }>) {
    const o = bindArgs('Stream', ['device', 'priority'], args, { device: null as DeviceLike | null, priority: 0 });
    const dev = streamDevice(o.device, 'gpu');
    if (typeof o.priority !== 'number' || !Number.isInteger(o.priority)) throw new TypeError(`Stream(): priority must be an integer, got ${String(o.priority)}`);
    // Outside the range, PyTorch maps a priority to the nearest one it has.
    const level = o.priority >= 0 ? 0 : 1;
    const key = `${dev}|${level}`;
    const i = nextInPool.get(key) ?? 0;
    nextInPool.set(key, (i + 1) % STREAMS_PER_PRIORITY);
    return Stream.of(dev, 1 + level * STREAMS_PER_PRIORITY + i);
  }

  /** @internal The interned stream `id` of a device. */
  static of(d: Device, id: number): Stream {
    const key = `${d}|${id}`;
    let s = interned.get(key);
    if (!s) {
      s = Object.create(Stream.prototype) as Stream;
      const priority = d.type === 'cpu' ? 0 : priorityOf(id);
      Object.assign(s, { device: d, streamId: id, priority });
      interned.set(key, s);
    }
    return s;
  }

  /** PyTorch's `Stream.priority_range()`: [lowest, highest] priority, as [0, -1]. */
  static priorityRange(): [number, number] {
    return [PRIORITIES[0], PRIORITIES[PRIORITIES.length - 1]];
  }

  /** Later work on this stream waits for `event`'s last record (a no-op when it was never recorded). */
  waitEvent(event: Event): void {
    if (!(event instanceof Event)) throw new TypeError(`waitEvent: expected a torch.gpu.Event, got ${String(event)}`);
    event.wait(this);
  }

  /** Later work on this stream waits for the work queued on `stream` so far (`waitEvent(stream.recordEvent())`). */
  waitStream(stream: Stream): void {
    if (!(stream instanceof Stream)) throw new TypeError(`waitStream: expected a torch.gpu.Stream, got ${String(stream)}`);
    if (stream === this) return;
    this.waitEvent(stream.recordEvent());
  }

  /** Records `event` (a new one when omitted) at this point of the stream; returns it. */
  recordEvent(event?: Event): Event {
    const e = event ?? new Event();
    e.record(this);
    return e;
  }

  /**
   * Whether all work queued on the stream has finished. Synchronous, as in PyTorch: it reads
   * what the device worker has reported, so it may say false once for work that has just
   * finished, and turns true once the worker has seen it finish.
   */
  query(): boolean {
    return clientOf(this.device).streamFinished(this.streamId);
  }

  /** Resolves once all work queued on the stream has finished. */
  synchronize(): Promise<void> {
    return clientOf(this.device).sync({ stream: this.streamId });
  }

  toString(): string {
    return `<torch.${this.device.type}.Stream device=${this.device} stream=${this.streamId} priority=${this.priority}>`;
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toString();
  }
}

/** The current stream of a device (the current GPU by default), `torch.cuda.current_stream`. */
export function currentStream(...args: PyArgs<[device: DeviceLike | null], { device?: DeviceLike | null }>): Stream {
  const d = streamDevice(bindArgs('current_stream', ['device'], args, { device: null as DeviceLike | null }).device, 'gpu');
  return Stream.of(d, streamId(String(d)));
}

/** The default stream of a device (the current GPU by default), `torch.cuda.default_stream`. */
export function defaultStream(...args: PyArgs<[device: DeviceLike | null], { device?: DeviceLike | null }>): Stream {
  return Stream.of(streamDevice(bindArgs('default_stream', ['device'], args, { device: null as DeviceLike | null }).device, 'gpu'), 0);
}

/** Makes `s` the current stream of its device (`torch.cuda.set_stream`); prefer `withStream`. */
export function setStream(s: Stream): void {
  if (!(s instanceof Stream)) throw new TypeError(`setStream: expected a torch.gpu.Stream, got ${String(s)}`);
  setStreamId(String(s.device), s.streamId);
}

/**
 * Runs `fn` with `s` as its device's current stream and its device as the current GPU
 * (`with torch.cuda.stream(s):`), restoring both after (a null `s` runs `fn` as it is). Works
 * with async `fn`. Inside, ops on tensors of another GPU raise.
 */
export function withStream<T>(s: Stream | null | undefined, fn: () => T): T {
  if (s == null) return fn();
  if (!(s instanceof Stream)) throw new TypeError(`torch.gpu.stream: expected a torch.gpu.Stream, got ${String(s)}`);
  if (s.device.type === 'cpu') return fn();
  return runWithStream(String(s.device), s.streamId, s, () => withDevice(s.device.index, fn));
}

/** `torch.cuda.stream(s)`: the same as `withStream(s, fn)`. */
export const stream = withStream;

// ---- torch.cpu: PyTorch's stand-in streams for the cpu ----

/** `torch.cpu.Stream(priority?)`: the cpu device's one stream (see the note at the top). */
export const CpuStream = function CpuStream(...args: PyArgs<[priority: number], { priority?: number }>): Stream {
  bindArgs('Stream', ['priority'], args, { priority: 0 });
  return Stream.of(toDevice('cpu'), 0);
} as unknown as { new (...args: PyArgs<[priority: number], { priority?: number }>): Stream; (...args: PyArgs<[priority: number], { priority?: number }>): Stream };

/** The cpu's current stream (`torch.cpu.current_stream()`): its one stream. */
export const cpuCurrentStream = (): Stream => Stream.of(toDevice('cpu'), 0);

/** Where an event was last recorded. */
interface Recorded {
  device: Device;
  client: DeviceClient;
  slot: number;
  version: number;
}

/**
 * A synchronisation marker on a stream (`torch.cuda.Event`):
 * `new torch.gpu.Event({enableTiming, blocking, interprocess})`.
 */
export class Event {
  /** Whether `elapsedTime` can be asked of it. */
  readonly enableTiming: boolean;
  /** Accepted as in PyTorch; a wait in webtorch never blocks the calling thread. */
  readonly blocking: boolean;
  /** Always false: webtorch's devices are workers of one process. */
  readonly interprocess: boolean;
  private at: Recorded | null = null;

  constructor(...args: PyArgs<[enableTiming: boolean, blocking: boolean, interprocess: boolean], { enableTiming?: boolean; blocking?: boolean; interprocess?: boolean }>) {
    const o = bindArgs('Event', ['enableTiming', 'blocking', 'interprocess'], args, { enableTiming: false, blocking: false, interprocess: false });
    if (o.interprocess) {
      throw new Error('Event(): interprocess events are not supported: webtorch\'s devices are workers of one process, so there is no other process to share an event with');
    }
    this.enableTiming = !!o.enableTiming;
    this.blocking = !!o.blocking;
    this.interprocess = false;
  }

  /** The device the event was recorded on, or null before its first record. */
  get device(): Device | null {
    return this.at?.device ?? null;
  }

  /** Records the event on `stream` (the current stream by default): it finishes when the stream's work so far has. */
  record(stream?: Stream): void {
    const s = stream ?? currentStream();
    if (!(s instanceof Stream)) throw new TypeError(`Event.record: expected a torch.gpu.Stream, got ${String(s)}`);
    const client = clientOf(s.device);
    if (this.at && this.at.device !== s.device) {
      throw new Error(`Event device ${this.at.device} does not match recording stream's device ${s.device}.`);
    }
    if (!this.at) {
      const slot = slots(client).take();
      this.at = { device: s.device, client, slot, version: 0 };
      released.register(this, { client, slot });
    }
    const at = this.at;
    at.version = slots(client).version(at.slot);
    client.enqueue({ k: 'record', slot: at.slot, version: at.version, mark: client.nextMark(s.streamId), timing: this.enableTiming }, undefined, s.streamId);
  }

  /** Later work on `stream` (the current stream by default) waits for this event's last record; a no-op if it was never recorded. */
  wait(stream?: Stream): void {
    const s = stream ?? currentStream();
    if (!(s instanceof Stream)) throw new TypeError(`Event.wait: expected a torch.gpu.Stream, got ${String(s)}`);
    const at = this.at;
    if (!at) return; // Note [Events never recorded]
    if (s.device === at.device) {
      clientOf(s.device).enqueue({ k: 'wait', slot: at.slot, version: at.version }, undefined, s.streamId);
      return;
    }
    connect(at.device, s.device);
    const tag = newTag();
    at.client.enqueue({ k: 'signal', peer: String(s.device), tag, slot: at.slot, version: at.version });
    clientOf(s.device).enqueue({ k: 'waitSignal', peer: String(at.device), tag }, undefined, s.streamId);
  }

  /** Whether the work before the last record has finished (true if never recorded). Synchronous, from the board. */
  query(): boolean {
    const at = this.at;
    return !at || at.client.board.eventVersion(at.slot) >= at.version;
  }

  /** Resolves once the work before the last record has finished. */
  async synchronize(): Promise<void> {
    const at = this.at;
    if (!at || this.query()) return;
    await at.client.sync({ slot: at.slot, version: at.version });
  }

  /**
   * Milliseconds from this event's record to `end`'s (`start.elapsedTime(end)`): the GPU's own
   * timestamps where the adapter has `timestamp-query` (`getDeviceProperties().eventTiming`),
   * else the worker's clock when it saw each record finish. Both events need `enableTiming`,
   * a record on the same device, and to have finished.
   */
  elapsedTime(end: Event): number {
    if (!(end instanceof Event)) throw new TypeError(`elapsedTime: expected a torch.gpu.Event, got ${String(end)}`);
    if (!this.enableTiming || !end.enableTiming) throw new Error("Both events must be created with argument 'enableTiming=true'.");
    const a = this.at, b = end.at;
    if (!a || !b) throw new Error('Both events must be recorded before calculating elapsed time.');
    if (a.device !== b.device) throw new Error(`Both events must be recorded on the same device to calculate elapsed time, got ${a.device} and ${b.device}.`);
    if (!this.query() || !end.query()) {
      throw new Error('Both events must have completed before calculating elapsed time (CUDA error: device not ready); await end.synchronize() first.');
    }
    return b.client.board.eventTime(b.slot) - a.client.board.eventTime(a.slot);
  }

  toString(): string {
    return `<torch.gpu.Event ${this.at ? `device=${this.at.device} version=${this.at.version}` : 'uninitialized'}>`;
  }
}
