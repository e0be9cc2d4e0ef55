/**
 * The device side of the protocol, shared by the cpu and gpu workers: commands in stream order.
 *
 * Commands go to the stream scheduler (ts/worker/scheduler.ts), which runs each stream in its
 * order and holds a stream back while one of its commands waits (a `recv` for a peer's bytes,
 * a `waitSignal` for another device's event), without holding back the others. Most commands
 * run synchronously (the GPU records them); a failing command records the first error with the
 * op's name and the executor carries on, so frees still run and nothing leaks; the error
 * surfaces at the next `read`/`sync`, as CUDA reports asynchronous errors.
 *
 * Events: a `record` asks the backend for a mark of the work recorded so far (`Backend.mark`),
 * and writes the stream board (ts/worker/board.ts) when the device has finished it. A `wait` on
 * the same device only needs the record to have been *run*: the queue orders the rest.
 *
 * Device-to-device copies travel over MessagePorts between workers, never through the caller.
 * A copy is a (`send` on the source, `recv` on the destination) pair with a shared tag; a
 * cross-device event wait is a (`signal`, `waitSignal`) pair the same way, with no bytes.
 */
import { envMs, exposeWorker, onPortMessage, portReceiver } from '../platform.js';
import { Board } from './board.js';
import { serveCalls } from './channel.js';
import { readBatch, type Batch, type DeviceInfo, type GraphInfo, type HostMemory, type SyncTarget, type TraceEntry, type WorkerApi, type WorkerProfile } from './protocol.js';
import { bumpCounter, type ReplayRng, type Command } from '../ir/commands.js';
import { CAPTURED_KINDS, PASSED_KINDS, UNTRACED_KINDS } from '../ir/kinds.js';
import { Scheduler } from './scheduler.js';

/** Runs `fn` after the tasks (messages) already queued: `setImmediate` in Node, a timeout elsewhere. */
const nextTask: (fn: () => void) => void = (globalThis as { setImmediate?: (fn: () => void) => void }).setImmediate ?? ((fn) => setTimeout(fn, 0));

/** How long `close` waits for streams still held back by another device before closing anyway. */
const CLOSE_WAIT_MS = 2000;

/** What a device implements; everything else (ordering, peers, errors) is the executor's. */
export interface Backend {
  init(options: { name: string; index: number }): Promise<DeviceInfo>;
  /** Runs one compute or memory command synchronously (may just record GPU work). */
  run(cmd: Command): void;
  /** Ends a batch (the GPU submits its encoder). */
  flush(): void;
  /**
   * Reads bytes of a storage after all recorded work: into `into` where given and the backend
   * can copy there directly (then it returns nothing), else as a new ArrayBuffer.
   */
  read(id: number, byteOffset: number, bytes: number): Promise<ArrayBuffer> | ArrayBuffer;
  read(id: number, byteOffset: number, bytes: number, into: Uint8Array): Promise<ArrayBuffer | void> | ArrayBuffer | void;
  /**
   * Writes bytes into a storage, ordered after all recorded work; `data` may be a view of shared
   * memory. A returned promise holds the stream (and, as a write is a fence, every stream) until
   * the bytes are in the device's queue.
   */
  write(id: number, byteOffset: number, data: ArrayBuffer | Uint8Array): Promise<void> | void;
  /** Waits until all submitted work is complete. */
  idle(): Promise<void>;
  /**
   * Ends the batch and resolves once the work recorded so far has finished on the device, with
   * the time it finished in milliseconds: the GPU's timestamp when `timing` and the device has
   * them (`DeviceInfo.eventTiming`), else the worker's clock when it saw the work finish.
   */
  mark(timing: boolean): Promise<number>;
  close(): Promise<void> | void;
  /** The cpu device's shared memory, for the other devices' pinned copies (ts/runtime/pinned.ts); null elsewhere. */
  hostMemory?(): HostMemory | null;
  /**
   * How long the worker polls for the next call after it has answered every call, in ms
   * (ts/worker/channel.ts: `Poll`); not at all when absent. The worker polls only once every call
   * is answered and nothing is in flight, so nothing waits on its event loop meanwhile but
   * callbacks nobody awaits (Dawn's), which wait the poll's length at most.
   */
  pollMs?: number;
  /** Starts (if not running) or stops timing the device's own work, where it can (GPU passes with timestamp queries). */
  timePasses?(on: boolean): void;
  /**
   * The passes timed since the last call (each with its command's `traceSeq`), once they have
   * finished; after `timePasses(false)`, the last ones, and the timer is released.
   */
  passTimes?(): Promise<NonNullable<WorkerProfile['passes']> | null>;
  /** The trace number of the command about to run (-1: none), which the passes it records carry. */
  traceSeq?(seq: number): void;
  /**
   * Prepares captured commands as graph `id` for replay (`fuse`: fusing elementwise chains where
   * the backend can, whose intermediates are not in `live`, the blocks alive at capture end as
   * (segment, byte offset, bytes) triples); returns the dispatches a replay makes. A backend without it has its graphs
   * replayed by the executor, command by command through `run` (no messages per op either way).
   */
  captureGraph?(id: number, cmds: Command[], fuse: boolean, live: number[]): number;
  /** Replays graph `id` after the work recorded so far (`rng`: its draws' key and counter offset). */
  replayGraph?(id: number, rng?: ReplayRng): void;
  /** Forgets graph `id`. */
  dropGraph?(id: number): void;
  /**
   * While kernels are being compiled asynchronously, a promise that settles once none is (else
   * null). Their dispatches are recorded but not yet encoded, so the executor holds back what
   * would hand work to the device's queue meanwhile (the flush, and every stream command that
   * is not a kernel) until it settles; the GPU worker compiles so (ts/worker/gpu/core.ts).
   */
  compiling?(): Promise<void> | null;
}

