/**
 * Pinned memory and non-blocking copies: `t.pinMemory()`, `t.isPinned()`,
 * `torch.empty(shape, {pinMemory: true})`, `t.to(dev, {nonBlocking: true})`,
 * `dst.copy_(src, {nonBlocking: true})`.
 *
 * Decision: what a pinned host tensor is here. A cpu tensor does not live on the calling thread:
 * it lives in the cpu worker's WebAssembly memory, which is shared (a SharedArrayBuffer under a
 * shared WebAssembly.Memory) wherever the platform allows it (Node; a cross-origin-isolated page).
 * So a pinned tensor is a cpu tensor like any other (every cpu op takes it) whose storage is
 * marked pinned, and a GPU worker reads and writes its bytes in that shared memory directly: when
 * the two workers connect, the cpu worker sends each peer its memory and the address table of its
 * segments. No byte passes through the calling thread, and no message carries them. A pageable
 * (not pinned) cpu tensor is copied the usual way: the cpu worker sends its bytes to the GPU
 * worker over their port, and the destination stream waits for them (a host copy, which fences
 * every stream as PyTorch's blocking copy does; ts/worker/streams/scheduler.ts).
 *
 * A non-blocking copy runs in stream order and returns at once: host→device, the destination
 * stream waits for an event of the cpu stream (the pinned data is ready), then the GPU worker
 * copies the bytes in (`readHost`); the pinned block is recorded on a side stream of the cpu that
 * waits for the GPU's read, so freeing the tensor never lets the cpu reuse its memory before the
 * GPU has read it (PyTorch's CachingHostAllocator records an event for the same reason).
 * Device→host (`to('cpu', {nonBlocking})` makes a pinned result), the source's stream first waits
 * for the cpu's queued work (which makes the destination's segment, and may still use the
 * destination), then the GPU worker writes the bytes into the pinned tensor (`writeHost`), and
 * later cpu work waits for it. As in CUDA, reading that tensor before an event recorded after the copy has
 * completed (or a synchronize) is the caller's race.
 *
 * Where shared memory is not available, `pinMemory()` raises, saying why; everything else works.
 */
import { CPU, clientOf, type Device } from '../device.js';
import { elementSize } from '../dtype.js';
import { connect } from './peers.js';
import { canShareMemory } from '../platform.js';
import type { Tensor } from '../tensor.js';
import { alloc, emit } from './dispatch.js';
import { Event, Stream } from './streams.js';

/** The cpu stream that holds pinned blocks read by GPU copies until the GPU has read them. */
const PINNED_READS = 1;

/** Why a tensor cannot be pinned here, or null. */
function unpinnable(): string | null {
  if (!canShareMemory()) {
    return 'pinMemory(): pinned memory needs shared memory (SharedArrayBuffer), which this page does not have: serve it cross-origin isolated ' +
      '(Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp). Everything else works without it.';
  }
  const info = clientOf(CPU).info;
  if (info && !info.pinnable) return 'pinMemory(): the cpu device could not reserve a shared memory, so device workers cannot read its tensors directly';
  return null;
}

/** Whether pinned tensors can be made here (shared memory exists, and the cpu device has it). */
export const canPin = (): boolean => unpinnable() === null;

/** Raises why pinned tensors cannot be made here, if they cannot. */
export function checkPinnable(): void {
  const why = unpinnable();
  if (why) throw new Error(why);
}

/** Whether `t` lives in pinned memory (`t.is_pinned()`). */
export function isPinned(t: Tensor): boolean {
  return t._check('is_pinned').storage.pinned;
}

/** Raises, before anything is allocated, when a new tensor on `device` cannot be pinned (`op` names the call). */
export function checkPinTarget(op: string, device: Device): void {
  if (device !== CPU) throw new Error(`${op}: Only dense CPU tensors can be pinned, got a tensor on ${device}`);
  checkPinnable();
}

