/**
 * The sockets between the processes of a process group: one TCP connection per pair of ranks
 * (the higher rank connects to the lower rank's listener, whose address it reads from the
 * store), and a mailbox per connection keyed by the message's name, so messages may arrive
 * before they are asked for.
 *
 * Why a connection that closes is an error: a rank leaves on purpose only through
 * `destroyProcessGroup`, which says so first (`bye`). Any other close means that process died,
 * and every receive waiting on it, and every later collective, raises naming the rank.
 */
import type { Server, Socket } from 'node:net';
import type { TCPStore } from './store.js';
import { ShmIn, ShmOut, shmHost } from './shm.js';
import { listen, net, readFrames, writeFrame } from './wire.js';

const dec = new TextDecoder();

interface Waiter {
  resolve: (b: Uint8Array) => void;
  reject: (e: Error) => void;
}

/** One rank's connections to the others. */
export class Mesh {
  private socks: (Socket | null)[];
  private mailbox = new Map<string, Uint8Array>();
  private waiting = new Map<string, Waiter>();
  /** Why the group can no longer be used (a rank died), or null. */
  failed: string | null = null;
  private left = new Set<number>();
  private closing = false;
  private server: Server | null = null;
  /** This host's name where rings in shared memory may be used (ts/distributed/shm.ts), else null. */
  private readonly host = shmHost();
  /** Per peer: the ring this rank sends through, and the peer's ring it reads. */
  private readonly shmOut: (ShmOut | null)[];
  private readonly shmIn: (ShmIn | null)[];

  private constructor(readonly rank: number, readonly worldSize: number) {
    this.socks = new Array(worldSize).fill(null);
    this.shmOut = new Array(worldSize).fill(null);
    this.shmIn = new Array(worldSize).fill(null);
  }

