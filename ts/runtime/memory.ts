/**
 * One caching allocator per device, on the calling thread, and PyTorch's memory API over them.
 *
 * The allocator (AssemblyScript, `assembly/allocator`) decides everything synchronously: which
 * segment and offset a tensor gets, when a new segment is needed, out-of-memory. Its segment
 * callbacks only queue `segment`/`release` commands; the worker creates the GPUBuffer (or WASM
 * range) in order, before any kernel that uses it. Freeing a block is pure bookkeeping: the
 * block is reused at once by later commands of its own stream, which run after every earlier
 * use of it. A block recorded on other streams (`t.recordStream(s)`) waits for a mark of each
 * (`recordedFree`): the stream board (ts/worker/streams/board.ts) tells when those marks have finished,
 * and the next allocation on the device completes those frees (`settleFrees`).
 *
 * Budgets: a GPU's memory size cannot be read through WebGPU, so each GPU device has a
 * documented default of 8 GiB (`WEBTORCH_GPU_MEMORY` or `torch.gpu.configure({memory})` set
 * it); `cpu` defaults to 2 GiB of WebAssembly memory (`WEBTORCH_CPU_MEMORY`).
 * `setPerProcessMemoryFraction` scales either.
 */
import { clientOf, currentDevice, device as toDevice, Device, gpuLimits, onDeviceReplaced, type DeviceLike } from '../device.js';
import { CachingAllocator, type Allocation, type MemoryStats, type SnapshotSegment } from '../memory/index.js';
import { env } from '../platform.js';
import { bindArgs, REQUIRED, type PyArgs } from '../args.js';
import { mallocCollecting } from './collect.js';
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

