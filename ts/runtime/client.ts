/**
 * The calling thread's end of one device: its worker, started lazily, and its command queue.
 *
 * An op appends a command and returns; the queue is flushed once per microtask as one
 * `submit` message, and mid-burst every `SEND_AT` words, so a burst of ops costs a few
 * postMessages, never one round trip per op, and the worker starts on it early.
 * Commands are encoded as they are queued (`BatchWriter`: numbers in a transferred
 * Float64Array, not structured-cloned objects), and a read or sync carries the queued commands
 * with it, so `await x.add(1).item()` is one message. Messages go out through `post`, which
 * keeps commands, reads and syncs in the order the program issued them. After `init` (comlink),
 * they travel over the device's call port (ts/worker/channel.ts): numbered plain messages, small
 * answers through a shared reply slot where the platform has one.
 *
 * Each command is queued on a stream (the device's current stream, ts/runtime/streams.ts); the
 * client numbers each stream's marks (the points `s.query()`, events and deferred frees ask the
 * worker about) and holds the device's stream board (ts/worker/streams/board.ts), where the worker
 * writes which marks and events have finished.
 *
 * Device loss (ts/runtime/device-lost.ts): a GPU worker tells its client on the loss port when
 * its GPUDevice is lost, and answers every later read and sync with the loss. The client
 * raises `DeviceLostError` at the next sync point, and from then on at every op call
 * (`checkUsable`, before anything is allocated); commands for the lost device are dropped.
 */
import { startOnPhysicalGpu } from './physical.js';
import * as Comlink from 'comlink';
import { OutOfMemoryError } from '../memory/errors.js';
import { collectGarbage } from './collect.js';
import { DeviceLostError, lostInfoOf, type LostInfo } from './device-lost.js';
import { spawnWorker, type WorkerHandle } from '../worker-scripts.js';
import { copyOut, envMs, onPortMessage } from '../platform.js';
import { Board, STREAM_SLOTS, type BoardUpdate } from '../worker/streams/board.js';
import { streamId } from './current-stream.js';
import { CallPort } from '../worker/channel.js';
import type { CaptureHook } from './graphs.js';
import { DEVICE_KINDS } from '../ir/kinds.js';
import { BatchWriter, type Batch, type DeviceInfo, type GraphInfo, type HostMemory, type SyncTarget, type WorkerApi, type WorkerProfile } from '../worker/protocol.js';
import { type Command } from '../ir/commands.js';

/** Queued commands on their way: the batch and what moves with it. */
interface Outgoing {
  batch: Batch;
  transfer: Transferable[];
}

/**
 * Words of queued commands at which a burst is sent without waiting for its microtask to end
 * (about 120 elementwise ops): on the H100 this let the worker overlap the caller, and a chain
 * of 1,000 adds went from 12.8 to 7.9 µs per op with the worker's other changes of that commit.
 */
const SEND_AT = 2048;
/** How many queued words (a few small commands) a read or sync may carry and still be polled for (`answerSpinMs`), and for how long (ms). */
const SPIN_WORDS = 128;
const ANSWER_SPIN_MS = 0.2;
const GPU_SPIN_MS = envMs('WEBTORCH_GPU_SPIN_MS', 0.3);

