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
import { binaryOp } from '../ops/elementwise.js';
import { defaultGenerator } from '../random.js';
import type { Tensor } from '../tensor.js';
import { uniformParameter } from './layers.js';
import { Module, Parameter } from './module.js';

const pair = (v: Size2): number[] => (Array.isArray(v) ? v : [v, v]);
/** A parameter taking over a fresh tensor's storage. */
const param = (t: Tensor): Parameter => {
  const p = Parameter.of(t);
  t.dispose();
  return p;
};

/** Options of `Conv1d`/`Conv2d` besides the channel counts and kernel size. */
export interface ConvLayerOptions extends ConvOptions {
  bias?: boolean;
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
    const bound = fanIn > 0 ? 1 / Math.sqrt(fanIn) : 0;
    this.weight = uniformParameter([outChannels, inChannels / groups, ...kernelSize], bound);
    this.bias = options.bias === false ? null : uniformParameter([outChannels], bound);
    this.registerParameter('weight', this.weight);
    this.registerParameter('bias', this.bias);
  }

  protected convOptions(): ConvOptions {
    const { bias: _bias, ...rest } = this.options;
    return rest;
  }
}

/** `nn.Conv1d(inChannels, outChannels, kernelSize, {stride, padding, dilation, groups, bias})`. */
export class Conv1d extends ConvNd {
  constructor(inChannels: number, outChannels: number, kernelSize: number, options: ConvLayerOptions = {}) {
    super(inChannels, outChannels, [kernelSize], options);
  }

  forward(x: Tensor): Tensor {
    return conv1d(x, this.weight, this.bias, this.convOptions());
  }
}

/** `nn.Conv2d(inChannels, outChannels, kernelSize, {stride, padding, dilation, groups, bias})`. */
export class Conv2d extends ConvNd {
  constructor(inChannels: number, outChannels: number, kernelSize: Size2, options: ConvLayerOptions = {}) {
    super(inChannels, outChannels, pair(kernelSize), options);
  }

  forward(x: Tensor): Tensor {
    return conv2d(x, this.weight, this.bias, this.convOptions());
  }
}

/** Batch normalization over [N, C, ...] with running statistics (buffers that move with `.to()`). */
abstract class BatchNormNd extends Module {
  weight: Parameter | null;
  bias: Parameter | null;

  constructor(readonly numFeatures: number, readonly options: { eps?: number; momentum?: number; affine?: boolean; trackRunningStats?: boolean } = {}) {
    super();
    const affine = options.affine ?? true;
    this.weight = affine ? param(ones([numFeatures])) : null;
    this.bias = affine ? param(zeros([numFeatures])) : null;
    this.registerParameter('weight', this.weight);
    this.registerParameter('bias', this.bias);
    const track = options.trackRunningStats ?? true;
    this.registerBuffer('running_mean', track ? zeros([numFeatures]) : null);
    this.registerBuffer('running_var', track ? ones([numFeatures]) : null);
    this.registerBuffer('num_batches_tracked', track ? zeros([], { dtype: 'int64' }) : null);
  }

  protected abstract readonly dims: number[];

  forward(x: Tensor): Tensor {
    if (!this.dims.includes(x.ndim)) throw new RangeError(`${this.constructor.name}: expected ${this.dims.join('D or ')}D input (got ${x.ndim}D input)`);
    const self = this as unknown as { running_mean: Tensor | null; running_var: Tensor | null; num_batches_tracked: Tensor | null };
    const useBatch = this.training || !self.running_mean;
    if (this.training && self.num_batches_tracked) {
      const counted = withGradMode(false, () => binaryOp('add', self.num_batches_tracked!, 1));
      self.num_batches_tracked._setData(counted);
      counted.dispose();
    }
    return batchNorm(x, self.running_mean, self.running_var, this.weight, this.bias, useBatch, this.options.momentum ?? 0.1, this.options.eps ?? 1e-5);
  }
}

