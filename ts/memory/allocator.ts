// CachingAllocator: the synchronous TypeScript face of the WASM bookkeeping.
//
// Rules and hard parts:
// - One instance per device. It never touches device memory: malloc returns a
//   (segment, offset) pair and the host creates/destroys segments through the
//   callbacks. Everything runs on the calling thread, so OOM is an exception
//   thrown by malloc itself, as in PyTorch.
// - Arguments are checked here (TypeError/RangeError naming the value) and
//   again on the WASM side, whose error codes become the same exceptions.
// - Host callbacks must never unwind through WASM: their exceptions are caught
//   and treated as failure (createSegment) or re-thrown once the allocator's
//   tables are consistent again (releaseSegment; a malloc that succeeded is
//   rolled back first, so nothing stays half-allocated).
// - Callbacks may not call back into the allocator; that is refused.
// - Handles are unique per allocator within a JS realm, so a handle from
//   another device's allocator is reported as unknown instead of freeing a
//   random block.

import { BlockError, OutOfMemoryError } from "./errors.js";
import { decodeStats, type MemoryStats } from "./stats.js";
import { memorySummary } from "./summary.js";
import { takeSnapshot, type SnapshotSegment } from "./snapshot.js";
import { instantiateAllocator, WasmCode, type AllocatorExports } from "./wasm.js";

/** Construction options of {@link CachingAllocator}. */
export interface CachingAllocatorOptions {
  /** Device capacity in bytes. */
  capacity: number;
  /** Device label, e.g. `gpu:0` or `cpu`; used in summaries and errors. */
  label: string;
  /** Host's minimum offset alignment (power of two dividing 512); only validated. */
  alignment?: number;
  /** Create segment `segmentId` of `bytes` bytes; return false if the real allocation failed. */
  createSegment(segmentId: number, bytes: number): boolean;
  /** Destroy segment `segmentId`. */
  releaseSegment(segmentId: number): void;
  /** Blocks of at least this size are never split (integer > 20 MiB); default unlimited. */
  maxSplitSize?: number;
  /** Initial memory fraction, 0 < f <= 1; default 1. */
  memoryFraction?: number;
  /** Optional: bytes the device holds outside the segments (workspaces), counted as reserved. */
  externalReserved?(): number;
  /** Optional: wait for all streams now; return true if done (completes every deferred free). */
  synchronize?(): boolean;
}

/** Result of {@link CachingAllocator.malloc}. */
export interface Allocation {
  /** Handle to pass to free/recordStream. */
  block: number;
  /** Segment id (as given to createSegment). */
  segment: number;
  /** Byte offset within the segment (a multiple of 512). */
  offset: number;
  /** Block size: the request rounded up to 512 B. */
  size: number;
}

const MIN_MAX_SPLIT = 20 * 1024 * 1024;
const HANDLE_SPACE = 2 ** 40;
const UNLIMITED = 2 ** 53;
let instances = 0;

function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  return String(value);
}

function checkBytes(what: string, value: unknown): number {
  if (typeof value !== "number") throw new TypeError(`${what} must be a number of bytes, got ${describe(value)}`);
  if (Number.isNaN(value)) throw new TypeError(`${what} must be an integer number of bytes, got NaN`);
  if (value < 0) throw new RangeError(`${what} must not be negative, got ${value}`);
  if (value > Number.MAX_SAFE_INTEGER) throw new RangeError(`${what} is too large, got ${value}`);
  if (!Number.isInteger(value)) throw new TypeError(`${what} must be an integer number of bytes, got ${value}`);
  return value;
}

function checkStream(what: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw new TypeError(`${what} must be an integer stream id, got ${describe(value)}`);
  }
  if (value < 0 || value > 0x7fffffff) throw new RangeError(`${what} must be in [0, 2^31), got ${value}`);
  return value;
}

function checkFraction(value: unknown): number {
  if (typeof value !== "number" || !(value > 0 && value <= 1)) {
    throw new RangeError(`memory fraction must be a number in (0, 1], got ${describe(value)}`);
  }
  return value;
}

function oomDeviceName(label: string): string {
  const gpu = /^(?:gpu|cuda):(\d+)$/i.exec(label);
  if (gpu) return `GPU ${gpu[1]}`;
  return label.toLowerCase() === "cpu" ? "CPU" : label;
}

/** PyTorch-style caching allocator bookkeeping for one device. */
export class CachingAllocator {
  /** Device label given at construction. */
  readonly label: string;
  /** Host alignment given at construction (default 512). */
  readonly alignment: number;
  readonly #options: CachingAllocatorOptions;
  readonly #wasm: AllocatorExports;
  #busy = false;
  #createError: unknown;
  #releaseError: unknown;

