/**
 * `nn.ConvTranspose1d` and `nn.ConvTranspose2d`: a weight of `[inChannels, outChannels/groups,
 * ...kernel]` initialised as PyTorch's (uniform in ±1/√fan_in, fan_in being
 * `outChannels/groups · kernel elements` for a transposed weight), and `F.convTranspose*d`.
 */
import type { Size2 } from '../ops/conv.js';
import { convTranspose1d, convTranspose2d, type ConvTransposeOptions } from '../ops/conv-transpose.js';
import { bindArgs, type PyArgs } from '../args.js';
import type { Tensor } from '../tensor.js';
import { convParameters } from './layers.js';
import { Module, type FactoryOptions, type Parameter } from './module.js';

/** Options of the transposed convolution layers after the kernel size. */
export interface ConvTransposeLayerOptions extends Omit<ConvTransposeOptions, 'bias'>, FactoryOptions {
  bias?: boolean;
  paddingMode?: 'zeros';
}
type Positional<S> = [stride: S, padding: S, outputPadding: S, groups: number, bias: boolean, dilation: S, paddingMode: 'zeros',
  device: FactoryOptions['device'], dtype: FactoryOptions['dtype']];
const PARAMS = ['stride', 'padding', 'outputPadding', 'groups', 'bias', 'dilation', 'paddingMode', 'device', 'dtype'] as const;

abstract class ConvTransposeNd extends Module {
  weight: Parameter;
  bias: Parameter | null;
  readonly options: ConvTransposeLayerOptions;

  constructor(name: string, readonly inChannels: number, readonly outChannels: number, readonly kernelSize: number[], args: readonly unknown[]) {
    super();
    const o = (this.options = bindArgs(name, PARAMS, args, {} as ConvTransposeLayerOptions, 3));
    if (o.paddingMode !== undefined && o.paddingMode !== 'zeros') throw new RangeError(`Only "zeros" padding mode is supported for ${name}`);
    const groups = o.groups ?? 1;
    if (!Number.isInteger(groups) || groups < 1 || inChannels % groups) throw new RangeError('in_channels must be divisible by groups');
    if (outChannels % groups) throw new RangeError('out_channels must be divisible by groups');
    const fanIn = (outChannels / groups) * kernelSize.reduce((a, b) => a * b, 1);
    [this.weight, this.bias] = convParameters(this, [inChannels, outChannels / groups, ...kernelSize], fanIn, outChannels, o.bias !== false);
    this.place(o);
  }

  protected call2(x: Tensor, f: typeof convTranspose2d): Tensor {
    const { bias: _b, paddingMode: _m, device: _d, dtype: _t, ...rest } = this.options;
    return f(x, this.weight, { ...rest, bias: this.bias });
  }
}

/** `nn.ConvTranspose2d(inChannels, outChannels, kernelSize, stride = 1, padding = 0, outputPadding = 0, groups = 1, bias = true, dilation = 1)`. */
export class ConvTranspose2d extends ConvTransposeNd {
  constructor(inChannels: number, outChannels: number, kernelSize: Size2, ...args: PyArgs<Positional<Size2>, ConvTransposeLayerOptions>) {
    super('ConvTranspose2d', inChannels, outChannels, typeof kernelSize === 'number' ? [kernelSize, kernelSize] : kernelSize.slice(), args);
  }

  forward(x: Tensor): Tensor {
    return this.call2(x, convTranspose2d);
  }
}

/** `nn.ConvTranspose1d(inChannels, outChannels, kernelSize, stride = 1, padding = 0, outputPadding = 0, groups = 1, bias = true, dilation = 1)`. */
export class ConvTranspose1d extends ConvTransposeNd {
  constructor(inChannels: number, outChannels: number, kernelSize: number, ...args: PyArgs<Positional<number>, ConvTransposeLayerOptions>) {
    super('ConvTranspose1d', inChannels, outChannels, [kernelSize], args);
  }

  forward(x: Tensor): Tensor {
    return this.call2(x, convTranspose1d);
  }
}
