/**
 * The stream scheduler of a device worker: one FIFO per stream, one for the device's own
 * commands, and the order between them.
 *
 * Note [what the scheduler holds back]: a device has one queue (one GPUQueue), and everything the worker
 * records there runs in the order recorded. So two streams need no help to be ordered; what the
 * scheduler decides is what the worker may *record* now. A stream stops (its later commands wait
 * in its FIFO) while one of its commands waits for something outside the queue: data from a
 * peer (`recv`), a signal from another device's event (`waitSignal`), or an event of this device
 * whose record has not been run yet because its own stream is stopped (`wait`). Other streams go
 * on meanwhile: a stopped stream never stops the device.
 *
 * The rules, each a position check (nothing is counted per command beyond one increment):
 * - a stream's commands run in its order;
 * - a segment's `release` (and a graph's `graphReset`) runs after every command that any stream
 *   received before it (they may use it); a `segment` runs after an earlier release of the same id (the allocator reuses
 *   ids), and a stream's command after the segments received before it; the other device
 *   commands (connecting a peer, registering a signal, dropping cached scratch) run at once.
 *   So a stream held back never holds back another's allocations;
 * - a copy from host memory (a `write`, a `recv` from the cpu device) is a fence: commands of
 *   every stream received after it wait until it has run. PyTorch's copy from pageable memory
 *   blocks the host until it is done, so work issued after it on any stream sees its data;
 *   here the host does not block, and the fence gives the same guarantee;
 * - a barrier (`whenDone`: a full sync, a profile switch, close) resolves once every stream and
 *   the device commands have run what they had received when it was asked for.
 * Among streams with ready work, the higher priority goes first, then the earlier command.
 * While nothing waits (the usual case) a command runs the moment it arrives.
 */
import { priorityOf } from './board.js';
import { DEVICE_KINDS } from '../../ir/kinds.js';
import { type Command } from '../../ir/commands.js';

/** A command held in a FIFO, with the positions it waits for. */
interface Entry {
  cmd: Command;
  /** Arrival order over the whole device (ties between streams, and segments before a stream's command). */
  seq: number;
  /** Commands each lagging stream had received before it (a release). */
  after: Map<number, number> | null;
}

interface StreamState {
  readonly id: number;
  readonly priority: number;
  readonly fifo: Entry[];
  head: number;
  received: number;
  done: number;
  /** A command of this stream is in flight (its promise has not settled). */
  stopped: boolean;
}

/** How the scheduler runs a command: a returned promise stops its stream until it settles. */
export type RunCommand = (cmd: Command, stream: number) => Promise<unknown> | void;

/** One device's streams. */
export class Scheduler {
  private readonly streams = new Map<number, StreamState>();
  /** The stream of the last command received (most commands follow one of the same stream). */
  private last: StreamState | null = null;
  /** Device commands waiting (a release for streams, a segment for a release), in arrival order. */
  private device: Entry[] = [];
  /** How many of them are segments (a stream's command may need one). */
  private segmentsHeld = 0;
  /** Arrival numbers of the host copies (fences) received and not yet done, in order. */
  private fences: number[] = [];
  /** Commands received by streams and not yet done, over all streams. */
  private lag = 0;
  private seq = 0;
  private barriers: { streams: Map<number, number>; seq: number; resolve: () => void }[] = [];
  private pumping = false;

  /**
   * @param run runs a command (see `RunCommand`)
   * @param ready whether a stream command may run now (an event `wait` whose record has run)
   * @param failed reports a command that threw or whose promise rejected; the stream goes on
   */
  constructor(private readonly run: RunCommand, private readonly ready: (cmd: Command) => boolean,
    private readonly failed: (cmd: Command, e: unknown) => void) {}

  private stream(id: number): StreamState {
    let s = this.streams.get(id);
    if (!s) this.streams.set(id, (s = { id, priority: priorityOf(id), fifo: [], head: 0, received: 0, done: 0, stopped: false }));
    return s;
  }

  /** Receives a command of `stream` (device commands ignore it): runs it now if nothing holds it. */
  push(cmd: Command, stream: number): void {
    const seq = this.seq++;
    if (DEVICE_KINDS.has(cmd.k)) {
      const e: Entry = { cmd, seq, after: (cmd.k === 'release' || cmd.k === 'graphReset') && this.lag ? this.lagging() : null };
      if (this.deviceReady(e)) this.runDevice(e);
      else {
        this.device.push(e);
        if (cmd.k === 'segment') this.segmentsHeld++;
      }
      return;
    }
    const s = this.last?.id === stream ? this.last : (this.last = this.stream(stream));
    s.received++;
    this.lag++;
    const fence = cmd.k === 'write' || (cmd.k === 'recv' && cmd.peer === 'cpu');
    if (fence) this.fences.push(seq);
    // The usual case: nothing of this stream waits, so it runs now (no entry is made).
    if (s.head === s.fifo.length && !s.stopped && this.streamReady(cmd, seq)) this.runStream(s, cmd, seq);
    else s.fifo.push({ cmd, seq, after: null });
  }

