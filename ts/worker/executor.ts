/**
 * The device side of the protocol, shared by the cpu and gpu workers: commands in stream order.
 *
 * Commands go to the stream scheduler (ts/worker/streams/scheduler.ts), which runs each stream in its
 * order and holds a stream back while one of its commands waits (a `recv` for a peer's bytes,
 * a `waitSignal` for another device's event), without holding back the others. Most commands
 * run synchronously (the GPU records them); a failing command records the first error with the
 * op's name and the executor carries on, so frees still run and nothing leaks; the error
 * surfaces at the next `read`/`sync`, as CUDA reports asynchronous errors.
 *
 * This file is `serve`, which wires the worker's parts around a `Backend` (backend.ts: what a
 * device implements) and dispatches each command kind to the part that owns it:
 * - scheduler.ts: the streams' FIFOs and the order between them; board.ts: the stream board;
 * - events.ts: event records, stream marks, same-device waits, what waits for an event to finish;
 * - peers.ts: ports to other workers, send/recv, signal/waitSignal, pinned copies (readHost/writeHost);
 * - capture.ts: capturing streams, captured graphs, replay and reset;
 * - profile.ts: the worker's profiles (counts, times, traces, op tags, GPU passes).
 * A kernel command goes straight to `Backend.run` (through the profiler only while one is on).
 */
import { envMs, exposeWorker, portReceiver } from '../platform.js';
import { Board } from './streams/board.js';
import { serveCalls } from './channel.js';
import { readBatch, type Batch, type SyncTarget, type WorkerApi } from './protocol.js';
import type { Command } from '../ir/commands.js';
import { CAPTURED_KINDS } from '../ir/kinds.js';
import { Scheduler } from './streams/scheduler.js';
import { Events } from './streams/events.js';
import { Peers } from './peers.js';
import { Capture } from './capture.js';
import { Profiler } from './profile.js';
import type { Backend } from './backend.js';

/** Runs `fn` after the tasks (messages) already queued: `setImmediate` in Node, a timeout elsewhere. */
const nextTask: (fn: () => void) => void = (globalThis as { setImmediate?: (fn: () => void) => void }).setImmediate ?? ((fn) => setTimeout(fn, 0));

/** How long `close` waits for streams still held back by another device before closing anyway. */
const CLOSE_WAIT_MS = 2000;


