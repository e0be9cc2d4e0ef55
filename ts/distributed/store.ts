/**
 * `torch.distributed.TCPStore`: PyTorch's key-value store for the ranks' rendezvous. One process
 * (`isMaster`, rank 0 under `initProcessGroup`) runs the server; every process, the master
 * included, is a client over a socket. Values are bytes; `get` and `wait` block (asynchronously)
 * until the keys are set, up to the store's timeout, and then raise PyTorch's "wait timeout".
 *
 * The sockets are unref'd: a store does not keep a finished program alive, while a call in
 * progress does (its timer is ref'd).
 */
import type { Server, Socket } from 'node:net';
import { hostPort, listen, net, readFrames, writeFrame, type Frame } from './wire.js';

const enc = new TextEncoder();

/** `TCPStore`'s options (PyTorch's keywords after `hostName` and `port`). */
export interface TCPStoreOptions {
  /** The number of processes using the store (with `waitForWorkers`, the master's `ready` waits for them). */
  worldSize?: number | null;
  /** Whether this process runs the server. */
  isMaster?: boolean;
  /** Milliseconds a call (and connecting) waits (default 300000, PyTorch's 300 s). */
  timeout?: number;
  /** The master waits for `worldSize` clients in `ready` (default true). */
  waitForWorkers?: boolean;
}

/** The server side: keys, and the calls waiting for keys. */
class StoreServer {
  readonly data = new Map<string, Uint8Array>();
  private waiters: { keys: string[]; sock: Socket; id: number; get: boolean }[] = [];
  readonly clients = new Set<Socket>();
  joined = 0;
  onJoin: (() => void) | null = null;
  constructor(readonly server: Server) {
    server.on('connection', (sock) => {
      sock.setNoDelay(true);
      sock.unref();
      this.clients.add(sock);
      sock.on('close', () => this.clients.delete(sock));
      sock.on('error', () => {});
      readFrames(sock, (f) => this.handle(sock, f));
    });
  }

  private reply(sock: Socket, id: number, head: Record<string, unknown> = {}, body?: Uint8Array): void {
    if (!sock.destroyed) writeFrame(sock, { id, ...head }, body);
  }

  private handle(sock: Socket, { head, body }: Frame): void {
    const { id, op } = head;
    switch (op) {
      case 'hello':
        this.joined++;
        this.onJoin?.();
        return this.reply(sock, id);
      case 'set':
        this.data.set(head.key, body);
        return this.wake(), this.reply(sock, id);
      case 'add': {
        const old = this.data.get(head.key);
        const n = (old ? Number(new TextDecoder().decode(old)) : 0) + head.amount;
        this.data.set(head.key, enc.encode(String(n)));
        this.wake();
        return this.reply(sock, id, { n });
      }
      case 'compareSet': {
        const old = this.data.get(head.key);
        const expected = body.subarray(0, head.split), desired = body.subarray(head.split);
        const same = old ? Buffer.from(old).equals(expected) : expected.length === 0;
        if (same) {
          this.data.set(head.key, desired);
          this.wake();
        }
        return this.reply(sock, id, {}, same ? desired : old ?? expected);
      }
      case 'get':
      case 'wait':
        this.waiters.push({ keys: head.keys, sock, id, get: op === 'get' });
        return this.wake();
      case 'check':
        return this.reply(sock, id, { ok: head.keys.every((k: string) => this.data.has(k)) });
      case 'delete':
        return this.reply(sock, id, { ok: this.data.delete(head.key) });
      case 'numKeys':
        return this.reply(sock, id, { n: this.data.size });
      default:
        return this.reply(sock, id, { error: `unknown store op ${String(op)}` });
    }
  }

  private wake(): void {
    this.waiters = this.waiters.filter((w) => {
      if (w.sock.destroyed) return false;
      if (!w.keys.every((k) => this.data.has(k))) return true;
      this.reply(w.sock, w.id, {}, w.get ? this.data.get(w.keys[0]) : undefined);
      return false;
    });
  }

  close(): void {
    for (const s of this.clients) s.destroy();
    this.server.close();
  }
}

/**
 * `torch.distributed.TCPStore(hostName, port, {worldSize, isMaster, timeout, waitForWorkers})`
 * (PyTorch's positional `worldSize, isMaster` are accepted too). The master listens on `port`
 * (0 picks a free one: `store.port` once `ready`); clients retry connecting until the timeout.
 * Every method is async and waits for `ready` first.
 */
