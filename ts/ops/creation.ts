/**
 * Creation: `tensor`, `zeros`, `ones`, `full`, `empty`, `arange`, `linspace`, `rand`, `randn`,
 * `eye`, and the `*_like` and `new_*` families. Every creation takes `{dtype, device}`; the
 * device defaults to `cpu`, or to `torch.setDefaultDevice`'s (ts/device.ts), as in PyTorch; the
 * `*_like` and `new_*` forms default to their tensor's. Host data is encoded on the calling thread and
 * moves to the worker with the command (transferred, not copied). Random numbers are made on
 * the device (ts/ops/random.ts; `randperm`, `bernoulli` and `multinomial` are in ts/ops/sampling.ts).
 */
import { device as toDevice, getDefaultDevice, type Device, type DeviceLike } from '../device.js';
import { checkBigFits, checkFits, elementSize, encode, isFloating, scalarName, storageCode, toDType, viewStorage, type DType } from '../dtype.js';
import type { Generator } from '../random.js';
import { Dist, drawInto, f32Bits, generatorFor } from './random.js';
import { checkPinTarget, markPinned } from '../runtime/pinned.js';
import { alloc, emit, ref, place } from '../runtime/dispatch.js';
import { bindArgs, checkOptions, isKeywords, REQUIRED } from '../args.js';
import { checkShape, numel } from '../shape.js';
import type { NestedArray, Tensor } from '../tensor.js';

/** Where and how to create a tensor: PyTorch's keyword-only creation arguments. */
export interface TensorOptions {
  dtype?: DType | string | null;
  device?: DeviceLike | null;
  requiresGrad?: boolean;
}

/** The creation keywords; the random functions add `generator`. */
const CREATION_KEYS = ['dtype', 'device', 'requiresGrad'] as const;

const dev = (o?: TensorOptions): Device => (o?.device == null ? getDefaultDevice() : toDevice(o.device));

/** Checks a creation's keywords and applies `requiresGrad` to the new tensor. */
export function made(op: string, t: Tensor, o: TensorOptions | undefined): Tensor {
  if (o?.requiresGrad) {
    if (!isFloating(t.dtype)) {
      t.dispose();
      throw new TypeError(`${op}(): Only Tensors of floating point and complex dtype can require gradients (got ${t.dtype})`);
    }
    t.requiresGrad = true;
  }
  return t;
}

/**
 * PyTorch's `*size` argument: `zeros(2, 3)`, `zeros([2, 3])` and `zeros()` (0-d), each with an
 * optional trailing options object. Returns the shape and the options (keys checked).
 */
export function sizeAndOptions<O extends TensorOptions>(op: string, args: readonly unknown[], keys: readonly string[] = CREATION_KEYS): [number[], O | undefined] {
  let rest = args;
  let o: O | undefined;
  if (rest.length && isKeywords(rest[rest.length - 1])) {
    o = rest[rest.length - 1] as O;
    rest = rest.slice(0, -1);
  }
  checkOptions(op, o, keys);
  const shape = rest.length === 1 && Array.isArray(rest[0]) ? (rest[0] as number[]) : (rest as number[]);
  if (shape.some((s) => typeof s !== 'number')) {
    throw new TypeError(`${op}(): argument 'size' must be a sequence of ints or ints, but got (${rest.map((r) => (Array.isArray(r) ? 'array' : typeof r)).join(', ')})`);
  }
  return [checkShape(shape.slice(), op), o];
}
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
  // Values already in the storage format (which cannot fail to encode) go straight into an idle
  // cpu device's memory: one copy. Others are encoded first, so a bad value raises before any allocation.
  if (storedAs(values, dtype)) {
    const t = alloc(shape, dtype, device);
    return t.storage.client.writeNow(t.storage.id, t.storage.byteOffset, values) ? t : upload(t, encode(values, dtype, 'tensor'));
  }
  const host = encode(values, dtype, 'tensor');
  return upload(alloc(shape, dtype, device), host);
}

/**
 * A new contiguous tensor from raw storage bytes (little-endian, `dtype`'s storage format: float16
 * and bfloat16 as their bits, bool as 0/1 bytes): checkpoints (ts/serialization). The bytes are copied.
 */
export function fromStorageBytes(bytes: Uint8Array, shape: number[], dtype: DType, device: Device): Tensor {
  const copy = bytes.slice();
  return upload(alloc(checkShape(shape, 'load'), dtype, device), viewStorage(dtype, copy.buffer, 0, copy.length / elementSize(dtype)));
}

/** Whether `values` is a typed array whose bytes are `dtype`'s storage (what `encode` would copy as is). */
const storedAs = (values: unknown, dtype: DType): values is ArrayBufferView =>
  (values instanceof Float32Array && dtype === 'float32') || (values instanceof Int32Array && dtype === 'int32') ||
  (values instanceof BigInt64Array && dtype === 'int64') || (values instanceof Uint8Array && dtype === 'uint8');