/** A GPU's maxStorageBufferBindingSize, or WebGPU's guaranteed minimum before discovery has read it. */
const binding = (d: Device): number => (d.type === 'gpu' ? gpuLimits().maxStorageBufferBindingSize ?? 128 * 1024 ** 2 : 0);

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
    // Before discovery ends the limit is not known: WebGPU's guaranteed minimum (128 MiB) is safe,
    // as every segment above the real limit is above it too (such segments are only left whole).
    maxSplitSize: d.type === 'gpu' && binding(d) > 20 * 1024 ** 2 ? binding(d) : undefined,
    externalReserved: () => readScratch(client.scratch).reserved,
    createSegment(id, bytes) {
      // (before discovery a GPU's maxBufferSize is unknown: a segment above it fails in the worker instead)
      const max = d.type === 'gpu' ? gpuLimits().maxBufferSize ?? Infinity : 4 * GiB - 64 * 1024 ** 2;
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

// A device brought back after its loss starts with a fresh allocator (ts/runtime/device-lost.ts).
onDeviceReplaced.push((d) => {
  allocators.delete(d);
  waitingFrees.delete(d);
});

/** Frees waiting for stream marks, per device: the highest mark waited for on each stream. */
const waitingFrees = new Map<Device, Map<number, number>>();

/**
 * @internal Frees a block used by other streams (`recordStream`): the allocator keeps it from
 * reuse until each of `streams` has finished the work queued on it so far (PyTorch records an
 * event on each at this point; here it is a stream mark).
 */
export function recordedFree(d: Device, block: number, streams: Iterable<number>): void {
  const a = allocatorOf(d), client = clientOf(d);
  let w = waitingFrees.get(d);
  if (!w) waitingFrees.set(d, (w = new Map()));
  for (const s of streams) {
    const mark = client.markStream(s);
    a.streamMark(s, mark);
    w.set(s, Math.max(w.get(s) ?? 0, mark));
  }
  a.free(block);
}

/** @internal Completes the deferred frees whose stream marks the device has finished (before each allocation). */
export function settleFrees(d: Device): void {
  if (!waitingFrees.size) return;
  const w = waitingFrees.get(d);
  if (!w) return;
  const a = allocatorOf(d), board = clientOf(d).board;
  for (const [s, mark] of w) {
    const done = board.streamMark(s);
    if (done > 0) a.streamDoneUpTo(s, done);
    if (done >= mark) w.delete(s);
  }
  if (!w.size) waitingFrees.delete(d);
}

/** @internal The memory budget a device's allocator enforces, in bytes (`getDeviceProperties().totalMemory`). */
export function memoryBudget(d: Device): number {
  return allocatorOf(d).capacity;
}

/** @internal Forgets every allocator (their segments died with the workers). */
export function resetAllocators(): void {
  allocators.clear();
  waitingFrees.clear();
}

/** A memory function's device argument: positional (`memoryAllocated(0)`) or keyword (`memoryAllocated({device: 0})`). */
export type DeviceArg = DeviceLike | { device?: DeviceLike | null };

/** Binds `[device]` or `[{device}]`, plus the function's other parameters, to PyTorch's signature. */
function bound<T extends object>(op: string, params: readonly (keyof T & string)[], args: readonly unknown[], defaults: T): T & { device: Device } {
  const o = bindArgs(op, ['device', ...params] as (keyof T & string)[], args, defaults) as T & { device?: DeviceLike | null };
  return { ...o, device: o.device == null ? toDevice(currentDevice()) : toDevice(o.device) };
}
const on = (op: string, args: readonly unknown[]): CachingAllocator => allocatorOf(bound(op, [], args, {}).device);

/** Bytes held by live tensors on a device (`torch.cuda.memory_allocated`). Defaults to the current GPU. */
export const memoryAllocated = (...args: [device?: DeviceArg]): number => on('memory_allocated', args).memoryAllocated();
/** Peak of `memoryAllocated` since the start or the last reset. */
export const maxMemoryAllocated = (...args: [device?: DeviceArg]): number => on('max_memory_allocated', args).maxMemoryAllocated();
/** Bytes in segments held by the caching allocator (`torch.cuda.memory_reserved`). */
export const memoryReserved = (...args: [device?: DeviceArg]): number => on('memory_reserved', args).memoryReserved();
/** Peak of `memoryReserved`. */
export const maxMemoryReserved = (...args: [device?: DeviceArg]): number => on('max_memory_reserved', args).maxMemoryReserved();
/** PyTorch's `memory_stats()` dictionary, with the same keys (`allocated_bytes.all.current`, …). */
export const memoryStats = (...args: [device?: DeviceArg]): MemoryStats => on('memory_stats', args).memoryStats();
/** PyTorch's `memory_summary(device, abbreviated)` table; `memorySummary({device: 0, abbreviated: true})` too. */
export function memorySummary(...args: PyArgs<[device: DeviceLike | null, abbreviated: boolean], { device?: DeviceLike | null; abbreviated?: boolean }>): string {
  const o = bound('memory_summary', ['abbreviated'], args, { abbreviated: false });
  return allocatorOf(o.device).memorySummary(o.abbreviated);
}
/** Segments and their blocks (`torch.cuda.memory_snapshot()`). */
export const memorySnapshot = (...args: [device?: DeviceArg]): SnapshotSegment[] => on('memory_snapshot', args).memorySnapshot();
/** Releases cached segments that hold no live tensor (`GPUBuffer.destroy()` on a GPU), and the worker's cached scratch. */
export function emptyCache(...args: [device?: DeviceArg]): void {
  const device = bound('empty_cache', [], args, {}).device;
  allocatorOf(device).emptyCache();
  const client = clientOf(device);
  // The GPU worker's cached scratch (read staging, operand copies) goes too; its bytes leave the figures now.
  if (client.scratch) client.enqueue({ k: 'dropScratch', accounted: takeCached(client.scratch) });
}
/** Sets peak statistics to their current values. */
export const resetPeakMemoryStats = (...args: [device?: DeviceArg]): void => on('reset_peak_memory_stats', args).resetPeakMemoryStats();
/** Zeroes the accumulated counters (allocated/freed totals, retries, OOMs). */
export const resetAccumulatedMemoryStats = (...args: [device?: DeviceArg]): void => on('reset_accumulated_memory_stats', args).resetAccumulatedMemoryStats();
/**
 * Caps the device's allocator at `fraction` of its capacity (0 < fraction ≤ 1):
 * `(fraction, device)`, `(fraction, {device})` or `({fraction, device})`.
 */
export function setPerProcessMemoryFraction(...args: PyArgs<[fraction: number, device: DeviceLike | null], { fraction?: number; device?: DeviceLike | null }>): void {
  const o = bindArgs('set_per_process_memory_fraction', ['fraction', 'device'], args, { fraction: REQUIRED as number, device: null as DeviceLike | null });
  const a = allocatorOf(o.device == null ? toDevice(currentDevice()) : toDevice(o.device));
  a.setMemoryFraction(o.fraction);
  publishers.get(a)?.();
}

/** A raw block from `cachingAllocatorAlloc`: its segment and byte offset on the device. */
export interface RawBlock extends Allocation {
  device: Device;
}

/** A stream as `cachingAllocatorAlloc` takes it: a `torch.gpu.Stream`, or a stream id. */
export type StreamArg = number | { device: Device; streamId: number };

/**
 * Allocates a raw block (`torch.cuda.caching_allocator_alloc(size, device, stream)`) for
 * `stream` (a Stream, or an id; the device's current stream by default); a Stream's device is
 * the default device.
 */
export function cachingAllocatorAlloc(...args: PyArgs<[size: number, device: DeviceLike | null, stream: StreamArg | null], { size?: number; device?: DeviceLike | null; stream?: StreamArg | null }>): RawBlock {
  const o = bindArgs('caching_allocator_alloc', ['size', 'device', 'stream'], args, { size: REQUIRED as number, device: null as DeviceLike | null, stream: null as StreamArg | null });
  const s = o.stream;
  const device = o.device != null ? toDevice(o.device) : typeof s === 'object' && s ? s.device : toDevice(currentDevice());
  if (typeof s === 'object' && s && s.device !== device) {
    throw new Error(`caching_allocator_alloc: the stream is on ${s.device}, but the device is ${device}`);
  }
  const id = s == null ? clientOf(device).stream : typeof s === 'number' ? s : s.streamId;
  // during a graph's capture, a raw block for a captured stream comes from the graph's pool too
  const capture = clientOf(device).capture;
  return { ...mallocCollecting(allocatorOf(device), o.size, capture ? capture.allocStream(id) : id), device };
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
  const { alive, context } = readScratch(clientOf(d === undefined ? toDevice(currentDevice()) : toDevice(d)).scratch);
  return { alive, context };
}
