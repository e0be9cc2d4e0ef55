/**
 * `torch.nn.functional`: activations, losses, dropout, linear and normalization, mostly composed
 * from differentiable ops so that autograd derives their gradients; the fused kernels (softmax,
 * log-softmax and layer norm rows, the NLL of class indices: ts/ops/nll.ts) carry their own
 * rules beside their forwards.
 *
 * The hard part is staying stable. Composed, class indices become a one-hot mask
 * (`arange(C) == target`) with ignored targets folded into it, so they add neither loss nor
 * weight; softmax-like ops subtract a max computed with recording off (the shift cancels in
 * the gradient, so the composed gradient is exact); the logistic loss uses softplus(-x).
 */
import { isFloating, scalarName, toDType, type DType } from '../dtype.js';
import { needsGrad, op as recorded, withGradMode } from '../autograd/graph.js';
import { alloc, emit, place, sameDevice } from '../runtime/dispatch.js';
import type { Command } from '../ir/commands.js';
import { broadcastFor, fmt, normDim, numel } from '../shape.js';
import { Tensor } from '../tensor.js';
import { ReduceOp } from '../ir/ops.js';
import { copyInto } from './copy.js';
import { checkIndexRange } from './indexing.js';
import { classMask, nllFused, fusable as nllFusable, type NllArgs } from './nll.js';
import { Dist, drawInto, f32Bits, generatorFor } from './random.js';
import type { Generator } from '../random.js';
import { binaryOp, softplus, unaryOp, where, type TensorOrScalar } from './elementwise.js';
import { matmul } from './matmul.js';
import { bindArgs, checkOptions, type PyArgs } from '../args.js';
import { reduce } from './reduce.js';
import { checkDtypes } from './registry.js';
import { tidy } from './scoped.js';
import * as V from './views.js';
import { autocastCall, autocasting } from '../amp/autocast.js';

/** Whether a softmax was given an explicit `dtype` (PyTorch does not autocast such a call). */
const explicitDtype = (o: unknown): boolean => typeof o === 'string' || (typeof o === 'object' && o !== null && (o as { dtype?: unknown }).dtype != null);

/** How a loss reduces its per-element values. */
export type Reduction = 'mean' | 'sum' | 'none';

const add = (a: TensorOrScalar, b: TensorOrScalar) => binaryOp('add', a, b);
const sub = (a: TensorOrScalar, b: TensorOrScalar) => binaryOp('sub', a, b);
const mul = (a: TensorOrScalar, b: TensorOrScalar) => binaryOp('mul', a, b);
const div = (a: TensorOrScalar, b: TensorOrScalar) => binaryOp('div', a, b);

/** @internal Throws unless `x` is a tensor of a floating dtype. */
export function checkFloat(op: string, x: unknown, what = 'input'): asserts x is Tensor {
  if (!(x instanceof Tensor)) throw new TypeError(`${op}(): expected ${what} to be a Tensor, but got ${x === null ? 'null' : typeof x}`);
  if (!isFloating(x.dtype)) {
    throw new TypeError(`${op}(): expected ${what} to have a floating point dtype, but got ${x.dtype} ('${scalarName(x.dtype)}', shape ${fmt(x.shape)})`);
  }
}

/** @internal Throws unless `x` is a tensor of a dtype the op's row of the op table accepts (ts/ops/registry.ts). */
export function checkAccepted(op: string, x: unknown, what = 'input'): asserts x is Tensor {
  if (!(x instanceof Tensor)) throw new TypeError(`${op}(): expected ${what} to be a Tensor, but got ${x === null ? 'null' : typeof x}`);
  checkDtypes(op, x);
}

/** Runs `f` on float32 copies of 16-bit float tensors and rounds its result back once, as PyTorch accumulates them in f32. */
function inF32(x: Tensor, others: (Tensor | null | undefined)[], f: (x: Tensor, others: (Tensor | null | undefined)[]) => Tensor): Tensor {
  if (x.dtype !== 'float16' && x.dtype !== 'bfloat16') return f(x, others);
  return tidy(() => V.cast(f(V.cast(x, 'float32'), others.map((t) => (t && t.dtype === x.dtype ? V.cast(t, 'float32') : t))), x.dtype));
}

function checkReduction(op: string, r: unknown): Reduction {
  if (r !== 'mean' && r !== 'sum' && r !== 'none') throw new RangeError(`${op}(): ${JSON.stringify(r)} is not a valid value for reduction (expected 'mean', 'sum' or 'none')`);
  return r;
}

