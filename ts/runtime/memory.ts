/**
 * One caching allocator per device, on the calling thread, and PyTorch's memory API over them.
 *
 * The allocator (AssemblyScript, `assembly/allocator`) decides everything synchronously: which
 * segment and offset a tensor gets, when a new segment is needed, out-of-memory. Its segment
 * callbacks only queue `segment`/`release` commands; the worker creates the GPUBuffer (or WASM
 * range) in order, before any kernel that uses it. Freeing a block is pure bookkeeping: the
 * block is reused at once by later commands of the same queue, which run after every earlier
 * use of it, so no stream synchronisation is needed while all work is on one stream.
 *
 * Budgets: a GPU's memory size cannot be read through WebGPU, so each GPU device has a
 * documented default of 8 GiB (`WEBTORCH_GPU_MEMORY` or `torch.gpu.configure({memory})` set
 * it); `cpu` defaults to 2 GiB of WebAssembly memory (`WEBTORCH_CPU_MEMORY`).
 * `setPerProcessMemoryFraction` scales either.
 */
import { clientOf, currentDevice, device as toDevice, Device, gpuLimits, type DeviceLike } from '../device.js';
import { CachingAllocator, type Allocation, type MemoryStats, type SnapshotSegment } from '../memory/index.js';
import { env } from '../platform.js';
import { publishBudget, readScratch, takeCached } from '../worker/scratch.js';

const GiB = 1024 ** 3;
const allocators = new Map<Device, CachingAllocator>();
/** Republishes an allocator's budget to its worker (after the capacity or fraction changes). */
const publishers = new WeakMap<CachingAllocator, () => void>();
let gpuMemory: number | undefined;

function parseBytes(v: string | undefined): number | undefined {
  if (!v) return undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(b|kib|mib|gib|kb|mb|gb)?\s*$/i.exec(v);
  if (!m) throw new RangeError(`webtorch: cannot parse memory size ${JSON.stringify(v)} (use e.g. 8GiB or 8589934592)`);
  const unit = (m[2] ?? 'b').toLowerCase();
  const mult = unit.startsWith('k') ? 1024 : unit.startsWith('m') ? 1024 ** 2 : unit.startsWith('g') ? GiB : 1;
  return Math.floor(Number(m[1]) * mult);
}

/** @internal Sets the GPU memory budget (bytes) for allocators created from now on. */
export function setGpuMemory(bytes: number): void {
  if (!Number.isInteger(bytes) || bytes <= 0) throw new RangeError(`torch.gpu.configure: memory must be a positive number of bytes, got ${bytes}`);
  gpuMemory = bytes;
  for (const [d, a] of allocators) if (d.type === 'gpu') (a.capacity = bytes), publishers.get(a)?.();
}

/** The capacity a device's allocator starts with. */
function capacityOf(d: Device): number {
  if (d.type === 'cpu') return parseBytes(env('WEBTORCH_CPU_MEMORY')) ?? 2 * GiB;
  return gpuMemory ?? parseBytes(env('WEBTORCH_GPU_MEMORY')) ?? 8 * GiB;
}

/** @internal The caching allocator of a device (created on first use). */
export function allocatorOf(d: Device): CachingAllocator {
  let a = allocators.get(d);
  if (a) return a;
  const client = clientOf(d);
  // The segments' bytes and the budget, published for the GPU worker's scratch check (ts/worker/scratch.ts).
  const segments = new Map<number, number>();
  let segmentBytes = 0;
  const publish = () => publishBudget(client.scratch, a!.capacity * a!.memoryFraction, segmentBytes);
  a = new CachingAllocator({
    label: String(d),
    capacity: capacityOf(d),
    alignment: 256,
    // A segment larger than one binding holds one tensor, at offset 0: the GPU worker runs ops over
    // it in windows (ts/worker/split.ts), and a small tensor carved from it could not be bound whole.
    maxSplitSize: d.type === 'gpu' && gpuLimits().maxStorageBufferBindingSize > 20 * 1024 ** 2 ? gpuLimits().maxStorageBufferBindingSize : undefined,
    externalReserved: () => readScratch(client.scratch).reserved,
    createSegment(id, bytes) {
      const max = d.type === 'gpu' ? gpuLimits().maxBufferSize : 4 * GiB - 64 * 1024 ** 2;
      if (bytes > max) return false;
      // The worker's scratch buffers (ts/worker/scratch.ts) count against the budget too.
      const scratch = readScratch(client.scratch).reserved;
      if (scratch && a!.memoryStats()['reserved_bytes.all.current'] + bytes > a!.capacity * a!.memoryFraction) return false;
      client.enqueue({ k: 'segment', id, bytes });
      segments.set(id, bytes);
      segmentBytes += bytes;
      publish();
      return true;
    },
    releaseSegment(id) {
      client.enqueue({ k: 'release', id });
      segmentBytes -= segments.get(id) ?? 0;
      segments.delete(id);
      publish();
    },
  });
  allocators.set(d, a);
  publishers.set(a, publish);
  return a;
}