export class TCPStore {
  readonly hostName: string;
  /** The port (the chosen one, once `ready` resolves, when 0 was asked). */
  port: number;
  readonly worldSize: number | null;
  readonly isMaster: boolean;
  /** Milliseconds a call waits. */
  timeout: number;
  /** Resolves when connected (the master: listening, and with `waitForWorkers`, every client joined). */
  readonly ready: Promise<void>;
  private sock: Socket | null = null;
  private server: StoreServer | null = null;
  private nextId = 1;
  private calls = new Map<number, { resolve: (f: Frame) => void; reject: (e: Error) => void }>();
  private closed = false;
  /** @internal The address this process reached the master from (what other ranks can reach it at). */
  localAddress = '127.0.0.1';

  constructor(hostName: string, port: number, worldSizeOrOptions?: number | null | TCPStoreOptions, isMaster?: boolean, timeout?: number) {
    const o: TCPStoreOptions = typeof worldSizeOrOptions === 'object' && worldSizeOrOptions !== null
      ? worldSizeOrOptions
      : { worldSize: worldSizeOrOptions ?? null, isMaster, timeout };
    if (typeof hostName !== 'string' || !hostName) throw new TypeError(`TCPStore: hostName must be a non-empty string, got ${String(hostName)}`);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError(`TCPStore: port must be an integer in [0, 65535], got ${String(port)}`);
    this.hostName = hostName;
    this.port = port;
    this.worldSize = o.worldSize ?? null;
    this.isMaster = o.isMaster ?? false;
    this.timeout = o.timeout ?? 300_000;
    this.ready = this.start(o.waitForWorkers ?? true);
    this.ready.catch(() => {});
  }

  /** @internal A store from `host:port`. */
  static parse(what: string, addr: string, options: TCPStoreOptions): TCPStore {
    const { host, port } = hostPort(what, addr);
    return new TCPStore(host, port, options);
  }

  private async start(waitForWorkers: boolean): Promise<void> {
    const n = net('TCPStore');
    let joined: Promise<void> | null = null;
    if (this.isMaster) {
      const server = n.createServer();
      server.unref();
      this.server = new StoreServer(server);
      try {
        this.port = await listen(server, this.hostName, this.port);
      } catch (e) {
        throw new Error(`TCPStore: the master could not listen on ${this.hostName}:${this.port}: ${(e as Error).message}`);
      }
      if (waitForWorkers && this.worldSize) {
        const s = this.server, k = this.worldSize;
        joined = new Promise((res) => {
          s.onJoin = () => s.joined >= k && res();
        });
      }
    }
    const deadline = Date.now() + this.timeout;
    for (let delay = 10; ; delay = Math.min(delay * 2, 500)) {
      try {
        this.sock = await new Promise<Socket>((resolve, reject) => {
          const s = n.connect(this.port, this.hostName, () => resolve(s));
          s.once('error', reject);
        });
        break;
      } catch (e) {
        if (Date.now() + delay > deadline) throw new Error(`TCPStore: could not connect to ${this.hostName}:${this.port} within ${this.timeout} ms: ${(e as Error).message}`);
        await new Promise((r) => setTimeout(r, delay));
      }
    }
    const sock = this.sock;
    sock.setNoDelay(true);
    sock.unref();
    this.localAddress = sock.localAddress ?? '127.0.0.1';
    sock.on('error', () => {});
    sock.on('close', () => {
      const why = new Error(`TCPStore: the connection to ${this.hostName}:${this.port} closed${this.closed ? '' : ' (the master process may have exited)'}`);
      for (const c of this.calls.values()) c.reject(why);
      this.calls.clear();
      this.closed = true;
    });
    readFrames(sock, (f) => {
      const c = this.calls.get(f.head.id);
      if (!c) return;
      this.calls.delete(f.head.id);
      if (f.head.error) c.reject(new Error(`TCPStore: ${f.head.error}`));
      else c.resolve(f);
    });
    await this.call({ op: 'hello' }, undefined, this.timeout, 'hello');
    if (joined) await this.bounded(joined, `waiting for ${this.worldSize} processes to join`, this.timeout);
  }