function reduceLoss(loss: Tensor, reduction: Reduction): Tensor {
  if (reduction === 'none') return loss;
  return reduce(reduction === 'sum' ? ReduceOp.Sum : ReduceOp.Mean, loss, undefined);
}

/** `x - max(x, dim)` with the max taken off the tape. */
function shifted(x: Tensor, dim: number): Tensor {
  const m = withGradMode(false, () => reduce(ReduceOp.Max, x, dim, true));
  return sub(x, m);
}

function softmaxInput(op: string, x: Tensor, dim: number, options: { dtype?: DType | string } | DType): [Tensor, number] {
  const o = typeof options === 'string' ? { dtype: options } : options;
  checkOptions(op, o, ['dtype']);
  const dtype = o.dtype;
  if (!(x instanceof Tensor)) throw new TypeError(`${op}(): expected input to be a Tensor, but got ${typeof x}`);
  if (dim === undefined) throw new TypeError(`${op}(): the dim argument is required (PyTorch's implicit dim choice is deprecated)`);
  const d = normDim(dim, x.ndim);
  const src = dtype === undefined ? x : V.cast(x, toDType(dtype, op));
  if (!isFloating(src.dtype)) {
    throw new TypeError(`"${op}" not implemented for '${scalarName(src.dtype)}' (input of shape ${fmt(x.shape)}); pass { dtype: 'float32' } to compute in float`);
  }
  return [src, d];
}

/** Whether softmax over `d` can run as one kernel (the `softmax` command): f32 rows, contiguous, along the last dim. */
const fusable = (x: Tensor, d: number) => x.dtype === 'float32' && d === x.ndim - 1 && x.isContiguous();

/**
 * A row normalisation's input gradient in one pass per row (the `rowGrad` command: one kernel
 * on every device), where the gradient itself is not differentiated (no `createGraph`) and it is
 * f32: null otherwise, and the caller composes it.
 */
function fusedRowGrad(kind: 'softmax' | 'log_softmax' | 'layer_norm', x: Tensor, g: Tensor, w: Tensor | null, inner: number, eps = 0): Tensor | null {
  if (needsGrad(x, g, w) || g.dtype !== 'float32' || !x.isContiguous() || (w && !w.isContiguous())) return null;
  const gc = g.isContiguous() ? g : g.contiguous();
  const out = alloc(x.shape, 'float32', x.device);
  if (x.numel() && inner) {
    emit(x.device, { k: 'rowGrad', kind, x: place(x), g: place(gc), out: place(out), outer: x.numel() / inner, inner,
      ...(kind === 'layer_norm' ? { norm: { eps, w: w && place(w) } } : {}) });
  }
  if (gc !== g) gc.dispose();
  return out;
}

/**
 * Softmax or log-softmax along the last dim in one kernel (wgsl/softmax.ts). Gradients, with y
 * the output: softmax `y·(g - Σ g·y)`, log-softmax `g - exp(y)·Σ g`, sums along the last dim.
 */
function fusedSoftmax(x: Tensor, log: boolean): Tensor {
  const d = x.ndim - 1;
  return recorded(log ? 'log_softmax' : 'softmax', [x], () => {
    const out = alloc(x.shape, 'float32', x.device);
    const inner = x.shape[d];
    emit(x.device, { k: 'softmax', log, a: place(x), out: place(out), outer: x.numel() / inner, inner });
    return out;
  }, (ctx, out) => {
    const y = ctx.save(out);
    return ([g]) => [fusedRowGrad(log ? 'log_softmax' : 'softmax', y, g!, null, y.shape[d]) ?? tidy(() => (log
      ? sub(g!, mul(unaryOp('exp', y), reduce(ReduceOp.Sum, g!, d, true)))
      : mul(y, sub(g!, reduce(ReduceOp.Sum, mul(g!, y), d, true)))))];
  });
}

/** The arguments of softmax and log-softmax after the input: `dim` and `dtype`, positional or keywords (`F.softmax(x, {dim: -1})`). */
export type SoftmaxArgs = PyArgs<[dim: number, dtype: DType | string], { dim?: number; dtype?: DType | string }>;

function softmaxArgs(op: string, args: readonly unknown[]): [number, { dtype?: DType | string }] {
  const { dim, dtype } = bindArgs(op, ['dim', 'dtype'], args, {} as { dim?: number; dtype?: DType | string }, 1);
  return [dim as number, dtype === undefined ? {} : { dtype }];
}

