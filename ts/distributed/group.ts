/**
 * `torch.distributed` in one process: ranks are async tasks (`spawn`), one per device, and a
 * collective is issued by each rank on its own, as NCCL's are.
 *
 * Why each rank can issue alone: a collective is a set of worker-to-worker `send`/`recv` commands
 * with agreed tags. Rank r queues only its side (its sends, its receives, its combines) on its own
 * device; a `recv` holds that device's stream until the peer's bytes arrive (ts/worker/
 * peers.ts), so rank r's later work (an optimizer step after the gradient all-reduce) waits
 * for the other ranks on the device, never in the calling thread. This is what lets
 * `loss.backward()` start each bucket's all-reduce synchronously in DistributedDataParallel.
 *
 * The host side is a rendezvous per collective (by each rank's call count): the first rank to
 * reach collective n reserves its tags and records its shape, dtype and op; later ranks check
 * theirs against it. A collective that not every rank reaches within the group's `timeout`
 * rejects its `wait()` with a message naming the missing ranks. (Until then the devices of the
 * ranks that did issue their side wait for the others; see README "Many GPUs".)
 *
 * Note [a failed collective]: a call that differs from another rank's (naming both), a time-out,
 * a rank whose `spawn` function throws, or a side that throws half-queued fails the whole group,
 * as NCCL's watchdog aborts its communicator. Every pending collective rejects with the reason on
 * every rank, every later one raises NCCL's "communicator was aborted" naming it, and each
 * device gets `abortTags` for the collectives some rank has not queued its side of: a `recv` of
 * theirs would otherwise hold its stream forever (and with it every later sync and collective on
 * that device). The worker fails those receives, now or when they run, and drops their bytes
 * (ts/worker/peers.ts); the error surfaces at the device's next sync point, once, and the device
 * goes on for other work. Collectives every rank has issued need nothing: their bytes all come.
 */
import { ContextVar } from '../context.js';
import { Device, currentDevice, init as initGpus, device as toDevice, withDevice, type DeviceLike } from '../device.js';
import { elementSize } from '../dtype.js';
import { fmt } from '../shape.js';
import { Tensor } from '../tensor.js';
import { connect, newTag } from '../runtime/peers.js';
import { checkOptions } from '../args.js';
import { emit } from '../runtime/dispatch.js';
import { env } from '../platform.js';
import { SocketGroup } from './socket-group.js';
import { threadRanks } from './port-mesh.js';
import { hostPort } from './wire.js';

/** A collective's handle (`asyncOp: true`). */
export interface Work {
  /** Resolves once every rank has issued its side; the data moves in the devices' stream order. */
  wait(): Promise<void>;
  /** Whether the collective has finished: every rank issued its side and this rank's device has its result. */
  isCompleted(): boolean;
}

interface Pending {
  base: number;
  tags: number;
  sig: string;
  first: number;
  arrived: Set<number>;
  /** The ranks that have queued their whole side on their device. */
  issued: Set<number>;
  resolve: () => void;
  reject: (e: Error) => void;
  done: Promise<void>;
  timer: ReturnType<typeof setTimeout> | null;
}

/** PyTorch's (NCCL's) message for a collective called on a group that has failed. */
const abortedOn = (rank: number, why: string) => `NCCL communicator was aborted on rank ${rank}. Original reason for failure was: ${why}`;

/** The ranks of one `initMethod`: their devices, and the collectives under way. */
class World {
  devices: (Device | undefined)[];
  joined = 0;
  left = 0;
  ready: Promise<void>;
  private open!: () => void;
  /** Collectives not every rank has reached (by call count). */
  pending = new Map<number, Pending>();
  /** Collectives not every rank has queued its side of: a `recv` of theirs may wait for bytes no rank will send. */
  unissued = new Map<number, Pending>();
  /** Why the group failed (Note [a failed collective]), or null. */
  failed: string | null = null;
  constructor(readonly key: string, readonly worldSize: number, readonly timeout: number) {
    this.devices = new Array(worldSize);
    this.ready = new Promise((res) => {
      this.open = res;
    });
  }

