/**
 * The tensor handle: a strided view (shape, strides, offset, dtype) of a device storage.
 *
 * A handle is cheap and lives on the calling thread; the data lives in the device's worker.
 * Ops return new handles at once; `await t.data()`, `t.item()` and `t.tolist()` are the sync
 * points. Op methods (`add`, `sum`, `reshape`, …) are attached in `ts/ops/methods.ts`.
 */
import { runBackward, rootGrad, type BackwardOptions } from './autograd/engine.js';
import { setDetach, type Node } from './autograd/graph.js';
import { bindArgs, type PyArgs } from './args.js';
import { decode, elementSize, isFloating, viewStorage, type DType } from './dtype.js';
import type { Device } from './device.js';
import { collected, watch, type Storage } from './runtime/storage.js';
import { formatTensor, formatTensorMeta, type PrintInfo } from './print.js';
import { track } from './scope.js';
import { contiguousStrides, isContiguous, normDim, numel, type Shape } from './shape.js';

/** Nested arrays of numbers or booleans, as `tolist()` returns. */
export type NestedArray = number | boolean | bigint | NestedArray[];

/** A tensor on a device. */
export class Tensor {
  private _disposed = false;
  private _requiresGrad = false;
  /** The gradient accumulated by `backward()` (leaves, and non-leaves after `retainGrad()`). */
  grad: Tensor | null = null;
  /** The node that produced this tensor on the autograd tape; null for leaves. */
  gradFn: Node | null = null;
  /** @internal Which output of `gradFn` this tensor is. */
  _outputIndex = 0;
  /** @internal Whether the garbage collector watches this tensor (see `watch`). */
  _watched = false;