/** `F.softmax(x, dim, {dtype})`: `exp(x - max) / sum(exp(x - max))` along `dim`. */
export function softmax(x: Tensor, ...args: SoftmaxArgs): Tensor {
  const [dim, o] = softmaxArgs('softmax', args);
  if (autocasting()) return autocastCall('softmax', [x, dim, o], softmax, !explicitDtype(o));
  return tidy(() => {
    const [src, d] = softmaxInput('softmax', x, dim, o);
    if (x.shape[d] === 0) return mul(src, 1);
    if (fusable(src, d)) return fusedSoftmax(src, false);
    const e = unaryOp('exp', shifted(src, d));
    return div(e, reduce(ReduceOp.Sum, e, d, true));
  });
}

/** `F.log_softmax(x, dim, {dtype})`: `(x - max) - log(sum(exp(x - max)))` along `dim`. */
export function logSoftmax(x: Tensor, ...args: SoftmaxArgs): Tensor {
  const [dim, o] = softmaxArgs('log_softmax', args);
  if (autocasting()) return autocastCall('log_softmax', [x, dim, o], logSoftmax, !explicitDtype(o));
  return tidy(() => {
    const [src, d] = softmaxInput('log_softmax', x, dim, o);
    if (x.shape[d] === 0) return mul(src, 1);
    if (fusable(src, d)) return fusedSoftmax(src, true);
    const z = shifted(src, d);
    return sub(z, unaryOp('log', reduce(ReduceOp.Sum, unaryOp('exp', z), d, true)));
  });
}

/** PyTorch's deprecated `size_average`/`reduce` arguments, folded into `reduction` as `_Reduction.legacy_get_string` does. */
export interface LegacyReduction {
  sizeAverage?: boolean | null;
  reduce?: boolean | null;
  reduction?: Reduction;
}

/** The reduction a loss uses: `reduction`, unless a legacy `sizeAverage`/`reduce` was given. */
export function legacyReduction(o: LegacyReduction): Reduction {
  if (o.sizeAverage == null && o.reduce == null) return o.reduction ?? 'mean';
  return o.reduce === false ? 'none' : o.sizeAverage === false ? 'sum' : 'mean';
}

/** Options of `nllLoss`. */
export interface NllOptions extends LegacyReduction {
  /** A weight per class (shape [C]). */
  weight?: Tensor | null;
  /** Targets equal to this contribute nothing, not even to the mean's denominator. Default -100. */
  ignoreIndex?: number;
}

/** Options of `crossEntropy`. */
export interface CrossEntropyOptions extends NllOptions {
  /** Mixes the target with the uniform distribution: `(1 - ε)·target + ε/C`. */
  labelSmoothing?: number;
}

/** `nll_loss`'s parameters after (input, target), in PyTorch's order. */
type NllPositional = [weight: Tensor | null, sizeAverage: boolean | null, ignoreIndex: number, reduce: boolean | null, reduction: Reduction];
const NLL_PARAMS = ['weight', 'sizeAverage', 'ignoreIndex', 'reduce', 'reduction'] as const;

/** Checks an input/target pair of a classification loss; returns the class dim. */
function classDim(op: string, input: Tensor, target: Tensor, weight: Tensor | null | undefined, probs: boolean): number {
  checkFloat(op, input);
  if (!(target instanceof Tensor)) throw new TypeError(`${op}(): expected target to be a Tensor, but got ${typeof target}`);
  sameDevice(op, weight ? [input, target, weight] : [input, target]);
  if (input.ndim < 1) throw new RangeError(`${op}(): expected input of shape [C], [N, C] or [N, C, d1, ...], but got a 0-dim tensor`);
  const cdim = input.ndim === 1 ? 0 : 1, C = input.shape[cdim];
  if (weight && (weight.ndim !== 1 || weight.shape[0] !== C)) {
    throw new RangeError(`${op}(): weight tensor should be defined either for all ${C} classes or no classes but got weight tensor of shape: ${fmt(weight.shape)}`);
  }
  if (probs) {
    if (target.shape.join() !== input.shape.join()) throw new RangeError(`${op}(): Expected target size ${fmt(input.shape)}, got ${fmt(target.shape)} (class probabilities must have the input's shape)`);
    return cdim;
  }
  if (target.dtype !== 'int64') {
    throw new TypeError(`${op}(): expected scalar type Long but found ${scalarName(target.dtype)}: target must hold int64 class indices${op === 'cross_entropy' ? ' (or class probabilities of the input\'s floating dtype and shape)' : ''}`);
  }
  const want = input.shape.filter((_, i) => i !== cdim);
  if (input.ndim === 2 && target.ndim === 1 && target.shape[0] !== input.shape[0]) {
    throw new RangeError(`Expected input batch_size (${input.shape[0]}) to match target batch_size (${target.shape[0]}). (in ${op}, input ${fmt(input.shape)}, target ${fmt(target.shape)})`);
  }
  if (target.shape.join() !== want.join() || target.ndim !== want.length) {
    throw new RangeError(`${op}(): Expected target size ${fmt(want)}, got ${fmt(target.shape)} (input ${fmt(input.shape)})`);
  }
  return cdim;
}

