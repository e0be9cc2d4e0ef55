/**
 * The IR: every piece of work the facade can ask of a device, as data. Ops (ts/ops) build these
 * commands; a device worker's backend (ts/worker/cpu/, ts/worker/gpu/) decides how to run each.
 * What each kind is to streams, graph capture, the profiler and the wire is said once, in
 * ts/ir/kinds.ts.
 *
 * Memory is segments (integer ids with a byte size) that the caching allocator on the calling
 * thread carves into blocks; views are (segment, shape, strides, offset) in elements, dtypes are
 * storage codes. Broadcasting, promotion, autograd and validation stay in the facade.
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
  /** `emptyCache`: destroy the cached scratch buffers (ts/worker/scratch.ts); `accounted` bytes of them were taken off already. */
  | { k: 'dropScratch'; accounted: number }
  | { k: 'write'; id: number; byteOffset: number; data: ArrayBuffer }
  | { k: 'fill'; out: Place; dt: StorageCode; n: number; value: number }
  | { k: 'arange'; out: Place; dt: StorageCode; n: number; start: number; step: number }
  | RandomCommand
  /** `check`: a float -> int64 cast raises on NaN, infinities and values outside int64's range. */
  | { k: 'copy'; src: ViewRef; srcDt: StorageCode; out: Place; dt: StorageCode; shape: number[]; check?: DeviceCheck }
  | { k: 'copyInto'; src: ViewRef; srcDt: StorageCode; dst: ViewRef; dt: StorageCode; shape: number[] }
  | { k: 'unary'; op: number; a: ViewRef; dt: StorageCode; out: Place; outDt: StorageCode; shape: number[]; s: [number, number, number]; check?: DeviceCheck }
  | { k: 'binary'; op: number; a: Operand; b: Operand; dt: StorageCode; out: Place; outDt: StorageCode; shape: number[]; alpha: number; check?: DeviceCheck }
  | { k: 'where'; c: ViewRef; a: ViewRef; b: ViewRef; dt: StorageCode; out: Place; shape: number[] }
  | { k: 'reduce'; op: number; a: ViewRef; dt: StorageCode; out: Place; outDt: StorageCode; outer: number; inner: number }
  /**
   * A row normalisation of each row of a contiguous f32 [outer, inner] block: softmax or
   * log-softmax, or layer norm when `norm` is given (weight and bias optional).
   */
  | { k: 'softmax'; log: boolean; a: Place; out: Place; outer: number; inner: number; norm?: { eps: number; w: Place | null; b: Place | null } }
  /**
   * The sliding windows of a 32-bit [N, C, H, W] view (`shape`) into a contiguous
   * [N, C, kh, kw, oh, ow], or [N, C, oh, ow, kh, kw] with `kernelLast`; `padding` is [top, left],
   * and positions outside x read as `value` (an f32). GPU devices of a CPU adapter, and the cpu.
   */
  | { k: 'windows'; x: ViewRef; out: Place; shape: number[]; kernel: number[]; stride: number[]; dilation: number[]; padding: number[];
      size: number[]; kernelLast: boolean; value: number }
  | { k: 'matmul'; a: ViewRef; b: ViewRef; dt: StorageCode; out: Place; batch: number; m: number; n: number; kk: number;
      aStrides: [number, number, number]; bStrides: [number, number, number] }
  | { k: 'connect'; peer: string; port: MessagePort }
  /**
   * Streams and events (ts/runtime/streams.ts). `record`: event `slot` reaches `version` once the
   * stream's work so far has finished (with its time: the GPU's timestamp when `timing` and the
   * adapter has `timestamp-query`); it also finishes the stream's `mark`. `mark`: the same for
   * the stream's mark alone (`s.query()`, deferred frees). `wait`: the stream's later commands run
   * after the record of (`slot`, `version`) was run on this device. `signal` (a device command):
   * once (`slot`, `version`) has finished, tell `peer` (`tag`), whose stream waits in `waitSignal`.
   */
  | { k: 'record'; slot: number; version: number; mark: number; timing: boolean }
  | { k: 'mark'; mark: number }
  | { k: 'wait'; slot: number; version: number }
  | { k: 'signal'; peer: string; tag: number; slot: number; version: number }
  | { k: 'waitSignal'; peer: string; tag: number }
  /**
   * Pinned memory (ts/runtime/pinned.ts): copies between this device and the cpu device's shared
   * memory, read and written here directly. `readHost`: bytes of cpu segment `src` from
   * `srcOffset` into this device's segment `id`; `writeHost`: the reverse. `peer` is the cpu.
   */
  | { k: 'readHost'; peer: string; src: number; srcOffset: number; id: number; byteOffset: number; bytes: number }
  | { k: 'writeHost'; peer: string; dst: number; dstOffset: number; id: number; byteOffset: number; bytes: number }
  /** Worker-internal, never on the wire: a read or sync run in its stream's order (ts/worker/executor.ts). */
  | { k: 'call'; fn: () => void }
  /** While the profiler (ts/profiler) records: the stream's later commands belong to caller op `op`. */
  | { k: 'opTag'; op: number }
  /**
   * Graphs (ts/runtime/graphs.ts). `captureBegin`: the stream's later commands, up to its
   * `captureEnd`, are kept as graph `graph` instead of run (as CUDA, capture runs nothing).
   * `captureEnd` prepares them for replay (`fuse`: the elementwise chains fused, where the
   * backend fuses; `live`: the blocks alive at capture end, as (segment, byte offset, bytes)). `replay`: the graph's commands, in this stream's order. `graphReset` (a device
   * command, run after every command received before it): forgets the graph.
   */
  | { k: 'captureBegin'; graph: number }
  | { k: 'captureEnd'; graph: number; fuse: boolean; live?: number[] }
  /** `rng`: the generator's key now, and how many Philox blocks past the captured draws this replay's draws start. */
  | { k: 'replay'; graph: number; rng?: ReplayRng }
  | { k: 'graphReset'; graph: number }
  | { k: 'send'; peer: string; tag: number; id: number; byteOffset: number; bytes: number }
  | { k: 'recv'; peer: string; tag: number; id: number; byteOffset: number }
  /**
   * A device command: the tags in `ranges` (pairs [from, to)) belong to a failed collective
   * (ts/distributed/group.ts). Every `recv` of those tags, waiting now or run later, fails with
   * `why` (releasing its stream, the error recorded for the next sync point), and their bytes,
   * arrived or still to come, are dropped.
   */
  | { k: 'abortTags'; ranges: number[]; why: string }
  | IndexCommand
  | NllCommand
  | PoolCommand
  /**
   * The input gradient of a row normalisation of a contiguous f32 [outer, inner] block, in one
   * pass per row (assembly/kernels/rownorm.ts, wgsl/softmax.ts): softmax's `y·(g − Σ g·y)` and
   * log-softmax's `g − exp(y)·Σ g` from the output `x` = y, layer norm's from its input `x`
   * (mean and rstd recomputed, weight optional).
   */
  | { k: 'rowGrad'; kind: 'softmax' | 'log_softmax' | 'layer_norm'; x: Place; g: Place; out: Place; outer: number; inner: number;
      norm?: { eps: number; w: Place | null } }
  /**
   * The windows' gradient (col2im, the cpu device only; GPUs compose it): `g`, an f32
   * [N, C, kh, kw, oh, ow] view (`g.strides`, 6), added back into a contiguous [N, C, H, W] `out`
   * (`shape`) that the command zeroes first.
   */
  | { k: 'foldWindows'; g: ViewRef; out: Place; shape: number[]; kernel: number[]; stride: number[]; dilation: number[]; size: number[] }
  | ConvCommand
  // GradScaler's fused check (ts/amp/grad-scaler.ts; gpu/amp.ts, assembly/kernels/amp.ts).
  | AmpUnscaleCommand
  // An optimizer's step over a parameter group (ts/optim/fused.ts; gpu/optim.ts, assembly/kernels/optim.ts).
  | OptimStepCommand
  // PyTorch's `_foreach_norm` and `_foreach_mul_` by a device scalar (ts/ops/foreach.ts; gpu/foreach.ts, assembly/kernels/foreach.ts).
  | ForeachNormCommand
  | ForeachMulCommand
  | ForeachClampCommand
  // Fused scaled dot product attention and its gradient (ts/ops/attention.ts; gpu/attention.ts, assembly/kernels/attention.ts).
  | AttentionCommand;