/** Batches of more bytes than this are transferred to the worker; smaller ones are copied. */
const TRANSFER_AT = 1 << 16;

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
  private ready: Promise<CallPort> | null = null;
  /** The started worker's call port: messages go to it at once while none waits on `ready` (see `post`). */
  private remote: CallPort | null = null;
  /** The worker's comlink API, used for `init` only (and released at close). */
  private api: Comlink.Remote<WorkerApi> | null = null;
  /** Messages waiting for `ready`, to be sent in program order when it resolves. */
  private waitingOnStart = 0;
  /** Set when the worker could not start: every later sync point rethrows it. */
  private startError: Error | null = null;
  /** Set by `close()`: later commands (frees of tensors that outlived the worker) are dropped. */
  private closed = false;
  /** Results being awaited; while there are any, the worker keeps the process alive. */
  private awaited = 0;
  /** What the worker reports as finished (shared memory once the worker is up, where it exists). */
  board = new Board(null);
  /** Per stream: the last mark queued. */
  private readonly marks = new Int32Array(STREAM_SLOTS);
  /** The cpu device's shared memory (null elsewhere, and without SharedArrayBuffer): see `idle`. */
  private host: HostMemory | null = null;
  /** Command batches sent to the worker so far (the board counts those it has run to the end). */
  private sent = 0;
  /** Reads, writes and syncs done on this thread while the device was idle, without a message (the tests check the path taken). */
  readonly direct = { read: 0, write: 0, sync: 0 };
  /** Per stream: commands queued so far, and how many its last mark stands for. */
  private readonly queued = new Float64Array(STREAM_SLOTS);
  private readonly marked = new Float64Array(STREAM_SLOTS);
  /** GPU: the device-loss port (ts/worker/gpu-lost.ts): the worker says there when its device is lost. */
  private lossPort: MessagePort | null = null;
  /** What the worker said when its device was lost (null while it is not). */
  private lostInfo: LostInfo | null = null;
  /** Waiting for the loss to be seen (`lose`). */
  private lossSeen: (() => void)[] = [];
  /** Set once the loss was raised at a sync point (or the device was replaced): op calls raise it from then on. */
  private lostRaised = false;
  /** Set when the worker's thread died: nothing more is sent to it. */
  private dead = false;

  /** The graph capture running on this device (ts/runtime/graphs.ts), consulted by every command, sync point and allocation. */
  capture: CaptureHook | null = null;

  /**
   * @param gate What must hold before the worker starts (GPU discovery, and the device's index
   * within the GPUs found: ts/device.ts). Until it settles, commands queue here as they do while
   * any worker starts; if it fails, its error is the device's start error, raised at every sync point.
   */
  constructor(readonly name: string, readonly kind: 'cpu' | 'gpu', readonly index: number, private readonly gate: (() => Promise<void>) | null = null) {}

  /** Starts the worker if needed (once the gate lets it); resolves with the device's description. */
  start(): Promise<CallPort> {
    this.ready ??= this.gate ? this.gate().then(() => this.spawn(), (e: Error) => Promise.reject((this.startError = e))) : this.spawn();
    return this.ready;
  }

  /** Spawns the worker and initialises it. */
  private spawn(): Promise<CallPort> {
    // Physical GPUs (ts/runtime/physical.ts): DRI_PRIME names this worker's GPU while it starts.
    return startOnPhysicalGpu(this.kind, this.index, async () => {
      this.handle = await spawnWorker(this.kind);
      // A worker whose thread dies is a lost device: pending and later calls raise (ts/runtime/device-lost.ts).
      this.handle.onDeath((why) => this.workerDied(why));
      const api = (this.api = Comlink.wrap<WorkerApi>(this.handle.endpoint));
      // Without shared memory the worker posts the board's updates on a port of its own.
      const channel = typeof SharedArrayBuffer === 'undefined' ? new MessageChannel() : null;
      // Everything after init goes over a port of its own, answered through a shared slot where it can be.
      const calls = new MessageChannel();
      const remote = new CallPort(calls.port1);
      // A GPU worker says on a port of its own when its device is lost (ts/worker/gpu-lost.ts).
      const loss = this.kind === 'gpu' ? new MessageChannel() : null;
      if (loss) {
        this.lossPort = loss.port1;
        onPortMessage(loss.port1, (m) => this.noteLost((m as { lost: LostInfo | null }).lost));
        (loss.port1 as { unref?: () => void }).unref?.();
      }
      try {
        const options = { name: this.name, index: this.index, board: channel?.port2, calls: calls.port2, slot: remote.slot, lost: loss?.port2 };
        const ports = [calls.port2, ...(channel ? [channel.port2] : []), ...(loss ? [loss.port2] : [])];
        const { scratch, board, host, ...info } = await this.awaiting(() => api.init(Comlink.transfer(options, ports)));
        this.info = info;
        this.scratch = scratch ?? null;
        if (board) this.board = new Board(board);
        else if (channel) {
          onPortMessage(channel.port1, (u) => this.board.apply(u as BoardUpdate));
          (channel.port1 as { unref?: () => void }).unref?.();
        }
        this.host = (board && host) || null;
      } catch (e) {
        this.startError = new Error(`webtorch: device ${this.name} failed to start: ${(e as Error).message}`);
        remote.close();
        await this.handle.terminate();
        throw this.startError;
      }
      this.remote = remote;
      return remote;
    });
  }

  /** How this device's answers came back so far: through the shared reply slot, or by message (for the tests). */
  get answered(): { slot: number; message: number; polled: number; hasSlot: boolean } {
    return { ...(this.remote?.answered ?? { slot: 0, message: 0, polled: 0 }), hasSlot: !!this.remote?.slot };
  }

  /** Whether the worker was started. */
  get started(): boolean {
    return this.ready !== null;
  }

  /** Whether the worker was started or has commands queued (which will start it): what a sync must wait for. */
  get inUse(): boolean {
    return this.ready !== null || !this.queue.empty;
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

  /** The device's current stream (ts/runtime/current-stream.ts): where commands and reads go. */
  get stream(): number {
    return streamId(this.name);
  }

  /** Notes that the worker's device was lost (it said so on the loss port, or in a call's answer). */
  private noteLost(info: LostInfo | null): void {
    if (info && !this.lostInfo) this.lostInfo = info;
    for (const f of this.lossSeen.splice(0)) f();
  }

  /** The worker's thread died (Node): the device is lost, and the calls waiting on it raise that. */
  private workerDied(why: string): void {
    this.dead = true;
    this.noteLost({ reason: 'worker died', message: `${this.name}'s worker died: ${why}` });
    this.remote?.close();
  }

  /**
   * Whether the worker's device was lost (raised yet or not), or the worker could not start (a
   * browser restarting its GPU process has no adapter for a moment): `torch.gpu.init()` replaces it.
   */
  get deviceLost(): boolean {
    return this.lostInfo !== null || this.lostRaised || this.startError !== null;
  }

  /** Whether the device was lost, and the loss already raised (op calls raise it). */
  get lost(): boolean {
    return this.lostRaised;
  }

  /** The loss as an error to throw (a new one each time, so each stack is the caller's). */
  private lostError(): DeviceLostError {
    const info = this.lostInfo ?? { reason: 'unknown', message: '' };
    return new DeviceLostError(this.name, info.reason, info.message);
  }

  /** Throws the device's loss once it was raised at a sync point: every op calls this before allocating or queuing. */
  checkUsable(): void {
    if (this.lostRaised) throw this.lostError();
  }

  /**
   * @internal Test-only: destroys the worker's GPUDevice, as a browser losing it would, and
   * resolves once the worker has seen the loss (`torch.gpu._loseDevice`); `'crash'` makes the
   * worker's thread throw instead, and resolves once it has died (Node).
   */
  async lose(how: 'destroy' | 'crash' = 'destroy'): Promise<void> {
    if (this.kind !== 'gpu') throw new Error(`_loseDevice: ${this.name} is not a GPU device`);
    await this.start();
    if (this.lostInfo) return;
    if (how === 'crash') {
      const died = new Promise<void>((r) => this.lossSeen.push(r));
      this.lossPort!.postMessage({ crash: true });
      return this.awaiting(() => died);
    }
    const seen = new Promise<void>((r) => this.lossSeen.push(r));
    this.lossPort!.postMessage({ lose: true });
    await this.awaiting(() => seen);
  }

  /**
   * @internal Test-only: makes Dawn report a validation error in the worker, and resolves once it
   * has (`torch.gpu._gpuError`); the next sync point raises it.
   */
  async gpuError(): Promise<void> {
    if (this.kind !== 'gpu') throw new Error(`_gpuError: ${this.name} is not a GPU device`);
    await this.start();
    const made = new Promise<void>((r) => this.lossSeen.push(r));
    this.lossPort!.postMessage({ gpuError: true });
    await this.awaiting(() => made);
  }

  /** Marks this client as replaced after a loss (`torch.gpu.init()`): its tensors raise when used. */
  retire(): void {
    this.lostInfo ??= { reason: 'unknown', message: '' };
    this.lostRaised = true;
  }

  /**
   * Whether the cpu device is idle: nothing queued here, every batch sent has run to the end in
   * the worker (the board says so), and no asynchronous error waits for a sync point. Then no
   * command can still read or write any tensor's bytes, and the calling thread may read and
   * write them in the shared memory itself: a write cannot overtake work that reads the old
   * bytes, nor a read work that writes them. Only the cpu device with shared memory has `host`.
   */
  private get idle(): boolean {
    return this.host !== null && this.remote !== null && this.waitingOnStart === 0 && this.queue.empty &&
      this.board.batchesDone() >= this.sent && !this.board.failed;
  }

  /**
   * How long to poll for the answer to a read or sync sent now (0: not at all): one that carries
   * only a few small commands, on the cpu device after every batch sent before it has run. The
   * caller then polls the reply slot for a while (`CallPort.spinFor`; 0.2 ms on the cpu, 0.3 on a
   * GPU, where a small read takes 0.1–0.2 ms on an H100) instead of sleeping until the answer wakes
   * it, as CUDA's default synchronization spins: a thread's wake-up costs tens of µs on a virtual
   * machine. Polls that miss back off (a GPU much slower than that, such as lavapipe, soon stops
   * polling).
   */
  private answerSpinMs(): number {
    if (this.remote === null || this.waitingOnStart !== 0 || this.queue.size > SPIN_WORDS) return 0;
    if (this.kind === 'gpu') return GPU_SPIN_MS;
    return this.host !== null && this.board.batchesDone() >= this.sent ? ANSWER_SPIN_MS : 0;
  }

  /** The bytes of segment `id` from `byteOffset` in the cpu's shared memory (its address read now: the memory may have grown). */
  private hostBytes(id: number, byteOffset: number, bytes: number): Uint8Array {
    const { memory, addresses } = this.host!;
    return new Uint8Array(memory.buffer, addresses[id] + byteOffset, bytes);
  }

  /**
   * Writes `data` into segment `id` at once, on this thread, when the device is idle (see `idle`):
   * one copy from the caller's array into the device's memory, no message. Returns false when it
   * cannot, and the caller queues a `write` command.
   */
  writeNow(id: number, byteOffset: number, data: ArrayBufferView): boolean {
    if (this.closed || !this.idle || !this.host!.addresses[id]) return false;
    this.hostBytes(id, byteOffset, data.byteLength).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    this.direct.write++;
    return true;
  }

  /** Queues a command on `stream` (device commands belong to no stream); `transfer` lists buffers or ports that move with it. */
  enqueue(cmd: Command, transfer?: Transferable[], stream = this.stream): void {
    // A lost device's commands are dropped: the frees of its tensors, work already under way.
    if (this.closed || this.lostRaised) return;
    if (this.capture !== null) stream = this.capture.route(cmd, stream);
    else if (cmd.k === 'write' && this.writeNow(cmd.id, cmd.byteOffset, new Uint8Array(cmd.data))) return;
    this.queue.push(cmd, stream);
    if (!DEVICE_KINDS.has(cmd.k)) this.queued[stream]++;
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
    const out = this.takeQueued();
    if (out) this.post((r) => r.send('submit', [out.batch], out.transfer)).catch(() => undefined);
  }

  /**
   * Sends one message in program order: at once (synchronously) once the worker is up and no
   * earlier message still waits for it to start, else after those.
   */
  private async post<T>(send: (r: CallPort) => T | Promise<T>): Promise<T> {
    if (this.remote && this.waitingOnStart === 0) return send(this.remote);
    this.waitingOnStart++;
    let r: CallPort;
    try {
      r = await this.start();
    } finally {
      this.waitingOnStart--;
    }
    return send(r);
  }

  /** The queued commands as a batch, with what it transfers (its words, the buffers queued with it), or null. */
  private takeQueued(): Outgoing | null {
    if (this.queue.empty) return null;
    this.sent++;
    const batch = this.queue.take(), transfer = this.transfers;
    // A small batch is cloned: in Node's postMessage, transferring an ArrayBuffer costs more than
    // copying a few KiB (bench/cases/launch.mjs's round trip pays it on every read).
    if (batch.words.byteLength > TRANSFER_AT) transfer.push(batch.words.buffer);
    this.transfers = [];
    return { batch, transfer };
  }

  /** Calls a worker method that is answered, after the commands in `out`, which travel with it. */
  private call<T>(method: keyof WorkerApi, args: unknown[], out: Outgoing | null, spinMs = 0): Promise<T> {
    // A loss the worker already told about is raised at once, without asking it.
    if (this.lostInfo) {
      this.lostRaised = true;
      return Promise.reject(this.lostError());
    }
    return this.awaiting(() => this.post((r) => r.call<T>(method, args, out?.transfer, spinMs))).catch((e) => this.rethrow(e));
  }

  /**
   * The mark that stands for every command queued on `stream` so far: the last one when nothing
   * was queued since, else a new `mark` command.
   */
  markStream(stream: number): number {
    if (this.queued[stream] !== this.marked[stream]) this.enqueue({ k: 'mark', mark: this.nextMark(stream) }, undefined, stream);
    return this.marks[stream];
  }

  /** A new mark of `stream`, for the next command, which stands for everything queued on it so far (`record`, `mark`). */
  nextMark(stream: number): number {
    this.marked[stream] = this.queued[stream] + 1;
    return ++this.marks[stream];
  }

  /** Whether every command queued on `stream` has finished, as far as the board tells (queues a mark when it cannot tell). */
  streamFinished(stream: number): boolean {
    return this.board.streamMark(stream) >= this.markStream(stream);
  }

  /** Reads bytes of a storage once the earlier work of `stream` has run. */
  async read(id: number, byteOffset: number, bytes: number, stream = this.stream): Promise<ArrayBuffer> {
    if (this.closed) throw new Error(`webtorch: device ${this.name} was shut down; its tensors are gone`);
    this.capture?.syncPoint('reading a tensor (data(), item(), tolist(), print)', stream);
    // An idle cpu device: one copy out of its memory, no message (a new ArrayBuffer, as a message's would be).
    if (this.idle && this.host!.addresses[id]) {
      this.direct.read++;
      const data = copyOut(this.hostBytes(id, byteOffset, bytes));
      this.finishedUpTo(stream, this.queued[stream]);
      return data;
    }
    // The queued commands travel with the read; `post` keeps it ahead of later ops.
    const spin = this.answerSpinMs(), out = this.takeQueued(), queued = this.queued[stream];
    const data = await this.call<ArrayBuffer>('read', [id, byteOffset, bytes, out?.batch ?? null, stream], out, spin);
    // The read ran after the stream's earlier work had finished: as for a sync, the board says so.
    this.finishedUpTo(stream, queued);
    return data;
  }

  /** Notes that `stream` has finished its first `queued` commands (a sync point proved it): with nothing queued since, it is idle. */
  private finishedUpTo(stream: number, queued: number): void {
    if (this.queued[stream] !== queued) return;
    if (this.marked[stream] !== queued) {
      this.marked[stream] = queued;
      this.marks[stream]++;
    }
    this.board.finishStream(stream, this.marks[stream]);
  }

  /**
   * Waits for the queued work (all of it, one stream's, or one event's record); rethrows the
   * first asynchronous error since the last sync. What it proves finished goes on the board.
   */
  async sync(target: SyncTarget = { all: true }): Promise<void> {
    this.capture?.syncPoint(`synchronize (${'stream' in target ? 'a stream' : 'slot' in target ? 'an event' : 'the device'})`, 'stream' in target ? target.stream : null);
    // An idle cpu device has finished everything sent, events included, and has no error to report.
    if (this.idle) {
      this.direct.sync++;
      if ('all' in target) for (let s = 0; s < STREAM_SLOTS; s++) this.finishedUpTo(s, this.queued[s]);
      else if ('stream' in target) this.finishedUpTo(target.stream, this.queued[target.stream]);
      return;
    }
    const queued = this.queued.slice(), spin = this.answerSpinMs();
    const out = this.takeQueued();
    const time = await this.call<number | void>('sync', [out?.batch ?? null, target], out, spin);
    if ('slot' in target && typeof time === 'number') this.board.finishEvent(target.slot, target.version, time);
    // Every stream the sync covered has finished what was queued before it: a mark made here says so.
    if ('all' in target) for (let s = 0; s < STREAM_SLOTS; s++) this.finishedUpTo(s, queued[s]);
    else if ('stream' in target) this.finishedUpTo(target.stream, queued[target.stream]);
  }

  /** What captured graph `graph` holds, once the commands queued on `stream` so far have run (ts/runtime/graphs.ts). */
  async graphInfo(graph: number, stream: number): Promise<GraphInfo> {
    const out = this.takeQueued();
    return this.call<GraphInfo>('graphInfo', [graph, out?.batch ?? null, stream], out);
  }

  /** Turns the worker's profile on (clearing it) or off; off resolves with it once the queued work is done (see `WorkerProfile`). */
  async profile(on: boolean): Promise<WorkerProfile | null> {
    const out = this.takeQueued();
    return this.call<WorkerProfile | null>('profile', [on, out?.batch ?? null], out);
  }

  /** Turns a device's out-of-memory failure into `OutOfMemoryError`; other errors pass through. */
  private rethrow(e: unknown): never {
    const lost = lostInfoOf(e) ?? (this.dead ? this.lostInfo : null);
    if (lost) {
      this.noteLost(lost);
      this.lostRaised = true;
      throw this.lostError();
    }
    if (e instanceof Error && e.name === 'OutOfMemoryError') {
      // The work that failed cannot be retried here, but a retry by the program can find the
      // memory of the tensors it dropped: they are freed now (ts/runtime/collect.ts), and
      // emptyCache() gives their segments back to the device.
      const collected = collectGarbage();
      throw new OutOfMemoryError(`${this.name} ran out of memory: the device refused an allocation within the budget (${e.message}). ${collected ? 'Dropped tensors were freed; torch.gpu.emptyCache() releases their memory to the device. ' : ''}Lower the budget with torch.gpu.configure({memory}) or setPerProcessMemoryFraction.`);
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
      if (!this.dead) await this.awaiting(() => r.call('close', []));
      r.close();
      this.lossPort?.close();
      this.api?.[Comlink.releaseProxy]();
    } catch {
      /* a device that failed to start has nothing to close */
    }
    await this.handle?.terminate();
    this.ready = null;
    this.remote = null;
    this.api = null;
    this.handle = null;
  }
}