  join(rank: number, dev: Device): void {
    if (this.devices[rank]) throw new RangeError(`initProcessGroup: rank ${rank} joined ${this.key} twice`);
    const other = this.devices.findIndex((d) => d === dev);
    if (other >= 0) throw new RangeError(`initProcessGroup: rank ${rank} and rank ${other} are both on ${dev} (one device per rank)`);
    this.devices[rank] = dev;
    if (++this.joined === this.worldSize) {
      const ds = this.devices as Device[];
      for (let i = 0; i < ds.length; i++) for (let j = i + 1; j < ds.length; j++) connect(ds[i], ds[j]);
      this.open();
    }
  }

  /** Rank `rank` reaches collective `seq`: the tags, after checking its call against the first rank's. */
  arrive(seq: number, rank: number, sig: string, tags: number, what: string): Pending {
    if (this.failed) throw new Error(`${what}: ${abortedOn(rank, this.failed)}`);
    let p = this.pending.get(seq);
    if (!p) {
      const base = newTag();
      for (let i = 1; i < tags; i++) newTag();
      let resolve!: () => void, reject!: (e: Error) => void;
      const done = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      done.catch(() => {});
      p = { base, tags, sig, first: rank, arrived: new Set(), issued: new Set(), resolve, reject, done, timer: null };
      const q = p;
      q.timer = setTimeout(() => {
        const missing = [...this.devices.keys()].filter((r) => !q.arrived.has(r));
        this.fail(`${what} (collective ${seq}) timed out after ${this.timeout} ms: rank${missing.length > 1 ? 's' : ''} ${missing.join(', ')} never called it (called by rank${q.arrived.size > 1 ? 's' : ''} ${[...q.arrived].join(', ')})`);
      }, this.timeout);
      (q.timer as { unref?: () => void }).unref?.();
      this.pending.set(seq, p);
      this.unissued.set(seq, p);
    } else if (p.sig !== sig) {
      const why = `${what} (collective ${seq}): rank ${rank} called ${sig} but rank ${p.first} called ${p.sig}`;
      this.fail(why);
      throw new Error(why);
    }
    p.arrived.add(rank);
    if (p.arrived.size === this.worldSize) {
      clearTimeout(p.timer!);
      this.pending.delete(seq);
      p.resolve();
    }
    return p;
  }

  /** Rank `rank` has queued its whole side of collective `seq`. */
  issued(seq: number, rank: number): void {
    const p = this.unissued.get(seq);
    if (p && p.issued.add(rank).size === this.worldSize) this.unissued.delete(seq);
  }

  /**
   * The group fails (Note [a failed collective]): every pending collective rejects with `why`,
   * every later one raises NCCL's "aborted" naming it, and every device drops the receives of
   * the collectives some rank has not queued its side of.
   */
  fail(why: string): void {
    if (this.failed) return;
    this.failed = why;
    for (const p of this.pending.values()) {
      clearTimeout(p.timer!);
      p.reject(new Error(why));
    }
    this.pending.clear();
    const ranges = [...this.unissued.values()].flatMap((p) => [p.base, p.base + p.tags]);
    this.unissued.clear();
    if (!ranges.length) return;
    this.devices.forEach((dev, rank) => {
      if (!dev) return;
      try {
        emit(dev, { k: 'abortTags', ranges, why: abortedOn(rank, why) });
      } catch {
        // A device that can no longer take commands (lost) has no receive left to release.
      }
    });
  }
}

const worlds = new Map<string, World>();

/** A group of ranks in this process (`ProcessGroup`) or of processes (`SocketGroup`). */
export type Group = ProcessGroup | SocketGroup;

/** The process group of the running rank (set by `initProcessGroup`; inside `spawn`, per rank). */
const current = new ContextVar<Group | null>('initProcessGroup', null);
/** The world of the running `spawn` rank, for failure reports. */
const spawnRank = new ContextVar<SpawnedRank | null>('spawn', null);

