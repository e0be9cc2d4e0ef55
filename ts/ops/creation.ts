/**
 * Creation: `tensor`, `zeros`, `ones`, `full`, `empty`, `arange`, `linspace`, `rand`, `randn`,
 * `eye`, and the `*_like` and `new_*` families. Every creation takes `{dtype, device}`; the
 * device defaults to `cpu`, as in PyTorch. Host data is encoded on the calling thread and
 * moves to the worker with the command (transferred, not copied).
 */
import { CPU, device as toDevice, type Device, type DeviceLike } from '../device.js';
import { checkFits, encode, isFloating, storageCode, toDType, type DType } from '../dtype.js';
import { defaultGenerator, type Generator } from '../random.js';
import { alloc, launch, ref, place } from '../runtime/dispatch.js';
import { checkOptions } from './options.js';
import { checkShape, numel } from '../shape.js';
import type { NestedArray, Tensor } from '../tensor.js';

/** Where and how to create a tensor. */
export interface TensorOptions {
  dtype?: DType | string;
  device?: DeviceLike;
}

const dev = (o?: TensorOptions): Device => {
  checkOptions('tensor creation', o, ['dtype', 'device', 'generator']);
  return o?.device === undefined ? CPU : toDevice(o.device);
};
const dt = (o: TensorOptions | undefined, fallback: DType): DType => (o?.dtype === undefined ? fallback : toDType(o.dtype));

/** Flattens nested arrays, checking that they are rectangular. */
function flatten(data: unknown): { shape: number[]; flat: (number | boolean | bigint)[] } {
  const shape: number[] = [];
  for (let d: unknown = data; Array.isArray(d); d = d[0]) shape.push(d.length);
  const flat: (number | boolean | bigint)[] = [];
  const walk = (x: unknown, depth: number) => {
    if (depth === shape.length) {
      if (typeof x !== 'number' && typeof x !== 'boolean' && typeof x !== 'bigint') {
        throw new TypeError(`tensor: expected numbers, BigInts or booleans, found ${Array.isArray(x) ? 'a nested array' : typeof x} at depth ${depth}`);
      }
      flat.push(x);
      return;
    }
    if (!Array.isArray(x) || x.length !== shape[depth]) {
      throw new RangeError(`tensor: expected sequence of length ${shape[depth]} at dim ${depth} (got ${Array.isArray(x) ? x.length : typeof x})`);
    }
    for (const y of x) walk(y, depth + 1);
  };
  walk(data, 0);
  return { shape, flat };
}

/** Uploads host values as a new contiguous tensor. */
export function fromHost(values: ArrayLike<number | boolean | bigint>, shape: number[], dtype: DType, device: Device): Tensor {
  const host = encode(values, dtype, 'tensor');
  return upload(alloc(shape, dtype, device), host);
}

/** Writes encoded host values into a fresh tensor. */
function upload(t: Tensor, host: ReturnType<typeof encode>): Tensor {
  if (host.length) launch(t.device, { k: 'write', id: t.storage.id, byteOffset: t.storage.byteOffset, data: host.buffer as ArrayBuffer }, [host.buffer as ArrayBuffer]);
  return t;
}

/** A tensor from nested arrays or a typed array (`torch.tensor`). */
export function tensor(data: NestedArray | ArrayLike<number> | BigInt64Array | Tensor, options?: TensorOptions): Tensor {
  if (ArrayBuffer.isView(data)) {
    const inferred: DType = data instanceof Int32Array ? 'int32' : data instanceof Uint8Array ? 'uint8' : data instanceof BigInt64Array ? 'int64' : 'float32';
    return fromHost(data as unknown as ArrayLike<number | bigint>, [(data as unknown as ArrayLike<number>).length], dt(options, inferred), dev(options));
  }
  if (typeof data === 'object' && data !== null && !Array.isArray(data)) {
    throw new TypeError('tensor: expected nested arrays of numbers or a typed array; to copy a tensor use t.clone() or t.to()');
  }
  const { shape, flat } = flatten(data);
  const inferred: DType = flat.length && flat.every((x) => typeof x === 'boolean') ? 'bool'
    : flat.every((x) => typeof x === 'boolean' || typeof x === 'bigint' || Number.isInteger(x)) && flat.length ? 'int64' : 'float32';
  return fromHost(flat, shape, dt(options, inferred), dev(options));
}

/** A tensor filled with `value` (`torch.full`). */
export function full(shape: number[], value: number | boolean, options?: TensorOptions): Tensor {
  const inferred: DType = typeof value === 'boolean' ? 'bool' : Number.isInteger(value) ? 'int64' : 'float32';
  const dtype = dt(options, inferred);
  const v = Number(value);
  checkFits(v, dtype, 'full');
  const t = alloc(checkShape(shape, 'full'), dtype, dev(options));
  if (t.numel()) launch(t.device, { k: 'fill', out: place(t), dt: storageCode(dtype), n: t.numel(), value: dtype === 'bool' ? Number(v !== 0) : v });
  return t;
}

/** Zeros (`torch.zeros`). */
export const zeros = (shape: number[], options?: TensorOptions): Tensor => full(shape, 0, { dtype: 'float32', ...options });
/** Ones (`torch.ones`). */
export const ones = (shape: number[], options?: TensorOptions): Tensor => full(shape, 1, { dtype: 'float32', ...options });