/**
 * The negative log likelihood of log-probabilities `lsm` at int64 `target`, with optional label
 * smoothing: the fused kernels where they take the call (ts/ops/nll.ts), else composed.
 */
function indexLoss(op: string, lsm: Tensor, target: Tensor, o: CrossEntropyOptions, cdim: number, eps: number): Tensor {
  const reduction = checkReduction(op, o.reduction ?? 'mean');
  const ignore = o.ignoreIndex ?? -100;
  if (!Number.isInteger(ignore)) throw new TypeError(`${op}(): ignoreIndex must be an integer, got ${ignore}`);
  const a: NllArgs = { op, target, weight: o.weight ?? null, ignore, eps, reduction, cdim };
  if (nllFusable(lsm, a)) return nllFused(lsm, a);
  const C = lsm.shape[cdim];
  // Targets outside [0, C) that are not ignoreIndex fail the next sync point, as PyTorch's assert does.
  withGradMode(false, () => tidy(() => {
    checkIndexRange(op, where(binaryOp('eq', target, ignore), 0, target), C, `${op}(): Target %d is out of bounds.`);
  }));
  const { mask, valid, w } = classMask(lsm.shape, lsm.device, a);
  const picked = reduce(ReduceOp.Sum, where(mask, lsm, 0), cdim);
  const wt = w ? reduce(ReduceOp.Sum, where(mask, w, 0), cdim) : V.cast(valid, lsm.dtype);
  let loss = unaryOp('neg', w ? mul(picked, wt) : picked);
  if (eps > 0) {
    const all = reduce(ReduceOp.Sum, w ? mul(lsm, w) : lsm, cdim);
    const smooth = where(valid, unaryOp('neg', all), 0);
    loss = add(mul(loss, 1 - eps), mul(smooth, eps / C));
  }
  if (reduction === 'none') return loss;
  const total = reduce(ReduceOp.Sum, loss, undefined);
  return reduction === 'sum' ? total : div(total, reduce(ReduceOp.Sum, wt, undefined));
}

/**
 * `F.nll_loss(input, target, {weight, ignoreIndex, reduction})`: input holds log-probabilities
 * of shape [C], [N, C] or [N, C, d1, ...]; target holds int64 class indices of the input's
 * shape without the class dim. A target outside [0, C) that is not `ignoreIndex` fails the next
 * sync point with PyTorch's `Target 9 is out of bounds.`
 */
export function nllLoss(input: Tensor, target: Tensor, ...args: PyArgs<NllPositional, NllOptions>): Tensor {
  if (autocasting()) return autocastCall('nll_loss', [input, target, ...args], nllLoss as (...a: unknown[]) => Tensor);
  const o = bindArgs('nll_loss', NLL_PARAMS, args, {} as NllOptions, 2);
  o.reduction = legacyReduction(o);
  const cdim = classDim('nll_loss', input, target, o.weight, false);
  return tidy(() => indexLoss('nll_loss', input, target, o, cdim, 0));
}

/**
 * `F.cross_entropy(logits, target, {weight, ignoreIndex, labelSmoothing, reduction})`:
 * `logSoftmax` over the class dim, then the NLL of int64 class indices, or, for a float
 * target of the input's shape, the cross entropy with those class probabilities.
 */