/** What `spawn` tells its ranks (PyTorch's launcher sets RANK and WORLD_SIZE the same way). */
interface SpawnedRank {
  rank: number;
  nprocs: number;
  key: string;
  group: Group | null;
}
let spawns = 0;

/** `initProcessGroup`'s options, PyTorch's keywords. */
export interface InitOptions {
  /**
   * `'webtorch'` (or `'nccl'`, its alias, as `'cuda'` is gpu's): one GPU device per rank;
   * `'gloo'`: between processes, the rank's device defaults to `cpu`.
   */
  backend?: string;
  /** The number of ranks (inside `spawn`: `nprocs`; with `env://`: `WORLD_SIZE`, when omitted). */
  worldSize?: number;
  /** This rank (inside `spawn`: the spawned rank; with `env://`: `RANK`, when omitted). */
  rank?: number;
  /**
   * The rendezvous: `'inproc://name'` (ranks in this process), `'env://'` (ranks in separate
   * processes, the store at `MASTER_ADDR:MASTER_PORT`, as torchrun and `webtorch-run` set) or
   * `'tcp://host:port'`. Default: the enclosing `spawn`'s own; else `'env://'` when `MASTER_ADDR`
   * is set; else `'inproc://default'`.
   */
  initMethod?: string;
  /** This rank's device (default: the current GPU, which `spawn` sets to `gpu:rank`; `cpu` for `gloo`). */
  device?: DeviceLike;
  /** Milliseconds a collective (and the rendezvous) waits for every rank (default 30000). */
  timeout?: number;
}

/** One rank's view of a group of ranks (`dist.new_group`'s result; the default group is the one `initProcessGroup` makes). */
export class ProcessGroup {
  private seq = 0;
  /** @internal */
  constructor(readonly world: World, readonly rank: number, readonly device: Device) {}

  get worldSize(): number {
    return this.world.worldSize;
  }

  /**
   * @internal Collective number `seq` for this rank: checks the call against the other ranks',
   * reserves `tags` tags and queues this rank's side (`issue(base)`); returns its completion. A
   * side that throws half-queued fails the group, so that no rank waits for the rest of it.
   */
  _collective(what: string, sig: string, tags: number, issue: (base: number) => void = () => {}): Pending {
    const seq = ++this.seq;
    const p = this.world.arrive(seq, this.rank, sig, tags, what);
    try {
      issue(p.base);
    } catch (e) {
      this.world.fail(`rank ${this.rank} failed in ${what} (collective ${seq}): ${e instanceof Error ? e.message : String(e)}`);
      throw e;
    }
    this.world.issued(seq, this.rank);
    return p;
  }

  /** @internal The device of `rank`. */
  _deviceOf(rank: number): Device {
    return this.world.devices[rank]!;
  }
}

/**
 * `torch.distributed.initProcessGroup({backend: 'webtorch', worldSize, rank, initMethod})`: joins
 * this rank (a `spawn` task) to the group; resolves when every rank has joined. Raises on a
 * world size that differs from another rank's, a rank out of range or twice, two ranks on one
 * device, and after `timeout` when ranks are missing.
 */
