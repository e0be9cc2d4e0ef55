/**
 * Layers with spatial structure or running state: convolutions, normalizations, embedding,
 * dropout, softmax and pooling. Initialisation follows PyTorch's defaults: convolution weights
 * and biases uniform in ±1/√fan_in, norms' weight 1 and bias 0, embeddings standard normal.
 */
import { CPU } from '../device.js';
import { fromHost, ones, zeros } from '../ops/creation.js';
import { conv1d, conv2d, type ConvOptions, type Size2 } from '../ops/conv.js';
import { embedding } from '../ops/indexing.js';
import { batchNorm, dropout, layerNorm, logSoftmax, softmax } from '../ops/nn.js';
import { adaptiveAvgPool2d, avgPool2d, maxPool2d, type AvgPool2dOptions, type MaxPool2dOptions } from '../ops/pool.js';
import { withGradMode } from '../autograd/graph.js';
import { binaryOp, unaryOp } from '../ops/elementwise.js';
import { cast } from '../ops/cast.js';
import { defaultGenerator } from '../random.js';
import type { Tensor } from '../tensor.js';
import { convParameters } from './layers.js';
import { bindArgs, REQUIRED, type PyArgs } from '../args.js';
import { Module, Parameter, type FactoryOptions } from './module.js';

const pair = (v: Size2): number[] => (Array.isArray(v) ? v : [v, v]);
/** A parameter taking over a fresh tensor's storage. */
const param = (t: Tensor): Parameter => {
  const p = Parameter.of(t);
  t.dispose();
  return p;
};

/** Options of `Conv1d`/`Conv2d` besides the channel counts and kernel size. */
export interface ConvLayerOptions extends ConvOptions, FactoryOptions {
  bias?: boolean;
  paddingMode?: 'zeros';
}

/** The convolution layers' parameters after the kernel size, in PyTorch's order. */
type ConvPositional<S> = [stride: S, padding: S | 'valid' | 'same', dilation: S, groups: number, bias: boolean, paddingMode: 'zeros',
  device: FactoryOptions['device'], dtype: FactoryOptions['dtype']];
const CONV_PARAMS = ['stride', 'padding', 'dilation', 'groups', 'bias', 'paddingMode', 'device', 'dtype'] as const;

export function convLayerOptions(name: string, args: readonly unknown[]): ConvLayerOptions {
  const o = bindArgs(name, CONV_PARAMS, args, {} as ConvLayerOptions, 4);
  if (o.paddingMode !== undefined && o.paddingMode !== 'zeros') throw new RangeError(`${name}: padding_mode '${o.paddingMode}' is not supported (only 'zeros')`);
  return o;
}

/** The convolution layers' shared parameters. */
abstract class ConvNd extends Module {
  weight: Parameter;
  bias: Parameter | null;

  constructor(readonly inChannels: number, readonly outChannels: number, readonly kernelSize: number[], readonly options: ConvLayerOptions) {
    super();
    const groups = options.groups ?? 1;
    if (!Number.isInteger(groups) || groups < 1 || inChannels % groups || outChannels % groups) {
      throw new RangeError(`${new.target.name}: in_channels (${inChannels}) and out_channels (${outChannels}) must be divisible by groups (${groups})`);
    }
    const fanIn = (inChannels / groups) * kernelSize.reduce((a, b) => a * b, 1);
    [this.weight, this.bias] = convParameters(this, [outChannels, inChannels / groups, ...kernelSize], fanIn, outChannels, options.bias !== false);
    this.place(options);
  }

  protected convOptions(): ConvOptions {
    const { bias: _bias, paddingMode: _mode, device: _device, dtype: _dtype, ...rest } = this.options;
    return rest;
  }
}

/** `nn.Conv1d(inChannels, outChannels, kernelSize, stride, padding, dilation, groups, bias, paddingMode, {device, dtype})`. */
export class Conv1d extends ConvNd {
  constructor(inChannels: number, outChannels: number, kernelSize: number, ...args: PyArgs<ConvPositional<number>, ConvLayerOptions>) {
    super(inChannels, outChannels, [kernelSize], convLayerOptions('Conv1d', args));
  }

  forward(x: Tensor): Tensor {
    return conv1d(x, this.weight, this.bias, this.convOptions());
  }
}