/** Writes encoded host values into a fresh tensor. */
function upload(t: Tensor, host: ReturnType<typeof encode>): Tensor {
  try {
    if (host.length) emit(t.device, { k: 'write', id: t.storage.id, byteOffset: t.storage.byteOffset, data: host.buffer as ArrayBuffer }, [host.buffer as ArrayBuffer]);
  } catch (e) {
    t.dispose(); // (a graph's capture refuses host copies)
    throw e;
  }
  return t;
}

/** A tensor from nested arrays or a typed array (`torch.tensor`). */
export function tensor(data: NestedArray | ArrayLike<number> | BigInt64Array | Tensor, options?: TensorOptions & { pinMemory?: boolean }): Tensor {
  checkOptions('tensor', options, [...CREATION_KEYS, 'pinMemory']);
  if (options?.pinMemory) {
    const { pinMemory: _, ...rest } = options;
    checkPinTarget('tensor()', dev(rest));
    return markPinned(tensor(data, rest));
  }
  if (ArrayBuffer.isView(data)) {
    const inferred: DType = data instanceof Int32Array ? 'int32' : data instanceof Uint8Array ? 'uint8' : data instanceof BigInt64Array ? 'int64' : 'float32';
    return made('tensor', fromHost(data as unknown as ArrayLike<number | bigint>, [(data as unknown as ArrayLike<number>).length], dt(options, inferred), dev(options)), options);
  }
  if (typeof data === 'object' && data !== null && !Array.isArray(data)) {
    throw new TypeError('tensor: expected nested arrays of numbers or a typed array; to copy a tensor use t.clone() or t.to()');
  }
  const { shape, flat } = flatten(data);
  const inferred: DType = flat.length && flat.every((x) => typeof x === 'boolean') ? 'bool'
    : flat.every((x) => typeof x === 'boolean' || typeof x === 'bigint' || Number.isInteger(x)) && flat.length ? 'int64' : 'float32';
  return made('tensor', fromHost(flat, shape, dt(options, inferred), dev(options)), options);
}

/** A tensor filled with `value` (`torch.full(size, fillValue, {dtype, device, requiresGrad})`). */
export function full(shape: number[], value: number | boolean | bigint, options?: TensorOptions): Tensor {
  checkOptions('full', options, CREATION_KEYS);
  const inferred: DType = typeof value === 'boolean' ? 'bool' : typeof value === 'bigint' || Number.isInteger(value) ? 'int64' : 'float32';
  const dtype = dt(options, inferred);
  if (typeof value === 'bigint' && dtype === 'int64' && BigInt(Number(value)) !== value) {
    // beyond ±2^53 a number (the fill command's value) would round it: the exact values go up as data
    const n = numel(checkShape(shape, 'full'));
    return made('full', fromHost(new BigInt64Array(n).fill(checkBigFits(value, dtype, 'full')), shape.slice(), dtype, dev(options)), options);
  }
  const v = Number(value);
  checkFits(v, dtype, 'full');
  const t = alloc(checkShape(shape, 'full'), dtype, dev(options));
  if (t.numel()) emit(t.device, { k: 'fill', out: place(t), dt: storageCode(dtype), n: t.numel(), value: dtype === 'bool' ? Number(v !== 0) : v });
  return made('full', t, options);
}

/** PyTorch's `*size` then keywords: `(2, 3)`, `([2, 3])`, `(2, 3, {dtype})`. */
export type SizeArgs<O = TensorOptions> = [shape: number[], options?: O] | number[] | [...number[], O];

/** Zeros (`torch.zeros(*size, {dtype, device, requiresGrad})`). */
export function zeros(...args: SizeArgs): Tensor {
  const [shape, o] = sizeAndOptions<TensorOptions>('zeros', args);
  return full(shape, 0, { ...o, dtype: o?.dtype ?? 'float32' });
}
/** Ones (`torch.ones(*size, {dtype, device, requiresGrad})`). */
export function ones(...args: SizeArgs): Tensor {
  const [shape, o] = sizeAndOptions<TensorOptions>('ones', args);
  return full(shape, 1, { ...o, dtype: o?.dtype ?? 'float32' });
}

/** Uninitialised memory (`torch.empty(*size, {dtype, device, requiresGrad, pinMemory})`). */
export function empty(...args: SizeArgs): Tensor {
  const [shape, o] = sizeAndOptions<TensorOptions & { pinMemory?: boolean }>('empty', args, [...CREATION_KEYS, 'pinMemory']);
  if (o?.pinMemory) checkPinTarget('empty()', dev(o));
  const t = made('empty', alloc(shape, dt(o, 'float32'), dev(o)), o);
  return o?.pinMemory ? markPinned(t) : t;
}