  /** Whether every command received so far has run (or settled). */
  get idle(): boolean {
    return !this.lag && !this.device.length;
  }

  /** Resolves once every command received so far has run (an awaited command: once it settled). */
  whenDone(): Promise<void> {
    if (!this.lag && !this.device.length) return Promise.resolve();
    return new Promise((resolve) => this.barriers.push({ streams: this.lagging(), seq: this.seq, resolve }));
  }

  /** Whether a device command may run (see the rules at the top). */
  private deviceReady(e: Entry): boolean {
    if (e.cmd.k === 'release' || e.cmd.k === 'graphReset') return this.caughtUp(e.after);
    if (e.cmd.k !== 'segment') return true;
    const id = e.cmd.id;
    return !this.device.some((d) => d.seq < e.seq && d.cmd.k === 'release' && d.cmd.id === id);
  }

  /** Whether a stream's command may run as far as the device commands and events go. */
  private streamReady(cmd: Command, seq: number): boolean {
    if (this.fences.length && this.fences[0] < seq) return false;
    if (this.segmentsHeld && this.device.some((d) => d.seq < seq && d.cmd.k === 'segment')) return false;
    return this.ready(cmd);
  }

  /** The streams with commands not yet done, with how many commands each has received. */
  private lagging(): Map<number, number> {
    const m = new Map<number, number>();
    for (const s of this.streams.values()) if (s.done < s.received) m.set(s.id, s.received);
    return m;
  }

  private caughtUp(after: Map<number, number> | null): boolean {
    if (!after) return true;
    for (const [id, n] of after) if (this.streams.get(id)!.done < n) return false;
    return true;
  }

  private runDevice(e: Entry): void {
    try {
      // Device commands are synchronous (a signal only registers its watcher).
      void this.run(e.cmd, -1);
    } catch (err) {
      this.failed(e.cmd, err);
    }
  }

  private runStream(s: StreamState, cmd: Command, seq: number): void {
    let r: Promise<unknown> | void = undefined;
    try {
      r = this.run(cmd, s.id);
    } catch (err) {
      this.failed(cmd, err);
    }
    if (!r) {
      s.done++;
      this.lag--;
      if (this.fences.length) this.unfence(seq);
      return;
    }
    s.stopped = true;
    r.catch((err: unknown) => this.failed(cmd, err)).finally(() => {
      s.stopped = false;
      s.done++;
      this.lag--;
      if (this.fences.length) this.unfence(seq);
      this.pump();
    });
  }

  private unfence(seq: number): void {
    const f = this.fences.indexOf(seq);
    if (f >= 0) this.fences.splice(f, 1);
  }

  /** Runs whatever has become ready, until nothing more is; then settles the barriers it passed. */
  pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      for (;;) {
        if (this.device.length) {
          const held = this.device;
          this.device = [];
          for (const e of held) {
            if (e.cmd.k === 'segment') this.segmentsHeld--;
            if (this.deviceReady(e)) this.runDevice(e);
            else {
              this.device.push(e);
              if (e.cmd.k === 'segment') this.segmentsHeld++;
            }
          }
        }
        let best: StreamState | null = null;
        for (const s of this.streams.values()) {
          if (s.stopped || s.head === s.fifo.length) continue;
          const e = s.fifo[s.head];
          if (!this.streamReady(e.cmd, e.seq)) continue;
          if (!best || s.priority < best.priority || (s.priority === best.priority && e.seq < best.fifo[best.head].seq)) best = s;
        }
        if (!best) break;
        const e = best.fifo[best.head++];
        if (best.head === best.fifo.length) best.fifo.length = best.head = 0;
        this.runStream(best, e.cmd, e.seq);
      }
    } finally {
      this.pumping = false;
    }
    if (this.barriers.length) {
      this.barriers = this.barriers.filter((b) => {
        if (this.device.some((d) => d.seq < b.seq) || !this.caughtUp(b.streams)) return true;
        b.resolve();
        return false;
      });
    }
  }
}