/** `nn.Conv2d(inChannels, outChannels, kernelSize, stride, padding, dilation, groups, bias, paddingMode, {device, dtype})`. */
export class Conv2d extends ConvNd {
  constructor(inChannels: number, outChannels: number, kernelSize: Size2, ...args: PyArgs<ConvPositional<Size2>, ConvLayerOptions>) {
    super(inChannels, outChannels, pair(kernelSize), convLayerOptions('Conv2d', args));
  }

  forward(x: Tensor): Tensor {
    return conv2d(x, this.weight, this.bias, this.convOptions());
  }
}

/** Options of the batch norm layers after `numFeatures`. */
export interface BatchNormLayerOptions extends FactoryOptions {
  eps?: number;
  /** The running statistics' update factor (default 0.1); `null`: their cumulative average (1 / batches seen). */
  momentum?: number | null;
  affine?: boolean;
  trackRunningStats?: boolean;
}

/**
 * PyTorch's `_BatchNorm.forward` before the normalization, shared by the batch norm layers and
 * `SyncBatchNorm`: in training, counts the batch in `num_batches_tracked` (in place, on the
 * device), and returns the running statistics' update factor (`exponential_average_factor`):
 * `momentum`, or for `momentum` null the cumulative moving average's 1 / num_batches_tracked, a
 * 0-dim float32 tensor computed on the device, which the caller disposes. PyTorch reads the count
 * on the host (`1.0 / float(self.num_batches_tracked)`); here nothing waits for the device.
 * Without a count (evaluation, or no running statistics) the factor is unused: `momentum ?? 0`.
 */
export function countBatch(training: boolean, numBatchesTracked: Tensor | null, momentum: number | null): number | Tensor {
  if (!training || !numBatchesTracked) return momentum ?? 0;
  return withGradMode(false, () => {
    const counted = binaryOp('add', numBatchesTracked, 1);
    numBatchesTracked._setData(counted);
    counted.dispose();
    if (momentum !== null) return momentum;
    const seen = cast(numBatchesTracked, 'float32');
    const factor = unaryOp('reciprocal', seen);
    seen.dispose();
    return factor;
  });
}

/** Batch normalization over [N, C, ...] with running statistics (buffers that move with `.to()`). */
abstract class BatchNormNd extends Module {
  weight: Parameter | null;
  bias: Parameter | null;

  readonly options: BatchNormLayerOptions;

  constructor(readonly numFeatures: number, ...args: PyArgs<[eps: number, momentum: number | null, affine: boolean, trackRunningStats: boolean,
    device: FactoryOptions['device'], dtype: FactoryOptions['dtype']], BatchNormLayerOptions>) {
    super();
    const options = (this.options = bindArgs(new.target.name, ['eps', 'momentum', 'affine', 'trackRunningStats', 'device', 'dtype'], args, {} as BatchNormLayerOptions, 1));
    const affine = options.affine ?? true;
    this.weight = affine ? param(ones([numFeatures])) : null;
    this.bias = affine ? param(zeros([numFeatures])) : null;
    this.registerParameter('weight', this.weight);
    this.registerParameter('bias', this.bias);
    const track = options.trackRunningStats ?? true;
    this.registerBuffer('running_mean', track ? zeros([numFeatures]) : null);
    this.registerBuffer('running_var', track ? ones([numFeatures]) : null);
    this.registerBuffer('num_batches_tracked', track ? zeros([], { dtype: 'int64' }) : null);
    this.place(options);
  }

  protected abstract readonly dims: number[];

  forward(x: Tensor): Tensor {
    if (!this.dims.includes(x.ndim)) throw new RangeError(`${this.constructor.name}: expected ${this.dims.join('D or ')}D input (got ${x.ndim}D input)`);
    const self = this as unknown as { running_mean: Tensor | null; running_var: Tensor | null; num_batches_tracked: Tensor | null };
    const useBatch = this.training || !self.running_mean;
    const factor = countBatch(this.training, self.num_batches_tracked, this.options.momentum === undefined ? 0.1 : this.options.momentum);
    try {
      return batchNorm(x, self.running_mean, self.running_var, this.weight, this.bias, useBatch, factor, this.options.eps ?? 1e-5);
    } finally {
      if (typeof factor !== 'number') factor.dispose();
    }
  }
}

/** Whether `m` is one of the batch norm layers (BatchNorm1d, 2d, 3d; a lazy one only as the layer it made). */
export const isBatchNorm = (m: unknown): m is BatchNorm1d | BatchNorm2d | BatchNorm3d => m instanceof BatchNormNd;

