/**
 * Shared memory between two processes of one host, for the bytes of the socket mesh's large
 * messages (ts/distributed/mesh.ts): the socket then carries only each chunk's header and the
 * receiver's acknowledgement.
 *
 * Why: Node's loopback TCP was the slowest part of an exchange between processes on the H200
 * hosts (bench/probe-host-allreduce.mjs; BENCHMARKS.md, "Two GPUs, sixth session"), where a copy
 * into and out of a file in `/dev/shm` is two memcpys. Node cannot map memory, so the file is written and read with
 * `pwrite`/`pread` at an offset: each side copies once, and the pages stay in the page cache.
 *
 * Each direction of a connection has a ring file owned by its sender. The sender offers the
 * file's path on the socket; the receiver opens it and says so, and the sender then unlinks it
 * (both keep their descriptors), so nothing is left in `/dev/shm` once both have opened it. A
 * chunk is written at the ring's head (skipping to the start rather than wrapping), its header
 * says where, and the receiver acknowledges the ring position after it once read: the sender
 * writes only into space acknowledged as read. Until the receiver has opened the file (or when
 * it cannot: another host, no `/dev/shm`), every message goes through the socket as before.
 * `WEBTORCH_SHM=0` keeps every message on the sockets.
 */
import type { Socket } from 'node:net';
import { env } from '../platform.js';
import { writeFrame } from './wire.js';

/** `WEBTORCH_TRACE_COLLECTIVES=1`: a JSON line to stderr per ring, once the peer has answered its offer. */
const trace = env('WEBTORCH_TRACE_COLLECTIVES') ? (o: object) => console.error(JSON.stringify(o)) : null;

/** Messages from this many bytes up travel through the ring. */
export const SHM_MIN_BYTES = 64 * 1024;
/** The ring's size, and the largest chunk a message is cut into. */
const RING_BYTES = 32 << 20;
const CHUNK_BYTES = 4 << 20;

type Fs = typeof import('node:fs');
type Os = typeof import('node:os');
const builtin = <T>(name: string): T | undefined =>
  typeof process !== 'undefined' ? (process.getBuiltinModule?.(name) as T | undefined) : undefined;

/** This host's name and whether rings may be used here (Linux's `/dev/shm`, not turned off). */
export function shmHost(): string | null {
  if (env('WEBTORCH_SHM') === '0') return null;
  const fs = builtin<Fs>('node:fs'), os = builtin<Os>('node:os');
  if (!fs || !os || !fs.existsSync('/dev/shm')) return null;
  return os.hostname();
}

let rings = 0;

/** The sending side of one direction: the ring file, its head, and the chunks waiting for space. */
export class ShmOut {
  private readonly fs: Fs;
  private fd: number;
  private ready = false;
  private closed = false;
  /** Bytes written (padding included) and acknowledged as read, since the start. */
  private written = 0;
  private acked = 0;
  private drains: (() => void)[] = [];
  private queue: { head: Record<string, unknown>; body: Uint8Array; off: number; done: () => void; fail: (e: Error) => void }[] = [];

  private constructor(readonly path: string, fs: Fs, private readonly sock: Socket) {
    this.fs = fs;
    this.fd = fs.openSync(path, 'w+', 0o600);
    fs.ftruncateSync(this.fd, RING_BYTES);
  }

  /** Creates the ring for the connection `sock` and offers it to the peer; null where there is none. */
  static offer(sock: Socket, host: string | null, rank: number, peer: number): ShmOut | null {
    const fs = builtin<Fs>('node:fs');
    if (!host || !fs) return null;
    const path = `/dev/shm/webtorch-${process.pid}-${++rings}-${rank}to${peer}`;
    let out: ShmOut;
    try {
      out = new ShmOut(path, fs, sock);
    } catch {
      return null; // no room in /dev/shm: the socket carries everything
    }
    writeFrame(sock, { shmOffer: path, host });
    return out;
  }

  /** The peer's answer to the offer: the file is unlinked either way, and used if it was opened. */
  answered(ok: boolean): void {
    try {
      this.fs.unlinkSync(this.path);
    } catch { /* already gone */ }
    if (ok && !this.closed) this.ready = true;
    else this.close();
    trace?.({ shmRing: this.path, opened: ok });
  }