  /** Validates the options and creates a fresh WASM instance. */
  constructor(options: CachingAllocatorOptions) {
    if (typeof options !== "object" || options === null) throw new TypeError("CachingAllocator: options object required");
    if (typeof options.label !== "string" || options.label === "") {
      throw new TypeError(`CachingAllocator: label must be a non-empty string, got ${describe(options.label)}`);
    }
    if (typeof options.createSegment !== "function" || typeof options.releaseSegment !== "function") {
      throw new TypeError("CachingAllocator: createSegment and releaseSegment callbacks are required");
    }
    if (options.synchronize !== undefined && typeof options.synchronize !== "function") {
      throw new TypeError("CachingAllocator: synchronize must be a function");
    }
    const capacity = checkBytes("CachingAllocator: capacity", options.capacity);
    const alignment = options.alignment ?? 512;
    if (typeof alignment !== "number" || !Number.isInteger(alignment) || alignment < 1 || 512 % alignment !== 0) {
      throw new RangeError(`CachingAllocator: alignment must be a power of two dividing 512, got ${describe(alignment)}`);
    }
    let maxSplit = UNLIMITED;
    if (options.maxSplitSize !== undefined && options.maxSplitSize !== Infinity) {
      maxSplit = checkBytes("CachingAllocator: maxSplitSize", options.maxSplitSize);
      if (maxSplit <= MIN_MAX_SPLIT) {
        throw new RangeError(`CachingAllocator: maxSplitSize must exceed 20 MiB (${MIN_MAX_SPLIT}), got ${maxSplit}`);
      }
    }
    const fraction = checkFraction(options.memoryFraction ?? 1);
    this.label = options.label;
    this.alignment = alignment;
    this.#options = options;
    this.#wasm = instantiateAllocator({
      createSegment: (id, bytes) => this.#hostCreate(id, bytes),
      releaseSegment: (id) => this.#hostRelease(id),
      synchronize: () => this.#hostSynchronize(),
    });
    const base = (instances++ % 8192) * HANDLE_SPACE;
    if (this.#wasm.init(capacity, fraction, maxSplit, base) !== WasmCode.ok) {
      throw new RangeError("CachingAllocator: invalid configuration");
    }
  }

  #hostCreate(id: number, bytes: number): number {
    try {
      return this.#options.createSegment(id, bytes) === true ? 1 : 0;
    } catch (error) {
      this.#createError ??= error;
      return 0;
    }
  }

  #hostRelease(id: number): void {
    try {
      this.#options.releaseSegment(id);
    } catch (error) {
      this.#releaseError ??= error;
    }
  }

  #hostSynchronize(): number {
    try {
      return this.#options.synchronize?.() === true ? 1 : 0;
    } catch {
      return 0;
    }
  }

  #enter<T>(body: (w: AllocatorExports) => T): T {
    if (this.#busy) throw new Error(`${this.label} allocator: re-entrant call from a host callback`);
    this.#busy = true;
    this.#createError = undefined;
    this.#releaseError = undefined;
    try {
      return body(this.#wasm);
    } finally {
      this.#busy = false;
    }
  }

  #throwReleaseError(): void {
    if (this.#releaseError !== undefined) throw this.#releaseError;
  }

  #fail(code: number, block: unknown, stream?: unknown): never {
    switch (code) {
      case WasmCode.alreadyFreed:
        throw new BlockError(block, "already-freed", this.label);
      case WasmCode.unknownBlock:
        throw new BlockError(block, "unknown", this.label);
      case WasmCode.badSize:
        throw new RangeError(`${this.label} allocator: invalid size ${describe(block)}`);
      case WasmCode.badStream:
        throw new RangeError(`${this.label} allocator: invalid stream ${describe(stream)}`);
      default:
        throw new Error(`${this.label} allocator: unexpected result ${code}`);
    }
  }

  #stats(): Float64Array {
    const w = this.#wasm;
    return new Float64Array(w.memory.buffer, w.statsPointer(), w.statsLength());
  }

  #outOfMemory(bytes: number): OutOfMemoryError {
    const w = this.#wasm;
    const stats = this.memoryStats();
    const capacity = w.getCapacity();
    const fraction = w.getFraction();
    const allocated = stats["allocated_bytes.all.current"];
    const reserved = stats["reserved_bytes.all.current"];
    return new OutOfMemoryError(
      {
        device: oomDeviceName(this.label),
        requestedBytes: bytes,
        allocationBytes: w.lastOomSize(),
        capacity,
        free: Math.max(0, capacity - reserved),
        allowed: fraction < 1 ? Math.floor(capacity * fraction) : undefined,
        allocated,
        reservedUnallocated: reserved - allocated,
      },
      this.#createError === undefined ? undefined : { cause: this.#createError },
    );
  }

  /** Allocates `bytes` (rounded up to 512) for `stream`; throws OutOfMemoryError. */
  malloc(bytes: number, stream = 0): Allocation {
    checkBytes("malloc: size", bytes);
    checkStream("malloc: stream", stream);
    return this.#enter((w) => {
      const block = w.malloc(bytes, stream);
      if (block < 0) {
        this.#throwReleaseError();
        if (block === WasmCode.outOfMemory) throw this.#outOfMemory(bytes);
        this.#fail(block, bytes, stream);
      }
      const result = { block, segment: w.lastSegment(), offset: w.lastOffset(), size: w.lastSize() };
      if (this.#releaseError !== undefined) {
        w.free(block);
        this.#throwReleaseError();
      }
      return result;
    });
  }

  /** Frees a block; deferred while streams recorded with recordStream are busy. */
  free(block: number): void {
    if (typeof block !== "number") throw new TypeError(`free: block must be a handle number, got ${describe(block)}`);
    this.#enter((w) => {
      const code = w.free(block);
      if (code !== WasmCode.ok) this.#fail(code, block);
    });
  }

  /** Marks `block` as used by `stream`: its memory is reused only after streamDone(stream). */
  recordStream(block: number, stream: number): void {
    if (typeof block !== "number") throw new TypeError(`recordStream: block must be a handle number, got ${describe(block)}`);
    checkStream("recordStream: stream", stream);
    this.#enter((w) => {
      const code = w.recordStream(block, stream);
      if (code !== WasmCode.ok) this.#fail(code, block, stream);
    });
  }

  /** Host report: all work queued on `stream` so far has finished. Returns the frees it completed. */
  streamDone(stream: number): number {
    checkStream("streamDone: stream", stream);
    return this.#enter((w) => w.streamDone(stream));
  }

  /**
   * Host: the work queued on `stream` so far ends at `mark` (the host's numbering, increasing);
   * frees of blocks recorded on `stream` from now on wait for `streamDone(stream, mark)`.
   */
  streamMark(stream: number, mark: number): void {
    checkStream("streamMark: stream", stream);
    this.#enter((w) => w.streamMark(stream, mark));
  }

  /** Host report: the work of `stream` up to `mark` has finished. Returns the frees it completed. */
  streamDoneUpTo(stream: number, mark: number): number {
    checkStream("streamDoneUpTo: stream", stream);
    return this.#enter((w) => w.streamDoneUpTo(stream, mark));
  }

  /** Releases every segment whose blocks are all free (after synchronize, when available). */
  emptyCache(): void {
    this.#enter((w) => {
      w.emptyCache();
      this.#throwReleaseError();
    });
  }

  /**
   * Keeps the segments of `stream` (a captured graph's private pool, which has a stream of its
   * own) from being released by emptyCache or an out-of-memory retry, or stops keeping them.
   */
  keepPool(stream: number, kept: boolean): void {
    checkStream("keepPool: stream", stream);
    this.#enter((w) => w.keepPool(stream, kept ? 1 : 0));
  }

  /** Releases the fully free segments of `stream` (a pool no graph keeps any more). */
  releasePool(stream: number): void {
    checkStream("releasePool: stream", stream);
    this.#enter((w) => {
      w.releasePool(stream);
      this.#throwReleaseError();
    });
  }

  /** Limits this allocator to `fraction` of the capacity (0 < fraction <= 1). */
  setMemoryFraction(fraction: number): void {
    checkFraction(fraction);
    this.#enter((w) => w.setFraction(fraction));
  }

  /** Current memory fraction. */
  get memoryFraction(): number {
    return this.#wasm.getFraction();
  }

  /** Device capacity in bytes. */
  get capacity(): number {
    return this.#wasm.getCapacity();
  }

  /** Changes the device capacity (existing segments are kept). */
  set capacity(bytes: number) {
    checkBytes("capacity", bytes);
    this.#enter((w) => w.setCapacity(bytes));
  }

  /** Statistics with torch.cuda.memory_stats() keys. */
  memoryStats(): MemoryStats {
    const stats = decodeStats(this.#stats(), this.#wasm.getMaxSplitSize());
    const external = this.#options.externalReserved?.() ?? 0;
    if (external > 0) {
      stats["reserved_bytes.all.current"] += external;
      stats["reserved_bytes.all.peak"] = Math.max(stats["reserved_bytes.all.peak"], stats["reserved_bytes.all.current"]);
    }
    return stats;
  }

  /** allocated_bytes.all.current */
  memoryAllocated(): number {
    return this.memoryStats()["allocated_bytes.all.current"];
  }

  /** allocated_bytes.all.peak */
  maxMemoryAllocated(): number {
    return this.memoryStats()["allocated_bytes.all.peak"];
  }

  /** reserved_bytes.all.current */
  memoryReserved(): number {
    return this.memoryStats()["reserved_bytes.all.current"];
  }

  /** reserved_bytes.all.peak */
  maxMemoryReserved(): number {
    return this.memoryStats()["reserved_bytes.all.peak"];
  }

  /** Segments and their blocks. */
  memorySnapshot(): SnapshotSegment[] {
    return takeSnapshot(this.#wasm);
  }

  /** PyTorch-style memory summary table. */
  memorySummary(abbreviated = false): string {
    return memorySummary(this.memoryStats(), this.label, abbreviated);
  }

  /** Sets every peak to the current value. */
  resetPeakMemoryStats(): void {
    this.#wasm.resetPeakStats();
  }

  /** Zeroes the allocated/freed totals and the counters (num_alloc_retries, num_ooms, ...). */
  resetAccumulatedMemoryStats(): void {
    this.#wasm.resetAccumulatedStats();
  }
}
