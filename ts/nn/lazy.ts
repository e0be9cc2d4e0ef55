/**
 * The lazy layers d2l builds its CNNs with: `nn.LazyConv1d`, `nn.LazyConv2d`,
 * `nn.LazyBatchNorm1d`, `nn.LazyBatchNorm2d`. Each infers its input channels from the first
 * input (dim 1, or dim 0 of an unbatched convolution input), then makes the real layer with
 * PyTorch's initialisation on that input's device and takes over its parameters and buffers
 * under the same names, so `parameters()`, `stateDict()` and `.to()` see what PyTorch's would.
 * Before the first call the parameters are `null` (PyTorch's are uninitialized parameters).
 */
import type { Tensor } from '../tensor.js';
import type { Size2 } from '../ops/conv.js';
import { bindArgs, type PyArgs } from '../args.js';
import { Module, type Parameter } from './module.js';
import { BatchNorm1d, BatchNorm2d, Conv1d, Conv2d, convLayerOptions, type BatchNormLayerOptions, type ConvLayerOptions } from './spatial.js';

/** Each lazy layer's real layer, kept off the module (a Module field would register as a child). */
const REAL = new WeakMap<Module, Module>();

/** A lazy layer: the real one, made at the first call from the input's channel count. */
abstract class Lazy<M extends Module> extends Module {
  constructor(private readonly channelDim: (x: Tensor) => number) {
    super();
    this.registerParameter('weight', null);
    this.registerParameter('bias', null);
  }

  /** Makes the real layer for `channels` input channels. */
  protected abstract make(channels: number): M;

  forward(x: Tensor): Tensor {
    let real = REAL.get(this) as M | undefined;
    if (!real) {
      if (x.ndim === 0) throw new RangeError(`${this.constructor.name}: expected an input with a channel dim (got a 0-D tensor)`);
      real = this.make(x.shape[this.channelDim(x)]).to(x.device);
      for (const name of ['weight', 'bias']) this.registerParameter(name, (real as unknown as Record<string, Parameter | null>)[name] ?? null);
      for (const [name, b] of real.namedBuffers()) this.registerBuffer(name, b);
      REAL.set(this, real);
    }
    real.train(this.training);
    return real.forward(x) as Tensor;
  }
}

/** `nn.LazyConv1d(outChannels, kernelSize, stride, padding, dilation, groups, bias, paddingMode, {device, dtype})`. */
export class LazyConv1d extends Lazy<Conv1d> {
  private readonly args: unknown[];
  constructor(readonly outChannels: number, readonly kernelSize: number, ...args: PyArgs<[stride: number, padding: number | 'valid' | 'same', dilation: number, groups: number, bias: boolean], ConvLayerOptions>) {
    super((x) => (x.ndim === 2 ? 0 : 1));
    convLayerOptions('LazyConv1d', args); // a misspelt option raises here, as PyTorch's constructor does
    this.args = args;
  }

  protected make(channels: number): Conv1d {
    return new (Conv1d as unknown as new (...a: unknown[]) => Conv1d)(channels, this.outChannels, this.kernelSize, ...this.args);
  }
}

/** `nn.LazyConv2d(outChannels, kernelSize, stride, padding, dilation, groups, bias, paddingMode, {device, dtype})`. */
export class LazyConv2d extends Lazy<Conv2d> {
  private readonly args: unknown[];
  constructor(readonly outChannels: number, readonly kernelSize: Size2, ...args: PyArgs<[stride: Size2, padding: Size2 | 'valid' | 'same', dilation: Size2, groups: number, bias: boolean], ConvLayerOptions>) {
    super((x) => (x.ndim === 3 ? 0 : 1));
    convLayerOptions('LazyConv2d', args);
    this.args = args;
  }

  protected make(channels: number): Conv2d {
    return new (Conv2d as unknown as new (...a: unknown[]) => Conv2d)(channels, this.outChannels, this.kernelSize, ...this.args);
  }
}

/** Checks the batch norm layers' arguments at construction (a misspelt option raises here, as in PyTorch). */
const bindBatchNorm = (name: string, args: readonly unknown[]) => bindArgs(name, ['eps', 'momentum', 'affine', 'trackRunningStats', 'device', 'dtype'], args, {} as BatchNormLayerOptions);

type BatchNormArgs = PyArgs<[eps: number, momentum: number | null, affine: boolean, trackRunningStats: boolean], BatchNormLayerOptions>;

/** A lazy batch norm: the layer `Norm` made with the input's channels (dim 1) at the first call. */
abstract class LazyBatchNorm<M extends BatchNorm1d | BatchNorm2d> extends Lazy<M> {
  private readonly args: unknown[];
  protected abstract readonly layer: new (...a: unknown[]) => M;
  constructor(...args: BatchNormArgs) {
    super(() => 1);
    bindBatchNorm(new.target.name, args);
    this.args = args;
  }

  protected make(channels: number): M {
    return new this.layer(channels, ...this.args);
  }
}

/** `nn.LazyBatchNorm1d(eps, momentum, affine, trackRunningStats, {device, dtype})`: features from dim 1. */
export class LazyBatchNorm1d extends LazyBatchNorm<BatchNorm1d> {
  protected readonly layer = BatchNorm1d as unknown as new (...a: unknown[]) => BatchNorm1d;
}

/** `nn.LazyBatchNorm2d(eps, momentum, affine, trackRunningStats, {device, dtype})`: channels from dim 1. */
export class LazyBatchNorm2d extends LazyBatchNorm<BatchNorm2d> {
  protected readonly layer = BatchNorm2d as unknown as new (...a: unknown[]) => BatchNorm2d;
}
