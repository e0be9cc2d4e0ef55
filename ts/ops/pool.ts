/**
 * 2-D pooling: `maxPool2d`, `avgPool2d`, `adaptiveAvgPool2d`.
 *
 * Max pooling of float32 is one `maxPool` command (values and int64 indices) and its gradient
 * one `maxPoolGrad` command (kernels: assembly/kernels/pool.ts, wgsl/pool.ts), on every device:
 * composed it was the windows copied out, two reductions, six int64 ops for the indices, and a
 * mask, a `where` and the fold backward (16×8×28×28, 2×2 on the cpu: 1.4 ms forward, 3.6 ms both
 * ways). The kernels keep PyTorch's rule (a greater value or a NaN takes the place: ties keep the
 * first, the last NaN wins; a window of -inf names its first element inside the input).
 *
 * Average pooling of float32 is likewise one `avgPool` command and one `avgPoolGrad`. 16-bit
 * floats go through float32 (a cast each way), which is the goldens' rule for them: PyTorch's f32
 * result on the 16-bit inputs, rounded once.
 *
 * Int64 average pooling is composed from `pad`, `windows` (or `paddedWindows` where the device
 * runs `windows` as one command, conv.ts) and reductions; `ceilMode` adds a partial window at the end, so the input
 * is padded further on the right, and the sums are divided (truncating) by a per-position count
 * computed on the host (it depends only on the geometry): the window clipped to the padded input
 * (`countIncludePad`), or to the input. Adaptive pooling with
 * even windows is average pooling; with uneven windows, two matmuls with averaging matrices.
 */
import { needsGrad, op as recorded } from '../autograd/graph.js';
import { alloc, emit, place, sameDevice } from '../runtime/dispatch.js';
import { fmt } from '../shape.js';
import { Tensor } from '../tensor.js';
import { ReduceOp } from '../ir/ops.js';
import { fromHost, zeros } from './creation.js';
import { binaryOp } from './elementwise.js';
import { scatterAdd } from './indexing.js';
import { matmul } from './matmul.js';
import { bindArgs, REQUIRED, type PyArgs } from '../args.js';
import { reduce, valuesIndices, type ValuesIndices } from './reduce.js';
import { checkAccepted } from './nn.js';
import { fusedWindows, pad, paddedWindows, sizes, windows, type Size2 } from './conv.js';
import { tidy } from './scoped.js';
import * as V from './views.js';

/** Options of `maxPool2d`. */
export interface MaxPool2dOptions {
  /** Defaults to the kernel size. */
  stride?: Size2 | null;
  padding?: Size2;
  dilation?: Size2;
  ceilMode?: boolean;
  /** Also return, for each output, the flat index (h·W + w) of the chosen input element. */
  returnIndices?: boolean;
}

/** Options of `avgPool2d`. */
export interface AvgPool2dOptions {
  stride?: Size2 | null;
  padding?: Size2;
  ceilMode?: boolean;
  /** Count padding zeros in the divisor (PyTorch's default: true). */
  countIncludePad?: boolean;
  divisorOverride?: number | null;
}

interface PoolGeom { k: number[]; s: number[]; p: number[]; d: number[]; out: number[]; H: number; W: number }

function poolArgs(op: string, x: Tensor, kernelSize: Size2, o: { stride?: Size2 | null; padding?: Size2; dilation?: Size2; ceilMode?: boolean }): PoolGeom {
  // the op table's dtypes: floats (avg_pool2d also int64, dividing with truncation, as PyTorch's CPU does)
  checkAccepted(op, x);
  sameDevice(op, [x]);
  if ((x.ndim !== 3 && x.ndim !== 4) || x.shape.slice(-3).some((n, i) => n === 0 && i > 0)) {
    throw new RangeError(`${op}(): non-empty 3D or 4D (batch mode) tensor expected for input, but got ${fmt(x.shape)}`);
  }
  const k = sizes(op, 'kernel_size', kernelSize, 2, 1, 1, `kernel size should be greater than zero, but got kernel_size=${JSON.stringify(kernelSize)} (${op})`);
  const s = sizes(op, 'stride', o.stride ?? k, 2, 1, 1, `stride should be greater than zero, but got stride=${JSON.stringify(o.stride)} (${op})`);
  const d = sizes(op, 'dilation', o.dilation, 2, 1, 1, `dilation should be greater than zero, but got dilation=${JSON.stringify(o.dilation)} (${op})`);
  const p = sizes(op, 'padding', o.padding, 2, 0, 0, `${op}(): padding must be non-negative, but got ${JSON.stringify(o.padding)}`);
  p.forEach((v, i) => {
    if (v > Math.floor(k[i] / 2)) throw new RangeError(`pad should be at most half of kernel size, but got pad=${v} and kernel_size=${k[i]} (${op})`);
  });
  const [H, W] = x.shape.slice(-2);
  const out = [H, W].map((n, i) => {
    let r = Math.floor((n + 2 * p[i] - d[i] * (k[i] - 1) - 1 + (o.ceilMode ? s[i] - 1 : 0)) / s[i]) + 1;
    if (o.ceilMode && (r - 1) * s[i] >= n + p[i]) r--;
    return r;
  });
  if (out.some((n) => n < 1)) {
    const c = x.shape[x.ndim - 3];
    throw new RangeError(`Given input size: (${c}x${H}x${W}). Calculated output size: (${c}x${out[0]}x${out[1]}). Output size is too small (${op})`);
  }
  return { k, s, p, d, out, H, W };
}