/** Makes the worker API around a backend and exposes it to the parent thread. */
export function serve(backend: Backend): void {
  let failure: Error | null = null;
  const fail = (op: string, e: unknown) => {
    if (!failure) failure = new Error(`${op} failed on device: ${e instanceof Error ? e.message : String(e)}`);
    events.board.failed = true;
  };
  const events = new Events(backend, fail);
  const peers = new Peers(backend, (slot, version, then) => events.whenFinished(slot, version, then), fail);
  const capture = new Capture(backend);
  const profiler = new Profiler(backend);
  /**
   * The cpu worker counts the batches it has run to the end on the board, so the calling thread
   * can tell that the device is idle (ts/runtime/client.ts: `idle`). Its commands finish when
   * they run; a GPU's only when the GPU gets there, so GPU workers do not count.
   */
  let countBatches = false;
  let batches = 0;

  function run(cmd: Command, stream: number): Promise<unknown> | void {
    if (capture.active && stream >= 0 && capture.take(cmd, stream)) return;
    // A stream command that is not a kernel may hand work to the queue: while kernels compile, it
    // and its stream wait (see `Backend.compiling`). Device commands never do, and run now.
    if (stream >= 0 && compilingHook && !CAPTURED_KINDS.has(cmd.k)) {
      const waiting = compilingHook();
      if (waiting) return waiting.then(() => run(cmd, stream));
    }
    switch (cmd.k) {
      case 'captureBegin': return capture.begin(cmd, stream);
      case 'captureEnd': return capture.end(cmd, stream);
      case 'replay': return capture.replay(cmd);
      case 'graphReset': return capture.reset(cmd);
      case 'connect': return peers.connect(cmd);
      case 'abortTags': return peers.abort(cmd);
      case 'readHost': return peers.readHost(cmd);
      case 'writeHost': return peers.writeHost(cmd);
      case 'send': return peers.send(cmd);
      case 'recv': return peers.recv(cmd);
      case 'waitSignal': return peers.waitSignal(cmd);
      case 'signal': return peers.signal(cmd);
      case 'record': return events.record(cmd, stream);
      case 'mark': return events.mark(cmd, stream);
      case 'wait': return; // `ready` held it until its record had run; the queue orders the rest
      case 'call':
        cmd.fn();
        return;
      case 'write': return backend.write(cmd.id, cmd.byteOffset, cmd.data);
      case 'opTag': return profiler.tag(stream, cmd.op);
      default: {
        const p = profiler.profileOf(cmd);
        if (!p) return backend.run(cmd);
        return profiler.run(p, cmd, stream);
      }
    }
  }

  const compilingHook = backend.compiling?.bind(backend) ?? null;
  /** Resolves once no kernel is being compiled (at once when none is). */
  const compiled = async (): Promise<void> => {
    for (let p = compilingHook?.(); p; p = compilingHook!()) await p;
  };

  const scheduler = new Scheduler(run, (cmd) => cmd.k !== 'wait' || events.ran(cmd.slot, cmd.version), (cmd, e) => fail(cmd.k, e));

  /**
   * Ends the batches run so far once the messages already waiting have run too: a burst that
   * the caller sent in several messages ends once (the GPU worker submits in chunks meanwhile),
   * while a lone batch waits one turn of the event loop. Reads and syncs end the batch themselves.
   */
  let flushing = false;
  function flushSoon(): void {
    if (flushing) return;
    flushing = true;
    nextTask(() => {
      flushing = false;
      flush();
    });
  }

  /** Ends a batch, timed while profiling; while kernels compile, once they have (see `Backend.compiling`). */
  function flush(): void {
    const waiting = compilingHook?.();
    if (waiting) return void waiting.then(flushSoon);
    profiler.flush();
  }

  /** Queues a batch's commands (nothing for null); returns undefined, so `submit(b) ?? next` runs both. */
  const submit = (batch: Batch | null): undefined => {
    if (!batch) return;
    const { cmds, streams } = readBatch(batch);
    profiler.adopt(cmds);
    for (let i = 0; i < cmds.length; i++) scheduler.push(cmds[i], streams[i]);
    scheduler.pump();
    flushSoon();
    if (countBatches) {
      const n = ++batches;
      void scheduler.whenDone().then(() => events.board.finishBatches(n));
    }
  };
  /** Runs `fn` in `stream`'s order (without holding the stream back) and resolves with its result. */
  const onStream = <T>(stream: number, fn: () => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      scheduler.push({ k: 'call', fn: () => void fn().then(resolve, reject) }, stream);
      scheduler.pump();
    });
  const takeFailure = () => {
    const f = failure;
    failure = null;
    events.board.failed = false;
    peers.reported();
    if (f) throw f;
  };
  const synced = async () => {
    await compiled();
    await profiler.waitFor(backend.idle());
    takeFailure();
  };

  const api: WorkerApi = {
    init: async (options) => {
      const board = (events.board = Board.create(options.board ?? null));
      const info = await backend.init(options);
      const pollMs = envMs('WEBTORCH_POLL_MS', backend.pollMs ?? 0);
      const receive = pollMs ? portReceiver() : null;
      const poll = receive && { ms: pollMs, receive, quiet: () => scheduler.idle && !flushing };
      if (options.calls) serveCalls(options.calls, api, options.slot ?? null, poll);
      // The cpu's memory goes to the calling thread too, where the board is shared (it needs both).
      const host = board.buffer ? backend.hostMemory?.() ?? null : null;
      countBatches = host !== null;
      return { ...info, board: board.buffer, host };
    },
    submit,
    read: (id, byteOffset, bytes, batch, stream = 0) =>
      submit(batch) ?? onStream(stream, async () => {
        const data = await profiler.waitFor(backend.read(id, byteOffset, bytes));
        takeFailure();
        return data;
      }),
    sync: (batch, target: SyncTarget = { all: true }) => {
      submit(batch);
      if ('all' in target) return scheduler.whenDone().then(synced);
      if ('stream' in target) return onStream(target.stream, synced);
      // Resolves with the event's time, for a calling thread whose board is updated by messages.
      return new Promise<void>((resolve) => events.whenFinished(target.slot, target.version, resolve)).then(() => {
        takeFailure();
        return events.board.eventTime(target.slot);
      });
    },
    profile: (on, batch) => {
      submit(batch);
      // The profile's commands have all run once the commands before the switch have.
      return profiler.switch(on, () => scheduler.whenDone(), compiled);
    },
    graphInfo: (graph, batch, stream) => submit(batch) ?? onStream(stream, async () => capture.info(graph)),
    // A stream still waiting for another device (a signal or bytes that device will never send
    // once it is closed too) does not keep this one open: close waits for it a little, not forever.
    close: () => Promise.race([scheduler.whenDone(), new Promise((r) => setTimeout(r, CLOSE_WAIT_MS))]).then(compiled).then(() => backend.close()),
  };
  void exposeWorker(api);
}