/** @internal Forgets every allocator (their segments died with the workers). */
export function resetAllocators(): void {
  allocators.clear();
}

const dev = (d?: DeviceLike): Device => (d === undefined ? toDevice(currentDevice()) : toDevice(d));

/** Bytes held by live tensors on a device (`torch.cuda.memory_allocated`). Defaults to the current GPU. */
export const memoryAllocated = (d?: DeviceLike): number => allocatorOf(dev(d)).memoryAllocated();
/** Peak of `memoryAllocated` since the start or the last reset. */
export const maxMemoryAllocated = (d?: DeviceLike): number => allocatorOf(dev(d)).maxMemoryAllocated();
/** Bytes in segments held by the caching allocator (`torch.cuda.memory_reserved`). */
export const memoryReserved = (d?: DeviceLike): number => allocatorOf(dev(d)).memoryReserved();
/** Peak of `memoryReserved`. */
export const maxMemoryReserved = (d?: DeviceLike): number => allocatorOf(dev(d)).maxMemoryReserved();
/** PyTorch's `memory_stats()` dictionary, with the same keys (`allocated_bytes.all.current`, …). */
export const memoryStats = (d?: DeviceLike): MemoryStats => allocatorOf(dev(d)).memoryStats();
/** PyTorch's `memory_summary()` table. */
export const memorySummary = (d?: DeviceLike, abbreviated = false): string => allocatorOf(dev(d)).memorySummary(abbreviated);
/** Segments and their blocks (`torch.cuda.memory_snapshot()`). */
export const memorySnapshot = (d?: DeviceLike): SnapshotSegment[] => allocatorOf(dev(d)).memorySnapshot();
/** Releases cached segments that hold no live tensor (`GPUBuffer.destroy()` on a GPU), and the worker's cached scratch. */
export function emptyCache(d?: DeviceLike): void {
  const device = dev(d);
  allocatorOf(device).emptyCache();
  const client = clientOf(device);
  // The GPU worker's cached scratch (read staging, operand copies) goes too; its bytes leave the figures now.
  if (client.scratch) client.enqueue({ k: 'dropScratch', accounted: takeCached(client.scratch) });
}
/** Sets peak statistics to their current values. */
export const resetPeakMemoryStats = (d?: DeviceLike): void => allocatorOf(dev(d)).resetPeakMemoryStats();
/** Zeroes the accumulated counters (allocated/freed totals, retries, OOMs). */
export const resetAccumulatedMemoryStats = (d?: DeviceLike): void => allocatorOf(dev(d)).resetAccumulatedMemoryStats();
/** Caps the device's allocator at `fraction` of its capacity (0 < fraction ≤ 1). */
export function setPerProcessMemoryFraction(fraction: number, d?: DeviceLike): void {
  const a = allocatorOf(dev(d));
  a.setMemoryFraction(fraction);
  publishers.get(a)?.();
}

/** A raw block from `cachingAllocatorAlloc`: its segment and byte offset on the device. */
export interface RawBlock extends Allocation {
  device: Device;
}

/** Allocates a raw block (`torch.cuda.caching_allocator_alloc`). */
export function cachingAllocatorAlloc(size: number, d?: DeviceLike, stream = 0): RawBlock {
  const device = dev(d);
  return { ...allocatorOf(device).malloc(size, stream), device };
}

/** Frees a raw block from `cachingAllocatorAlloc`. */
export function cachingAllocatorDelete(block: RawBlock): void {
  allocatorOf(block.device).free(block.block);
}

/**
 * @internal What the device worker holds, for the test that compares it with `memoryReserved`:
 * the bytes of its live GPUBuffers (`alive`), of which `context` are the device's own fixed
 * buffers, left out of the allocator's figures (ts/worker/scratch.ts). Zeros on `cpu`.
 */
export function deviceBuffers(d?: DeviceLike): { alive: number; context: number } {
  const { alive, context } = readScratch(clientOf(dev(d)).scratch);
  return { alive, context };
}
