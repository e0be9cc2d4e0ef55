/**
 * Moving data: `to`, `cuda`/`gpu`, `cpu`, `copy_` and `clone`.
 *
 * Between devices, bytes go worker to worker over a MessagePort opened on first use for each
 * pair: the source queues a `send`, the destination a `recv` with the same tag. Both sit in
 * their devices' queues in program order, so a copy sees every earlier write to its source and
 * every later op on the destination sees the copy. Nothing passes through the calling thread.
 * `x.to(x.device)` (same dtype) returns `x` itself, as in PyTorch.
 */
import { CPU, Device, clientOf, device as toDevice, type DeviceLike } from '../device.js';
import { canPin, downloadPinned, downloadToPinned, pinnedDownload, pinnedUpload, uploadPinned } from '../runtime/pinned.js';
import { elementSize, storageCode, toDType, type DType } from '../dtype.js';
import { alloc, emit, ref, sameDevice } from '../runtime/dispatch.js';
import { connect, newTag } from '../runtime/peers.js';
import { broadcastStrides, fmt } from '../shape.js';
import { Tensor } from '../tensor.js';
import { isGradEnabled, needsGrad, op as recorded, record } from '../autograd/graph.js';
import { sumTo } from './reduce-kernel.js';
import { zerosLike } from './creation.js';
import { bindArgs, type PyArgs } from '../args.js';
import { cast, contiguous } from './cast.js';


/**
 * Bytes per chunk of a device-to-device copy (a multiple of 4; copies up to twice this go whole).
 * Each chunk is its own `send`/`recv` pair in both devices' stream order, so the source's read of
 * a chunk (through its reused read-staging buffer) overlaps the destination's upload of the one
 * before, and the destination's later work waits only for the chunks it needs to have landed.
 */
let copyChunk = 4 << 20;

/** @internal Sets the chunk size of device-to-device copies (bench rows, tests); returns the old one. */
export function setCopyChunkBytes(bytes: number): number {
  if (!Number.isInteger(bytes) || bytes < 4 || bytes % 4) throw new RangeError(`copy chunk must be a positive multiple of 4 bytes, got ${bytes}`);
  const old = copyChunk;
  copyChunk = bytes;
  return old;
}

/** A contiguous copy of `src` on another device, in `src`'s dtype; `nonBlocking` takes the pinned path where it applies (ts/runtime/pinned.ts). */
function transfer(src: Tensor, dst: Device, nonBlocking = false): Tensor {
  if (nonBlocking && pinnedUpload(src, dst)) return uploadPinned(src, dst);
  if (nonBlocking && dst === CPU && src.isContiguous() && canPin()) return downloadToPinned(src._check('to'));
  // A contiguous source is sent as it is (inside `torch.gpu.stream(s)` of the destination too).
  const c = src.isContiguous() ? src._check('to') : contiguous(src);
  const out = alloc(src.shape, src.dtype, dst);
  const bytes = src.numel() * elementSize(src.dtype);
  if (bytes) {
    try {
      connect(src.device, dst);
      const from = c.storage.byteOffset + c._offset * elementSize(src.dtype);
      // Large copies go in chunks: the destination uploads chunk i while the source reads chunk i + 1.
      const chunk = bytes > 2 * copyChunk ? copyChunk : bytes;
      for (let off = 0; off < bytes; off += chunk) {
        const n = Math.min(chunk, bytes - off), tag = newTag();
        emit(src.device, { k: 'send', peer: String(dst), tag, id: c.storage.id, byteOffset: from + off, bytes: n });
        emit(dst, { k: 'recv', peer: String(src.device), tag, id: out.storage.id, byteOffset: out.storage.byteOffset + off });
      }
    } catch (e) {
      // (a graph's capture refuses copies between devices)
      out.dispose();
      if (c !== src) c.dispose();
      throw e;
    }
  }
  if (c !== src) c.dispose();
  return out;
}

/** What `to()` accepts: a device, a dtype, or both (plus PyTorch's flags). */
export interface ToOptions {
  device?: DeviceLike;
  dtype?: DType | string;
  /**
   * From pinned memory to a device, or from a device to the cpu (into a new pinned tensor): the
   * copy runs in stream order without holding back other streams (ts/runtime/pinned.ts). From
   * pageable memory it behaves as without it, as in PyTorch.
   */
  nonBlocking?: boolean;
  /** Always copy, even when nothing changes. */
  copy?: boolean;
}