/**
 * What the attention commands share: `bh` batch·heads of f32 query [L, E], key [S, E] and value
 * [S, Ev] blocks, the scores' `scale`, `causal` (query i sees keys j ≤ i), and an optional f32
 * bias added to the scores (`mask`). Every operand is a view whose strides are the lead dims'
 * (whose sizes are `lead`, their product `bh`), then the row's, then the column's, which is 1 for
 * all but the mask (ts/ops/attention.ts makes anything else contiguous first): so q, k and v
 * split from one projection and transposed to [B, H, T, D], and a mask broadcast over the batch,
 * are read in place. `bool`: the bias came from a bool mask (its -inf places take no gradient,
 * as the composed `where` gives none).
 */
export interface AttentionGeom {
  q: ViewRef;
  key: ViewRef;
  v: ViewRef;
  lead: number[];
  bh: number;
  L: number;
  S: number;
  E: number;
  Ev: number;
  scale: number;
  causal: boolean;
  mask: { at: ViewRef; bool: boolean } | null;
}

/**
 * Fused attention (ts/ops/attention.ts; Note [fused attention] in ts/worker/gpu/attention.ts).
 * - `attention`: `softmax(q·kᵀ·scale + bias)·v` into `out` [bh, L, Ev] (a view as q's, over a
 *   dense block of its own), and each row's logsumexp of the scores into a contiguous `lse`
 *   [bh, L] (when not null: the backward's).
 * - `attentionGrad`: from the output `o`, its gradient `g` (both [bh, L, Ev] views) and `lse`,
 *   the gradients `dq`, `dk`, `dv` (views as q, key and v, each over a dense block of its own),
 *   written whole.
 */