export function crossEntropy(input: Tensor, target: Tensor, ...args: PyArgs<[...NllPositional, labelSmoothing: number], CrossEntropyOptions>): Tensor {
  if (autocasting()) return autocastCall('cross_entropy', [input, target, ...args], crossEntropy as (...a: unknown[]) => Tensor);
  const o = bindArgs('cross_entropy', [...NLL_PARAMS, 'labelSmoothing'], args, {} as CrossEntropyOptions, 2);
  o.reduction = legacyReduction(o);
  const probs = target instanceof Tensor && isFloating(target.dtype);
  const cdim = classDim('cross_entropy', input, target, o.weight, probs);
  const eps = o.labelSmoothing ?? 0;
  if (!(eps >= 0 && eps <= 1)) throw new RangeError(`cross_entropy(): label_smoothing must be between 0.0 and 1.0. Got: ${eps}`);
  return tidy(() => {
    const lsm = logSoftmax(input, cdim);
    if (!probs) return indexLoss('cross_entropy', lsm, target, o, cdim, eps);
    const reduction = checkReduction('cross_entropy', o.reduction ?? 'mean');
    const C = input.shape[cdim];
    const t = eps > 0 ? add(mul(target, 1 - eps), eps / C) : target;
    let prod = mul(lsm, t);
    if (o.weight) prod = mul(prod, V.reshape(o.weight, input.shape.map((s, i) => (i === cdim ? s : 1))));
    if (reduction === 'none') return unaryOp('neg', reduce(ReduceOp.Sum, prod, cdim));
    const total = unaryOp('neg', reduce(ReduceOp.Sum, prod, undefined));
    return reduction === 'sum' ? total : div(total, input.numel() / Math.max(C, 1));
  });
}

/** `F.linear(x, weight, bias)`: `x @ weightᵀ + bias`, weight of shape [out, in]. */
export function linear(x: Tensor, weight: Tensor, ...args: PyArgs<[bias: Tensor | null], { bias?: Tensor | null }>): Tensor {
  if (autocasting()) return autocastCall('linear', [x, weight, ...args], linear as (...a: unknown[]) => Tensor);
  const { bias } = bindArgs('linear', ['bias'], args, { bias: null as Tensor | null }, 2);
  checkAccepted('linear', x);
  checkAccepted('linear', weight, 'weight');
  sameDevice('linear', bias ? [x, weight, bias] : [x, weight]);
  if (x.ndim === 0 || weight.ndim === 0 || weight.ndim > 2) {
    throw new RangeError(`linear(): expected input of at least 1 dim and a weight of shape [out_features, in_features], but got input ${fmt(x.shape)} and weight ${fmt(weight.shape)}`);
  }
  const inF = x.shape[x.ndim - 1], wIn = weight.shape[weight.ndim - 1];
  if (inF !== wIn) {
    const rows = x.ndim === 1 ? 1 : numel(x.shape.slice(0, -1));
    throw new RangeError(`mat1 and mat2 shapes cannot be multiplied (${rows}x${inF} and ${wIn}x${weight.ndim === 2 ? weight.shape[0] : 1}) (linear: input ${fmt(x.shape)}, weight ${fmt(weight.shape)})`);
  }
  return tidy(() => {
    const y = matmul(x, V.t2(weight));
    return bias ? add(y, bias) : y;
  });
}

/** The parameters of `mse_loss` and `l1_loss` after (input, target). */
type PointwisePositional = [sizeAverage: boolean | null, reduce: boolean | null, reduction: Reduction];

function pointwiseLoss(op: string, input: Tensor, target: Tensor, args: PyArgs<PointwisePositional, LegacyReduction>, f: (d: Tensor) => Tensor): Tensor {
  if (autocasting()) return autocastCall(op, [input, target, ...args], (i: Tensor, t: Tensor, ...a: unknown[]) => pointwiseLoss(op, i, t, a as typeof args, f));
  const o = bindArgs(op, ['sizeAverage', 'reduce', 'reduction'], args, {} as LegacyReduction, 2);
  // PyTorch's l1_loss takes integers too; mse_loss only floats
  if (op === 'l1_loss') checkAccepted(op, input);
  else checkFloat(op, input);
  if (!(target instanceof Tensor)) throw new TypeError(`${op}(): expected target to be a Tensor, but got ${typeof target}`);
  sameDevice(op, [input, target]);
  broadcastFor(op, [input.shape, target.shape], `, dtypes ${input.dtype} and ${target.dtype}`);
  const r = checkReduction(op, legacyReduction(o));
  return tidy(() => reduceLoss(f(sub(input, target)), r));
}