/** Marks a fresh cpu tensor's storage as pinned (checked by `checkPinTarget` first). */
export function markPinned(t: Tensor): Tensor {
  t.storage.pinned = true;
  return t;
}

/** A copy of a cpu tensor in pinned memory (`t.pin_memory()`); the tensor itself if it is pinned already. */
export function pinMemory(t: Tensor): Tensor {
  t._check('pin_memory');
  if (t.device !== CPU) throw new Error(`cannot pin '${t.device}' tensor: only dense CPU tensors can be pinned`);
  if (t.storage.pinned) return t;
  checkPinnable();
  return markPinned(t.clone());
}

/** The internal events of copies between the cpu and one device (recorded again for each copy). */
const pairEvents = new Map<string, { ready: Event; read: Event; written: Event }>();
const eventsFor = (d: Device) => {
  let e = pairEvents.get(String(d));
  if (!e) pairEvents.set(String(d), (e = { ready: new Event(), read: new Event(), written: new Event() }));
  return e;
};

/** The current stream of a device. */
const streamOf = (d: Device): Stream => Stream.of(d, clientOf(d).stream);

/** Whether `src → dst` can take the non-blocking host→device path. */
export const pinnedUpload = (src: Tensor, dst: Device): boolean =>
  src.device === CPU && dst !== CPU && src.storage.pinned && src.isContiguous();

/** A non-blocking copy of a contiguous pinned cpu tensor onto `dst` (see the note at the top). */
export function uploadPinned(src: Tensor, dst: Device): Tensor {
  const out = alloc(src.shape, src.dtype, dst);
  const bytes = src.numel() * elementSize(src.dtype);
  if (!bytes) return out;
  connect(CPU, dst);
  const gpu = streamOf(dst), e = eventsFor(dst);
  e.ready.record(Stream.of(CPU, 0));
  e.ready.wait(gpu);
  emit(dst, {
    k: 'readHost', peer: 'cpu', src: src.storage.id, srcOffset: src.storage.byteOffset + src._offset * elementSize(src.dtype),
    id: out.storage.id, byteOffset: out.storage.byteOffset, bytes,
  });
  const reads = Stream.of(CPU, PINNED_READS);
  e.read.record(gpu);
  e.read.wait(reads);
  src.storage.recordStream(reads);
  return out;
}

/** Whether `src → dst` (a cpu tensor) can take the non-blocking device→host path. */
export const pinnedDownload = (dst: Tensor, src: Tensor): boolean =>
  dst.device === CPU && src.device !== CPU && dst.storage.pinned && dst.isContiguous() && src.isContiguous() &&
  dst.dtype === src.dtype && dst.shape.join() === src.shape.join();

/** Copies a contiguous device tensor into a pinned cpu tensor of the same shape and dtype, without blocking. */
export function downloadPinned(dst: Tensor, src: Tensor): void {
  const bytes = src.numel() * elementSize(src.dtype);
  if (!bytes) return;
  connect(src.device, CPU);
  const gpu = streamOf(src.device), e = eventsFor(src.device), es = elementSize(src.dtype);
  // The cpu's queued work first: it makes the destination's segment, and may still read or write it.
  e.ready.record(Stream.of(CPU, 0));
  e.ready.wait(gpu);
  emit(src.device, {
    k: 'writeHost', peer: 'cpu', dst: dst.storage.id, dstOffset: dst.storage.byteOffset + dst._offset * es,
    id: src.storage.id, byteOffset: src.storage.byteOffset + src._offset * es, bytes,
  });
  e.written.record(gpu);
  e.written.wait(Stream.of(CPU, 0));
}

/** `t.to('cpu', {nonBlocking: true})` from a device: a new pinned tensor, filled without blocking. */
export function downloadToPinned(src: Tensor): Tensor {
  const out = markPinned(alloc(src.shape, src.dtype, CPU));
  downloadPinned(out, src);
  return out;
}
