/**
 * Tensors to and from checkpoint bytes: reading a tensor back to the host (on any device, async),
 * uploading raw bytes to a device, and the devices a checkpoint's location tags name.
 *
 * A checkpoint's bytes are little-endian; so are typed arrays on every platform webtorch runs on
 * (x86, ARM, WebAssembly). `checkLittleEndian` refuses a big-endian host rather than swap.
 */
import { DTYPES, elementSize, type DType } from '../dtype.js';
import { CPU, Device, currentDevice, device as toDevice, deviceCount, isAvailable, type DeviceLike } from '../device.js';
import { fromStorageBytes } from '../ops/creation.js';
import type { Tensor } from '../tensor.js';

/** PyTorch's storage class of each dtype webtorch has. */
export const STORAGE_CLASS: Record<DType, string> = {
  float32: 'FloatStorage', float16: 'HalfStorage', bfloat16: 'BFloat16Storage', int64: 'LongStorage',
  int32: 'IntStorage', uint8: 'ByteStorage', bool: 'BoolStorage',
};

/** Throws on a big-endian host (checkpoints are little-endian; typed arrays use the host's order). */
export function checkLittleEndian(): void {
  if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) throw new Error('checkpoints: this host is big-endian; webtorch reads and writes little-endian checkpoints only');
}

/** Starts reading a tensor's elements back to the host (row-major, its dtype's storage bytes). */
export function readBytes(t: Tensor): Promise<Uint8Array> {
  return t.data().then((a) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
}

/** Whether a dtype name (from a file) is one webtorch holds. */
export const isDType = (d: string): d is DType => (DTYPES as string[]).includes(d);

/** Refuses a dtype webtorch cannot hold, never converting it. */
export function checkDType(d: string, what: string): DType {
  if (isDType(d)) return d;
  throw new TypeError(`torch.load: ${what} is ${d}, which webtorch cannot hold (its dtypes: ${DTYPES.join(', ')}); convert it before saving (in PyTorch, e.g. .float() or .long())`);
}

/** Checks a bool tensor's bytes are 0 or 1 (anything else is a corrupt file, not a boolean). */
export function checkBoolBytes(b: Uint8Array, what: string): void {
  const i = b.findIndex((x) => x > 1);
  if (i >= 0) throw new Error(`torch.load: ${what} is bool but byte ${i} is ${b[i]} (a bool is 0 or 1): the file is corrupt`);
}

/** A device's location tag, as PyTorch writes it: `cpu`, `cuda:N` (webtorch's `gpu:N`, which PyTorch would not know). */
export const locationOf = (d: Device): string => (d.type === 'cpu' ? 'cpu' : `cuda:${d.index}`);

/** `torch.load`'s `mapLocation`: a device for all, a tag → tag/device table, or a function of the tag. */
export type MapLocation = DeviceLike | Record<string, DeviceLike> | ((location: string) => DeviceLike | null | undefined) | null | undefined;

/** Where a storage loads, before the GPUs are checked: the cpu, or a GPU by index. */
export interface Place { type: 'cpu' | 'gpu'; index: number }

/**
 * Where a storage tagged `location` loads, after `mapLocation` (PyTorch's `_get_restore_location`).
 * GPU indices are checked later, by `placeDevices`, once the GPUs are found (a file tagged
 * `cuda:0` may be the first thing a program touches).
 */
export function restorePlace(location: string, map: MapLocation, what: string): Place {
  let target: DeviceLike | null | undefined = location;
  if (typeof map === 'function') target = map(location) ?? location;
  else if (map instanceof Device || typeof map === 'string' || typeof map === 'number') target = map;
  else if (map && typeof map === 'object') target = Object.hasOwn(map, location) ? map[location] : location;
  if (target instanceof Device) return { type: target.type === 'cpu' ? 'cpu' : 'gpu', index: target.index };
  if (typeof target === 'number' && Number.isInteger(target) && target >= 0) return { type: 'gpu', index: target };
  const m = typeof target === 'string' ? /^(cpu|gpu|cuda)(?::(\d+))?$/.exec(target.trim()) : null;
  if (!m || (m[1] === 'cpu' && m[2] !== undefined && m[2] !== '0')) throw new Error(`torch.load: don't know how to restore data location of ${what} (tagged with ${String(target)})`);
  return m[1] === 'cpu' ? { type: 'cpu', index: 0 } : { type: 'gpu', index: m[2] === undefined ? currentDevice() : Number(m[2]) };
}

/** The devices of `places`, after checking that the GPUs they name exist (PyTorch's messages, with webtorch's option name). */
export async function placeDevices(places: Place[]): Promise<Device[]> {
  const gpus = places.filter((p) => p.type === 'gpu');
  if (gpus.length) {
    if (!(await isAvailable())) {
      throw new Error("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use torch.load with {mapLocation: 'cpu'} to map your storages to the CPU.");
    }
    const n = await deviceCount(), top = Math.max(...gpus.map((p) => p.index));
    if (top >= n) throw new Error(`Attempting to deserialize object on CUDA device ${top} but torch.cuda.device_count() is ${n}. Please use torch.load with mapLocation to map your storages to an existing device.`);
  }
  return places.map((p) => (p.type === 'cpu' ? CPU : toDevice(`gpu:${p.index}`)));
}

/** Uploads a storage's bytes as a 1-d tensor on `device`. */
export function uploadStorage(bytes: Uint8Array, dtype: DType, device: Device): Tensor {
  return fromStorageBytes(bytes, [bytes.length / elementSize(dtype)], dtype, device);
}
