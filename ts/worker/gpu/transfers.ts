/**
 * The gpu worker's transfers: writes (small ones through `queue.writeBuffer`, large ones through
 * a ring of mapped upload buffers), reads through a kept staging buffer, and the sync point that
 * settles a read's mapping with the error scopes and the device checks.
 */
import { buf, checkErrors, closeScope, destroyBuffer, device, flush, handOver, openEncoder, queueWork, sawDone, settle } from './core.js';
import { recordDeviceCheck } from './checks.js';
import { createScratch } from '../scratch.js';

/**
 * Writes host bytes into a storage, after the work recorded so far. Small writes go through
 * `queue.writeBuffer`; from `STAGED_WRITE` bytes up they go through the upload ring, since
 * Dawn's `writeBuffer` moved about 1.1 GB/s on the H100 where a mapped staging buffer and a
 * copy moved five times that (`bench/probe-upload.mjs`, BENCHMARKS.md). `data` may be a view of
 * shared memory (a pinned tensor), which `writeBuffer` cannot take but a mapped range can.
 */
export function write(id: number, byteOffset: number, data: ArrayBuffer | Uint8Array): Promise<void> | void {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  if (bytes.byteLength >= STAGED_WRITE) return writeStaged(id, byteOffset, bytes);
  flush();
  const shared = typeof SharedArrayBuffer !== 'undefined' && bytes.buffer instanceof SharedArrayBuffer; // undefined without isolation
  const aligned = bytes.byteLength % 4 === 0 && !shared;
  const padded = aligned ? bytes : new Uint8Array(Math.ceil(bytes.byteLength / 4) * 4);
  if (padded !== bytes) padded.set(bytes);
  device.queue.writeBuffer(buf(id), byteOffset, padded as Uint8Array<ArrayBuffer>); // never a shared view (copied above)
  handOver();
}

// The upload ring: mapped staging buffers for large writes.

const STAGED_WRITE = 1 << 20;
const UPLOAD_CHUNK = 8 << 20;
const UPLOAD_BUFFERS = 2;
/** Staging buffers mapped for writing, ready to fill. */
let uploadReady: GPUBuffer[] = [];
/** Staging buffers being mapped again after their copy (null if the mapping failed: dropped). */
let uploadMapping: Promise<GPUBuffer | null>[] = [];
let uploadCount = 0;

/** A staging buffer mapped for writing: a ready one, a new one while the ring is short, else the next to be mapped again. */
async function takeUpload(): Promise<GPUBuffer> {
  for (;;) {
    const ready = uploadReady.pop();
    if (ready) return ready;
    if (uploadCount < UPLOAD_BUFFERS || !uploadMapping.length) {
      uploadCount++;
      return createScratch(device, UPLOAD_CHUNK, GPUBufferUsage.MAP_WRITE | GPUBufferUsage.COPY_SRC, true, 'an upload', true);
    }
    const again = await uploadMapping.shift()!;
    if (again) return again;
  }
}

/** Copies `data` into storage `id` chunk by chunk through the ring: fill a mapped buffer, unmap, copy, submit. */
async function writeStaged(id: number, byteOffset: number, data: Uint8Array): Promise<void> {
  const target = buf(id);
  for (let off = 0; off < data.byteLength; off += UPLOAD_CHUNK) {
    const n = Math.min(UPLOAD_CHUNK, data.byteLength - off), n4 = Math.ceil(n / 4) * 4;
    const staging = await takeUpload();
    const range = new Uint8Array(staging.getMappedRange(0, n4));
    range.set(data.subarray(off, off + n));
    if (n4 > n) range.fill(0, n);
    staging.unmap();
    openEncoder().copyBufferToBuffer(staging, 0, target, byteOffset + off, n4);
    flush();
    const ring = uploadMapping;
    ring.push(staging.mapAsync(GPUMapMode.WRITE).then(() => {
      if (ring !== uploadMapping) return null; // dropped meanwhile
      return staging;
    }, () => null));
  }
}

/** Destroys the upload ring (emptyCache, memory pressure, close). */
export function dropUploads(): void {
  for (const b of uploadReady) destroyBuffer(b);
  const mapping = uploadMapping;
  uploadReady = [];
  uploadMapping = [];
  uploadCount = 0;
  for (const p of mapping) {
    settle(1);
    void p.then((b) => {
      settle(-1);
      if (b) destroyBuffer(b);
    });
  }
}

/**
 * The largest read staging buffer so far, up to `KEEP_STAGING` bytes, kept for the next read:
 * a new mappable buffer per read made a 16 MiB read about twice as slow to map on lavapipe.
 * Reads run one at a time (the executor chains them). Dropped when a segment is released
 * (`emptyCache`) and at close.
 */
let readStaging: GPUBuffer | null = null;
const KEEP_STAGING = 64 << 20;

export function dropReadStaging(): void {
  readStaging?.destroy();
  readStaging = null;
}

export async function read(id: number, byteOffset: number, bytes: number): Promise<ArrayBuffer> {
  if (bytes === 0) {
    flush();
    return new ArrayBuffer(0);
  }
  const start = byteOffset & ~3, size = Math.ceil((byteOffset + bytes) / 4) * 4 - start;
  const reuse = readStaging !== null && readStaging.size >= size;
  const staging = reuse ? readStaging! : createScratch(device, size, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, true, 'a read');
  // The copy, and the device checks' copy, ride in the same submit as the work still recorded:
  // one submit per read, then the mapping and the error scopes are awaited together.
  const encoder = openEncoder();
  encoder.copyBufferToBuffer(buf(id), start, staging, 0, size);
  const deviceCheck = recordDeviceCheck(encoder);
  flush();
  closeScope();
  const handedOver = queueWork;
  if (reuse) readStaging = null;
  const mapped = staging.mapAsync(GPUMapMode.READ, 0, size).then(
    () => {
      const out = staging.getMappedRange(0, size).slice(byteOffset - start, byteOffset - start + bytes);
      staging.unmap();
      if (staging.size <= KEEP_STAGING && staging.size >= (readStaging?.size ?? 0)) {
        dropReadStaging();
        readStaging = staging;
      } else {
        staging.destroy();
      }
      // The copy was the queue's last work when it was submitted: everything before it has finished.
      sawDone(handedOver);
      return out;
    },
    (e: unknown) => {
      staging.destroy();
      throw e;
    },
  );
  return settleSyncPoint(mapped, deviceCheck);
}

/**
 * Waits for a sync point's parts together: `done` (the read's mapping, or the queue's end), the
 * error scopes and the device checks. Throws the first error in that order of blame: a GPU
 * error (validation, out of memory), then a failed device check, then `done`'s own failure.
 */
export async function settleSyncPoint<T>(done: Promise<T>, deviceCheck: Promise<void> | null): Promise<T> {
  const [value, scopes, checks] = await Promise.allSettled([done, checkErrors(), deviceCheck]);
  if (scopes.status === 'rejected') throw scopes.reason;
  if (checks.status === 'rejected') throw checks.reason;
  if (value.status === 'rejected') throw value.reason;
  return value.value;
}