/**
 * Windows [N, C, oh, ow, kh·kw] of x (3-D inputs gain a batch dim), padded with `value`; where
 * `fusedWindows` holds (conv.ts), padding included, from one kernel.
 */
function poolWindows(x: Tensor, g: PoolGeom, value: number): Tensor {
  const x4 = x.ndim === 4 ? x : V.unsqueeze(x, 0);
  const [pt, pl] = g.p, [H, W] = [g.H, g.W];
  const pb = (g.out[0] - 1) * g.s[0] + g.d[0] * (g.k[0] - 1) + 1 - H - pt, pr = (g.out[1] - 1) * g.s[1] + g.d[1] * (g.k[1] - 1) + 1 - W - pl;
  const w = fusedWindows(x4)
    ? paddedWindows(x4, g.k, g.s, g.d, g.p, g.out, true, value)
    : windows(pt || pl || pb || pr ? pad(x4, [pl, pr, pt, pb], 'constant', value) : x4, g.k, g.s, g.d, true);
  return V.reshape(w, [...w.shape.slice(0, 4), g.k[0] * g.k[1]]);
}

/** Drops the batch dim added to a 3-D input. */
const unbatch = (x: Tensor, y: Tensor) => (x.ndim === 4 ? y : V.squeeze(y, 0));

/**
 * `F.max_pool2d(x, kernelSize, {stride, padding, dilation, ceilMode, returnIndices})` over
 * x [N, C, H, W] or [C, H, W]; with `returnIndices`, `{values, indices}`.
 */
type MaxPoolPositional = [stride: Size2 | null, padding: Size2, dilation: Size2, ceilMode: boolean];
export function maxPool2d(x: Tensor, kernelSize: Size2, o: MaxPool2dOptions & { returnIndices: true }): ValuesIndices;
export function maxPool2d(x: Tensor, kernelSize: Size2, ...args: PyArgs<[...MaxPoolPositional, returnIndices: false], MaxPool2dOptions & { returnIndices?: false }>): Tensor;
export function maxPool2d(x: Tensor, kernelSize: Size2, ...args: PyArgs<[...MaxPoolPositional, returnIndices: true], MaxPool2dOptions>): ValuesIndices;
export function maxPool2d(x: Tensor, kernelSize: Size2, ...args: unknown[]): Tensor | ValuesIndices {
  const o = bindArgs('max_pool2d', ['stride', 'padding', 'dilation', 'ceilMode', 'returnIndices'], args, {} as MaxPool2dOptions, 2);
  const g = poolArgs('max_pool2d', x, kernelSize, o);
  if (x.dtype === 'float32') {
    const { values, indices } = maxPoolKernel(x, g);
    if (o.returnIndices) return valuesIndices(values, indices);
    indices.dispose();
    return values;
  }
  // the other dtypes max pooling accepts, float16 and bfloat16, through float32: the maximum is
  // one of the inputs, so the values come back exact, and the gradient's sums are rounded once
  return tidy(() => {
    const { values, indices } = maxPoolKernel(V.cast(x, 'float32'), g);
    const back = V.cast(values, x.dtype);
    return o.returnIndices ? valuesIndices(back, indices) : back;
  });
}

/** A pooling command's geometry (ts/worker/protocol.ts `PoolCommand`). */
type PoolCommandGeom = { planes: number; size: number[]; kernel: number[]; stride: number[]; padding: number[]; dilation: number[]; outSize: number[] };