  /** Whether `body` goes through the ring. */
  takes(body: Uint8Array | undefined): body is Uint8Array {
    return this.ready && !!body && body.byteLength >= SHM_MIN_BYTES;
  }

  /** Sends `body` with frame `head` through the ring; resolves once its bytes are in it and its last frame is out. */
  send(head: Record<string, unknown>, body: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error('the shared-memory ring is closed'));
      this.queue.push({ head, body, off: 0, done: resolve, fail: reject });
      this.pump();
    });
  }

  /** The peer has read the ring up to `end`. */
  ack(end: number): void {
    this.acked = Math.max(this.acked, end);
    this.pump();
    if (this.isDrained()) for (const go of this.drains.splice(0)) go();
  }

  /** Whether the peer has read everything written (or the ring is closed). */
  isDrained(): boolean {
    return this.closed || (this.acked >= this.written && !this.queue.length);
  }

  /**
   * Resolves once the peer has read everything written (or the ring is closed). A rank waits for
   * it before it closes its socket: a process that exits with the peer's acknowledgements unread
   * makes the system reset the connection, and the peer lost the last chunk's frame that way.
   */
  drained(): Promise<void> {
    if (this.isDrained()) return Promise.resolve();
    return new Promise((resolve) => this.drains.push(resolve));
  }

  /** Writes the queued chunks that fit, in order. */
  private pump(): void {
    while (this.queue.length && !this.closed) {
      const m = this.queue[0];
      const n = Math.min(CHUNK_BYTES, m.body.byteLength - m.off);
      let at = this.written % RING_BYTES, pad = 0;
      if (at + n > RING_BYTES) {
        pad = RING_BYTES - at;
        at = 0;
      }
      if (this.written + pad + n - this.acked > RING_BYTES) return; // wait for an ack
      this.fs.writeSync(this.fd, m.body, m.off, n, at);
      this.written += pad + n;
      const framed = writeFrame(this.sock, { ...m.head, at, n, off: m.off, total: m.body.byteLength, end: this.written });
      m.off += n;
      if (m.off === m.body.byteLength) {
        this.queue.shift();
        // Settled once the last frame is handed to the system, as a send through the socket is:
        // a rank that leaves right after (its sockets do not keep it alive) still delivers it.
        framed.then(m.done, m.fail);
      }
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const m of this.queue.splice(0)) m.fail(new Error('the connection closed before the message was sent'));
    for (const go of this.drains.splice(0)) go();
    try {
      this.fs.closeSync(this.fd);
    } catch { /* closed */ }
    try {
      this.fs.unlinkSync(this.path);
    } catch { /* unlinked after the peer opened it */ }
  }
}

/** The receiving side of one direction: the peer's ring, opened for reading, and the messages in parts. */
export class ShmIn {
  private readonly parts = new Map<string, { body: Uint8Array; got: number }>();

  private constructor(private readonly fs: Fs, private readonly fd: number, private readonly sock: Socket) {}

  /** Answers the peer's offer: opens its ring when it is on this host. */
  static accept(sock: Socket, path: string, host: string, myHost: string | null): ShmIn | null {
    const fs = builtin<Fs>('node:fs');
    let fd = -1;
    if (fs && myHost !== null && host === myHost && /^\/dev\/shm\/webtorch-[\w-]+$/.test(path)) {
      try {
        fd = fs.openSync(path, 'r');
      } catch { /* not visible here */ }
    }
    writeFrame(sock, { shmOk: fd >= 0 });
    return fd >= 0 ? new ShmIn(fs!, fd, sock) : null;
  }

  /**
   * Reads the chunk a frame points at into its message, and acknowledges it; returns the message's
   * bytes once it is whole, else null.
   */
  chunk(key: string, head: { at: number; n: number; off: number; total: number; end: number }): Uint8Array | null {
    let p = this.parts.get(key);
    if (!p) {
      p = { body: new Uint8Array(head.total), got: 0 };
      if (head.n < head.total) this.parts.set(key, p);
    }
    this.fs.readSync(this.fd, p.body, head.off, head.n, head.at);
    p.got += head.n;
    writeFrame(this.sock, { shmAck: head.end });
    if (p.got < head.total) return null;
    this.parts.delete(key);
    return p.body;
  }

  close(): void {
    try {
      this.fs.closeSync(this.fd);
    } catch { /* closed */ }
  }
}
