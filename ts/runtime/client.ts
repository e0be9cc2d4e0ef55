/**
 * The calling thread's end of one device: its worker, started lazily, and its command queue.
 *
 * An op appends a command and returns; the queue is flushed once per microtask as one
 * `submit` message, and mid-burst every `SEND_AT` words, so a burst of ops costs a few
 * postMessages, never one round trip per op, and the worker starts on it early.
 * Commands are encoded as they are queued (`BatchWriter`: numbers in a transferred
 * Float64Array, not structured-cloned objects), and a read or sync carries the queued commands
 * with it, so `await x.add(1).item()` is one message. Messages go out through `post`, which
 * keeps commands, reads and syncs in the order the program issued them.
 */
import * as Comlink from 'comlink';
import { OutOfMemoryError } from '../memory/errors.js';
import { spawnWorker, type WorkerHandle } from '../worker-scripts.js';
import { BatchWriter, type Batch, type Command, type DeviceInfo, type WorkerApi, type WorkerProfile } from '../worker/protocol.js';

/**
 * Words of queued commands at which a burst is sent without waiting for its microtask to end
 * (about 120 elementwise ops): on the H100 this let the worker overlap the caller, and a chain
 * of 1,000 adds went from 12.8 to 7.9 µs per op with the worker's other changes of that commit.
 */
const SEND_AT = 2048;

/** A device's worker and command queue. */
export class DeviceClient {
  /** Storage ids are per device. */
  nextId = 1;
  info: DeviceInfo | null = null;
  /** The worker's scratch counter (ts/worker/scratch.ts), kept out of `info` and so of getDeviceProperties. */
  scratch: SharedArrayBuffer | null = null;
  /** Devices this worker has a MessageChannel to. */
  readonly peers = new Set<string>();
  /** The queued commands, in their wire form (see `Batch`). */
  private queue = new BatchWriter();
  private transfers: Transferable[] = [];
  private scheduled = false;
  private handle: WorkerHandle | null = null;
  private ready: Promise<Comlink.Remote<WorkerApi>> | null = null;
  /** The started worker's API: messages go to it at once while none waits on `ready` (see `post`). */
  private remote: Comlink.Remote<WorkerApi> | null = null;
  /** Messages waiting for `ready`, to be sent in program order when it resolves. */
  private waitingOnStart = 0;
  /** Set when the worker could not start: every later sync point rethrows it. */
  private startError: Error | null = null;
  /** Set by `close()`: later commands (frees of tensors that outlived the worker) are dropped. */
  private closed = false;
  /** Results being awaited; while there are any, the worker keeps the process alive. */
  private awaited = 0;

  constructor(readonly name: string, readonly kind: 'cpu' | 'gpu', readonly index: number) {}

  /** Starts the worker if needed; resolves with the device's description. */
  start(): Promise<Comlink.Remote<WorkerApi>> {
    this.ready ??= (async () => {
      this.handle = await spawnWorker(this.kind);
      const remote = Comlink.wrap<WorkerApi>(this.handle.endpoint);
      try {
        const { scratch, ...info } = await this.awaiting(() => remote.init({ name: this.name, index: this.index }));
        this.info = info;
        this.scratch = scratch ?? null;
      } catch (e) {
        this.startError = new Error(`webtorch: device ${this.name} failed to start: ${(e as Error).message}`);
        await this.handle.terminate();
        throw this.startError;
      }
      this.remote = remote;
      return remote;
    })();
    return this.ready;
  }

  /** Whether the worker was started. */
  get started(): boolean {
    return this.ready !== null;
  }

  /** Keeps the process alive while `fn`'s result is awaited (Node workers are unref'd when idle). */
  private async awaiting<T>(fn: () => Promise<T>): Promise<T> {
    if (this.awaited++ === 0) this.handle?.keepAlive(true);
    try {
      return await fn();
    } finally {
      if (--this.awaited === 0) this.handle?.keepAlive(false);
    }
  }

  /** Queues a command; `transfer` lists buffers or ports that move with it. */
  enqueue(cmd: Command, transfer?: Transferable[]): void {
    if (this.closed) return;
    this.queue.push(cmd);
    if (transfer) this.transfers.push(...transfer);
    // A long burst goes out in pieces, so that the worker starts on it while the caller goes on.
    if (this.queue.size >= SEND_AT) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => this.flush());
    }
  }

  /** Sends the queued commands now. */
  flush(): void {
    this.scheduled = false;
    const batch = this.takeQueued();
    if (batch) this.post((r) => r.submit(batch)).catch(() => undefined);
  }

  /**
   * Sends one message in program order: at once (synchronously) once the worker is up and no
   * earlier message still waits for it to start, else after those.
   */
  private async post<T>(send: (r: Comlink.Remote<WorkerApi>) => Promise<T>): Promise<T> {
    if (this.remote && this.waitingOnStart === 0) return send(this.remote);
    this.waitingOnStart++;
    let r: Comlink.Remote<WorkerApi>;
    try {
      r = await this.start();
    } finally {
      this.waitingOnStart--;
    }
    return send(r);
  }

  /** The queued commands as a batch marked for transfer (with the buffers queued with them), or null. */
  private takeQueued(): Batch | null {
    if (this.queue.empty) return null;
    const batch = this.queue.take(), transfers = this.transfers;
    transfers.push(batch.words.buffer);
    this.transfers = [];
    return Comlink.transfer(batch, transfers);
  }

  /** Reads bytes of a storage once all earlier work has run. */
  async read(id: number, byteOffset: number, bytes: number): Promise<ArrayBuffer> {
    if (this.closed) throw new Error(`webtorch: device ${this.name} was shut down; its tensors are gone`);
    // The queued commands travel with the read; `post` keeps it ahead of later ops.
    const batch = this.takeQueued();
    return this.awaiting(() => this.post((r) => r.read(id, byteOffset, bytes, batch))).catch((e) => this.rethrow(e));
  }

  /** Waits for all queued work; rethrows the first asynchronous error since the last sync. */
  async sync(): Promise<void> {
    const batch = this.takeQueued();
    await this.awaiting(() => this.post((r) => r.sync(batch))).catch((e) => this.rethrow(e));
  }

  /** Turns the worker's profile on (clearing it) or off; off resolves with it once the queued work is done (see `WorkerProfile`). */
  async profile(on: boolean): Promise<WorkerProfile | null> {
    const batch = this.takeQueued();
    return this.awaiting(() => this.post((r) => r.profile(on, batch))).catch((e) => this.rethrow(e));
  }

  /** Turns a device's out-of-memory failure into `OutOfMemoryError`; other errors pass through. */
  private rethrow(e: unknown): never {
    if (e instanceof Error && e.name === 'OutOfMemoryError') {
      throw new OutOfMemoryError(`${this.name} ran out of memory: the device refused an allocation within the budget (${e.message}). Lower the budget with torch.gpu.configure({memory}) or setPerProcessMemoryFraction.`);
    }
    throw e;
  }

  /** Stops the worker. */
  async close(): Promise<void> {
    this.flush();
    this.closed = true;
    if (!this.ready) return;
    try {
      const r = await this.ready;
      await this.awaiting(() => r.close());
      r[Comlink.releaseProxy]();
    } catch {
      /* a device that failed to start has nothing to close */
    }
    await this.handle?.terminate();
    this.ready = null;
    this.remote = null;
    this.handle = null;
  }
}