export async function initProcessGroup(options: InitOptions = {}): Promise<void> {
  checkOptions('initProcessGroup', options, ['backend', 'worldSize', 'rank', 'initMethod', 'device', 'timeout']);
  const who = spawnRank.get();
  const initMethod = options.initMethod ?? who?.key ?? (env('MASTER_ADDR') ? 'env://' : 'inproc://default');
  const fromEnv = initMethod === 'env://';
  const envInt = (name: string): number | undefined => {
    const v = env(name);
    if (!v) throw new Error(`Error initializing torch.distributed using env:// rendezvous: environment variable ${name} expected, but not set`);
    const n = Number(v);
    if (!Number.isInteger(n)) throw new RangeError(`initProcessGroup: environment variable ${name} must be an integer, got '${v}'`);
    return n;
  };
  const { backend = 'webtorch', timeout = 30_000 } = options;
  const worldSize = options.worldSize ?? who?.nprocs ?? (fromEnv ? envInt('WORLD_SIZE') : undefined);
  const rank = options.rank ?? who?.rank ?? (fromEnv ? envInt('RANK') : undefined);
  if (worldSize === undefined || rank === undefined) throw new TypeError('initProcessGroup: worldSize and rank are required outside torch.distributed.spawn (which sets them) and env:// (RANK and WORLD_SIZE, as torchrun and webtorch-run set)');
  if (backend !== 'webtorch' && backend !== 'nccl' && backend !== 'gloo') throw new RangeError(`initProcessGroup: backend '${backend}' is not available (webtorch has 'webtorch' and its alias 'nccl', and 'gloo')`);
  if (!(typeof timeout === 'number' && timeout > 0)) throw new RangeError(`initProcessGroup: timeout must be a positive number of milliseconds, got ${String(timeout)}`);
  if (!Number.isInteger(worldSize) || worldSize < 1) throw new RangeError(`initProcessGroup: worldSize must be a positive integer, got ${String(worldSize)}`);
  if (!Number.isInteger(rank) || rank < 0 || rank >= worldSize) throw new RangeError(`initProcessGroup: rank must be in [0, ${worldSize}), got ${String(rank)}`);
  if (current.get()) throw new Error('initProcessGroup: trying to initialize the default process group twice!');
  // NCCL's backend is the GPUs': a program whose first GPU line is this one finds them ready,
  // discovered through the rank's own device (naming it first), never gpu:0 as well.
  if (backend === 'nccl') {
    toDevice(options.device ?? currentDevice());
    await initGpus();
  }
  if (fromEnv || initMethod.startsWith('tcp://')) {
    const what = 'initProcessGroup';
    const addr = fromEnv ? `${envOr('MASTER_ADDR')}:${envOr('MASTER_PORT')}` : initMethod.slice('tcp://'.length);
    const { host, port } = hostPort(what, addr);
    const dev = toDevice(options.device ?? (backend === 'gloo' ? 'cpu' : currentDevice()));
    // A rank thread of `webtorch-run --threads` uses the ports the launcher gave it, not sockets.
    const threads = fromEnv ? threadRanks() : null;
    const group = threads ? SocketGroup.fromThreads(what, threads, rank, worldSize, dev, timeout) : await SocketGroup.connect(what, initMethod, host, port, rank, worldSize, dev, timeout);
    if (current.get()) {
      group._close();
      throw new Error('initProcessGroup: trying to initialize the default process group twice!');
    }
    current.set(group);
    if (who) who.group = group;
    return;
  }
  if (!initMethod.startsWith('inproc://')) throw new RangeError(`initProcessGroup: initMethod must be 'env://', 'tcp://host:port' or 'inproc://<name>' (ranks in this process), got '${initMethod}'`);
  let world = worlds.get(initMethod);
  if (world && world.worldSize !== worldSize) {
    throw new RangeError(`initProcessGroup: rank ${rank} has worldSize ${worldSize} but the group ${initMethod} has worldSize ${world.worldSize}`);
  }
  if (!world) {
    world = new World(initMethod, worldSize, timeout);
    worlds.set(initMethod, world);
  }
  const dev = toDevice(options.device ?? currentDevice());
  world.join(rank, dev);
  const group = new ProcessGroup(world, rank, dev);
  current.set(group);
  if (who) who.group = group;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, rej) => {
    timer = setTimeout(() => {
      const missing = [...world!.devices.keys()].filter((r) => !world!.devices[r]);
      rej(new Error(`initProcessGroup: timed out after ${timeout} ms waiting for rank${missing.length > 1 ? 's' : ''} ${missing.join(', ')} to join ${initMethod}`));
    }, timeout);
  });
  try {
    await Promise.race([world.ready, late]);
  } finally {
    clearTimeout(timer);
  }
}

function envOr(name: string): string {
  const v = env(name);
  if (!v) throw new Error(`Error initializing torch.distributed using env:// rendezvous: environment variable ${name} expected, but not set`);
  return v;
}

/** The running rank's default group; PyTorch's error when there is none. */
export function defaultGroup(group?: Group | null): Group {
  const g = group ?? current.get();
  if (!g) throw new Error('Default process group has not been initialized, please make sure to call initProcessGroup.');
  return g;
}