/**
 * Max pooling of a float32 x by the kernels: one `maxPool` command, recorded with its gradient
 * rule (one `maxPoolGrad` command).
 */
function maxPoolKernel(x: Tensor, g: PoolGeom): ValuesIndices {
  const planes = x.shape.slice(0, -2).reduce((a, b) => a * b, 1);
  const geom: PoolCommandGeom = { planes, size: [g.H, g.W], kernel: g.k, stride: g.s, padding: g.p, dilation: g.d, outSize: g.out };
  const shape = [...x.shape.slice(0, -2), ...g.out];
  let indices!: Tensor;
  const values = recorded('max_pool2d_with_indices', [x], () => {
    const xc = V.contiguous(x);
    const v = alloc(shape, 'float32', x.device);
    indices = alloc(shape, 'int64', x.device);
    if (planes) emit(x.device, { k: 'maxPool', x: place(xc), values: place(v), indices: place(indices), ...geom });
    if (xc !== x) xc.dispose();
    return v;
  }, (ctx) => {
    const si = ctx.save(indices);
    return ([gOut]) => [maxPoolBackward(gOut!, si, x.shape.slice(), geom)];
  });
  return valuesIndices(values, indices);
}

/**
 * The input's gradient of max pooling: `g` added at the elements `indices` name, one
 * `maxPoolGrad` command; a gradient that is itself differentiated (`createGraph`) is the same
 * sum as a `scatterAdd` over each plane, which has its own gradient.
 */
function maxPoolBackward(g: Tensor, indices: Tensor, shape: number[], geom: PoolCommandGeom): Tensor {
  const [H, W] = geom.size, [oh, ow] = geom.outSize;
  if (needsGrad(g)) {
    return tidy(() => {
      const into = zeros([geom.planes, H * W], { device: g.device, dtype: g.dtype });
      const flat = (t: Tensor) => V.reshape(t, [geom.planes, oh * ow]);
      return V.reshape(scatterAdd(into, 1, flat(indices), flat(g)), shape);
    });
  }
  const grad = alloc(shape, 'float32', g.device);
  if (!geom.planes) return grad;
  const gc = tidy(() => V.contiguous(g.dtype === 'float32' ? g : V.cast(g, 'float32')));
  emit(g.device, { k: 'maxPoolGrad', g: place(gc), indices: place(indices), grad: place(grad), ...geom });
  if (gc !== g) gc.dispose();
  return grad;
}

/** PyTorch's divisor per output position along one dim: [window clipped to the padded input, window clipped to the input]. */
function counts(n: number, out: number, k: number, s: number, p: number): [number[], number[]] {
  const withPad: number[] = [], inside: number[] = [];
  for (let i = 0; i < out; i++) {
    const start = i * s - p, end = Math.min(start + k, n + p);
    withPad.push(end - start);
    inside.push(Math.min(end, n) - Math.max(start, 0));
  }
  return [withPad, inside];
}

/**
 * `F.avg_pool2d(x, kernelSize, {stride, padding, ceilMode, countIncludePad, divisorOverride})`
 * over x [N, C, H, W] or [C, H, W].
 */
export function avgPool2d(x: Tensor, kernelSize: Size2,
  ...args: PyArgs<[stride: Size2 | null, padding: Size2, ceilMode: boolean, countIncludePad: boolean, divisorOverride: number | null], AvgPool2dOptions>): Tensor {
  const o = bindArgs('avg_pool2d', ['stride', 'padding', 'ceilMode', 'countIncludePad', 'divisorOverride'], args, {} as AvgPool2dOptions, 2);
  const g = poolArgs('avg_pool2d', x, kernelSize, o);
  if (o.divisorOverride != null && !(o.divisorOverride !== 0 && Number.isFinite(o.divisorOverride))) {
    throw new RangeError(`avg_pool2d(): divisor must be not zero, but got divisorOverride=${o.divisorOverride}`);
  }
  if (x.dtype === 'float32') return avgPoolKernel(x, g, o.countIncludePad ?? true, o.divisorOverride ?? 0);
  // 16-bit floats through float32, rounded once
  if (x.dtype !== 'int64') return tidy(() => V.cast(avgPoolKernel(V.cast(x, 'float32'), g, o.countIncludePad ?? true, o.divisorOverride ?? 0), x.dtype));
  const [hp, hi] = counts(g.H, g.out[0], g.k[0], g.s[0], g.p[0]), [wp, wi] = counts(g.W, g.out[1], g.k[1], g.s[1], g.p[1]);
  const [hs, ws] = (o.countIncludePad ?? true) ? [hp, wp] : [hi, wi];
  const divisor = hs.flatMap((a) => ws.map((b) => o.divisorOverride ?? a * b));
  return tidy(() => {
    const sum = reduce(ReduceOp.Sum, poolWindows(x, g, 0), -1);
    if (x.dtype === 'int64') return unbatch(x, binaryOp('trunc_divide', sum, fromHost(divisor, g.out, 'int64', x.device)));
    const y = binaryOp('div', sum, fromHost(divisor, g.out, x.dtype, x.device));
    return unbatch(x, y);
  });
}

