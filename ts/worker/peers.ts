/**
 * A device worker's peers: the other workers (and the host bridge, ts/distributed/bridge.ts) it
 * has a MessagePort to, and the copies and signals that travel on them.
 *
 * Device-to-device copies travel over MessagePorts between workers, never through the caller.
 * A copy is a (`send` on the source, `recv` on the destination) pair with a shared tag; a
 * cross-device event wait is a (`signal`, `waitSignal`) pair the same way, with no bytes. A
 * message that arrives before its `recv` waits in the mailbox; a `recv` that comes first holds
 * its stream (the scheduler's) until the bytes arrive.
 *
 * A `recv` that nothing will answer must not hold its stream forever: one of a failed collective
 * fails when the group's `abortTags` arrives (ts/distributed/group.ts, Note [a failed
 * collective]), and one from a peer whose worker died when that peer's port closes. Once a
 * `recv` has failed, this device's sends carry that error instead of bytes until its next sync
 * point, so a ring passes the failure on instead of a sum missing a part.
 *
 * Pinned copies (`readHost`, `writeHost`; ts/runtime/pinned.ts has the decision) read and write
 * the cpu device's shared memory in place. The cpu sends its memory on the port right after its
 * `connect`, so a pinned copy queued with the first `connect` can run before it arrives: it
 * waits for it, and its stream with it.
 */
import { env, onPortClose, onPortMessage } from '../platform.js';
import type { Backend } from './backend.js';
import type { HostMemory } from './protocol.js';
import type { Command } from '../ir/commands.js';

/**
 * `WEBTORCH_TRACE_COLLECTIVES=1`: a JSON line to stderr for each send to and receive from the
 * calling thread (ts/distributed/bridge.ts) of 1 MiB or more: when the worker ran it, when its
 * bytes were read (a send) or arrived and were written (a receive), on the clock of
 * ts/distributed/socket-collectives.ts's lines (ms since the epoch).
 */
const trace = env('WEBTORCH_TRACE_COLLECTIVES') ? (o: object) => console.error(JSON.stringify(o)) : null;
const clock = () => performance.timeOrigin + performance.now();

/** What a peer posts on its port: bytes for a tag (or why they could not be read), or its memory. */
interface PeerMessage {
  tag: number;
  data: ArrayBuffer;
  error?: string;
  host?: HostMemory;
}

/** One worker's ports to its peers, what they have sent, and the cpu's shared memory. */
export class Peers {
  private readonly ports = new Map<string, MessagePort>();
  /** Bytes (or a failed copy) that arrived before their `recv`, by `peer#tag`. */
  private readonly mailbox = new Map<string, ArrayBuffer | Error>();
  /** `recv`s and `waitSignal`s waiting for their message, by `peer#tag`. */
  private readonly waiting = new Map<string, (data: ArrayBuffer | Error) => void>();
  /** The cpu device's shared memory, from its port (for pinned copies). */
  private readonly hosts = new Map<string, HostMemory>();
  /** Pinned copies waiting for a peer's shared memory to arrive. */
  private readonly hostWaiters = new Map<string, (() => void)[]>();
  /** Peers whose port closed (their worker died), and why: their bytes will never come. */
  private readonly gone = new Map<string, string>();
  /**
   * Why a receive of this device failed since its last sync point: until then its sends forward
   * it instead of bytes that may depend on the missing ones, so that the failure reaches every
   * rank of a collective (a ring passes on what it received) rather than a wrong answer.
   */
  private failedRecv: string | null = null;
  /** The tag ranges of failed collectives (`abortTags`) and why: their receives fail, their bytes are dropped. */
  private readonly aborted: { from: number; to: number; why: string }[] = [];

  /**
   * @param backend reads and writes the bytes
   * @param whenFinished calls back once an event of this device has finished (for `signal`)
   * @param fail records a device error for the next sync point
   */
  constructor(private readonly backend: Backend,
    private readonly whenFinished: (slot: number, version: number, then: () => void) => void,
    private readonly fail: (op: string, e: unknown) => void) {}

