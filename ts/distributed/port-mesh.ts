/**
 * The ranks' connections when they are worker threads of one process (`webtorch-run --threads`):
 * the launcher makes one MessageChannel per pair of ranks and hands each thread its ends in
 * `workerData.webtorch`; a message's bytes move between the threads' memory by transfer, with no
 * socket and no serialisation. It has the socket mesh's interface (ts/distributed/mesh.ts): named
 * messages into a mailbox, `bye` on leaving, and a port that closes without one (its thread
 * ended) is a dead rank.
 */
/**
 * The part of Node's `worker_threads` MessagePort a rank thread uses (declared here, so that the
 * package's types do not need @types/node).
 */
interface NodePort {
  on(event: 'message', listener: (m: { k?: string; bye?: boolean; body?: ArrayBuffer }) => void): unknown;
  on(event: 'close', listener: () => void): unknown;
  postMessage(value: unknown, transfer?: ArrayBuffer[]): void;
  close(): void;
  unref(): void;
}
/** The part of Node's `worker_threads` module `threadRanks` reads. */
interface WorkerThreads {
  isMainThread: boolean;
  workerData: unknown;
}

interface Waiter {
  resolve: (b: Uint8Array) => void;
  reject: (e: Error) => void;
}

/** What a rank thread gets from the launcher. */
export interface ThreadRanks {
  rank: number;
  worldSize: number;
  /** The port to each other rank, by rank. */
  ports: Record<number, NodePort>;
}

/** The launcher's ports for this thread, when it is a rank thread of `webtorch-run --threads`. */
export function threadRanks(): ThreadRanks | null {
  const wt = typeof process !== 'undefined' ? (process.getBuiltinModule?.('node:worker_threads') as WorkerThreads | undefined) : undefined;
  const d = wt && !wt.isMainThread ? (wt.workerData as { webtorch?: ThreadRanks } | null)?.webtorch : undefined;
  return d && typeof d.rank === 'number' && d.ports ? d : null;
}

/** One rank thread's ports to the others. */
export class PortMesh {
  private mailbox = new Map<string, Uint8Array>();
  private waiting = new Map<string, Waiter>();
  failed: string | null = null;
  private left = new Set<number>();
  private closing = false;
  readonly rank: number;
  readonly worldSize: number;

  constructor(private readonly t: ThreadRanks) {
    this.rank = t.rank;
    this.worldSize = t.worldSize;
    for (const [j, port] of Object.entries(t.ports)) {
      const from = Number(j);
      port.on('message', (m: { k?: string; bye?: boolean; body?: ArrayBuffer }) => {
        if (m.bye) return this.leave(from);
        const key = `${from}/${m.k}`;
        const body = new Uint8Array(m.body ?? new ArrayBuffer(0));
        const w = this.waiting.get(key);
        if (w) {
          this.waiting.delete(key);
          w.resolve(body);
        } else this.mailbox.set(key, body);
      });
      // Deferred a turn: a `bye` posted just before the other end closed is read first.
      port.on('close', () => setImmediate(() => {
        if (this.closing || this.left.has(from)) return;
        this.die(`rank ${from} exited or lost its connection (its thread ended)`);
      }));
      port.unref();
    }
  }

  private leave(from: number): void {
    this.left.add(from);
    for (const [key, w] of this.waiting) {
      if (key.startsWith(`${from}/`)) {
        this.waiting.delete(key);
        w.reject(new Error(`rank ${from} left the group (destroyProcessGroup)`));
      }
    }
  }

  die(why: string): void {
    if (this.failed) return;
    this.failed = why;
    for (const w of this.waiting.values()) w.reject(new Error(why));
    this.waiting.clear();
  }

  /**
   * Sends message `key` to rank `to`: a copy of `body` is posted at once, so the promise is
   * already settled. With `give`, a `body` that is its whole buffer moves to the other thread
   * without a copy, and is detached here.
   */
  send(to: number, key: string, body?: Uint8Array, give = false): Promise<void> {
    if (this.failed) throw new Error(this.failed);
    if (this.left.has(to)) throw new Error(`rank ${to} left the group (destroyProcessGroup)`);
    const port = this.t.ports[to];
    if (!port) throw new Error(`rank ${to} is not connected`);
    const whole = give && body && body.byteOffset === 0 && body.byteLength === body.buffer.byteLength && body.buffer instanceof ArrayBuffer;
    // Else a copy of just the view's bytes, moved to the other thread (a view may share a larger buffer).
    const copy = whole ? body.buffer as ArrayBuffer : body?.length ? body.slice().buffer : undefined;
    port.postMessage({ k: key, body: copy }, copy ? [copy] : []);
    return Promise.resolve();
  }

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

  close(polite = true): void {
    this.closing = true;
    for (const port of Object.values(this.t.ports)) {
      if (polite && !this.failed) port.postMessage({ bye: true });
      port.close();
    }
  }
}
