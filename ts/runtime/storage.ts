/**
 * Storages: a device allocation shared by a tensor and its views.
 *
 * Each tensor holds one reference to its storage. `dispose()` drops it at once; a tensor that
 * is dropped without `dispose()` drops it when the garbage collector finalises the tensor, so
 * forgotten tensors do not leak. The `free` command is queued behind every command that used
 * the storage, so freeing never races a pending kernel.
 */
import { clientOf, type Device } from '../device.js';
import type { DeviceClient } from './client.js';

const live = new Map<Device, { count: number; bytes: number }>();

/** A device allocation. */
export class Storage {
  private refs = 0;
  readonly client: DeviceClient;
  readonly id: number;

  private constructor(readonly device: Device, readonly bytes: number) {
    this.client = clientOf(device);
    this.id = this.client.nextId++;
  }

  /** Allocates `bytes` on a device (queued, returns at once). */
  static alloc(device: Device, bytes: number): Storage {
    const s = new Storage(device, bytes);
    s.client.enqueue({ k: 'alloc', id: s.id, bytes });
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
      this.client.enqueue({ k: 'free', id: this.id });
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