export type AttentionCommand =
  | ({ k: 'attention'; out: ViewRef; lse: Place | null } & AttentionGeom)
  | ({ k: 'attentionGrad'; o: ViewRef; g: ViewRef; lse: Place; dq: ViewRef; dk: ViewRef; dv: ViewRef } & AttentionGeom);

/**
 * PyTorch's `_amp_foreach_non_finite_check_and_unscale_`: every gradient (a contiguous run of
 * `n` elements of f32, f16 or bf16 at `at`) is multiplied in place by the f32 scalar at
 * `invScale`, and the f32 scalar at `found` is set to 1.0 when a value was inf or NaN before
 * unscaling (never cleared: the caller zeroes it). One command per device; on a GPU one
 * dispatch, or the fewest the binding limits allow (ts/worker/gpu/amp.ts).
 */
export interface AmpUnscaleCommand {
  k: 'ampUnscale';
  grads: { at: Place; n: number; dt: StorageCode }[];
  invScale: Place;
  found: Place;
}

/**
 * PyTorch's `_foreach_norm(tensors, ord)`: the vector norm of each of many tensors (contiguous
 * runs of `n` elements of float32, float16 or bfloat16 (`dt`) at `at`) into `out`,
 * `tensors.length` contiguous float32 elements: (Σ|x|^ord)^(1/ord) for a positive finite `ord`, max |x| for Infinity (NaN
 * propagates). One command per device; on a GPU a two-pass reduction (ts/worker/gpu/foreach.ts).
 */
export interface ForeachNormCommand {
  k: 'foreachNorm';
  ord: number;
  tensors: { at: Place; n: number; dt: StorageCode }[];
  out: Place;
}

/**
 * PyTorch's `_foreach_mul_(tensors, scalar)` with a 1-element float32 device tensor at `scalar`:
 * each float32 tensor (a contiguous run of `n` elements at `at`) is multiplied by it in place.
 */
export interface ForeachMulCommand {
  k: 'foreachMul';
  tensors: { at: Place; n: number }[];
  scalar: Place;
}

/**
 * PyTorch's `_foreach_clamp_min_(tensors, lo)` then `_foreach_clamp_max_(tensors, hi)` (the
 * foreach path of `clip_grad_value_`): each float32 tensor clamped to [lo, hi] in place; NaN stays.
 */
export interface ForeachClampCommand {
  k: 'foreachClamp';
  tensors: { at: Place; n: number }[];
  lo: number;
  hi: number;
}

/**
 * One optimizer step over many float32 parameters, in place (PyTorch's multi-tensor `fused`
 * Adam/AdamW/SGD): each entry is a parameter `p`, its gradient `g` and its state `s` (Adam:
 * exp_avg, exp_avg_sq, and max_exp_avg_sq with amsgrad; SGD with momentum: the buffer), all
 * contiguous runs of `n` float32 elements. `stepSize` is Adam's −lr / (1 − β1^step) and
 * `invSqrtBc2` its 1 / √(1 − β2^step) for the entry's step; `first` starts SGD's buffer as the
 * gradient. The group's scalars are in `h`. One command per group; on a GPU one dispatch (two
 * with device step counts: the increment, then the update), or the fewest the binding limits
 * allow (ts/worker/gpu/optim.ts).
 */