  private async bounded<T>(p: Promise<T>, what: string, ms: number): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      return await Promise.race([p, new Promise<never>((_, rej) => {
        timer = setTimeout(() => rej(new Error(`TCPStore: wait timeout after ${ms}ms, ${what}`)), ms);
      })]);
    } finally {
      clearTimeout(timer);
    }
  }

  private call(head: Record<string, unknown>, body: Uint8Array | undefined, ms: number, what: string): Promise<Frame> {
    if (this.closed || !this.sock) return Promise.reject(new Error(`TCPStore: ${what}: the store is closed`));
    const id = this.nextId++;
    const p = new Promise<Frame>((resolve, reject) => this.calls.set(id, { resolve, reject }));
    writeFrame(this.sock, { ...head, id }, body);
    return this.bounded(p, what, ms).finally(() => this.calls.delete(id));
  }

  private static bytes(v: string | Uint8Array): Uint8Array {
    if (typeof v === 'string') return enc.encode(v);
    // A copy: the socket holds what it is given until it is sent, and the caller may reuse its buffer.
    if (v instanceof Uint8Array) return v.slice();
    throw new TypeError(`TCPStore: a value must be a string or a Uint8Array, got ${typeof v}`);
  }

  /** `store.set(key, value)`. */
  async set(key: string, value: string | Uint8Array): Promise<void> {
    await this.ready;
    await this.call({ op: 'set', key }, TCPStore.bytes(value), this.timeout, `set('${key}')`);
  }

  /** `store.get(key)`: the value's bytes, once the key is set (raises after the timeout). */
  async get(key: string): Promise<Uint8Array> {
    await this.ready;
    return (await this.call({ op: 'get', keys: [key] }, undefined, this.timeout, `keys: ${key}`)).body;
  }

  /** `store.add(key, amount)`: adds to the integer at `key` (0 when unset); the new value. */
  async add(key: string, amount: number): Promise<number> {
    if (!Number.isInteger(amount)) throw new TypeError(`TCPStore.add: amount must be an integer, got ${String(amount)}`);
    await this.ready;
    return (await this.call({ op: 'add', key, amount }, undefined, this.timeout, `add('${key}')`)).head.n;
  }

  /** `store.compareSet(key, expected, desired)`: sets `desired` if the value is `expected` (or unset and `expected` empty); the value after. */
  async compareSet(key: string, expected: string | Uint8Array, desired: string | Uint8Array): Promise<Uint8Array> {
    await this.ready;
    const e = TCPStore.bytes(expected), d = TCPStore.bytes(desired);
    const body = new Uint8Array(e.length + d.length);
    body.set(e);
    body.set(d, e.length);
    return (await this.call({ op: 'compareSet', key, split: e.length }, body, this.timeout, `compareSet('${key}')`)).body;
  }

  /** `store.wait(keys, timeout?)`: resolves once every key is set; raises "wait timeout" after `timeout` ms. */
  async wait(keys: string[], timeout?: number): Promise<void> {
    if (!Array.isArray(keys)) throw new TypeError('TCPStore.wait: keys must be a list of strings');
    await this.ready;
    await this.call({ op: 'wait', keys }, undefined, timeout ?? this.timeout, `keys: ${keys.join(', ')}`);
  }

  /** `store.check(keys)`: whether every key is set, at once. */
  async check(keys: string[]): Promise<boolean> {
    await this.ready;
    return (await this.call({ op: 'check', keys }, undefined, this.timeout, 'check')).head.ok;
  }

  /** `store.deleteKey(key)`: whether it was there. */
  async deleteKey(key: string): Promise<boolean> {
    await this.ready;
    return (await this.call({ op: 'delete', key }, undefined, this.timeout, `deleteKey('${key}')`)).head.ok;
  }

  /** `store.numKeys()`. */
  async numKeys(): Promise<number> {
    await this.ready;
    return (await this.call({ op: 'numKeys' }, undefined, this.timeout, 'numKeys')).head.n;
  }

  /** `store.setTimeout(ms)`. */
  setTimeout(ms: number): void {
    this.timeout = ms;
  }

  /** Closes this process's connection (and the server, on the master). */
  close(): void {
    this.closed = true;
    this.sock?.end();
    this.server?.close();
  }
}