/** `nn.BatchNorm1d(numFeatures, {eps, momentum, affine, trackRunningStats})` over [N, C] or [N, C, L]. */
export class BatchNorm1d extends BatchNormNd {
  protected readonly dims = [2, 3];
}

/** `nn.BatchNorm2d(numFeatures, …)` over [N, C, H, W]. */
export class BatchNorm2d extends BatchNormNd {
  protected readonly dims = [4];
}

/** `nn.LayerNorm(normalizedShape, {eps, elementwiseAffine})`. */
export class LayerNorm extends Module {
  weight: Parameter | null;
  bias: Parameter | null;
  readonly normalizedShape: number[];

  constructor(normalizedShape: number | number[], readonly options: { eps?: number; elementwiseAffine?: boolean } = {}) {
    super();
    this.normalizedShape = Array.isArray(normalizedShape) ? normalizedShape : [normalizedShape];
    const affine = options.elementwiseAffine ?? true;
    this.weight = affine ? param(ones(this.normalizedShape)) : null;
    this.bias = affine ? param(zeros(this.normalizedShape)) : null;
    this.registerParameter('weight', this.weight);
    this.registerParameter('bias', this.bias);
  }

  forward(x: Tensor): Tensor {
    return layerNorm(x, this.normalizedShape, this.weight, this.bias, this.options.eps ?? 1e-5);
  }
}

/** `nn.Embedding(numEmbeddings, embeddingDim)`: a lookup table, initialised standard normal. */
export class Embedding extends Module {
  weight: Parameter;

  constructor(readonly numEmbeddings: number, readonly embeddingDim: number) {
    super();
    this.weight = param(fromHost(defaultGenerator.normal(numEmbeddings * embeddingDim), [numEmbeddings, embeddingDim], 'float32', CPU));
    this.registerParameter('weight', this.weight);
  }

  forward(indices: Tensor): Tensor {
    return embedding(this.weight, indices);
  }
}

/** `nn.Dropout(p)`: zeroes elements with probability p in training mode (scaled by 1/(1-p)). */
export class Dropout extends Module {
  constructor(readonly p = 0.5) {
    super();
    if (!(p >= 0 && p <= 1)) throw new RangeError(`dropout probability has to be between 0 and 1, but got ${p}`);
  }

  forward(x: Tensor): Tensor {
    return dropout(x, this.p, this.training);
  }
}

/** `nn.Softmax(dim)`. */
export class Softmax extends Module {
  constructor(readonly dim: number) {
    super();
  }

  forward(x: Tensor): Tensor {
    return softmax(x, this.dim);
  }
}

/** `nn.LogSoftmax(dim)`. */
export class LogSoftmax extends Module {
  constructor(readonly dim: number) {
    super();
  }

  forward(x: Tensor): Tensor {
    return logSoftmax(x, this.dim);
  }
}

/** `nn.MaxPool2d(kernelSize, {stride, padding, dilation, ceilMode})`. */
export class MaxPool2d extends Module {
  constructor(readonly kernelSize: Size2, readonly options: MaxPool2dOptions = {}) {
    super();
  }

  forward(x: Tensor): Tensor {
    return maxPool2d(x, this.kernelSize, { ...this.options, returnIndices: false });
  }
}

/** `nn.AvgPool2d(kernelSize, {stride, padding, ceilMode, countIncludePad, divisorOverride})`. */
export class AvgPool2d extends Module {
  constructor(readonly kernelSize: Size2, readonly options: AvgPool2dOptions = {}) {
    super();
  }

  forward(x: Tensor): Tensor {
    return avgPool2d(x, this.kernelSize, this.options);
  }
}

/** `nn.AdaptiveAvgPool2d(outputSize)`. */
export class AdaptiveAvgPool2d extends Module {
  constructor(readonly outputSize: number | (number | null)[]) {
    super();
  }

  forward(x: Tensor): Tensor {
    return adaptiveAvgPool2d(x, this.outputSize);
  }
}