/** `dist.getRank()`: this rank's index in its group. */
export const getRank = (group?: Group | null): number => defaultGroup(group).rank;
/** `dist.getWorldSize()`: the number of ranks. */
export const getWorldSize = (group?: Group | null): number => defaultGroup(group).worldSize;
/** `dist.isInitialized()`: whether this rank has joined a group. */
export const isInitialized = (): boolean => current.get() !== null;

/** `dist.destroyProcessGroup()`: leaves the group (the rendezvous name may be used again once every rank has left). */
export function destroyProcessGroup(): void {
  const g = defaultGroup();
  current.set(null);
  if (g instanceof SocketGroup) return g._close();
  // The world keeps every rank's device: the others may still issue their side of a collective
  // this rank has already issued.
  if (++g.world.left === g.world.worldSize && worlds.get(g.world.key) === g.world) worlds.delete(g.world.key);
  current.set(null);
}

/**
 * `torch.distributed.spawn(fn, {nprocs, args})` (as `torch.multiprocessing.spawn`): runs
 * `fn(rank, ...args)` for each rank as concurrent tasks of this process, rank r with `gpu:r` as
 * its current device. Resolves with their results; if a rank throws, the others' collectives
 * reject naming it, and `spawn` rejects with PyTorch's "process N terminated" message.
 */
export async function spawn<R>(fn: (rank: number, ...args: any[]) => R | Promise<R>, options: { nprocs: number; args?: unknown[] }): Promise<R[]> {
  checkOptions('spawn', options, ['nprocs', 'args']);
  const { nprocs, args = [] } = options;
  if (!Number.isInteger(nprocs) || nprocs < 1) throw new RangeError(`spawn: nprocs must be a positive integer, got ${String(nprocs)}`);
  const key = `inproc://spawn-${++spawns}`;
  const runs = Array.from({ length: nprocs }, (_, rank) => {
    const who: SpawnedRank = { rank, nprocs, key, group: null };
    return spawnRank.run(who, () => current.run(null, async () => {
      try {
        return await withDevice(rank, async () => fn(rank, ...args));
      } catch (e) {
        if (who.group instanceof ProcessGroup) who.group.world.fail(`rank ${rank} failed: ${e instanceof Error ? e.message : String(e)}`);
        throw Object.assign(new Error(`\n\n-- Process ${rank} terminated with the following error:\n${e instanceof Error ? e.stack ?? e.message : String(e)}`), { cause: e });
      } finally {
        if (current.get()) destroyProcessGroup();
      }
    }));
  });
  const settled = await Promise.allSettled(runs);
  const bad = settled.find((s) => s.status === 'rejected') as PromiseRejectedResult | undefined;
  if (bad) throw bad.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<R>).value);
}

/** @internal A contiguous tensor's byte range, for send/recv. */
export function bytesOf(t: Tensor): { id: number; byteOffset: number; bytes: number } {
  const es = elementSize(t.dtype);
  return { id: t.storage.id, byteOffset: t.storage.byteOffset + t._offset * es, bytes: t.numel() * es };
}

/** @internal Queues a send of contiguous `t` to `peer` (on `t`'s device). */
export function sendTo(t: Tensor, peer: Device, tag: number): void {
  const b = bytesOf(t);
  if (b.bytes) emit(t.device, { k: 'send', peer: String(peer), tag, id: b.id, byteOffset: b.byteOffset, bytes: b.bytes });
}

/** @internal Queues a receive from `peer` into contiguous `t` (on `t`'s device). */
export function recvFrom(t: Tensor, peer: Device, tag: number): void {
  const b = bytesOf(t);
  if (b.bytes) emit(t.device, { k: 'recv', peer: String(peer), tag, id: b.id, byteOffset: b.byteOffset });
}

/** @internal A collective's signature for the cross-rank check. */
export const signature = (name: string, t: Tensor, extra = ''): string => `${name}(${fmt(t.shape)}, ${t.dtype}${extra ? `, ${extra}` : ''})`;