/** `torch.arange(end)`, `(start, end)` or `(start, end, step)`, each with trailing `{dtype, device, requiresGrad}`. */
export function arange(...args: [end: number, options?: TensorOptions] | [start: number, end: number, options?: TensorOptions]
  | [start: number, end: number | undefined, step: number, options?: TensorOptions]): Tensor {
  const o = bindArgs('arange', ['start', 'end', 'step', ...CREATION_KEYS], args, { start: REQUIRED as number, end: undefined as number | undefined, step: 1 } as
    { start: number; end?: number; step: number } & TensorOptions);
  let { start, end } = o;
  const { step } = o;
  const options: TensorOptions = { dtype: o.dtype, device: o.device, requiresGrad: o.requiresGrad };
  for (const [name, v] of [['start', start], ['end', end], ['step', step]] as const) {
    if (v !== undefined && typeof v !== 'number') throw new TypeError(`arange(): argument '${name}' must be a Number, not ${typeof v}`);
  }
  if (end === undefined) [start, end] = [0, start];
  if (step === 0) throw new RangeError('arange: step must be nonzero');
  if (!Number.isFinite(start) || !Number.isFinite(end)) throw new RangeError(`arange: unsupported range: ${start} -> ${end}`);
  if ((end - start) * step < 0) throw new RangeError(`arange: upper bound and larger bound inconsistent with step sign (start ${start}, end ${end}, step ${step})`);
  const dtype = dt(options, [start, end, step].every(Number.isInteger) ? 'int64' : 'float32');
  const n = Math.ceil((end - start) / step);
  checkFits(start + (n - 1) * step, dtype, 'arange');
  if (dtype === 'int64' && !(Number.isInteger(start) && Number.isInteger(step) && step === (step | 0))) {
    // the GPU's int64 arange takes an integer start and a 32-bit step; other ranges are computed here, as PyTorch does (in double, then cast)
    return made('arange', fromHost(Array.from({ length: n }, (_, i) => Math.trunc(start + i * step)), [n], dtype, dev(options)), options);
  }
  const t = alloc([n], dtype, dev(options));
  if (n) emit(t.device, { k: 'arange', out: place(t), dt: storageCode(dtype), n, start, step });
  return made('arange', t, options);
}

/** `steps` evenly spaced values from start to end inclusive (`torch.linspace`). */
export function linspace(start: number, end: number, steps: number, options?: TensorOptions): Tensor {
  checkOptions('linspace', options, CREATION_KEYS);
  if (!Number.isInteger(steps) || steps < 0) throw new RangeError(`linspace: number of steps must be non-negative, got ${steps}`);
  const step = steps > 1 ? (end - start) / (steps - 1) : 0;
  const half = Math.floor(steps / 2);
  const values = Array.from({ length: steps }, (_, i) => (i < half ? start + i * step : end - (steps - 1 - i) * step));
  return made('linspace', fromHost(values, [steps], dt(options, 'float32'), dev(options)), options);
}

/** Creation options of the random functions. */
export interface RandomOptions extends TensorOptions {
  generator?: Generator | null;
}
/** The random creations' keywords. */
export const RANDOM_KEYS = [...CREATION_KEYS, 'generator'] as const;

/** Uniform random numbers in [0, 1), made on the tensor's device (`torch.rand(*size, {generator, dtype, device, requiresGrad})`). */
export function rand(...args: SizeArgs<RandomOptions>): Tensor {
  const [shape, options] = sizeAndOptions<RandomOptions>('rand', args, RANDOM_KEYS);
  const dtype = dt(options, 'float32');
  if (!isFloating(dtype)) throw new TypeError(`"check_uniform_bounds" not implemented for '${scalarName(dtype)}'`);
  const d = dev(options), g = generatorFor('rand', d, options?.generator);
  return made('rand', drawInto(alloc(shape, dtype, d), Dist.Uniform, g, f32Bits(0), f32Bits(1)), options);
}

/** Standard normal random numbers, made on the tensor's device (`torch.randn(*size, {generator, dtype, device, requiresGrad})`). */
export function randn(...args: SizeArgs<RandomOptions>): Tensor {
  const [shape, options] = sizeAndOptions<RandomOptions>('randn', args, RANDOM_KEYS);
  const dtype = dt(options, 'float32');
  if (!isFloating(dtype)) throw new TypeError(`"normal_kernel" not implemented for '${scalarName(dtype)}'`);
  const d = dev(options), g = generatorFor('randn', d, options?.generator);
  return made('randn', drawInto(alloc(shape, dtype, d), Dist.Normal, g, f32Bits(0), f32Bits(1)), options);
}