/** `nn.BatchNorm1d(numFeatures, {eps, momentum, affine, trackRunningStats})` over [N, C] or [N, C, L]. */
export class BatchNorm1d extends BatchNormNd {
  protected readonly dims = [2, 3];
}

/** `nn.BatchNorm2d(numFeatures, …)` over [N, C, H, W]. */
export class BatchNorm2d extends BatchNormNd {
  protected readonly dims = [4];
}

/** `nn.BatchNorm3d(numFeatures, …)` over [N, C, D, H, W]. */
export class BatchNorm3d extends BatchNormNd {
  protected readonly dims = [5];
}

/** Options of `nn.LayerNorm` after `normalizedShape`. */
export interface LayerNormOptions extends FactoryOptions {
  eps?: number;
  elementwiseAffine?: boolean;
  bias?: boolean;
}

/** `nn.LayerNorm(normalizedShape, eps = 1e-5, elementwiseAffine = true, bias = true, {device, dtype})`. */
export class LayerNorm extends Module {
  weight: Parameter | null;
  bias: Parameter | null;
  readonly normalizedShape: number[];
  readonly options: LayerNormOptions;

  constructor(normalizedShape: number | number[], ...args: PyArgs<[eps: number, elementwiseAffine: boolean, bias: boolean,
    device: FactoryOptions['device'], dtype: FactoryOptions['dtype']], LayerNormOptions>) {
    super();
    const options = (this.options = bindArgs('LayerNorm', ['eps', 'elementwiseAffine', 'bias', 'device', 'dtype'], args, {} as LayerNormOptions, 1));
    this.normalizedShape = Array.isArray(normalizedShape) ? normalizedShape : [normalizedShape];
    const affine = options.elementwiseAffine ?? true;
    this.weight = affine ? param(ones(this.normalizedShape)) : null;
    this.bias = affine && options.bias !== false ? param(zeros(this.normalizedShape)) : null;
    this.registerParameter('weight', this.weight);
    this.registerParameter('bias', this.bias);
    this.place(options);
  }

  forward(x: Tensor): Tensor {
    return layerNorm(x, this.normalizedShape, this.weight, this.bias, this.options.eps ?? 1e-5);
  }
}

/** Options of `nn.Embedding` after the sizes. Of PyTorch's, `maxNorm`, `scaleGradByFreq` and `sparse` are refused when set. */
export interface EmbeddingOptions extends FactoryOptions {
  paddingIdx?: number | null;
  maxNorm?: number | null;
  normType?: number;
  scaleGradByFreq?: boolean;
  sparse?: boolean;
  _weight?: Tensor | null;
  _freeze?: boolean;
}

/** `nn.Embedding(numEmbeddings, embeddingDim, paddingIdx, …)`: a lookup table, initialised standard normal (the padding row zero). */
export class Embedding extends Module {
  weight: Parameter;
  readonly paddingIdx: number | null;

  constructor(readonly numEmbeddings: number, readonly embeddingDim: number, ...args: PyArgs<[paddingIdx: number | null, maxNorm: number | null,
    normType: number, scaleGradByFreq: boolean, sparse: boolean, _weight: Tensor | null, _freeze: boolean,
    device: FactoryOptions['device'], dtype: FactoryOptions['dtype']], EmbeddingOptions>) {
    super();
    const o = bindArgs('Embedding', ['paddingIdx', 'maxNorm', 'normType', 'scaleGradByFreq', 'sparse', '_weight', '_freeze', 'device', 'dtype'], args, {} as EmbeddingOptions, 2);
    if (o.maxNorm != null || o.scaleGradByFreq || o.sparse || o._weight != null || o._freeze != null) {
      throw new TypeError('Embedding: maxNorm, scaleGradByFreq, sparse, _weight and _freeze are not supported (use nn.Embedding.fromPretrained-style weight loading through loadStateDict)');
    }
    let pad: number | null = o.paddingIdx ?? null;
    if (pad !== null) {
      if (!Number.isInteger(pad) || pad >= numEmbeddings || pad < -numEmbeddings) throw new RangeError('Padding_idx must be within num_embeddings');
      if (pad < 0) pad += numEmbeddings;
    }
    this.paddingIdx = pad;
    const init = defaultGenerator.normal(numEmbeddings * embeddingDim);
    if (pad !== null) init.fill(0, pad * embeddingDim, (pad + 1) * embeddingDim);
    this.weight = param(fromHost(init, [numEmbeddings, embeddingDim], 'float32', CPU));
    this.registerParameter('weight', this.weight);
    this.place(o);
  }