/** `F.mse_loss(input, target, {reduction})`: `(input - target)²`, reduced (target broadcasts). */
export const mseLoss = (input: Tensor, target: Tensor, ...args: PyArgs<PointwisePositional, LegacyReduction>): Tensor =>
  pointwiseLoss('mse_loss', input, target, args, (d) => unaryOp('square', d));

/** `F.l1_loss(input, target, {reduction})`: `|input - target|`, reduced (target broadcasts). */
export const l1Loss = (input: Tensor, target: Tensor, ...args: PyArgs<PointwisePositional, LegacyReduction>): Tensor =>
  pointwiseLoss('l1_loss', input, target, args, (d) => unaryOp('abs', d));

/** Options of `binaryCrossEntropyWithLogits`. */
export interface BceOptions extends LegacyReduction {
  weight?: Tensor | null;
  posWeight?: Tensor | null;
}
type BcePositional = [weight: Tensor | null, sizeAverage: boolean | null, reduce: boolean | null, reduction: Reduction, posWeight: Tensor | null];

/**
 * `F.binary_cross_entropy_with_logits(input, target, {weight, posWeight, reduction})`, in the
 * stable form `(1 - t)·x + (1 + (posWeight - 1)·t)·softplus(-x)`.
 */
export function binaryCrossEntropyWithLogits(input: Tensor, target: Tensor, ...args: PyArgs<BcePositional, BceOptions>): Tensor {
  if (autocasting()) return autocastCall('binary_cross_entropy_with_logits', [input, target, ...args], binaryCrossEntropyWithLogits as (...a: unknown[]) => Tensor);
  const op = 'binary_cross_entropy_with_logits';
  const o = bindArgs(op, ['weight', 'sizeAverage', 'reduce', 'reduction', 'posWeight'], args, {} as BceOptions, 2);
  checkFloat(op, input);
  checkFloat(op, target, 'target');
  sameDevice(op, [input, target, ...[o.weight, o.posWeight].filter((t): t is Tensor => !!t)]);
  if (target.shape.join() !== input.shape.join() || target.ndim !== input.ndim) {
    throw new RangeError(`Target size (${fmt(target.shape)}) must be the same as input size (${fmt(input.shape)})`);
  }
  const r = checkReduction(op, legacyReduction(o));
  return tidy(() => {
    const sp = softplus(unaryOp('neg', input));
    const logWeight = o.posWeight ? add(mul(sub(o.posWeight, 1), target), 1) : null;
    let loss = add(mul(sub(1, target), input), logWeight ? mul(logWeight, sp) : sp);
    if (o.weight) loss = mul(loss, o.weight);
    return reduceLoss(loss, r);
  });
}

/**
 * `F.dropout(x, p, training, {generator})`: zeroes each element with probability `p` and scales
 * the rest by `1/(1-p)`. The scaled mask is one Bernoulli draw on x's device, from x's device's
 * generator (`torch.manualSeed`) or `generator` (a webtorch keyword; PyTorch's dropout has none).
 * When not training (or p = 0) it returns a view of `x`.
 */
export function dropout(x: Tensor, ...args: PyArgs<[p: number, training: boolean, inplace: boolean], { p?: number; training?: boolean; inplace?: boolean; generator?: Generator | null }>): Tensor {
  const { p, training, inplace, generator } = bindArgs('dropout', ['p', 'training', 'inplace', 'generator'], args,
    { p: 0.5, training: true, inplace: false, generator: null as Generator | null }, 1);
  if (inplace) throw new TypeError('dropout(): inplace=true is not supported; use the returned tensor');
  if (!(x instanceof Tensor)) throw new TypeError(`dropout(): expected input to be a Tensor, but got ${x === null ? 'null' : typeof x}`);
  if (!(p >= 0 && p <= 1)) throw new RangeError(`dropout probability has to be between 0 and 1, but got ${p}`);
  const g = generatorFor('dropout', x.device, generator);
  if (!training) return V.index(x); // the identity, for every dtype, as in PyTorch
  checkFloat('dropout', x);
  if (p === 0) return V.index(x);
  // keep with probability 1 - p, as the value 1 / (1 - p) (0 everywhere when p = 1)
  const mask = drawInto(alloc(x.shape, x.dtype, x.device), Dist.Bernoulli, g, f32Bits(1 - p), f32Bits(p === 1 ? 0 : 1 / (1 - p)));
  const out = mul(x, mask);
  mask.dispose();
  return out;
}