  /** `connect`: listens on a peer's port (and, on the cpu, tells the peer where its memory is). */
  connect(cmd: Extract<Command, { k: 'connect' }>): void {
    const peer = cmd.peer;
    this.ports.set(peer, cmd.port);
    this.gone.delete(peer); // a fresh worker of a device that was lost (torch.gpu.init)
    // A peer that dies never sends what it owes: its receives waiting now and later fail.
    onPortClose(cmd.port, () => {
      if (this.ports.get(peer) !== cmd.port) return;
      const why = `the copy from ${peer} failed: ${peer}'s worker is gone (its port closed)`;
      this.gone.set(peer, why);
      for (const [key, w] of [...this.waiting]) {
        if (!key.startsWith(`${peer}#`)) continue;
        this.waiting.delete(key);
        w(new Error(why));
      }
    });
    onPortMessage(cmd.port, (msg) => {
      const { tag, data: bytes, error, host } = msg as PeerMessage;
      if (host) {
        this.hosts.set(peer, host);
        for (const go of this.hostWaiters.get(peer)?.splice(0) ?? []) go();
        return;
      }
      if (this.aborted.length && this.abortedWhy(tag) !== null) return; // for a recv that will fail, or has
      const data = error === undefined ? bytes : new Error(`the copy from ${peer} failed: ${error}`);
      const key = `${peer}#${tag}`;
      const w = this.waiting.get(key);
      if (w) {
        this.waiting.delete(key);
        w(data);
      } else this.mailbox.set(key, data);
    });
    // The cpu tells each peer where its memory is, first thing on the port.
    const host = this.backend.hostMemory?.();
    if (host) cmd.port.postMessage({ host });
  }

  /**
   * `abortTags`: the receives of a failed collective's tags fail with its reason, those waiting
   * now (their streams go on) and those still to run; bytes for them, here or on their way, are dropped.
   */
  abort(cmd: Extract<Command, { k: 'abortTags' }>): void {
    for (let i = 0; i < cmd.ranges.length; i += 2) this.aborted.push({ from: cmd.ranges[i], to: cmd.ranges[i + 1], why: cmd.why });
    const tagOf = (key: string) => Number(key.slice(key.lastIndexOf('#') + 1));
    for (const key of [...this.mailbox.keys()]) if (this.abortedWhy(tagOf(key)) !== null) this.mailbox.delete(key);
    for (const [key, w] of [...this.waiting]) {
      const why = this.abortedWhy(tagOf(key));
      if (why === null) continue;
      this.waiting.delete(key);
      w(new Error(why));
    }
  }

  /** Why `tag`'s collective was aborted, or null. */
  private abortedWhy(tag: number): string | null {
    for (const a of this.aborted) if (tag >= a.from && tag < a.to) return a.why;
    return null;
  }

  /** `send`: the copy out is recorded now, in stream order; only posting the bytes waits for the device. */
  send(cmd: Extract<Command, { k: 'send' }>): void {
    this.backend.flush();
    const port = this.ports.get(cmd.peer)!, tag = cmd.tag;
    if (this.failedRecv !== null) {
      port.postMessage({ tag, data: new ArrayBuffer(0), error: this.failedRecv });
      return;
    }
    const ran = trace && cmd.bytes >= 1 << 20 ? clock() : 0;
    // A failed read (a device error found at this sync point) still answers the peer, whose recv fails too.
    void Promise.resolve(this.backend.read(cmd.id, cmd.byteOffset, cmd.bytes)).then(
      (data) => {
        if (ran) trace!({ worker: 'send', peer: cmd.peer, bytes: cmd.bytes, ran, read: clock() });
        port.postMessage({ tag, data }, [data]);
      },
      (e: unknown) => {
        port.postMessage({ tag, data: new ArrayBuffer(0), error: e instanceof Error ? e.message : String(e) });
        this.fail('send', e);
      });
  }

