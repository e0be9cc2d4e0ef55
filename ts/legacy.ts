/**
 * PyTorch's legacy typed constructors: `torch.FloatTensor(2, 3)` (sizes: uninitialised memory),
 * `torch.FloatTensor([1, 2])` (data), `torch.FloatTensor()` (empty), and their `torch.gpu`
 * (`torch.cuda`) forms, which place the tensor on the current GPU. `x instanceof torch.FloatTensor`
 * holds for a float32 tensor on the cpu, as `isinstance(x, torch.FloatTensor)` does.
 * A type whose dtype webtorch lacks (`DoubleTensor`: WebGPU has no float64) raises when called.
 */
import { CPU, device as toDevice, type Device, type DeviceLike } from './device.js';
import { toDType, type DType } from './dtype.js';
import { empty, tensor } from './ops/creation.js';
import { checkOptions, isKeywords } from './args.js';
import { Tensor, type NestedArray } from './tensor.js';

/** The legacy type names and their dtypes; null where webtorch has no such dtype (the name raises). */
const TYPES = {
  FloatTensor: 'float32', DoubleTensor: 'float64', HalfTensor: 'float16', BFloat16Tensor: 'bfloat16',
  LongTensor: 'int64', IntTensor: 'int32', ShortTensor: 'int16', CharTensor: 'int8', ByteTensor: 'uint8', BoolTensor: 'bool',
} as const;

/** A legacy typed constructor: sizes, data, or nothing, with an optional `{device}` of its device type. */
export interface LegacyTensorType {
  (...sizes: number[]): Tensor;
  (...args: [...sizes: number[], options: { device?: DeviceLike }]): Tensor;
  (data: NestedArray | ArrayLike<number>, options?: { device?: DeviceLike }): Tensor;
  new (...sizes: number[]): Tensor;
  new (data: NestedArray | ArrayLike<number>, options?: { device?: DeviceLike }): Tensor;
  /** `x instanceof torch.FloatTensor`: x has this type's dtype and device type. */
  [Symbol.hasInstance](x: unknown): boolean;
}

/** The constructor `name` (a key of `TYPES`) for the cpu, or for the current GPU. */
export function legacyType(name: keyof typeof TYPES, kind: 'cpu' | 'gpu'): LegacyTensorType {
  const qualified = kind === 'cpu' ? `torch.${name}` : `torch.gpu.${name}`;
  const dtypeName = TYPES[name];
  const ctor = function (...args: unknown[]): Tensor {
    const dtype: DType = toDType(dtypeName, qualified); // raises for float64, int16, int8
    let options: { device?: DeviceLike } | undefined;
    if (args.length && isKeywords(args[args.length - 1])) options = args.pop() as { device?: DeviceLike };
    checkOptions(qualified, options, ['device']);
    const device = where(kind, options?.device);
    const [first] = args;
    if (args.length === 1 && (Array.isArray(first) || ArrayBuffer.isView(first))) {
      return tensor(first as NestedArray, { dtype, device });
    }
    if (first instanceof Tensor) {
      throw new TypeError(`${qualified}(): a tensor argument is not supported; use t.to({dtype: '${dtype}', device: '${device}'})`);
    }
    if (!args.every((s) => typeof s === 'number' && Number.isInteger(s))) {
      throw new TypeError(`${qualified}(): expected sizes (integers) or data (an array), but got (${args.map((a) => (Array.isArray(a) ? 'array' : typeof a)).join(', ')})`);
    }
    return empty(args.length ? (args as number[]) : [0], { dtype, device });
  };
  Object.defineProperty(ctor, 'name', { value: name });
  Object.defineProperty(ctor, Symbol.hasInstance, {
    value: (x: unknown) => x instanceof Tensor && x.dtype === dtypeName && x.device.type === kind,
  });
  return ctor as unknown as LegacyTensorType;
}

/** The target device: the cpu, or the current GPU; a `device` keyword must be of the constructor's type. */
function where(kind: 'cpu' | 'gpu', given: DeviceLike | undefined): Device {
  const d = given === undefined ? (kind === 'cpu' ? CPU : toDevice('gpu')) : toDevice(given);
  if (d.type !== kind) throw new TypeError(`legacy constructor expects device type: ${kind} but device type: ${d.type} was passed`);
  return d;
}
