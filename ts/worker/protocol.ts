/**
 * The messages between the facade and a device worker: the backend interface.
 *
 * It is deliberately small and untyped in tensor terms: memory is segments (integer ids with a
 * byte size) that the caching allocator on the calling thread carves into blocks; views are
 * (segment, shape, strides, offset) in elements, dtypes are storage codes. Broadcasting,
 * promotion, autograd and validation stay in the facade. A batch of commands arrives in one
 * `submit` per microtask; the worker runs them in order, and `read`/`sync` resolve once every
 * command submitted before them has run.
 */
import type { StorageCode } from '../dtype.js';

/** A place in a segment: its id and an offset in elements. */
export interface Place {
  id: number;
  offset: number;
}

/** A strided view of a segment (offset and strides in elements). */
export interface ViewRef extends Place {
  strides: number[];
}

/**
 * An operand of an elementwise kernel: a strided view, or a JS scalar as its storage bits in
 * the kernel's dtype (a number: f32 bits, the low 16 bits of a half, an int32, a byte), which
 * broadcasts like a 0-dim tensor without being one.
 */
export type Operand = ViewRef | number;

/** One command of a batch. `out` places receive contiguous results. */
export type Command =
  | { k: 'segment'; id: number; bytes: number }
  | { k: 'release'; id: number }
  | { k: 'write'; id: number; byteOffset: number; data: ArrayBuffer }
  | { k: 'fill'; out: Place; dt: StorageCode; n: number; value: number }
  | { k: 'arange'; out: Place; dt: StorageCode; n: number; start: number; step: number }
  | { k: 'copy'; src: ViewRef; srcDt: StorageCode; out: Place; dt: StorageCode; shape: number[] }
  | { k: 'copyInto'; src: ViewRef; srcDt: StorageCode; dst: ViewRef; dt: StorageCode; shape: number[] }
  | { k: 'unary'; op: number; a: ViewRef; dt: StorageCode; out: Place; outDt: StorageCode; shape: number[]; s: [number, number, number] }
  | { k: 'binary'; op: number; a: Operand; b: Operand; dt: StorageCode; out: Place; outDt: StorageCode; shape: number[]; alpha: number; check?: DeviceCheck }
  | { k: 'where'; c: ViewRef; a: ViewRef; b: ViewRef; dt: StorageCode; out: Place; shape: number[] }
  | { k: 'reduce'; op: number; a: ViewRef; dt: StorageCode; out: Place; outDt: StorageCode; outer: number; inner: number }
  | { k: 'matmul'; a: ViewRef; b: ViewRef; dt: StorageCode; out: Place; batch: number; m: number; n: number; kk: number;
      aStrides: [number, number, number]; bStrides: [number, number, number] }
  | { k: 'connect'; peer: string; port: MessagePort }
  | { k: 'send'; peer: string; tag: number; id: number; byteOffset: number; bytes: number }
  | { k: 'recv'; peer: string; tag: number; id: number; byteOffset: number }
  | IndexCommand;

/** What a device reports about itself. */
export interface DeviceInfo {
  name: string;
  kind: 'cpu' | 'gpu';
  vendor: string;
  architecture: string;
  description: string;
  features: string[];
  limits: Record<string, number>;
  /** True when float16 runs natively (`shader-f16`); otherwise it is stored as 16 bits and computed in f32. */
  nativeF16: boolean;
}

/** The API every device worker exposes through comlink. */
export interface WorkerApi {
  /** Starts the device; resolves with its description, or rejects with why it cannot start. */
  init(options: { name: string; index: number }): Promise<DeviceInfo>;
  /** Appends a batch of commands to the device's queue. */
  submit(cmds: Command[]): void;
  /** Resolves with `bytes` bytes of a segment from `byteOffset`, after all earlier commands ran. */
  read(id: number, byteOffset: number, bytes: number): Promise<ArrayBuffer>;
  /** Resolves when all earlier commands ran; rejects with the first error since the last sync. */
  sync(): Promise<void>;
  /** Releases the device. */
  close(): Promise<void>;
}

/**
 * A device-side check: a kernel that meets bad data (an index out of range, an integer
 * division by zero) records the first bad value, and the worker raises `message` (with `%d`
 * replaced by that value) at the next sync point, naming the command. The GPU's kernels record
 * it in a small error buffer (wgsl/index.ts), the cpu's return a flag (ts/worker/cpu.ts).
 * Integer division checks ride on `binary` commands of floor_divide, trunc_divide and
 * remainder with an integer dtype.
 */
export interface DeviceCheck {
  message: string;
}

/** An error raised inside a worker, carried back to the next sync point. */
export interface WorkerFailure {
  op: string;
  message: string;
}

// ---- The index family (ts/ops/indexing.ts; kernels in wgsl/index.ts, assembly/kernels/index.ts) ----

/**
 * A device-side index check: indices must lie in [0, size) (or [-size, size) with `wrap`).
 * The first bad index is reported at the next sync point as `message` with `%d` replaced by it.
 */
export interface IndexCheck extends DeviceCheck {
  size: number;
  wrap: boolean;
}

/**
 * Commands of the index family.
 * - `gather`: out[i] = x[xView(i) + idx[idxView(i)] * dimStride], both views over the output
 *   `shape` (index_select, gather, take, embedding, sort and topk values).
 * - `scatter`: copies `x` into `out`, then writes or adds src (or `value`, already in the
 *   dtype's range) at out + dstStrides·i + idx(i) * dimStride over the index's shape.
 * - `cumulative`: running sums or products along lines of x (`lines` is x's shape without the
 *   dim) into a contiguous `out`.
 * - `sort`: the stable sort order (int64) of the contiguous [outer, len, inner] block at `x`.
 * - `oneHot`: idx.numel() × classes int64 zeros and ones.
 */
export type IndexCommand =
  | { k: 'gather'; x: ViewRef; idx: ViewRef; dt: StorageCode; out: Place; shape: number[]; dimStride: number; check: IndexCheck }
  | { k: 'scatter'; add: boolean; x: ViewRef; dt: StorageCode; out: Place; shape: number[]; dstStrides: number[]; idx: ViewRef;
      src: ViewRef | null; value: number; idxShape: number[]; dimStride: number; check: IndexCheck }
  | { k: 'cumulative'; prod: boolean; x: ViewRef; dt: StorageCode; out: Place; outDt: StorageCode; lines: number[]; len: number;
      dimStride: number; inner: number }
  | { k: 'sort'; x: Place; dt: StorageCode; descending: boolean; out: Place; outer: number; len: number; inner: number }
  | { k: 'oneHot'; idx: Place; out: Place; n: number; classes: number; check: IndexCheck };