/**
 * Average pooling of a float32 x by the kernels: one `avgPool` command, recorded with its gradient
 * rule (one `avgPoolGrad` command). As the composed form's (whose windows' gradient, the fold, runs
 * with grad mode off), the gradient is not itself differentiable.
 */
function avgPoolKernel(x: Tensor, g: PoolGeom, includePad: boolean, divisor: number): Tensor {
  const planes = x.shape.slice(0, -2).reduce((a, b) => a * b, 1);
  const geom = { planes, size: [g.H, g.W], kernel: g.k, stride: g.s, padding: g.p, outSize: g.out, includePad, divisor };
  const shape = [...x.shape.slice(0, -2), ...g.out];
  return recorded('avg_pool2d', [x], () => {
    const xc = V.contiguous(x);
    const v = alloc(shape, 'float32', x.device);
    if (planes) emit(x.device, { k: 'avgPool', x: place(xc), values: place(v), ...geom });
    if (xc !== x) xc.dispose();
    return v;
  }, () => ([gOut]) => {
    const grad = alloc(x.shape.slice(), 'float32', x.device);
    if (!planes) return [grad];
    const gc = tidy(() => V.contiguous(gOut!.dtype === 'float32' ? gOut! : V.cast(gOut!, 'float32')));
    emit(x.device, { k: 'avgPoolGrad', g: place(gc), grad: place(grad), ...geom });
    if (gc !== gOut) gc.dispose();
    return [grad];
  });
}

/** The averaging matrix [out, n] of adaptive pooling along one dim. */
function averaging(n: number, out: number): number[] {
  const m = new Array<number>(out * n).fill(0);
  for (let i = 0; i < out; i++) {
    const start = Math.floor((i * n) / out), end = Math.ceil(((i + 1) * n) / out);
    for (let j = start; j < end; j++) m[i * n + j] = 1 / (end - start);
  }
  return m;
}

/** `F.adaptive_avg_pool2d(x, outputSize)`: x [N, C, H, W] or [C, H, W]; a null size keeps the input's. */
export function adaptiveAvgPool2d(x: Tensor, ...args: PyArgs<[outputSize: number | (number | null)[]], { outputSize?: number | (number | null)[] }>): Tensor {
  const { outputSize } = bindArgs('adaptive_avg_pool2d', ['outputSize'], args, { outputSize: REQUIRED as number | (number | null)[] }, 1);
  checkAccepted('adaptive_avg_pool2d', x);
  sameDevice('adaptive_avg_pool2d', [x]);
  if ((x.ndim !== 3 && x.ndim !== 4) || x.shape.slice(-2).some((n) => n === 0)) {
    throw new RangeError(`adaptive_avg_pool2d(): Expected 3D or 4D tensor with non-zero spatial dims, but got ${fmt(x.shape)}`);
  }
  const [H, W] = x.shape.slice(-2);
  const raw = typeof outputSize === 'number' ? [outputSize, outputSize] : outputSize;
  if (!Array.isArray(raw) || raw.length !== 2 || raw.some((v) => v !== null && (!Number.isInteger(v) || v < 1))) {
    throw new RangeError(`adaptive_avg_pool2d(): output_size must be a positive integer or 2 of them (null keeps a size), but got ${JSON.stringify(outputSize)}`);
  }
  const [oh, ow] = [raw[0] ?? H, raw[1] ?? W];
  if (H % oh === 0 && W % ow === 0) return avgPool2d(x, [H / oh, W / ow]);
  return tidy(() => {
    const ah = fromHost(averaging(H, oh), [oh, H], x.dtype, x.device);
    const aw = V.t2(fromHost(averaging(W, ow), [ow, W], x.dtype, x.device));
    return matmul(matmul(ah, x), aw);
  });
}
