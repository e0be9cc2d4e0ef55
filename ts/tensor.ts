/**
 * The tensor handle: a strided view (shape, strides, offset, dtype) of a device storage.
 *
 * A handle is cheap and lives on the calling thread; the data lives in the device's worker.
 * Ops return new handles at once; `await t.data()`, `t.item()` and `t.tolist()` are the sync
 * points. Op methods (`add`, `sum`, `reshape`, …) are attached in `ts/ops/methods.ts`.
 */
import { decode, elementSize, viewStorage, type DType } from './dtype.js';
import type { Device } from './device.js';
import { collected, type Storage } from './runtime/storage.js';
import { track } from './scope.js';
import { contiguousStrides, isContiguous, normDim, numel, type Shape } from './shape.js';

/** Nested arrays of numbers or booleans, as `tolist()` returns. */
export type NestedArray = number | boolean | NestedArray[];

/** A tensor on a device. */
export class Tensor {
  private _disposed = false;

  /** @internal Use the creation functions (`torch.tensor`, `torch.zeros`, …). */
  constructor(
    /** @internal */ readonly storage: Storage,
    readonly shape: readonly number[],
    /** @internal Strides in elements. */ readonly _strides: readonly number[],
    /** @internal Offset into the storage, in elements. */ readonly _offset: number,
    readonly dtype: DType,
  ) {
    storage.retain();
    collected.register(this, storage, this);
    track(this);
  }

  /** The device the tensor lives on. */
  get device(): Device {
    return this.storage.device;
  }

  /** Number of dims. */
  get ndim(): number {
    return this.shape.length;
  }

  /** Number of elements. */
  numel(): number {
    return numel(this.shape);
  }

  /** Number of dims (PyTorch's `dim()`). */
  dim(): number {
    return this.shape.length;
  }

  /** The sizes, or one size. */
  size(): number[];
  size(dim: number): number;
  size(dim?: number): number[] | number {
    return dim === undefined ? this.shape.slice() : this.shape[normDim(dim, this.ndim)];
  }

  /** The strides in elements, or one stride. */
  stride(): number[];
  stride(dim: number): number;
  stride(dim?: number): number[] | number {
    return dim === undefined ? this._strides.slice() : this._strides[normDim(dim, this.ndim)];
  }

  /** Offset into the storage, in elements. */
  storageOffset(): number {
    return this._offset;
  }

  /** Whether the tensor is row-major contiguous. */
  isContiguous(): boolean {
    return isContiguous(this.shape, this._strides);
  }

  /** PyTorch's `get_device()`: the GPU index, or -1 on the CPU. */
  getDevice(): number {
    return this.device.type === 'cpu' ? -1 : this.device.index;
  }

  /** Bytes per element. */
  elementSize(): number {
    return elementSize(this.dtype);
  }

  /** Whether `dispose()` was called. */
  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Frees the tensor's reference to its storage now. Views keep the storage alive. Idempotent. */
  dispose(): void {
    if (this._disposed) return;
    this._disposed = true;
    collected.unregister(this);
    this.storage.release();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /** @internal Throws if the tensor was disposed. */
  _check(op: string): this {
    if (this._disposed) throw new Error(`${op}: cannot use a disposed tensor (shape [${this.shape.join(', ')}], ${this.dtype}, ${this.device})`);
    return this;
  }

  /** Reads the elements, in row-major order, as a typed array of the dtype's storage. */
  async data(): Promise<Float32Array | Int32Array | Uint8Array | Uint16Array> {
    this._check('data');
    const n = this.numel();
    const src = isContiguous(this.shape, this._strides) ? this : this.contiguous();
    const bytes = elementSize(this.dtype);
    try {
      const buf = await src.storage.client.read(src.storage.id, src.storage.byteOffset + src._offset * bytes, n * bytes);
      return viewStorage(this.dtype, buf, 0, n);
    } finally {
      if (src !== this) src.dispose();
    }
  }

  /** The elements as plain numbers (booleans for bool), row-major. */
  async values(): Promise<(number | boolean)[]> {
    return decode(await this.data(), this.dtype);
  }

  /** The value of a one-element tensor. */
  async item(): Promise<number | boolean> {
    this._check('item');
    if (this.numel() !== 1) {
      throw new RangeError(`a Tensor with ${this.numel()} elements cannot be converted to Scalar`);
    }
    return (await this.values())[0];
  }

  /** The elements as nested arrays. */
  async tolist(): Promise<NestedArray> {
    const flat = await this.values();
    const build = (d: number, off: number): NestedArray => {
      if (d === this.ndim) return flat[off];
      const step = contiguousStrides(this.shape)[d];
      return Array.from({ length: this.shape[d] }, (_, i) => build(d + 1, off + i * step));
    };
    return build(0, 0);
  }

  toString(): string {
    return `tensor(shape=[${this.shape.join(', ')}], dtype=${this.dtype}, device='${this.device}')`;
  }
}

/** @internal A new handle on the same storage. */
export function view(t: Tensor, shape: Shape, strides: Shape, offset = t._offset): Tensor {
  return new Tensor(t.storage, shape.slice(), strides.slice(), offset, t.dtype);
}
