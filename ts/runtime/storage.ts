/**
 * Storages: a block of the device's caching allocator, shared by a tensor and its views.
 *
 * Each tensor holds one reference to its storage. `dispose()` drops it at once; a tensor that
 * is dropped without `dispose()` drops it when the garbage collector finalises the tensor, so
 * forgotten tensors do not leak. The last reference returns the block to the allocator; any
 * later command that reuses it is queued behind every command that used it.
 */
import { clientOf, gpuLimits, type Device } from '../device.js';
import type { CachingAllocator } from '../memory/index.js';
import type { DeviceClient } from './client.js';
import { allocatorOf } from './memory.js';

const live = new Map<Device, { count: number; bytes: number }>();

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

  private constructor(readonly device: Device, readonly bytes: number) {
    this.client = clientOf(device);
    this.allocator = allocatorOf(device);
    const a = this.allocator.malloc(bytes);
    this.block = a.block;
    this.id = a.segment;
    this.byteOffset = a.offset;
  }

  /** Allocates `bytes` on a device; throws `OutOfMemoryError` at the call when it cannot. */
  static alloc(device: Device, bytes: number): Storage {
    if (device.type === 'gpu') {
      const max = gpuLimits().maxStorageBufferBindingSize, a = allocatorOf(device);
      if (bytes > max && bytes <= a.capacity * a.memoryFraction) {
        throw new RangeError(`webtorch: a tensor of ${bytes} bytes on ${device} exceeds the adapter's maxStorageBufferBindingSize (${max} bytes), the most one kernel can address`);
      }
    }
    const s = new Storage(device, bytes);
    const l = live.get(device) ?? { count: 0, bytes: 0 };
    l.count++;
    l.bytes += bytes;
    live.set(device, l);
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

  /** Drops one reference; the last one frees the allocation. */
  release(): void {
    if (this.refs <= 0) return;
    if (--this.refs === 0) {
      this.refs = -1;
      this.allocator.free(this.block);
      const l = live.get(this.device)!;
      l.count--;
      l.bytes -= this.bytes;
    }
  }
}

/** @internal Live storages on a device (the leak check of the test suites). */
export function liveStorage(device: Device): { count: number; bytes: number } {
  return { ...(live.get(device) ?? { count: 0, bytes: 0 }) };
}

/** Releases the storage of tensors that were garbage-collected without `dispose()`. */
export const collected = new FinalizationRegistry<Storage>((s) => s.release());
