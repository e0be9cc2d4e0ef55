/**
 * The device side of the protocol, shared by the cpu and gpu workers: an in-order executor.
 *
 * Batches run strictly in submission order. Most commands run synchronously inside a batch;
 * the few that wait (`send` reading a GPU buffer back, `recv` waiting for a peer) make the
 * executor await, and everything after them waits too, like work queued behind a blocking
 * operation on a CUDA stream. A failing command records the first error with the op's name and
 * the executor carries on, so frees still run and nothing leaks; the error surfaces at the next
 * `read`/`sync`, as CUDA reports asynchronous errors.
 *
 * Device-to-device copies travel over MessagePorts between workers, never through the caller.
 * A copy is a (`send` on the source, `recv` on the destination) pair with a shared tag.
 */
import * as Comlink from 'comlink';
import { exposeWorker, onPortMessage } from '../platform.js';
import { readBatch, type Batch, type Command, type DeviceInfo, type WorkerApi, type WorkerProfile } from './protocol.js';

/** Runs `fn` after the tasks (messages) already queued: `setImmediate` in Node, a timeout elsewhere. */
const nextTask: (fn: () => void) => void = (globalThis as { setImmediate?: (fn: () => void) => void }).setImmediate ?? ((fn) => setTimeout(fn, 0));

/** What a device implements; everything else (ordering, peers, errors) is the executor's. */
export interface Backend {
  init(options: { name: string; index: number }): Promise<DeviceInfo>;
  /** Runs one compute or memory command synchronously (may just record GPU work). */
  run(cmd: Command): void;
  /** Ends a batch (the GPU submits its encoder). */
  flush(): void;
  /** Reads bytes of a storage after all recorded work. */
  read(id: number, byteOffset: number, bytes: number): Promise<ArrayBuffer> | ArrayBuffer;
  /** Writes bytes into a storage, ordered after all recorded work. */
  write(id: number, byteOffset: number, data: ArrayBuffer): void;
  /** Waits until all submitted work is complete. */
  idle(): Promise<void>;
  close(): Promise<void> | void;
  /** Starts (clearing) or stops timing the device's own work, where it can (GPU passes with timestamp queries). */
  timePasses?(on: boolean): void;
  /** The device's milliseconds inside the passes timed since `timePasses(true)`, by command, once they have finished. */
  passTimes?(): Promise<Record<string, { count: number; ms: number }> | null>;
}

/** The executor's side of a profile (see `WorkerProfile`). */
class Profile {
  readonly start = performance.now();
  batches = 0;
  flushMs = 0;
  waitMs = 0;
  readonly commands: WorkerProfile['commands'] = {};

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
  let chain: Promise<void> = Promise.resolve();
  let failure: Error | null = null;
  let profile: Profile | null = null;

  const fail = (op: string, e: unknown) => {
    if (!failure) failure = new Error(`${op} failed on device: ${e instanceof Error ? e.message : String(e)}`);
  };
  const receive = (peer: string, tag: number) => {
    const key = `${peer}#${tag}`;
    const have = mailbox.get(key);
    if (have) {
      mailbox.delete(key);
      return Promise.resolve(have);
    }
    return new Promise<ArrayBuffer | Error>((resolve) => waiting.set(key, resolve));
  };

  async function runBatch(cmds: Command[]): Promise<void> {
    for (const cmd of cmds) {
      try {
        if (cmd.k === 'connect') {
          peers.set(cmd.peer, cmd.port);
          onPortMessage(cmd.port, (msg) => {
            const { tag, data: bytes, error } = msg as { tag: number; data: ArrayBuffer; error?: string };
            const data = error === undefined ? bytes : new Error(`the copy from ${cmd.peer} failed: ${error}`);
            const key = `${cmd.peer}#${tag}`;
            const w = waiting.get(key);
            if (w) {
              waiting.delete(key);
              w(data);
            } else mailbox.set(key, data);
          });
        } else if (cmd.k === 'send') {
          backend.flush();
          const port = peers.get(cmd.peer)!;
          // A failed read (a device error found at this sync point) still answers the peer, whose recv fails too.
          const data = await Promise.resolve(backend.read(cmd.id, cmd.byteOffset, cmd.bytes)).catch((e: unknown) => {
            port.postMessage({ tag: cmd.tag, data: new ArrayBuffer(0), error: e instanceof Error ? e.message : String(e) });
            throw e;
          });
          port.postMessage({ tag: cmd.tag, data }, [data]);
        } else if (cmd.k === 'recv') {
          backend.flush();
          const data = await receive(cmd.peer, cmd.tag);
          if (data instanceof Error) throw data;
          backend.write(cmd.id, cmd.byteOffset, data);
        } else if (profile) {
          const t = performance.now();
          try {
            backend.run(cmd);
          } finally {
            profile.add(cmd.k, performance.now() - t);
          }
        } else {
          backend.run(cmd);
        }
      } catch (e) {
        fail(cmd.k, e);
      }
    }
    flushSoon();
  }

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

  /** Ends a batch, timed while profiling. */
  function flush(): void {
    if (!profile) return backend.flush();
    const t = performance.now();
    backend.flush();
    profile.flushMs += performance.now() - t;
    profile.batches++;
  }

  const enqueue = <T>(fn: () => Promise<T> | T): Promise<T> => {
    const p = chain.then(fn);
    chain = p.then(() => undefined, () => undefined);
    return p;
  };
  /** Queues a batch's commands (nothing for null); returns undefined, so `submit(b) ?? next` runs both. */
  const submit = (batch: Batch | null): undefined => {
    if (!batch) return;
    const cmds = readBatch(batch);
    void enqueue(() => runBatch(cmds));
  };
  const takeFailure = () => {
    const f = failure;
    failure = null;
    if (f) throw f;
  };

  const api: WorkerApi = {
    init: (options) => backend.init(options),
    submit,
    read: (id, byteOffset, bytes, batch) =>
      submit(batch) ?? enqueue(async () => {
        const data = await (profile ? profile.wait(backend.read(id, byteOffset, bytes)) : backend.read(id, byteOffset, bytes));
        takeFailure();
        return Comlink.transfer(data, [data]);
      }),
    sync: (batch) =>
      submit(batch) ?? enqueue(async () => {
        await (profile ? profile.wait(backend.idle()) : backend.idle());
        takeFailure();
      }),
    profile: (on, batch) =>
      submit(batch) ?? enqueue(async () => {
        const done = profile;
        profile = null;
        backend.timePasses?.(false);
        if (on) {
          profile = new Profile();
          backend.timePasses?.(true);
        }
        if (!done) return null;
        const wallMs = performance.now() - done.start;
        const gpu = backend.passTimes ? await backend.passTimes() : null;
        return {
          wallMs, batches: done.batches, commands: done.commands, flushMs: done.flushMs,
          waitMs: done.waitMs, gpu,
        };
      }),
    close: () => enqueue(() => backend.close()),
  };
  void exposeWorker(api);
}
