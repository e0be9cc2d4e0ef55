/**
 * Storages: a block of the device's caching allocator, shared by a tensor and its views.
 *
 * Each tensor holds one reference to its storage. `dispose()` drops it at once; a tensor that
 * is dropped without `dispose()` drops it when the garbage collector finalises the tensor, so
 * forgotten tensors do not leak; when an allocation misses or the device's live bytes grow past
 * a limit, a collection is forced first (ts/runtime/collect.ts). The last reference returns the block to the allocator; any
 * later command that reuses it is queued behind every command that used it.
 *
 * Streams: a block is allocated for its device's current stream, and the allocator hands a
 * freed block out again at once only to that stream, whose later work the worker runs after
 * every earlier use. A block that other streams used must be marked with `t.recordStream(s)`:
 * its free then waits until `s` has finished the work queued on it by then (`recordedFree`).
 */
import { clientOf, type Device } from '../device.js';
import type { CachingAllocator } from '../memory/index.js';
import type { DeviceClient } from './client.js';
import { allocatorOf, recordedFree, settleFrees } from './memory.js';
import { profilerHooks } from '../profiler/hooks.js';
import { mallocCollecting, setCollectorHooks } from './collect.js';

const live = new Map<Device, { count: number; bytes: number }>();
/** The same figures by the device's name (the allocator's label), for the collector (ts/runtime/collect.ts). */
const liveByLabel = new Map<string, { count: number; bytes: number }>();

/** A device allocation. */
export class Storage {
  private refs = 0;
  readonly client: DeviceClient;
  private readonly allocator: CachingAllocator;
  /** The allocator's block handle. */
  private readonly block: number;
  /** The segment holding the block: the id kernels address. */
  readonly id: number;
  /** The block's byte offset in its segment (a multiple of 512). */
  readonly byteOffset: number;
  /** The stream the block was allocated for. */
  readonly stream: number;
  /** The allocator stream the block came from: `stream`, or a captured graph's pool. */
  private readonly allocStream: number;
  /** Whether the storage is pinned host memory (ts/runtime/pinned.ts). */
  pinned = false;
  /**
   * PyTorch's version counter, shared by every view of the storage: each in-place write through
   * the API (`copy_`, index assignment, `normal_` and the other fills) adds one, and autograd
   * refuses to use a tensor it saved if the counter has moved since (ts/autograd/graph.ts).
   */
  version = 0;
  /** Other streams that used the block (`recordStream`). */
  private recorded: Set<number> | null = null;

  private constructor(readonly device: Device, readonly bytes: number) {
    this.client = clientOf(device);
    this.allocator = allocatorOf(device);
    this.stream = this.client.stream;
    // A lost device raises here, before anything is allocated (ts/runtime/device-lost.ts).
    this.client.checkUsable();
    // during a graph's capture, the capture's streams allocate from the graph's pool (ts/runtime/graphs.ts)
    this.allocStream = this.client.capture ? this.client.capture.allocStream(this.stream) : this.stream;
    settleFrees(device);
    // a miss collects the tensors nobody holds and retries (ts/runtime/collect.ts)
    const a = mallocCollecting(this.allocator, bytes, this.allocStream);
    this.block = a.block;
    this.id = a.segment;
    this.byteOffset = a.offset;
    this.client.capture?.noteAlloc(this);
  }

  /** Allocates `bytes` on a device; throws `OutOfMemoryError` at the call when it cannot. */
  static alloc(device: Device, bytes: number): Storage {
    const s = new Storage(device, bytes);
    let l = live.get(device);
    if (!l) {
      live.set(device, (l = { count: 0, bytes: 0 }));
      liveByLabel.set(String(device), l);
    }
    l.count++;
    l.bytes += bytes;
    profilerHooks.current?.memory(device, bytes);
    return s;
  }

  /** Whether the storage was freed. */
  get freed(): boolean {
    return this.refs < 0;
  }

  retain(): this {
    this.refs++;
    return this;
  }

  /** Marks the block as used by `stream` of the same device (see the note at the top). */
  recordStream(stream: { device: Device; streamId: number }): void {
    if (stream.device !== this.device) {
      throw new Error(`record_stream: the stream is on ${stream.device}, but the tensor is on ${this.device}`);
    }
    if (stream.streamId === this.stream) return;
    this.allocator.recordStream(this.block, stream.streamId);
    (this.recorded ??= new Set()).add(stream.streamId);
  }

  /** Drops one reference; the last one frees the allocation. */
  release(): void {
    if (this.refs <= 0) return;
    if (--this.refs === 0) {
      this.refs = -1;
      if (this.recorded) recordedFree(this.device, this.block, this.recorded);
      // a block outside the pool freed during capture: the replayed kernels may still use it
      else if (!this.client.capture?.holdFree(this.allocStream, () => this.allocator.free(this.block))) this.allocator.free(this.block);
      const l = live.get(this.device)!;
      l.count--;
      l.bytes -= this.bytes;
      profilerHooks.current?.memory(this.device, -this.bytes);
    }
  }
}

/** @internal Live storages on a device (the leak check of the test suites). */
export function liveStorage(device: Device): { count: number; bytes: number } {
  return { ...(live.get(device) ?? { count: 0, bytes: 0 }) };
}

/** Releases the storage of tensors that were garbage-collected without `dispose()`. */
export const collected = new FinalizationRegistry<Storage>((s) => s.release());

/** What `watch` needs of a tensor. */
interface Watched {
  storage: Storage;
  isDisposed: boolean;
  _watched: boolean;
}

const pending: Watched[] = [];
let scheduled = false;
/** Tensors waiting longer than this in one synchronous run are registered at once (bounds the list). */
const MAX_PENDING = 1 << 14;

function registerPending(): void {
  scheduled = false;
  for (const t of pending) {
    if (t.isDisposed) continue;
    t._watched = true;
    collected.register(t, t.storage, t);
  }
  pending.length = 0;
}

/**
 * Note [Watching tensors late]. Each tensor must release its storage when the garbage collector
 * takes it undisposed, through `collected`. Registering with a FinalizationRegistry costs about
 * a microsecond, as much as the rest of an op's launch, and most tensors are disposed in the
 * same synchronous run that made them (by `tidy`, or a loop that disposes as it goes). So a new
 * tensor is registered at the end of the current run (a microtask), and only if it is still
 * alive then. Nothing is lost: a finalizer can only run after the run, and until then the list
 * keeps the tensor (a small JS object; its device memory is the same either way).
 */
export function watch(t: Watched): void {
  pending.push(t);
  if (pending.length >= MAX_PENDING) registerPending();
  else if (!scheduled) {
    scheduled = true;
    queueMicrotask(registerPending);
  }
}

setCollectorHooks({
  registry: collected as FinalizationRegistry<never>,
  watchPending: registerPending,
  liveBytes: (label) => liveByLabel.get(label)?.bytes ?? 0,
});
