/**
 * A process group whose ranks are separate processes (`initProcessGroup` with `env://` or
 * `tcp://host:port`): the rendezvous goes through a `TCPStore` that rank 0 hosts, the data
 * through the sockets of a `Mesh`, and each collective's device side through the bridge
 * (ts/distributed/bridge.ts), so a collective is queued in stream order and returns at once.
 *
 * Each collective starts by telling every other rank its signature (`a:<n>`): the host waits for
 * every rank's before moving data, so mismatched calls raise naming both ranks instead of
 * exchanging wrong bytes, and a collective that some ranks never call times out naming them.
 */
import type { Device } from '../device.js';
import { Mesh } from './mesh.js';
import { PortMesh, type ThreadRanks } from './port-mesh.js';
import { TCPStore } from './store.js';

/** How the ranks reach each other: sockets (`Mesh`) or the launcher's ports between threads (`PortMesh`). */
export interface Transport {
  readonly rank: number;
  readonly worldSize: number;
  /** Why the group can no longer be used, or null. */
  readonly failed: string | null;
  /**
   * Sends message `key` to rank `to`; settles once `body`'s bytes have left (a socket holds the
   * caller's bytes until then, and they must not be written to meanwhile). With `give` the
   * caller is done with `body`: threads may move its buffer instead of copying it.
   */
  send(to: number, key: string, body?: Uint8Array, give?: boolean): Promise<void>;
  recv(from: number, key: string): Promise<Uint8Array>;
  die(why: string): void;
  /** Resolves once the peers have taken everything sent (where the transport can tell); null when they have. */
  flushed?(): Promise<void> | null;
  close(polite?: boolean): void;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A collective in progress on the host. */
export interface HostOp {
  /** The collective's number in this group: the prefix of its messages' names. */
  key: string;
  /** Resolves when every rank has called it with the same signature. */
  arrived: Promise<void>;
  /** Settles with the collective (call `finish` with its host work). */
  done: Promise<void>;
  /** Runs `work` after `arrived`, within the group's timeout; `onError` gets any failure. */
  finish(work: () => Promise<void>, onError?: (e: Error) => void): Promise<void>;
}

/** One rank's view of a group of processes. */
export class SocketGroup {
  private seq = 0;
  /** Ranks' arrivals seen per collective (for the time-out message). */
  private seen = new Map<number, Set<number>>();
  /** The collectives issued here whose host part has not settled yet. */
  private inFlight = new Set<Promise<void>>();

  /** @internal */
  constructor(readonly mesh: Transport, readonly store: TCPStore | null, readonly rank: number, readonly device: Device, readonly timeout: number, readonly initMethod: string) {}

  get worldSize(): number {
    return this.mesh.worldSize;
  }

  /**
   * @internal Connects this process as `rank` of `worldSize` through the store at `host:port`
   * (rank 0 hosts it).
   */
  static async connect(what: string, initMethod: string, host: string, port: number, rank: number, worldSize: number, device: Device, timeout: number): Promise<SocketGroup> {
    const store = new TCPStore(host, port, { worldSize, isMaster: rank === 0, timeout, waitForWorkers: false });
    try {
      await store.ready;
    } catch (e) {
      store.close();
      throw new Error(`${what}: rank ${rank} could not reach the store at ${host}:${port} (${initMethod}): ${(e as Error).message}`);
    }
    try {
      const mesh = await Mesh.create(store, rank, worldSize, timeout, what);
      return new SocketGroup(mesh, store, rank, device, timeout, initMethod);
    } catch (e) {
      store.close();
      throw e;
    }
  }

