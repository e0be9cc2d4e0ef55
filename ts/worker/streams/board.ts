/**
 * The stream board: what a device worker tells the calling thread about finished work, read
 * synchronously there (`s.query()`, `e.query()`, `e.elapsedTime()`, and the allocator's
 * deferred frees), as PyTorch's queries are synchronous.
 *
 * Why a board: a query cannot wait for a message. Where SharedArrayBuffer exists the worker
 * writes the board in shared memory (versions with `Atomics.store`, after the event's time, so
 * a reader that sees the version sees its time). Elsewhere (a page that is not cross-origin
 * isolated) the worker posts each update over a MessagePort and the calling thread copies it
 * into its own board, so a query turns true a task later. Either way the calling thread also
 * writes what its own sync points prove (a resolved `synchronize()`), so a query after an
 * awaited synchronize is true at once.
 *
 * Layout: for each stream id its last finished mark (see `ts/runtime/streams.ts`), for each
 * event slot the last finished version of the event and that record's time in milliseconds; then
 * two words the cpu worker keeps (shared memory only): how many command batches it has run to the
 * end, and whether an asynchronous error waits for the next sync point. With them the calling
 * thread knows when the cpu device is idle, and reads, writes and syncs without a message.
 */

/** Stream ids per device: 0 is the default stream, then PyTorch's pools of 32 streams per priority. */
export const STREAMS_PER_PRIORITY = 32;
/** Priorities, as PyTorch's `Stream.priority_range()`: 0 (low, the default) and -1 (high). */
export const PRIORITIES = [0, -1] as const;
/** Stream ids a device has: the default stream and the pools. */
export const STREAM_SLOTS = 1 + STREAMS_PER_PRIORITY * PRIORITIES.length;
/** Event slots per device (events are bound to a slot at their first record; freed with the event). */
export const EVENT_SLOTS = 4096;

/** The priority of a stream id (0 for the default stream and the first pool, -1 for the second). */
export const priorityOf = (stream: number): number => (stream === 0 ? 0 : 0 - Math.floor((stream - 1) / STREAMS_PER_PRIORITY));

/** After the event slots: the batches the device has run to the end (`batchesDone`) and whether an error waits for a sync point. */
const DONE_AT = STREAM_SLOTS + EVENT_SLOTS, FAILED_AT = DONE_AT + 1;
const INTS = STREAM_SLOTS + EVENT_SLOTS + 2;
const TIME_AT = Math.ceil((INTS * 4) / 8) * 8;
const BYTES = TIME_AT + EVENT_SLOTS * 8;

/** An update sent over the port where there is no shared memory: [int slot, value, time?]. */
export type BoardUpdate = [number, number, number?];

/** One device's board, on either side. */
export class Board {
  readonly ints: Int32Array;
  readonly times: Float64Array;
  private readonly shared: boolean;

  /** A board over `buffer` (shared, from the worker), or a private one when `buffer` is null. */
  constructor(buffer: SharedArrayBuffer | ArrayBuffer | null, private readonly port: MessagePort | null = null) {
    const b = buffer ?? new ArrayBuffer(BYTES);
    this.shared = typeof SharedArrayBuffer !== 'undefined' && b instanceof SharedArrayBuffer;
    this.ints = new Int32Array(b, 0, INTS);
    this.times = new Float64Array(b, TIME_AT, EVENT_SLOTS);
  }

  /** A worker's board: shared memory where it exists. */
  static create(port: MessagePort | null): Board {
    return new Board(typeof SharedArrayBuffer === 'undefined' ? null : new SharedArrayBuffer(BYTES), port);
  }

  /** The shared buffer to hand to the calling thread, or null. */
  get buffer(): SharedArrayBuffer | null {
    return this.shared ? (this.ints.buffer as SharedArrayBuffer) : null;
  }

  /** The last finished mark of a stream. */
  streamMark(stream: number): number {
    return this.shared ? Atomics.load(this.ints, stream) : this.ints[stream];
  }

  /** The last finished version of an event slot. */
  eventVersion(slot: number): number {
    const i = STREAM_SLOTS + slot;
    return this.shared ? Atomics.load(this.ints, i) : this.ints[i];
  }

  /** The time (ms) of an event slot's last finished record. */
  eventTime(slot: number): number {
    return this.times[slot];
  }

  /** How many command batches the worker has received and run to the end (shared boards only; 0 elsewhere). */
  batchesDone(): number {
    return this.shared ? Atomics.load(this.ints, DONE_AT) : 0;
  }

  /** Raises the count of batches run to the end (the worker, once every command of batch `n` and before it has run). */
  finishBatches(n: number): void {
    if (this.shared && n > Atomics.load(this.ints, DONE_AT)) Atomics.store(this.ints, DONE_AT, n);
  }

  /** Whether an asynchronous error waits for the next sync point (shared boards only). */
  get failed(): boolean {
    return this.shared && Atomics.load(this.ints, FAILED_AT) !== 0;
  }

  set failed(on: boolean) {
    if (this.shared) Atomics.store(this.ints, FAILED_AT, on ? 1 : 0);
  }

  /** Raises a stream's mark (never lowers it). */
  finishStream(stream: number, mark: number): void {
    this.raise(stream, mark);
  }

  /** Sets an event slot's finished version and its time. */
  finishEvent(slot: number, version: number, time: number): void {
    if (version < this.eventVersion(slot)) return;
    this.times[slot] = time;
    this.raise(STREAM_SLOTS + slot, version, time);
  }

  /** Applies an update posted by a worker without shared memory. */
  apply([i, v, t]: BoardUpdate): void {
    if (t !== undefined) this.times[i - STREAM_SLOTS] = t;
    if (v > this.ints[i]) this.ints[i] = v;
  }

  private raise(i: number, v: number, t?: number): void {
    if (this.shared) {
      if (v > Atomics.load(this.ints, i)) Atomics.store(this.ints, i, v);
    } else if (v > this.ints[i]) {
      this.ints[i] = v;
      this.port?.postMessage((t === undefined ? [i, v] : [i, v, t]) satisfies BoardUpdate);
    }
  }
}