export interface OptimStepCommand {
  k: 'optimStep';
  algo: 'adam' | 'sgd';
  h: {
    lr: number; weightDecay: number; maximize: boolean;
    /** Adam: β1, β2, eps, decoupled weight decay (AdamW), amsgrad. */
    beta1: number; beta2: number; eps: number; decoupled: boolean; amsgrad: boolean;
    /** SGD: momentum, dampening, nesterov. */
    momentum: number; dampening: number; nesterov: boolean;
  };
  params: {
    p: Place; g: Place; s: Place[]; n: number; stepSize: number; invSqrtBc2: number; first: boolean;
    /**
     * `capturable` Adam: the entry's float32 step count on the device, which the command
     * increments and reads; the bias corrections are then 1 − exp(step · ln β) computed on the
     * device (as the composed capturable step does), and `stepSize`/`invSqrtBc2` are unused.
     */
    step?: Place;
  }[];
}

/**
 * Philox4x32-10 numbers into `n` contiguous 32-bit words at `out` (wgsl/random.ts,
 * assembly/kernels/random.ts; ts/random.ts is the reference): element e takes word e % 4 of
 * the block at `counter` + ⌊e / 4⌋ under `key`. `dist` is a `Dist` code; `a` and `b` are its
 * parameters as 32-bit words (f32 bits, or integers).
 */
export interface RandomCommand {
  k: 'random';
  out: Place;
  n: number;
  dist: number;
  key: [number, number];
  counter: [number, number, number, number];
  a: number;
  b: number;
}


/** A replay's random numbers: every captured draw's counter moves `delta` blocks on, under `key`. */
export interface ReplayRng {
  key: [number, number];
  delta: number;
}

/** The Philox counter of a captured draw moved `delta` blocks on (the low and high words of a 64-bit count). */
export function bumpCounter(counter: readonly number[], delta: number): [number, number, number, number] {
  const v = counter[0] + counter[1] * 2 ** 32 + delta;
  return [v % 2 ** 32 >>> 0, Math.floor(v / 2 ** 32) >>> 0, counter[2], counter[3]];
}

/**
 * A device-side check: a kernel that meets bad data (an index out of range, an integer
 * division by zero) records the first bad value, and the worker raises `message` (with `%d`
 * replaced by that value) at the next sync point, naming the command. The GPU's kernels record
 * it in a small error buffer (wgsl/index.ts), the cpu's return a flag (ts/worker/cpu/core.ts: `checked`).
 * Integer division checks ride on `binary` commands of floor_divide, trunc_divide and
 * remainder with an integer dtype; range checks on `copy` commands of float -> int64 casts.
 */
export interface DeviceCheck {
  message: string;
  /** A second check of the same kernel (a float -> int64 cast's range on the GPU): its message. */
  overflow?: string;
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
 *   dim) into a contiguous `out` (int64 for integer inputs).
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

// ---- The fused negative log likelihood (ts/ops/nll.ts; kernels in wgsl/loss.ts, assembly/kernels/loss.ts) ----

/**
 * The NLL of log-probabilities at class indices, over a contiguous f32 `x` of [outer, classes,
 * inner] (rows are the outer·inner positions; `target` holds one contiguous int64 per row, `w`
 * an optional f32 weight per class). A row whose target is `ignore` counts nothing; any other
 * target outside [0, classes) fails `check` (the next sync point raises its message).
 * - `nll`: row loss `-(1-eps)·w[t]·x[row, t] - eps/classes·Σc w[c]·x[row, c]` and row weight
 *   w[t] (1 without `w`; 0 when ignored). `reduction` 'none': the losses into `out` (one f32 per
 *   row); 'sum': Σ loss into `out`; 'mean': Σ loss / Σ weight into `out` and Σ weight into
 *   `total` (the gradient's divisor).
 * - `nllGrad`: the input's gradient into a contiguous f32 `out` of x's shape:
 *   `-s·((1-eps)·w[t]·[c = t] + eps/classes·w[c])` on rows not ignored, 0 elsewhere, where s is
 *   `g` (one f32, or one per row with 'none') divided by `total` for 'mean'.
 */
