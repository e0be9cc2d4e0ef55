/**
 * The gpu worker's transfers: writes (small ones through `queue.writeBuffer`, large ones through
 * a ring of mapped upload buffers), reads (small ones through a kept staging buffer, large ones
 * through a ring of mapped download chunks), and the sync point that settles a read's mapping
 * with the error scopes and the device checks.
 *
 * Both rings exist for the same reason: one whole-size mappable buffer per transfer costs its
 * creation (a new mappable buffer took ~0.7 ms on the H100, more when large) and serialises the
 * GPU's copy with the host's. In chunks, the GPU copies chunk k + 1 while the worker copies
 * chunk k out of (or into) its mapping, and the bytes land in their destination with one host
 * copy: a pinned tensor's shared memory, or the ArrayBuffer handed to the caller.
 */
import {
  buf, destroyBuffer, device, dispatchAt, flush, handOver, maxBinding, openEncoder, paramAlign, paramWords, prepareEncoder, queueWork, reserveParams,
  sawDone, setWindow, settle, takeErrors, throwFirst, windowNow,
} from './core.js';
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
  if (!bytes.byteLength) return;
  if ((byteOffset | bytes.byteLength) & 3) return writeUnaligned(id, byteOffset, bytes);
  if (bytes.byteLength >= STAGED_WRITE) return writeStaged(id, byteOffset, bytes);
  flush();
  const shared = typeof SharedArrayBuffer !== 'undefined' && bytes.buffer instanceof SharedArrayBuffer; // undefined without isolation
  const copy = shared ? bytes.slice() : bytes;
  device.queue.writeBuffer(buf(id), byteOffset, copy as Uint8Array<ArrayBuffer>); // never a shared view (copied above)
  handOver();
}

/**
 * Note [unaligned writes]: WebGPU's `writeBuffer` and `copyBufferToBuffer` take offsets and sizes
 * in whole 4-byte words only, but a 16-bit or 8-bit tensor's bytes can start or end inside a word:
 * a ring part of a collective (40 float16 elements cut in 14, 13, 13 put part 2 at byte 54),
 * a `recv` into a contiguous view of a larger buffer (`allGather` into the parts of one flat
 * tensor). Rounding the range out to words would overwrite the neighbouring elements, which belong
 * to another part or another tensor; rounding only the offset was refused by Dawn ("BufferOffset
 * is not a multiple of 4"). So the whole words of the range go the usual way, and each word it
 * shares with its neighbours (two at most) is merged on the device by a one-invocation kernel,
 * `word = (word & ~mask) | (value & mask)`, recorded in stream order with the other dispatches.
 * The two parts touch different bytes, so their order between themselves does not matter.
 * test/device/collectives-16bit.test.ts checks the neighbours survive.
 */
function writeUnaligned(id: number, byteOffset: number, bytes: Uint8Array): Promise<void> | void {
  const end = byteOffset + bytes.byteLength, lo = Math.ceil(byteOffset / 4) * 4, hi = Math.floor(end / 4) * 4;
  const target = buf(id);
  for (const w of new Set([Math.floor(byteOffset / 4), Math.floor((end - 1) / 4)])) {
    if (w * 4 >= byteOffset && w * 4 + 4 <= end) continue; // a whole word of the range: written below
    let mask = 0, value = 0;
    for (let b = 0; b < 4; b++) {
      const at = w * 4 + b;
      if (at < byteOffset || at >= end) continue;
      mask |= 0xff << (8 * b);
      value |= bytes[at - byteOffset] << (8 * b);
    }
    mergeWord(target, w, mask >>> 0, value >>> 0);
  }
  return lo < hi ? write(id, lo, bytes.subarray(lo - byteOffset, hi - byteOffset)) : undefined;
}

const MERGE_WORD = `@group(0) @binding(0) var<storage, read> P: array<u32>;
@group(0) @binding(1) var<storage, read_write> S0: array<u32>;
@compute @workgroup_size(1)
fn main() {
  let w = P[0];
  S0[w] = (S0[w] & ~P[1]) | (P[2] & P[1]);
}
`;