  /** `recv`: holds the stream until the peer's bytes arrive, then writes them. */
  recv(cmd: Extract<Command, { k: 'recv' }>): Promise<void> {
    this.backend.flush();
    const ran = trace ? clock() : 0;
    return this.receive(cmd.peer, cmd.tag).then((data) => {
      if (data instanceof Error) {
        this.failedRecv ??= data.message;
        throw data;
      }
      const arrived = ran && data.byteLength >= 1 << 20 ? clock() : 0;
      const written = this.backend.write(cmd.id, cmd.byteOffset, data);
      if (arrived) void Promise.resolve(written).then(() => trace!({ worker: 'recv', peer: cmd.peer, bytes: data.byteLength, ran, arrived, written: clock() }));
      return written;
    });
  }

  /** The device's errors were raised at a sync point: its sends carry bytes again. */
  reported(): void {
    this.failedRecv = null;
  }

  /** `signal`: answers the peer once the event has finished on this device. */
  signal(cmd: Extract<Command, { k: 'signal' }>): void {
    const port = this.ports.get(cmd.peer)!;
    this.whenFinished(cmd.slot, cmd.version, () => port.postMessage({ tag: cmd.tag, data: new ArrayBuffer(0) }));
  }

  /** `waitSignal`: holds the stream until the peer's signal arrives. */
  waitSignal(cmd: Extract<Command, { k: 'waitSignal' }>): Promise<void> {
    return this.receive(cmd.peer, cmd.tag).then((data) => {
      if (data instanceof Error) throw data;
    });
  }

  /** `readHost`: the backend copies from the shared view itself (the GPU through a mapped staging buffer). */
  readHost(cmd: Extract<Command, { k: 'readHost' }>): Promise<void> | void {
    return this.withHost(cmd.peer, () => this.backend.write(cmd.id, cmd.byteOffset, this.hostView(cmd.peer, cmd.src, cmd.srcOffset, cmd.bytes)));
  }

  /** `writeHost`: reads the device's bytes into the cpu's shared memory. */
  writeHost(cmd: Extract<Command, { k: 'writeHost' }>): Promise<void> {
    this.backend.flush();
    return this.withHost(cmd.peer, () => {
      const target = this.hostView(cmd.peer, cmd.dst, cmd.dstOffset, cmd.bytes);
      return Promise.resolve(this.backend.read(cmd.id, cmd.byteOffset, cmd.bytes, target)).then((data) => {
        if (data) target.set(new Uint8Array(data));
      });
    });
  }

  /** The message for `peer#tag`: at once if it has arrived, else once it does. */
  private receive(peer: string, tag: number): Promise<ArrayBuffer | Error> {
    const key = `${peer}#${tag}`;
    const have = this.mailbox.get(key);
    if (have) {
      this.mailbox.delete(key);
      return Promise.resolve(have);
    }
    const why = (this.aborted.length ? this.abortedWhy(tag) : null) ?? this.gone.get(peer);
    if (why != null) return Promise.resolve(new Error(why));
    return new Promise<ArrayBuffer | Error>((resolve) => this.waiting.set(key, resolve));
  }

  /** A view of `bytes` bytes of a host segment (its address read now: the memory may have grown). */
  private hostView(peer: string, segment: number, offset: number, bytes: number): Uint8Array {
    const h = this.hosts.get(peer);
    if (!h) throw new Error(`${peer} has no shared memory to copy pinned tensors through`);
    return new Uint8Array(h.memory.buffer, h.addresses[segment] + offset, bytes);
  }

  /** Runs `fn` once peer's shared memory is known (at once if it is); the stream waits meanwhile. */
  private withHost<T>(peer: string, fn: () => T): T | Promise<Awaited<T>> {
    if (this.hosts.has(peer) || !this.ports.has(peer)) return fn(); // no peer port: `hostView` says why
    return new Promise<void>((go) => {
      const list = this.hostWaiters.get(peer) ?? [];
      list.push(go);
      this.hostWaiters.set(peer, list);
    }).then(fn) as Promise<Awaited<T>>;
  }
}