  /**
   * Connects rank `rank` to every other rank through `store`: publishes its listener, connects to
   * the lower ranks, accepts the higher ones; raises on a world size that differs from another
   * rank's, a rank that joins twice, and after `timeout` ms naming the ranks that never came.
   */
  static async create(store: TCPStore, rank: number, worldSize: number, timeout: number, what: string): Promise<Mesh> {
    const m = new Mesh(rank, worldSize);
    const n = net(what);
    const claims = await store.add(`webtorch/claim/${rank}`, 1);
    if (claims > 1) throw new RangeError(`${what}: rank ${rank} joined the group twice (two processes were given RANK=${rank})`);
    let fail!: (e: Error) => void;
    const failed = new Promise<never>((_, rej) => {
      fail = rej;
    });
    failed.catch(() => {});
    let joined!: () => void;
    const allIn = new Promise<void>((res) => {
      joined = res;
    });
    const check = () => {
      if (m.socks.every((s, j) => j === rank || s)) joined();
    };
    const server = n.createServer((sock) => {
      sock.setNoDelay(true);
      sock.on('error', () => {});
      let peer = -1; // the rank on the other end, once its hello has come
      readFrames(sock, (f) => {
        if (peer >= 0) return m.onFrame(peer, f.head, f.body);
        const j = Number(f.head.hello), ws = Number(f.head.worldSize);
        if (ws !== worldSize) return fail(new RangeError(`${what}: rank ${j} has worldSize ${ws} but rank ${rank} has worldSize ${worldSize}`));
        if (!(j > rank && j < worldSize) || m.socks[j]) return fail(new RangeError(`${what}: rank ${rank} got a second connection claiming rank ${j}`));
        peer = j;
        m.adopt(j, sock);
        check();
      });
    });
    m.server = server;
    server.unref();
    const addr = store.localAddress;
    const port = await listen(server, addr, 0);
    await store.set(`webtorch/rank/${rank}`, JSON.stringify({ addr, port, worldSize, pid: typeof process !== 'undefined' ? process.pid : 0 }));
    const dial = async (j: number) => {
      const info = JSON.parse(dec.decode(await store.get(`webtorch/rank/${j}`).catch((e: Error) => {
        throw new Error(`${what}: timed out after ${timeout} ms waiting for rank ${j} to join (${e.message})`);
      })));
      const sock = await new Promise<Socket>((resolve, reject) => {
        const s = n.connect(info.port, info.addr, () => resolve(s));
        s.once('error', reject);
      });
      sock.setNoDelay(true);
      sock.on('error', () => {});
      writeFrame(sock, { hello: rank, worldSize });
      if (info.worldSize !== worldSize) {
        sock.end();
        throw new RangeError(`${what}: rank ${rank} has worldSize ${worldSize} but rank ${j} has worldSize ${info.worldSize}`);
      }
      readFrames(sock, (f) => m.onFrame(j, f.head, f.body));
      m.adopt(j, sock);
      check();
    };
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, rej) => {
      timer = setTimeout(() => {
        const missing = m.socks.map((s, j) => (j !== rank && !s ? j : -1)).filter((j) => j >= 0);
        rej(new Error(`${what}: timed out after ${timeout} ms waiting for rank${missing.length > 1 ? 's' : ''} ${missing.join(', ')} to join`));
      }, timeout);
    });
    try {
      check();
      await Promise.race([Promise.all([...Array(rank).keys()].map(dial)).then(() => allIn), failed, late]);
    } catch (e) {
      m.close(false);
      throw e;
    } finally {
      clearTimeout(timer);
    }
    return m;
  }

  private adopt(j: number, sock: Socket): void {
    this.socks[j] = sock;
    this.shmOut[j] = ShmOut.offer(sock, this.host, this.rank, j);
    sock.unref();
    sock.on('close', () => {
      this.socks[j] = null;
      if (this.closing || this.left.has(j)) return;
      this.die(`rank ${j} exited or lost its connection (its socket to rank ${this.rank} closed)`);
    });
  }

  private onFrame(from: number, head: Record<string, any>, body: Uint8Array): void {
    if (head.shmAck !== undefined) return this.shmOut[from]?.ack(head.shmAck);
    if (head.at !== undefined) {
      // A chunk of a message in the peer's ring.
      const whole = this.shmIn[from]!.chunk(String(head.k), head as { at: number; n: number; off: number; total: number; end: number });
      if (!whole) return;
      body = whole;
    } else if (head.shmOffer !== undefined) {
      this.shmIn[from] = ShmIn.accept(this.socks[from]!, String(head.shmOffer), String(head.host), this.host);
      return;
    } else if (head.shmOk !== undefined) {
      return this.shmOut[from]?.answered(!!head.shmOk);
    }
    if (head.bye) {
      this.left.add(from);
      const why = `rank ${from} left the group (destroyProcessGroup)`;
      for (const [key, w] of this.waiting) {
        if (key.startsWith(`${from}/`)) {
          this.waiting.delete(key);
          w.reject(new Error(why));
        }
      }
      return;
    }
    const key = `${from}/${head.k}`;
    const w = this.waiting.get(key);
    if (w) {
      this.waiting.delete(key);
      w.resolve(body);
    } else this.mailbox.set(key, body);
  }

  /** Every waiting and later receive raises `why`. */
  die(why: string): void {
    if (this.failed) return;
    this.failed = why;
    for (const w of this.waiting.values()) w.reject(new Error(why));
    this.waiting.clear();
  }

  /**
   * Sends message `key` to rank `to`. The socket holds `body` itself, not a copy: the promise
   * settles once its bytes are out, and until then nothing may write to them.
   */
  send(to: number, key: string, body?: Uint8Array): Promise<void> {
    if (this.failed) throw new Error(this.failed);
    const s = this.socks[to];
    if (!s) throw new Error(this.left.has(to) ? `rank ${to} left the group (destroyProcessGroup)` : `rank ${to} is not connected`);
    const ring = this.shmOut[to];
    if (ring?.takes(body)) return ring.send({ k: key, from: this.rank }, body);
    return writeFrame(s, { k: key, from: this.rank }, body);
  }

  /** The message `key` from rank `from`, when it comes. */
  recv(from: number, key: string): Promise<Uint8Array> {
    const k = `${from}/${key}`;
    const have = this.mailbox.get(k);
    if (have) {
      this.mailbox.delete(k);
      return Promise.resolve(have);
    }
    if (this.failed) return Promise.reject(new Error(this.failed));
    if (this.left.has(from)) return Promise.reject(new Error(`rank ${from} left the group (destroyProcessGroup)`));
    return new Promise((resolve, reject) => this.waiting.set(k, { resolve, reject }));
  }

  /** Whether message `key` from `from` has arrived (without taking it). */
  has(from: number, key: string): boolean {
    return this.mailbox.has(`${from}/${key}`);
  }

  /** Resolves once every peer has read what this rank put in its ring (ts/distributed/shm.ts); null when they have. */
  flushed(): Promise<void> | null {
    const waits = this.shmOut.filter((r) => r && !r.isDrained()).map((r) => r!.drained());
    return waits.length ? Promise.all(waits).then(() => {}) : null;
  }

  /** Leaves: tells the others (when `polite`), then closes every connection once its writes are out. */
  close(polite = true): void {
    this.closing = true;
    for (const s of this.socks) {
      if (!s) continue;
      if (polite && !this.failed) writeFrame(s, { bye: true });
      s.end();
    }
    // A ring's chunks are written before their frames: those already sent stay readable (the
    // peer holds its own descriptor), and nothing more is written once the socket ends.
    for (const r of [...this.shmOut, ...this.shmIn]) r?.close();
    this.server?.close();
  }
}