/** `F.layer_norm(x, normalizedShape, weight, bias, eps)`: normalizes over the last dims. */
export function layerNorm(x: Tensor, normalizedShape: number | number[],
  ...args: PyArgs<[weight: Tensor | null, bias: Tensor | null, eps: number], { weight?: Tensor | null; bias?: Tensor | null; eps?: number }>): Tensor {
  if (autocasting()) return autocastCall('layer_norm', [x, normalizedShape, ...args], layerNorm as (...a: unknown[]) => Tensor);
  const { weight, bias, eps } = bindArgs('layer_norm', ['weight', 'bias', 'eps'], args, { weight: null as Tensor | null, bias: null as Tensor | null, eps: 1e-5 }, 2);
  checkFloat('layer_norm', x);
  const ns = typeof normalizedShape === 'number' ? [normalizedShape] : normalizedShape;
  sameDevice('layer_norm', [x, ...[weight, bias].filter((t): t is Tensor => !!t)]);
  if (ns.length === 0 || ns.length > x.ndim || ns.some((s, i) => s !== x.shape[x.ndim - ns.length + i])) {
    throw new RangeError(`Given normalized_shape=${fmt(ns)}, expected input with shape [*, ${ns.join(', ')}], but got input of size${fmt(x.shape)}`);
  }
  for (const [name, t] of [['weight', weight], ['bias', bias]] as const) {
    if (t && t.shape.join() !== ns.join()) {
      throw new RangeError(`Expected ${name} to be of same shape as normalized_shape, but got ${name} of shape ${fmt(t.shape)} and normalized_shape = ${fmt(ns)}`);
    }
  }
  const dims = ns.map((_, i) => x.ndim - ns.length + i);
  return inF32(x, [weight, bias], (x, [weight, bias]) => tidy(() => {
    if ([x, weight, bias].every((t) => !t || (t.dtype === 'float32' && t.isContiguous()))) {
      return fusedLayerNorm(x, weight ?? null, bias ?? null, dims, eps);
    }
    const [xhat] = normalized(x, dims, eps);
    let y = xhat;
    if (weight) y = mul(y, weight);
    if (bias) y = add(y, bias);
    return y;
  }));
}

/** `[(x - mean)·rstd, rstd]` over `dims`, composed (rstd keeps the dims). */
function normalized(x: Tensor, dims: number[], eps: number): [Tensor, Tensor] {
  const xc = sub(x, reduce(ReduceOp.Mean, x, dims, true));
  const rstd = unaryOp('rsqrt', add(reduce(ReduceOp.Mean, unaryOp('square', xc), dims, true), eps));
  return [mul(xc, rstd), rstd];
}

/** x̂ = (x - mean)·rstd over rows of `inner` of a contiguous f32 `x`: the layer norm kernel without weight and bias, not recorded. */
function layerNormRows(x: Tensor, inner: number, eps: number): Tensor {
  const out = alloc(x.shape, 'float32', x.device);
  if (x.numel() && inner) emit(x.device, { k: 'softmax', log: false, a: place(x), out: place(out), outer: x.numel() / inner, inner, norm: { eps, w: null, b: null } });
  return out;
}

/**
 * Layer norm over the last dims of contiguous f32 tensors in one GPU kernel. Gradient, with
 * x̂ = (x - mean)·rstd recomputed and gy = g·weight: `rstd·(gy - mean(gy) - x̂·mean(gy·x̂))` for x,
 * Σ g·x̂ and Σ g over the leading dims for weight and bias.
 */
function fusedLayerNorm(x: Tensor, weight: Tensor | null, bias: Tensor | null, dims: number[], eps: number): Tensor {
  const inner = numel(dims.map((d) => x.shape[d]));
  return recorded('layer_norm', [x, weight, bias], () => {
    const out = alloc(x.shape, 'float32', x.device);
    if (!inner) return out;
    const cmd: Extract<Command, { k: 'softmax' }> = { k: 'softmax', log: false, a: place(x), out: place(out),
      outer: x.numel() / inner, inner, norm: { eps, w: weight && place(weight), b: bias && place(bias) } };
    emit(x.device, cmd);
    return out;
  }, (ctx) => {
    const xs = ctx.save(x), w = weight && ctx.save(weight);
    const lead = x.shape.map((_, i) => i).slice(0, x.ndim - dims.length);
    const overRows = (t: Tensor) => (lead.length ? reduce(ReduceOp.Sum, t, lead) : mul(t, 1));
    return ([g]) => tidy(() => {
      // The input's gradient is one pass per row; the weight's needs x̂, from the forward kernel
      // without weight and bias (one command; composed it is seven).
      const fused = fusedRowGrad('layer_norm', xs, g!, w, inner, eps);
      if (fused) return [fused, weight ? overRows(mul(g!, layerNormRows(xs, inner, eps))) : null, bias ? overRows(g!) : null];
      const [xhat, rstd] = normalized(xs, dims, eps);
      const gy = w ? mul(g!, w) : g!;
      const mean = (t: Tensor) => reduce(ReduceOp.Mean, t, dims, true);
      const gx = mul(rstd, sub(sub(gy, mean(gy)), mul(xhat, mean(mul(gy, xhat)))));
      return [gx, weight ? overRows(mul(g!, xhat)) : null, bias ? overRows(g!) : null];
    });
  });
}