export type NllCommand =
  | { k: 'nll'; x: Place; target: Place; w: Place | null; out: Place; total: Place | null; outer: number; classes: number; inner: number;
      ignore: number; eps: number; reduction: 'none' | 'sum' | 'mean'; check: DeviceCheck }
  | { k: 'nllGrad'; g: Place; target: Place; w: Place | null; total: Place | null; out: Place; outer: number; classes: number; inner: number;
      ignore: number; eps: number; reduction: 'none' | 'sum' | 'mean' };

// ---- Max pooling (ts/ops/pool.ts; kernels in wgsl/pool.ts, assembly/kernels/pool.ts) ----

/**
 * 2-D max pooling over `planes` contiguous f32 planes of `size` [H, W], windows of `kernel`
 * [kh, kw] at `stride`, `padding` [top, left] and `dilation`, `outSize` [oh, ow] windows per plane.
 * - `maxPool`: each window's maximum into `values` (contiguous f32 [planes, oh, ow]) and its flat
 *   index in the plane, h·W + w, into `indices` (contiguous int64, same shape). PyTorch's rule:
 *   a greater value or a NaN takes the place (ties keep the first, the last NaN wins), and a
 *   window of -inf names its first element inside the input.
 * - `maxPoolGrad`: the input's gradient into a contiguous f32 `out` [planes, H, W]: each output's
 *   gradient `g` (contiguous f32 [planes, oh, ow]) added at the element its index names.
 */
/** A convolution's geometry: x's [N, C, H, W], the weight's Cout and groups, and [h, w] pairs (`padding`: top, left; `size`: the output's). */
export interface ConvGeom {
  shape: number[];
  cout: number;
  groups: number;
  kernel: number[];
  stride: number[];
  dilation: number[];
  padding: number[];
  size: number[];
}

/**
 * 2-D convolution of f32, the cpu device only (GPUs compose it from `windows` and `matmul`), an
 * image at a time (assembly/kernels/conv.ts): `x` an [N, C, H, W] view, `w` a contiguous
 * [Cout, C/groups, kh, kw], `b` a contiguous [Cout] or null, `out` a contiguous [N, Cout, oh, ow].
 * `convGrad`: from `gy` (laid out as `out`), the gradients that are not null: `dx` [N, C, H, W],
 * `dw` as `w`, `db` [Cout], each contiguous and written whole. `saved`: a contiguous
 * [N, C·kh·kw, oh·ow] that `conv` writes the windows into and `convGrad` reads them from
 * (for `dw`), or null (`conv` keeps them in its workspace; `convGrad` makes them again).
 */
export type ConvCommand =
  | ({ k: 'conv'; x: ViewRef; w: Place; b: Place | null; out: Place; saved: Place | null } & ConvGeom)
  | ({ k: 'convGrad'; x: ViewRef; w: Place; gy: Place; dx: Place | null; dw: Place | null; db: Place | null; saved: Place | null } & ConvGeom);

export type PoolCommand =
  | { k: 'maxPool'; x: Place; values: Place; indices: Place; planes: number; size: number[]; kernel: number[]; stride: number[]; padding: number[];
      dilation: number[]; outSize: number[] }
  | { k: 'maxPoolGrad'; g: Place; indices: Place; grad: Place; planes: number; size: number[]; kernel: number[]; stride: number[]; padding: number[];
      dilation: number[]; outSize: number[] }
  | AvgPoolCommand;

/**
 * 2-D average pooling over the same planes (no dilation): each window's f32 sum over the input
 * elements it covers, divided by `divisor` when it is not 0 (PyTorch's `divisor_override`), else by
 * the window's size clipped to the padded input (`includePad`) or to the input; a window with no
 * element inside is 0. `avgPoolGrad`: each output's gradient over that divisor, added to every
 * element of its window, into a contiguous f32 `grad` [planes, H, W].
 */
export type AvgPoolCommand =
  | { k: 'avgPool'; x: Place; values: Place; planes: number; size: number[]; kernel: number[]; stride: number[]; padding: number[]; outSize: number[];
      includePad: boolean; divisor: number }
  | { k: 'avgPoolGrad'; g: Place; grad: Place; planes: number; size: number[]; kernel: number[]; stride: number[]; padding: number[]; outSize: number[];
      includePad: boolean; divisor: number };