const DTYPE_NAMES = new Set(['float32', 'float16', 'bfloat16', 'int32', 'int64', 'uint8', 'bool', 'float', 'half', 'int', 'long', 'double', 'float64']);

/** `t.to(device)`, `t.to(dtype)`, `t.to({device, dtype})`. */
export function to(t: Tensor, target: DeviceLike | DType | ToOptions, options: ToOptions = {}): Tensor {
  t._check('to');
  const o: ToOptions = typeof target === 'string' && DTYPE_NAMES.has(target) ? { dtype: target, ...options }
    : typeof target === 'object' && !(target instanceof Device) ? { ...target, ...options }
      : { device: target, ...options };
  const dev = o.device === undefined ? t.device : toDevice(o.device);
  const dtype = o.dtype === undefined ? t.dtype : toDType(o.dtype, 'to');
  if (dev === t.device) {
    if (dtype === t.dtype) return o.copy ? cast(t, dtype) : t;
    return cast(t, dtype);
  }
  // Differentiable across devices: the gradient travels back to the source device.
  const moved = recorded('to', [t], () => transfer(t, dev, !!o.nonBlocking), () => ([g]) => [transfer(g!, t.device)]);
  if (dtype === t.dtype) return moved;
  const out = cast(moved, dtype);
  moved.dispose();
  return out;
}

/**
 * `dst.copy_(src, nonBlocking)`: copies (broadcasting, converting dtype) from any device into
 * `dst`, in place; `nonBlocking` as for `to()`.
 */
export function copyInto(dst: Tensor, src: Tensor, nonBlocking = false): Tensor {
  dst._check('copy_');
  src._check('copy_');
  broadcastStrides(src.shape, src._strides, dst.shape);
  if (src.ndim > dst.ndim || src.shape.some((s, i) => s !== 1 && s !== dst.shape[dst.ndim - src.ndim + i])) {
    throw new RangeError(`copy_: the source of shape ${fmt(src.shape)} cannot be broadcast to the destination of shape ${fmt(dst.shape)}`);
  }
  if (dst.requiresGrad && dst.isLeaf && isGradEnabled()) {
    throw new Error('a leaf Variable that requires grad is being used in an in-place operation (copy_).');
  }
  dst.storage.version++;
  const history = dst.requiresGrad && isGradEnabled();
  if (nonBlocking && pinnedDownload(dst, src) && !needsGrad(src) && !history) {
    downloadPinned(dst, src);
    return dst;
  }
  const local = src.device === dst.device ? src : transfer(src, dst.device, nonBlocking);
  sameDevice('copy_', [dst, local]);
  if (dst.numel()) {
    emit(dst.device, {
      k: 'copyInto', src: ref(local, broadcastStrides(local.shape, local._strides, dst.shape)), srcDt: storageCode(local.dtype),
      dst: ref(dst), dt: storageCode(dst.dtype), shape: dst.shape.slice(),
    });
  }
  if (local !== src) local.dispose();
  if (needsGrad(src) || history) {
    // dst now holds src's values: its gradient flows to src (summed over broadcast dims, on src's
    // device), and none to what dst held before (zeros, as PyTorch's CopyBackwards: the values
    // that depended on it are gone).
    const shape = src.shape.slice(), from = src.device, fromSrc = needsGrad(src);
    record('copy_', [history ? dst : null, src], dst, () => ([g]) => {
      const old = history ? zerosLike(g!) : null;
      if (!fromSrc) return [old, null];
      const s = sumTo(g!, shape);
      return [old, from === g!.device ? (s === g ? cast(s, src.dtype) : s) : transfer(s, from)];
    });
  }
  return dst;
}

/** A contiguous copy with the same dtype and device. */
export const clone = (t: Tensor): Tensor => cast(t._check('clone'), t.dtype);

/** `t.cuda(device?, nonBlocking?)` / `t.gpu(…)`: to gpu:i (the current GPU when omitted); PyTorch's keywords as `{device, nonBlocking}`. */
export function toGpu(t: Tensor, ...args: PyArgs<[device: DeviceLike | null, nonBlocking: boolean], { device?: DeviceLike | null; nonBlocking?: boolean }>): Tensor {
  const o = bindArgs('cuda', ['device', 'nonBlocking'], args, { device: null as DeviceLike | null, nonBlocking: false });
  return to(t, o.device == null ? toDevice('gpu') : toDevice(o.device), { nonBlocking: !!o.nonBlocking });
}