/** The worker's clock as milliseconds since the epoch, comparable with the calling thread's. */
const epochMs = (t: number) => performance.timeOrigin + t;

/** The executor's side of a profile (see `WorkerProfile`). */
class Profile {
  readonly start = performance.now();
  batches = 0;
  flushMs = 0;
  waitMs = 0;
  readonly commands: WorkerProfile['commands'] = {};
  readonly trace: TraceEntry[] = [];

  add(kind: string, ms: number): void {
    const c = (this.commands[kind] ??= { count: 0, ms: 0 });
    c.count++;
    c.ms += ms;
  }

  /** Times an awaited step as waiting for the device. */
  async wait<T>(p: Promise<T> | T): Promise<T> {
    const t = performance.now();
    try {
      return await p;
    } finally {
      this.waitMs += performance.now() - t;
    }
  }
}

/** Makes the worker API around a backend and exposes it to the parent thread. */
export function serve(backend: Backend): void {
  const peers = new Map<string, MessagePort>();
  const mailbox = new Map<string, ArrayBuffer | Error>();
  const waiting = new Map<string, (data: ArrayBuffer | Error) => void>();
  /** The cpu device's shared memory, from its port (for pinned copies). */
  const hosts = new Map<string, HostMemory>();
  /** A view of `bytes` bytes of a host segment (its address read now: the memory may have grown). */
  const hostView = (peer: string, segment: number, offset: number, bytes: number): Uint8Array => {
    const h = hosts.get(peer);
    if (!h) throw new Error(`${peer} has no shared memory to copy pinned tensors through`);
    return new Uint8Array(h.memory.buffer, h.addresses[segment] + offset, bytes);
  };
  /**
   * Pinned copies waiting for the cpu's memory: the cpu sends it on the port right after its
   * `connect`, and a pinned copy queued with the first `connect` can run before it arrives.
   */
  const hostWaiters = new Map<string, (() => void)[]>();
  /** Runs `fn` once peer's shared memory is known (at once if it is); the stream waits meanwhile. */
  const withHost = <T>(peer: string, fn: () => T): T | Promise<Awaited<T>> => {
    if (hosts.has(peer) || !peers.has(peer)) return fn(); // no peer port: `hostView` says why
    return new Promise<void>((go) => {
      const list = hostWaiters.get(peer) ?? [];
      list.push(go);
      hostWaiters.set(peer, list);
    }).then(fn) as Promise<Awaited<T>>;
  };
  let failure: Error | null = null;
  /**
   * The profile that commands arriving now belong to. A command is counted in the profile that
   * was on when it arrived (`owner`), whenever it runs: a profile switch takes effect at once for
   * what arrives next, while the scheduler may still hold earlier commands.
   */
  let profile: Profile | null = null;
  const owner = new WeakMap<Command, Profile>();
  /** Profiles switched off or replaced whose commands may still run (the GPU timer runs while any is). */
  let pendingProfiles = 0;
  /** Trace numbers, unique over the worker's life: a GPU pass names its command by one. */
  let nextSeq = 0;
  /** Passes drained for one profile that belong to a later one. */
  let sparePasses: NonNullable<WorkerProfile['passes']> = [];
  /** Per stream: the profiler's caller op its commands belong to (`opTag`). */
  const opTags = new Map<number, number>();
  let board = Board.create(null);
  /** Per event slot: the version whose record has run here (a same-device `wait` needs no more). */
  const recorded = new Map<number, number>();
  /** Per event slot: callbacks waiting for a version to finish (`signal`, an event's sync). */
  const finishing = new Map<number, { version: number; then: () => void }[]>();
  /** Per stream: the graph it is capturing (its commands, and why the capture failed, if it did). */
  const capturing = new Map<number, { graph: number; cmds: Command[]; error: Error | null }>();
  /** The graphs captured on this device. */
  const graphs = new Map<number, { cmds: Command[]; info: GraphInfo | null; error: Error | null }>();

  const fail = (op: string, e: unknown) => {
    if (!failure) failure = new Error(`${op} failed on device: ${e instanceof Error ? e.message : String(e)}`);
    board.failed = true;
  };
  /**
   * The cpu worker counts the batches it has run to the end on the board, so the calling thread
   * can tell that the device is idle (ts/runtime/client.ts: `idle`). Its commands finish when
   * they run; a GPU's only when the GPU gets there, so GPU workers do not count.
   */
  let countBatches = false;
  let batches = 0;
  const receive = (peer: string, tag: number) => {
    const key = `${peer}#${tag}`;
    const have = mailbox.get(key);
    if (have) {
      mailbox.delete(key);
      return Promise.resolve(have);
    }
    return new Promise<ArrayBuffer | Error>((resolve) => waiting.set(key, resolve));
  };
  /** Calls `then` once event (`slot`, `version`) has finished on the device. */
  const whenFinished = (slot: number, version: number, then: () => void) => {
    if (board.eventVersion(slot) >= version) return then();
    const list = finishing.get(slot) ?? [];
    list.push({ version, then });
    finishing.set(slot, list);
  };
  const finished = (slot: number, version: number, time: number) => {
    board.finishEvent(slot, version, time);
    const list = finishing.get(slot);
    if (!list) return;
    const left = list.filter((w) => w.version > version);
    if (left.length) finishing.set(slot, left);
    else finishing.delete(slot);
    for (const w of list) if (w.version <= version) w.then();
  };

  function run(cmd: Command, stream: number): Promise<unknown> | void {
    if (capturing.size && stream >= 0) {
      const c = capturing.get(stream);
      if (c && cmd.k !== 'captureEnd' && !PASSED_KINDS.has(cmd.k)) {
        if (CAPTURED_KINDS.has(cmd.k)) c.cmds.push(cmd);
        else c.error ??= new Error(`operation not permitted when stream is capturing: a '${cmd.k}' command cannot be captured in a graph`);
        return;
      }
    }
    // A stream command that is not a kernel may hand work to the queue: while kernels compile, it
    // and its stream wait (see `Backend.compiling`). Device commands never do, and run now.
    if (stream >= 0 && compilingHook && !CAPTURED_KINDS.has(cmd.k)) {
      const waiting = compilingHook();
      if (waiting) return waiting.then(() => run(cmd, stream));
    }
    switch (cmd.k) {
      case 'captureBegin':
        capturing.set(stream, { graph: cmd.graph, cmds: [], error: null });
        return;
      case 'captureEnd': {
        const c = capturing.get(stream);
        capturing.delete(stream);
        if (!c || c.graph !== cmd.graph) throw new Error(`capture_end: graph ${cmd.graph} is not being captured on stream ${stream}`);
        let info: GraphInfo | null = null, error = c.error;
        if (!error) {
          try {
            const dispatches = backend.captureGraph ? backend.captureGraph(cmd.graph, c.cmds, cmd.fuse, cmd.live ?? []) : c.cmds.length;
            info = { commands: c.cmds.length, dispatches };
          } catch (e) {
            error = e instanceof Error ? e : new Error(String(e));
          }
        }
        graphs.set(cmd.graph, { cmds: c.cmds, info, error });
        return;
      }
      case 'replay': {
        const g = graphs.get(cmd.graph);
        if (!g) throw new Error(`replay: graph ${cmd.graph} was never captured on this device, or was reset`);
        if (g.error) throw new Error(`replay: the capture of graph ${cmd.graph} failed: ${g.error.message}`);
        if (backend.replayGraph) return backend.replayGraph(cmd.graph, cmd.rng);
        const rng = cmd.rng;
        for (const c of g.cmds) backend.run(rng && c.k === 'random' ? { ...c, key: rng.key, counter: bumpCounter(c.counter, rng.delta) } : c);
        return;
      }
      case 'graphReset':
        graphs.delete(cmd.graph);
        backend.dropGraph?.(cmd.graph);
        return;
      case 'connect':
        peers.set(cmd.peer, cmd.port);
        onPortMessage(cmd.port, (msg) => {
          const { tag, data: bytes, error, host } = msg as { tag: number; data: ArrayBuffer; error?: string; host?: HostMemory };
          if (host) {
            hosts.set(cmd.peer, host);
            for (const go of hostWaiters.get(cmd.peer)?.splice(0) ?? []) go();
            return;
          }
          const data = error === undefined ? bytes : new Error(`the copy from ${cmd.peer} failed: ${error}`);
          const key = `${cmd.peer}#${tag}`;
          const w = waiting.get(key);
          if (w) {
            waiting.delete(key);
            w(data);
          } else mailbox.set(key, data);
        });
        {
          // The cpu tells each peer where its memory is, first thing on the port.
          const host = backend.hostMemory?.();
          if (host) cmd.port.postMessage({ host });
        }
        return;
      case 'readHost':
        // The backend copies from the shared view itself (the GPU through a mapped staging buffer).
        return withHost(cmd.peer, () => backend.write(cmd.id, cmd.byteOffset, hostView(cmd.peer, cmd.src, cmd.srcOffset, cmd.bytes)));
      case 'writeHost':
        backend.flush();
        return withHost(cmd.peer, () => {
          const target = hostView(cmd.peer, cmd.dst, cmd.dstOffset, cmd.bytes);
          return Promise.resolve(backend.read(cmd.id, cmd.byteOffset, cmd.bytes, target)).then((data) => {
            if (data) target.set(new Uint8Array(data));
          });
        });
      case 'send': {
        // The copy out is recorded now, in stream order; only posting the bytes waits for the device.
        backend.flush();
        const port = peers.get(cmd.peer)!, tag = cmd.tag;
        // A failed read (a device error found at this sync point) still answers the peer, whose recv fails too.
        void Promise.resolve(backend.read(cmd.id, cmd.byteOffset, cmd.bytes)).then(
          (data) => port.postMessage({ tag, data }, [data]),
          (e: unknown) => {
            port.postMessage({ tag, data: new ArrayBuffer(0), error: e instanceof Error ? e.message : String(e) });
            fail('send', e);
          });
        return;
      }
      case 'recv':
        backend.flush();
        return receive(cmd.peer, cmd.tag).then((data) => {
          if (data instanceof Error) throw data;
          return backend.write(cmd.id, cmd.byteOffset, data);
        });
      case 'waitSignal':
        return receive(cmd.peer, cmd.tag).then((data) => {
          if (data instanceof Error) throw data;
        });
      case 'signal': {
        const port = peers.get(cmd.peer)!;
        whenFinished(cmd.slot, cmd.version, () => port.postMessage({ tag: cmd.tag, data: new ArrayBuffer(0) }));
        return;
      }
      case 'record': {
        recorded.set(cmd.slot, Math.max(recorded.get(cmd.slot) ?? 0, cmd.version));
        const { slot, version, mark } = cmd;
        void backend.mark(cmd.timing).then((time) => {
          finished(slot, version, time);
          board.finishStream(stream, mark);
        }, (e: unknown) => fail('record', e));
        return;
      }
      case 'mark': {
        const mark = cmd.mark;
        void backend.mark(false).then(() => board.finishStream(stream, mark), (e: unknown) => fail('mark', e));
        return;
      }
      case 'call':
        cmd.fn();
        return;
      case 'wait':
        return; // `ready` held it until its record had run; the queue orders the rest
      case 'write':
        return backend.write(cmd.id, cmd.byteOffset, cmd.data);
      case 'opTag':
        opTags.set(stream, cmd.op);
        return;
      default: {
        const p = owner.get(cmd);
        if (!p) return backend.run(cmd);
        const seq = UNTRACED_KINDS.has(cmd.k) ? -1 : nextSeq++;
        backend.traceSeq?.(seq);
        const t = performance.now();
        try {
          backend.run(cmd);
        } finally {
          const t1 = performance.now();
          p.add(cmd.k, t1 - t);
          if (seq >= 0) p.trace.push({ seq, op: opTags.get(stream) ?? 0, stream, name: cmd.k, t0: epochMs(t), t1: epochMs(t1) });
          backend.traceSeq?.(-1);
        }
      }
    }
  }

  const compilingHook = backend.compiling?.bind(backend) ?? null;
  /** Resolves once no kernel is being compiled (at once when none is). */
  const compiled = async (): Promise<void> => {
    for (let p = compilingHook?.(); p; p = compilingHook!()) await p;
  };

  const scheduler = new Scheduler(run, (cmd) => cmd.k !== 'wait' || (recorded.get(cmd.slot) ?? 0) >= cmd.version, (cmd, e) => fail(cmd.k, e));

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
    if (!profile) return backend.flush();
    const t = performance.now();
    backend.flush();
    profile.flushMs += performance.now() - t;
    profile.batches++;
  }

  /** Queues a batch's commands (nothing for null); returns undefined, so `submit(b) ?? next` runs both. */
  const submit = (batch: Batch | null): undefined => {
    if (!batch) return;
    const { cmds, streams } = readBatch(batch);
    if (profile) for (const c of cmds) owner.set(c, profile);
    for (let i = 0; i < cmds.length; i++) scheduler.push(cmds[i], streams[i]);
    scheduler.pump();
    flushSoon();
    if (countBatches) {
      const n = ++batches;
      void scheduler.whenDone().then(() => board.finishBatches(n));
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
    board.failed = false;
    if (f) throw f;
  };
  const synced = async () => {
    await compiled();
    await (profile ? profile.wait(backend.idle()) : backend.idle());
    takeFailure();
  };

  const api: WorkerApi = {
    init: async (options) => {
      board = Board.create(options.board ?? null);
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
        const data = await (profile ? profile.wait(backend.read(id, byteOffset, bytes)) : backend.read(id, byteOffset, bytes));
        takeFailure();
        return data;
      }),
    sync: (batch, target: SyncTarget = { all: true }) => {
      submit(batch);
      if ('all' in target) return scheduler.whenDone().then(synced);
      if ('stream' in target) return onStream(target.stream, synced);
      // Resolves with the event's time, for a calling thread whose board is updated by messages.
      return new Promise<void>((resolve) => whenFinished(target.slot, target.version, resolve)).then(() => {
        takeFailure();
        return board.eventTime(target.slot);
      });
    },
    profile: (on, batch) => {
      submit(batch);
      const done = profile;
      profile = on ? new Profile() : null;
      if (on) backend.timePasses?.(true);
      if (!done) return Promise.resolve(null);
      pendingProfiles++;
      // The profile's commands have all run once the commands before the switch have.
      return scheduler.whenDone().then(async () => {
        const last = --pendingProfiles === 0 && !profile;
        if (last) backend.timePasses?.(false);
        await compiled();
        const drained = backend.passTimes ? await backend.passTimes() : null;
        const wallMs = performance.now() - done.start;
        let passes: WorkerProfile['passes'] = null, gpu: WorkerProfile['gpu'] = null;
        if (drained) {
          const mine = new Set(done.trace.map((e) => e.seq));
          const all = sparePasses.concat(drained);
          passes = all.filter((q) => mine.has(q.seq));
          // Passes of later profiles wait for them (dropped once no profile is on).
          sparePasses = last ? [] : all.filter((q) => !mine.has(q.seq));
          gpu = {};
          for (const q of passes) {
            const e = (gpu[q.label] ??= { count: 0, ms: 0 });
            e.count++;
            e.ms += q.end - q.start;
          }
        }
        return {
          wallMs, batches: done.batches, commands: done.commands, flushMs: done.flushMs,
          waitMs: done.waitMs, gpu, trace: done.trace, passes,
        };
      });
    },
    graphInfo: (graph, batch, stream) =>
      submit(batch) ?? onStream(stream, async () => {
        const g = graphs.get(graph);
        if (!g) throw new Error(`graph ${graph} was never captured on this device, or was reset`);
        if (g.error) throw g.error;
        return g.info!;
      }),
    // A stream still waiting for another device (a signal or bytes that device will never send
    // once it is closed too) does not keep this one open: close waits for it a little, not forever.
    close: () => Promise.race([scheduler.whenDone(), new Promise((r) => setTimeout(r, CLOSE_WAIT_MS))]).then(compiled).then(() => backend.close()),
  };
  void exposeWorker(api);
}
