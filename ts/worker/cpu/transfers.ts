/**
 * Reads and writes of the cpu worker's segments, and the memory it hands out.
 *
 * While the device is idle the calling thread reads and writes this memory itself
 * (ts/runtime/client.ts: `idle`); `hostMemory` hands it the memory and the segments' address table
 * for that, as it does to the GPU workers for pinned copies.
 */
import { copyOut } from '../../platform.js';
import { K, addresses, ptr, shared } from './core.js';

/** The `write` command and `Backend.write`: bytes into segment `id` at `byteOffset`. */
export function write(id: number, byteOffset: number, data: ArrayBuffer | Uint8Array): void {
  const src = data instanceof Uint8Array ? data : new Uint8Array(data);
  new Uint8Array(K.memory.buffer, ptr(id) + byteOffset, src.byteLength).set(src);
}

/** A copy in a fresh ArrayBuffer (a SharedArrayBuffer, as slicing the memory's own buffer gives, cannot be transferred). */
export const read = (id: number, byteOffset: number, bytes: number) => copyOut(new Uint8Array(K.memory.buffer, ptr(id) + byteOffset, bytes));

/** The shared memory and the segments' address table (null for the plain build). */
export const hostMemory = () => (shared && addresses ? { memory: shared, addresses } : null);