/**
 * `torch.randint(low = 0, high, size, {generator, dtype = 'int64', device, requiresGrad})`:
 * integers uniform in [low, high), made on the tensor's device: low + ⌊w · (high - low) / 2^32⌋
 * for a random word w, so the range may be at most 2^32.
 */
export function randint(...args: [high: number, size: number[], options?: RandomOptions] | [low: number, high: number, size: number[], options?: RandomOptions]): Tensor {
  let rest: unknown[] = args;
  let o: RandomOptions | undefined;
  if (rest.length && isKeywords(rest[rest.length - 1])) {
    o = rest[rest.length - 1] as RandomOptions;
    rest = rest.slice(0, -1);
  }
  checkOptions('randint', o, RANDOM_KEYS);
  const [low, high, size] = (rest.length === 2 ? [0, ...rest] : rest) as [number, number, number[]];
  if (rest.length < 2 || rest.length > 3 || !Array.isArray(size)) {
    throw new TypeError('randint() received an invalid combination of arguments: expected (high, size) or (low, high, size), each with an optional options object');
  }
  if (!Number.isInteger(low) || !Number.isInteger(high)) throw new TypeError(`randint(): low and high must be integers, got ${low} and ${high}`);
  if (!(high > low)) throw new RangeError(`random_ expects 'from' to be less than 'to', but got from=${low} >= to=${high}`);
  const dtype = dt(o, 'int64');
  const shape = checkShape(size.slice(), 'randint');
  checkFits(low, dtype, 'randint');
  checkFits(high - 1, dtype, 'randint');
  if (low < -(2 ** 31) || high - 1 >= 2 ** 31 || high - low > 2 ** 32) {
    throw new RangeError(`randint(): the range [${low}, ${high}) must lie within int32 (webtorch draws 32-bit integers on the device)`);
  }
  const d = dev(o), g = generatorFor('randint', d, o?.generator);
  return made('randint', drawInto(alloc(shape, dtype, d), Dist.Int, g, low | 0, (high - low) >>> 0), o);
}

/** The identity matrix (`torch.eye`). */
export function eye(n: number, ...args: [m?: number, options?: TensorOptions] | [options: TensorOptions]): Tensor {
  const { m = n, ...options } = bindArgs('eye', ['m', ...CREATION_KEYS], args, {} as { m?: number } & TensorOptions, 1);
  checkShape([n, m], 'eye');
  const t = zeros([n, m], { ...options, requiresGrad: false });
  const diag = Math.min(n, m);
  if (diag) {
    const one = full([], 1, { dtype: t.dtype, device: t.device });
    emit(t.device, {
      k: 'copyInto', src: ref(one, [0]), srcDt: storageCode(t.dtype), dt: storageCode(t.dtype), shape: [diag],
      dst: { ...place(t), strides: [m + 1] },
    });
    one.dispose();
  }
  return made('eye', t, options);
}

/** Options that default to another tensor's dtype and device (keys checked as `op`'s). */
const like = (op: string, t: Tensor, o?: TensorOptions): TensorOptions => {
  checkOptions(op, o, CREATION_KEYS);
  return { ...o, dtype: o?.dtype ?? t.dtype, device: o?.device ?? t.device };
};

export const zerosLike = (t: Tensor, o?: TensorOptions) => zeros(t.shape.slice(), like('zeros_like', t, o));
export const onesLike = (t: Tensor, o?: TensorOptions) => ones(t.shape.slice(), like('ones_like', t, o));
export const fullLike = (t: Tensor, v: number | boolean, o?: TensorOptions) => full(t.shape.slice(), v, like('full_like', t, o));
export const emptyLike = (t: Tensor, o?: TensorOptions) => empty(t.shape.slice(), like('empty_like', t, o));
export const randLike = (t: Tensor, o?: TensorOptions) => rand(t.shape.slice(), like('rand_like', t, o));
export const randnLike = (t: Tensor, o?: TensorOptions) => randn(t.shape.slice(), like('randn_like', t, o));

/** The `new_*` methods: same dtype and device as `t` unless overridden. */
export const newMethods = {
  new_zeros(this: Tensor, shape: number[], o?: TensorOptions) { return zeros(shape, like('new_zeros', this, o)); },
  new_ones(this: Tensor, shape: number[], o?: TensorOptions) { return ones(shape, like('new_ones', this, o)); },
  new_full(this: Tensor, shape: number[], v: number | boolean, o?: TensorOptions) { return full(shape, v, like('new_full', this, o)); },
  new_empty(this: Tensor, shape: number[], o?: TensorOptions) { return empty(shape, like('new_empty', this, o)); },
  new_tensor(this: Tensor, data: NestedArray, o?: TensorOptions) { return tensor(data, like('new_tensor', this, o)); },
};