  /** @internal Use the creation functions (`torch.tensor`, `torch.zeros`, …). */
  constructor(
    /** @internal */ public storage: Storage,
    public shape: readonly number[],
    /** @internal Strides in elements. */ public _strides: readonly number[],
    /** @internal Offset into the storage, in elements. */ public _offset: number,
    public dtype: DType,
  ) {
    storage.retain();
    watch(this);
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

  /**
   * Marks the tensor's memory as used by `stream` (`record_stream`): once freed, its block is
   * not handed out again until the work queued on `stream` by then has finished.
   */
  recordStream(stream: { device: Device; streamId: number }): void {
    this._check('record_stream');
    this.storage.recordStream(stream);
  }

  /** Bytes per element. */
  elementSize(): number {
    return elementSize(this.dtype);
  }

  /** Whether `dispose()` was called. */
  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Whether autograd records ops on this tensor. Settable on leaves of a floating dtype. */
  get requiresGrad(): boolean {
    return this._requiresGrad;
  }

  set requiresGrad(on: boolean) {
    if (this.gradFn && !on) {
      throw new Error('you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn\'t require differentiation use detach().');
    }
    if (on && !isFloating(this.dtype)) throw new TypeError(`only Tensors of floating point dtype can require gradients (got ${this.dtype})`);
    this._requiresGrad = on;
  }

  /** Sets `requiresGrad` in place and returns the tensor (`requires_grad_()`). */
  requiresGrad_(on = true): this {
    this.requiresGrad = on;
    return this;
  }

  /** Whether the tensor is a leaf of the tape (created by the user, not by a recorded op). */
  get isLeaf(): boolean {
    return this.gradFn === null;
  }

  /** @internal Marks the tensor as output `index` of a recorded node. */
  _setGradFn(node: Node, index: number): void {
    node.hold();
    this.gradFn?.drop();
    this.gradFn = node;
    this._outputIndex = index;
    this._requiresGrad = true;
  }

  /** @internal A saved tensor standing, for a rule's run under createGraph, for a leaf (Note [Saved tensors under createGraph], ts/autograd/graph.ts). */
  _gradTarget: Tensor | null = null;

  /** @internal A saved tensor stands for output `index` of `node` while a rule runs under createGraph. */
  _linkGrad(node: Node, index: number): void {
    node.hold();
    this.gradFn = node;
    this._outputIndex = index;
    this._requiresGrad = true;
  }

  /** @internal A saved tensor stands for the leaf `leaf` while a rule runs under createGraph. */
  _linkLeaf(leaf: Tensor): void {
    this._gradTarget = leaf;
    this._requiresGrad = true;
  }

  /** @internal The rule has run: the saved tensor is detached again. */
  _unlinkGrad(): void {
    this.gradFn?.unhold();
    this.gradFn = null;
    this._gradTarget = null;
    this._requiresGrad = false;
  }

  /** Keeps `.grad` for a non-leaf tensor after `backward()`. */
  retainGrad(): void {
    if (this.gradFn) this.gradFn.retained[this._outputIndex] = new WeakRef(this);
  }

  /** PyTorch's `t._version`: how many in-place writes its storage (shared with its views) has had. */
  get _version(): number {
    return this._check('_version').storage.version;
  }

  /** A handle on the same data that is not part of the tape. */
  detach(): Tensor {
    return new Tensor(this._check('detach').storage, this.shape, this._strides, this._offset, this.dtype);
  }

  /**
   * Computes gradients of this tensor with respect to the leaves that require grad, adding
   * them to their `.grad`. A non-scalar needs `gradient`. Frees the tape unless `retainGraph`.
   */
  backward(...args: PyArgs<[gradient: Tensor | null, retainGraph: boolean | null, createGraph: boolean], { gradient?: Tensor | null } & BackwardOptions>): void {
    this._check('backward');
    // PyTorch's signature: backward(gradient=None, retain_graph=None, create_graph=False); retainGraph defaults to createGraph
    const o = bindArgs('backward', ['gradient', 'retainGraph', 'createGraph'], args, { gradient: null as Tensor | null, retainGraph: null as boolean | null, createGraph: false });
    if (o.gradient !== null && !(o.gradient instanceof Tensor)) throw new TypeError(`backward(): gradient must be a Tensor or null, not ${typeof o.gradient}`);
    runBackward([this], [rootGrad(this, o.gradient ?? undefined, 'backward')], { retainGraph: o.retainGraph ?? o.createGraph, createGraph: o.createGraph });
  }

  /**
   * @internal Makes this handle point at `src`'s data (storage, layout, dtype, device), keeping
   * its identity, autograd flags and `.grad`: how `Module.to` and optimizers update parameters
   * in place, so that references to them stay valid. `src` is left untouched.
   */
  _setData(src: Tensor): void {
    this._check('set data');
    src.storage.retain();
    if (this._watched) collected.unregister(this);
    this.storage.release();
    this.storage = src.storage;
    this.shape = src.shape.slice();
    this._strides = src._strides.slice();
    this._offset = src._offset;
    this.dtype = src.dtype;
    if (this._watched) collected.register(this, this.storage, this);
  }

  /** Frees the tensor's reference to its storage now. Views keep the storage alive. Idempotent. */
  dispose(): void {
    if (this._disposed) return;
    this._disposed = true;
    if (this._watched) collected.unregister(this);
    this.storage.release();
    this.gradFn?.drop();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /** @internal Throws if the tensor was disposed, or its device lost (`DeviceLostError`, ts/runtime/device-lost.ts). */
  _check(op: string): this {
    if (this._disposed) throw new Error(`${op}: cannot use a disposed tensor (shape [${this.shape.join(', ')}], ${this.dtype}, ${this.device})`);
    this.storage.client.checkUsable();
    return this;
  }

  /**
   * Reads the elements, in row-major order, as a typed array of the dtype's storage: int64 gives
   * a `BigInt64Array` (every value exact), int32 an `Int32Array`, float16/bfloat16 their bits.
   */
  async data(): Promise<Float32Array | Int32Array | Uint8Array | Uint16Array | BigInt64Array> {
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

  /**
   * The elements as plain numbers (booleans for bool), row-major. An int64 value beyond
   * ±(2^53 - 1), which a number would round, is a BigInt here.
   */
  async values(): Promise<(number | boolean | bigint)[]> {
    return decode(await this.data(), this.dtype);
  }

  /**
   * The value of a one-element tensor, as a number (a boolean for bool). An int64 value that a
   * number cannot hold exactly (beyond ±(2^53 - 1)) raises; read it with `data()` (a BigInt64Array).
   */
  async item(): Promise<number | boolean> {
    this._check('item');
    if (this.numel() !== 1) {
      throw new RangeError(`a Tensor with ${this.numel()} elements cannot be converted to Scalar`);
    }
    return this._numbers(await this.values(), 'item')[0];
  }

  /** The elements as nested arrays of numbers; int64 values beyond ±(2^53 - 1) raise as in `item()`. */
  async tolist(): Promise<NestedArray> {
    const flat = this._numbers(await this.values(), 'tolist');
    const build = (d: number, off: number): NestedArray => {
      if (d === this.ndim) return flat[off];
      const step = contiguousStrides(this.shape)[d];
      return Array.from({ length: this.shape[d] }, (_, i) => build(d + 1, off + i * step));
    };
    return build(0, 0);
  }

  /** @internal `values` as numbers, raising on an int64 a number would round. */
  _numbers(vals: (number | boolean | bigint)[], op: string): (number | boolean)[] {
    const big = vals.find((v) => typeof v === 'bigint');
    if (big !== undefined) {
      throw new RangeError(`${op}(): the int64 value ${big} is not a safe JavaScript number (beyond ±(2^53 - 1), it would be rounded); read it exactly with \`await t.data()\`, a BigInt64Array (shape [${this.shape.join(', ')}], ${this.device})`);
    }
    return vals as (number | boolean)[];
  }

  /** @internal What printing shows besides the values. */
  _printInfo(): PrintInfo {
    return { shape: this.shape, dtype: this.dtype, device: String(this.device), requiresGrad: this.requiresGrad, gradFn: this.gradFn?.name ?? null };
  }

  /** Shape, dtype and device (synchronous: the values stay on the device; see `toStringAsync`). */
  toString(): string {
    return formatTensorMeta(this._printInfo());
  }

  /** What `console.log(t)` shows in Node: the same as `toString()`. */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this._disposed ? `tensor(<disposed>, shape=[${this.shape.join(', ')}], dtype=${this.dtype})` : this.toString();
  }

  /** Reads the values (a sync point) and formats them as PyTorch's `repr` does. */
  async toStringAsync(): Promise<string> {
    return formatTensor(this._printInfo(), await this.values());
  }

  /** `print(t)`: logs `await t.toStringAsync()`. */
  async print(): Promise<void> {
    console.log(await this.toStringAsync());
  }
}

/** @internal A new handle on the same storage. */
export function view(t: Tensor, shape: Shape, strides: Shape, offset = t._offset): Tensor {
  return new Tensor(t.storage, shape.slice(), strides.slice(), offset, t.dtype);
}

setDetach((t) => t.detach());