/** Uninitialised memory (`torch.empty`). */
export function empty(shape: number[], options?: TensorOptions): Tensor {
  return alloc(checkShape(shape, 'empty'), dt(options, 'float32'), dev(options));
}

/** `torch.arange(end)` or `torch.arange(start, end, step)`. */
export function arange(start: number, end?: number, step = 1, options?: TensorOptions): Tensor {
  if (end === undefined) [start, end] = [0, start];
  if (step === 0) throw new RangeError('arange: step must be nonzero');
  if (!Number.isFinite(start) || !Number.isFinite(end)) throw new RangeError(`arange: unsupported range: ${start} -> ${end}`);
  if ((end - start) * step < 0) throw new RangeError(`arange: upper bound and larger bound inconsistent with step sign (start ${start}, end ${end}, step ${step})`);
  const dtype = dt(options, [start, end, step].every(Number.isInteger) ? 'int64' : 'float32');
  const n = Math.ceil((end - start) / step);
  checkFits(start + (n - 1) * step, dtype, 'arange');
  const t = alloc([n], dtype, dev(options));
  if (n) launch(t.device, { k: 'arange', out: place(t), dt: storageCode(dtype), n, start, step });
  return t;
}

/** `steps` evenly spaced values from start to end inclusive (`torch.linspace`). */
export function linspace(start: number, end: number, steps: number, options?: TensorOptions): Tensor {
  if (!Number.isInteger(steps) || steps < 0) throw new RangeError(`linspace: number of steps must be non-negative, got ${steps}`);
  const step = steps > 1 ? (end - start) / (steps - 1) : 0;
  const half = Math.floor(steps / 2);
  const values = Array.from({ length: steps }, (_, i) => (i < half ? start + i * step : end - (steps - 1 - i) * step));
  return fromHost(values, [steps], dt(options, 'float32'), dev(options));
}

/** Uniform random numbers in [0, 1) (`torch.rand`). */
export function rand(shape: number[], options?: TensorOptions & { generator?: Generator }): Tensor {
  const dtype = dt(options, 'float32');
  if (!isFloating(dtype)) throw new TypeError(`"check_uniform_bounds" not implemented for '${dtype}'`);
  const t = alloc(checkShape(shape, 'rand'), dtype, dev(options));
  return upload(t, encode((options?.generator ?? defaultGenerator).uniform(t.numel()), dtype, 'rand'));
}

/** Standard normal random numbers (`torch.randn`). */
export function randn(shape: number[], options?: TensorOptions & { generator?: Generator }): Tensor {
  const dtype = dt(options, 'float32');
  if (!isFloating(dtype)) throw new TypeError(`"normal_kernel" not implemented for '${dtype}'`);
  const t = alloc(checkShape(shape, 'randn'), dtype, dev(options));
  return upload(t, encode((options?.generator ?? defaultGenerator).normal(t.numel()), dtype, 'randn'));
}

/** The identity matrix (`torch.eye`). */
export function eye(n: number, m = n, options?: TensorOptions): Tensor {
  checkShape([n, m], 'eye');
  const t = zeros([n, m], options);
  const diag = Math.min(n, m);
  if (diag) {
    const one = full([], 1, { dtype: t.dtype, device: t.device });
    launch(t.device, {
      k: 'copyInto', src: ref(one, [0]), srcDt: storageCode(t.dtype), dt: storageCode(t.dtype), shape: [diag],
      dst: { ...place(t), strides: [m + 1] },
    });
    one.dispose();
  }
  return t;
}

/** Options that default to another tensor's dtype and device. */
const like = (t: Tensor, o?: TensorOptions): TensorOptions => ({ dtype: t.dtype, device: t.device, ...o });

export const zerosLike = (t: Tensor, o?: TensorOptions) => zeros(t.shape.slice(), like(t, o));
export const onesLike = (t: Tensor, o?: TensorOptions) => ones(t.shape.slice(), like(t, o));
export const fullLike = (t: Tensor, v: number | boolean, o?: TensorOptions) => full(t.shape.slice(), v, like(t, o));
export const emptyLike = (t: Tensor, o?: TensorOptions) => empty(t.shape.slice(), like(t, o));
export const randLike = (t: Tensor, o?: TensorOptions) => rand(t.shape.slice(), like(t, o));
export const randnLike = (t: Tensor, o?: TensorOptions) => randn(t.shape.slice(), like(t, o));

/** The `new_*` methods: same dtype and device as `t` unless overridden. */
export const newMethods = {
  new_zeros(this: Tensor, shape: number[], o?: TensorOptions) { return zeros(shape, like(this, o)); },
  new_ones(this: Tensor, shape: number[], o?: TensorOptions) { return ones(shape, like(this, o)); },
  new_full(this: Tensor, shape: number[], v: number | boolean, o?: TensorOptions) { return full(shape, v, like(this, o)); },
  new_empty(this: Tensor, shape: number[], o?: TensorOptions) { return empty(shape, like(this, o)); },
  new_tensor(this: Tensor, data: NestedArray, o?: TensorOptions) { return tensor(data, like(this, o)); },
};