type BatchNormPositional = [weight: Tensor | null, bias: Tensor | null, training: boolean, momentum: number | Tensor, eps: number];
interface BatchNormOptions { weight: Tensor | null; bias: Tensor | null; training: boolean; momentum: number | Tensor; eps: number }

/**
 * `F.batch_norm(x, runningMean, runningVar, weight, bias, training, momentum, eps)` over
 * x of shape [N, C, ...]. Training normalizes with the batch statistics and updates the
 * running ones in place (variance unbiased, as PyTorch does); evaluation uses the running ones.
 * `momentum` may also be a 0-dim float tensor on x's device: the batch norm layers' cumulative
 * average factor, 1 / batches seen, which stays on the device (`countBatch` in ts/nn/spatial.ts).
 */
export function batchNorm(x: Tensor, runningMean: Tensor | null, runningVar: Tensor | null, ...args: PyArgs<BatchNormPositional, Partial<BatchNormOptions>>): Tensor {
  const { weight, bias, training, momentum, eps } = bindArgs('batch_norm', ['weight', 'bias', 'training', 'momentum', 'eps'], args,
    { weight: null, bias: null, training: false, momentum: 0.1, eps: 1e-5 } as BatchNormOptions, 3);
  checkFloat('batch_norm', x);
  if (x.ndim < 2) throw new RangeError(`batch_norm(): expected input of shape [N, C, ...] with at least 2 dims, but got ${fmt(x.shape)}`);
  const C = x.shape[1], params = { running_mean: runningMean, running_var: runningVar, weight, bias };
  sameDevice('batch_norm', [x, ...Object.values(params).filter((t): t is Tensor => !!t)]);
  for (const [name, t] of Object.entries(params)) {
    if (t && t.numel() !== C) throw new RangeError(`${name} should contain ${C} elements not ${t.numel()} (batch_norm input ${fmt(x.shape)})`);
  }
  if (!training && (!runningMean || !runningVar)) throw new TypeError('running_mean must be defined in evaluation mode');
  const n = x.numel() / Math.max(C, 1);
  if (training && n <= 1) throw new RangeError(`Expected more than 1 value per channel when training, got input size ${fmt(x.shape)} (batch_norm)`);
  const chan = x.shape.map((s, i) => (i === 1 ? s : 1)), dims = x.shape.map((_, i) => i).filter((i) => i !== 1);
  return tidy(() => {
    const asChan = (t: Tensor) => V.reshape(t, chan);
    let y: Tensor;
    if (training) {
      const mean = reduce(ReduceOp.Mean, x, dims, true);
      const xc = sub(x, mean);
      const variance = reduce(ReduceOp.Mean, unaryOp('square', xc), dims, true);
      y = mul(xc, unaryOp('rsqrt', add(variance, eps)));
      withGradMode(false, () => {
        const update = (buf: Tensor | null, stat: Tensor, scale: number) => {
          if (!buf) return;
          const s = V.reshape(stat, buf.shape.slice());
          if (typeof momentum === 'number') copyInto(buf, add(mul(buf, 1 - momentum), mul(s, momentum * scale)));
          else copyInto(buf, add(mul(buf, sub(1, momentum)), mul(s, scale === 1 ? momentum : mul(momentum, scale))));
        };
        update(runningMean, mean, 1);
        update(runningVar, variance, n / (n - 1));
      });
    } else {
      y = mul(sub(x, asChan(runningMean!)), unaryOp('rsqrt', add(asChan(runningVar!), eps)));
    }
    if (weight) y = mul(y, asChan(weight));
    if (bias) y = add(y, asChan(bias));
    return y;
  });
}