/** Queues the merge of `value`'s `mask`ed bytes into word `w` of `target` (see Note [unaligned writes]). */
function mergeWord(target: GPUBuffer, w: number, mask: number, value: number): void {
  // A segment larger than one binding is bound from an aligned offset at or below the word.
  const windowed = target.size > maxBinding;
  const base = windowed ? Math.floor((w * 4) / paramAlign) * paramAlign : 0;
  const at = reserveParams(3);
  paramWords[at] = w - base / 4;
  paramWords[at + 1] = mask;
  paramWords[at + 2] = value;
  const window = windowNow();
  setWindow(windowed ? new Map([[target, base]]) : null);
  try {
    dispatchAt(MERGE_WORD, () => MERGE_WORD, [target], at, 3, [1, 1, 1]);
  } finally {
    setWindow(window);
  }
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
    // (whole words only: `write` sends the ends of an unaligned range elsewhere)
    const n = Math.min(UPLOAD_CHUNK, data.byteLength - off);
    const staging = await takeUpload();
    new Uint8Array(staging.getMappedRange(0, n)).set(data.subarray(off, off + n));
    staging.unmap();
    openEncoder().copyBufferToBuffer(staging, 0, target, byteOffset + off, n);
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
/** Reads up to the download ring's chunk size use it; larger ones take the ring. */
const KEEP_STAGING = 8 << 20;

/** Reads above this many bytes go through the download ring. */
const DOWNLOAD_CHUNK = 8 << 20;
/** Chunks in flight: one being copied out while the next ones are copied and mapped on the device. */
const DOWNLOAD_BUFFERS = 3;
/** The download ring's staging buffers, kept between reads (cached scratch, dropped with `readStaging`). */
let downloads: GPUBuffer[] = [];

/** Destroys the kept read staging and the download ring (emptyCache, memory pressure, close). */
export function dropReadStaging(): void {
  readStaging?.destroy();
  readStaging = null;
  for (const b of downloads.splice(0)) b.destroy();
}

/**
 * Reads `bytes` bytes of storage `id` from `byteOffset`, after the work recorded so far. With
 * `into` (a pinned tensor's shared memory, or a peer's buffer) the bytes are copied there and
 * nothing is returned; otherwise they come back as a new ArrayBuffer.
 */
export function read(id: number, byteOffset: number, bytes: number): Promise<ArrayBuffer>;
export function read(id: number, byteOffset: number, bytes: number, into: Uint8Array): Promise<void>;
export async function read(id: number, byteOffset: number, bytes: number, into?: Uint8Array): Promise<ArrayBuffer | void> {
  if (bytes === 0) {
    flush();
    return into ? undefined : new ArrayBuffer(0);
  }
  if (bytes > DOWNLOAD_CHUNK) {
    const out = into ?? new Uint8Array(bytes);
    await readChunked(id, byteOffset, bytes, out);
    return into ? undefined : out.buffer as ArrayBuffer;
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
  const handedOver = queueWork;
  if (reuse) readStaging = null;
  const mapped = staging.mapAsync(GPUMapMode.READ, 0, size).then(
    () => {
      const range = staging.getMappedRange(0, size);
      let out: ArrayBuffer | undefined;
      if (into) into.set(new Uint8Array(range, byteOffset - start, bytes));
      else out = range.slice(byteOffset - start, byteOffset - start + bytes);
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
  prepareEncoder();
  return settleSyncPoint(mapped, deviceCheck);
}

/**
 * A large read through the download ring: chunk k's copy goes into ring buffer k mod
 * `DOWNLOAD_BUFFERS` in a submit of its own (the first with the work still recorded and the
 * device checks), and is mapped; as each mapping resolves in order, its bytes are copied into
 * `out` and the buffer takes the next chunk. Reads run one at a time, so the ring is this read's.
 */
async function readChunked(id: number, byteOffset: number, bytes: number, out: Uint8Array): Promise<void> {
  const start = byteOffset & ~3, end = Math.ceil((byteOffset + bytes) / 4) * 4;
  const chunks = Math.ceil((end - start) / DOWNLOAD_CHUNK);
  const source = buf(id);
  // The ring is this read's until it ends (taken out of `downloads`, as `readStaging` is), so that
  // memory pressure meanwhile (dropReadStaging) cannot destroy a buffer in use.
  const ring = downloads.splice(0);
  try {
    while (ring.length < Math.min(DOWNLOAD_BUFFERS, chunks)) {
      ring.push(createScratch(device, DOWNLOAD_CHUNK, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, true, 'a read'));
    }
  } catch (e) {
    for (const b of ring) b.destroy();
    throw e;
  }
  let deviceCheck: Promise<void> | null = null;
  /** Copies chunk k into its ring buffer and maps it; resolves with the chunk's place. */
  const begin = (k: number): Promise<{ b: GPUBuffer; lo: number; n: number }> => {
    const b = ring[k % ring.length], lo = start + k * DOWNLOAD_CHUNK, n = Math.min(DOWNLOAD_CHUNK, end - lo);
    const encoder = openEncoder();
    encoder.copyBufferToBuffer(source, lo, b, 0, n);
    if (k === 0) deviceCheck = recordDeviceCheck(encoder);
    flush();
    return b.mapAsync(GPUMapMode.READ, 0, n).then(() => ({ b, lo, n }));
  };
  const inFlight: Promise<{ b: GPUBuffer; lo: number; n: number }>[] = [];
  for (let k = 0; k < Math.min(ring.length, chunks); k++) inFlight.push(begin(k));
  const errors = takeErrors(); // of the work before the read (later chunks record none)
  const handedOver = queueWork + chunks - inFlight.length;
  const copied = (async () => {
    try {
      for (let k = 0; k < chunks; k++) {
        const { b, lo, n } = await inFlight[k];
        // This chunk's part of [byteOffset, byteOffset + bytes): the ends may be inside a word.
        const from = Math.max(lo, byteOffset), to = Math.min(lo + n, byteOffset + bytes);
        out.set(new Uint8Array(b.getMappedRange(0, n), from - lo, to - from), from - byteOffset);
        b.unmap();
        if (k + ring.length < chunks) inFlight.push(begin(k + ring.length));
      }
      sawDone(handedOver);
      if (downloads.length) for (const b of ring) b.destroy(); // another read kept its ring meanwhile
      else downloads = ring;
    } catch (e) {
      // A failed mapping leaves the ring in an unknown state: a new one is made next time.
      await Promise.allSettled(inFlight);
      for (const b of ring) b.destroy();
      throw e;
    }
  })();
  return settleSyncPoint(copied, deviceCheck, errors);
}

/**
 * Waits for a sync point's parts together: `done` (the read's mapping, or the queue's end) and
 * the device checks, after taking the GPU errors of the work submitted before it. Throws the
 * first error in that order of blame: a GPU error (validation, out of memory), then a failed
 * device check, then `done`'s own failure. Call it right after the sync point's submit (or pass
 * the errors taken then).
 */
export async function settleSyncPoint<T>(done: Promise<T>, deviceCheck: Promise<void> | null, errors = takeErrors()): Promise<T> {
  const [value, checks] = await Promise.allSettled([done, deviceCheck]);
  throwFirst(errors);
  if (checks.status === 'rejected') throw checks.reason;
  if (value.status === 'rejected') throw value.reason;
  return value.value;
}