  forward(indices: Tensor): Tensor {
    return embedding(this.weight, indices, this.paddingIdx);
  }
}

/** `nn.Dropout(p)`: zeroes elements with probability p in training mode (scaled by 1/(1-p)). */
export class Dropout extends Module {
  readonly p: number;

  constructor(...args: PyArgs<[p: number, inplace: boolean], { p?: number; inplace?: boolean }>) {
    super();
    const { p, inplace } = bindArgs('Dropout', ['p', 'inplace'], args, { p: 0.5, inplace: false });
    if (inplace) throw new TypeError('Dropout(inplace=true) is not supported: it returns a new tensor');
    this.p = p;
    if (!(p >= 0 && p <= 1)) throw new RangeError(`dropout probability has to be between 0 and 1, but got ${p}`);
  }

  forward(x: Tensor): Tensor {
    return dropout(x, this.p, this.training);
  }
}

/** `nn.Softmax(dim)`. */
export class Softmax extends Module {
  readonly dim: number;

  constructor(...args: PyArgs<[dim: number], { dim?: number }>) {
    super();
    this.dim = bindArgs('Softmax', ['dim'], args, {} as { dim: number }).dim;
  }

  forward(x: Tensor): Tensor {
    return softmax(x, this.dim);
  }
}

/** `nn.LogSoftmax(dim)`. */
export class LogSoftmax extends Module {
  readonly dim: number;

  constructor(...args: PyArgs<[dim: number], { dim?: number }>) {
    super();
    this.dim = bindArgs('LogSoftmax', ['dim'], args, {} as { dim: number }).dim;
  }

  forward(x: Tensor): Tensor {
    return logSoftmax(x, this.dim);
  }
}

/** `nn.MaxPool2d(kernelSize, {stride, padding, dilation, ceilMode})`. */
export class MaxPool2d extends Module {
  readonly options: MaxPool2dOptions;

  constructor(readonly kernelSize: Size2, ...args: PyArgs<[stride: Size2 | null, padding: Size2, dilation: Size2, returnIndices: boolean, ceilMode: boolean], MaxPool2dOptions>) {
    super();
    this.options = bindArgs('MaxPool2d', ['stride', 'padding', 'dilation', 'returnIndices', 'ceilMode'], args, {} as MaxPool2dOptions, 1);
    if (this.options.returnIndices) throw new TypeError('MaxPool2d(returnIndices=true) is not supported: call F.maxPool2d(x, k, {returnIndices: true})');
  }

  forward(x: Tensor): Tensor {
    return maxPool2d(x, this.kernelSize, { ...this.options, returnIndices: false });
  }
}

/** `nn.AvgPool2d(kernelSize, {stride, padding, ceilMode, countIncludePad, divisorOverride})`. */
export class AvgPool2d extends Module {
  readonly options: AvgPool2dOptions;

  constructor(readonly kernelSize: Size2, ...args: PyArgs<[stride: Size2 | null, padding: Size2, ceilMode: boolean, countIncludePad: boolean, divisorOverride: number | null], AvgPool2dOptions>) {
    super();
    this.options = bindArgs('AvgPool2d', ['stride', 'padding', 'ceilMode', 'countIncludePad', 'divisorOverride'], args, {} as AvgPool2dOptions, 1);
  }

  forward(x: Tensor): Tensor {
    return avgPool2d(x, this.kernelSize, this.options);
  }
}

/** `nn.AdaptiveAvgPool2d(outputSize)`. */
export class AdaptiveAvgPool2d extends Module {
  readonly outputSize: number | (number | null)[];

  constructor(...args: PyArgs<[outputSize: number | (number | null)[]], { outputSize?: number | (number | null)[] }>) {
    super();
    this.outputSize = bindArgs('AdaptiveAvgPool2d', ['outputSize'], args, { outputSize: REQUIRED as number | (number | null)[] }).outputSize;
  }

  forward(x: Tensor): Tensor {
    return adaptiveAvgPool2d(x, this.outputSize);
  }
}