  /**
   * @internal Joins the ranks of `webtorch-run --threads` through the ports the launcher gave
   * this thread; raises when the options contradict them.
   */
  static fromThreads(what: string, t: ThreadRanks, rank: number, worldSize: number, device: Device, timeout: number): SocketGroup {
    if (rank !== t.rank || worldSize !== t.worldSize) {
      throw new RangeError(`${what}: this thread is rank ${t.rank} of ${t.worldSize} (webtorch-run --threads), but rank ${rank} of worldSize ${worldSize} was asked`);
    }
    return new SocketGroup(new PortMesh(t), null, rank, device, timeout, 'threads (webtorch-run --threads)');
  }

  /** @internal Raises when the group can no longer be used (a rank died). */
  _check(what: string): void {
    if (this.mesh.failed) throw new Error(`${what}: ${this.mesh.failed}`);
  }

  /** @internal Starts collective `what` with signature `sig`. */
  _begin(what: string, sig: string): HostOp {
    if (this.mesh.failed) throw new Error(`${what}: ${this.mesh.failed}`);
    const n = ++this.seq, key = `c${n}`, k = this.worldSize;
    const seen = new Set<number>([this.rank]);
    this.seen.set(n, seen);
    for (let j = 0; j < k; j++) if (j !== this.rank) this.mesh.send(j, `a:${n}`, enc.encode(sig));
    const arrived = Promise.all([...Array(k).keys()].filter((j) => j !== this.rank).map(async (j) => {
      const theirs = dec.decode(await this.mesh.recv(j, `a:${n}`));
      seen.add(j);
      if (theirs !== sig) throw new Error(`${what} (collective ${n}): rank ${this.rank} called ${sig} but rank ${j} called ${theirs}`);
    })).then(() => {});
    arrived.catch(() => {});
    let settle!: (e?: Error) => void;
    const done = new Promise<void>((res, rej) => {
      settle = (e) => (e ? rej(e) : res());
    });
    done.catch(() => {});
    this.inFlight.add(done);
    const settled = () => void this.inFlight.delete(done);
    done.then(settled, settled);
    const finish = async (work: () => Promise<void>, onError?: (e: Error) => void) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<never>((_, rej) => {
        // A ref'd timer: the process stays alive while a collective is under way.
        timer = setTimeout(() => {
          const missing = [...Array(k).keys()].filter((j) => !seen.has(j));
          rej(new Error(missing.length
            ? `${what} (collective ${n}) timed out after ${this.timeout} ms: rank${missing.length > 1 ? 's' : ''} ${missing.join(', ')} never called it (called by rank${seen.size > 1 ? 's' : ''} ${[...seen].sort().join(', ')})`
            : `${what} (collective ${n}) timed out after ${this.timeout} ms waiting for the other ranks' data`));
        }, this.timeout);
      });
      try {
        await Promise.race([arrived.then(work), late]);
        settle();
      } catch (e) {
        const err = e instanceof Error ? e : new Error(String(e));
        if (!err.message.startsWith(what)) err.message = `${what} (collective ${n}): ${err.message}`;
        onError?.(err);
        settle(err);
      } finally {
        clearTimeout(timer);
        this.seen.delete(n);
      }
    };
    return { key, arrived, done, finish };
  }

  /**
   * @internal Leaves the group: tells the others, closes the sockets and the store, once the
   * collectives issued here have settled. A rank may get here with its side of one still under
   * way: a broadcast's source, whose device does not wait for its bytes to leave, reads its own
   * tensor and calls `destroyProcessGroup` while the host still sends them. Closing at once
   * failed the other ranks' receive ("rank 0 exited"). Then, where the bytes went through shared
   * memory, until the peers have read them (ts/distributed/shm.ts, `drained`).
   */
  _close(): void {
    const close = () => {
      this.mesh.close(true);
      this.store?.close();
    };
    const flushed = this.mesh.flushed?.();
    if (!this.inFlight.size && !flushed) return close();
    // Kept alive (a ref'd timer) until then, within the group's timeout.
    const alive = setTimeout(close, this.timeout);
    void Promise.allSettled([...this.inFlight]).then(() => this.mesh.flushed?.()).then(() => {
      clearTimeout(alive);
      close();
    });
  }
}
