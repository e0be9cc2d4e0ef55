/**
 * `nn.Identity`, `nn.LeakyReLU`, `nn.GroupNorm`, `nn.RMSNorm` and `nn.Upsample`: layers around
 * the functional ops of the same names.
 */
import { ones, zeros } from '../ops/creation.js';
import { interpolate, INTERPOLATE_PARAMS, type InterpolateMode, type InterpolateOptions } from '../ops/interpolate.js';
import { leakyRelu } from '../ops/functional.js';
import { groupNorm, rmsNorm } from '../ops/norms.js';
import { bindArgs, type PyArgs } from '../args.js';
import type { Tensor } from '../tensor.js';
import { Module, Parameter, type FactoryOptions } from './module.js';

const param = (t: Tensor): Parameter => {
  const p = Parameter.of(t);
  t.dispose();
  return p;
};

/** `nn.Identity(...args)`: returns its input (the arguments are ignored, as PyTorch's). */
export class Identity extends Module {
  constructor(..._args: unknown[]) {
    super();
  }

  forward(x: Tensor): Tensor {
    return x;
  }
}

/** `nn.LeakyReLU(negativeSlope = 0.01, inplace = false)`. */
export class LeakyReLU extends Module {
  readonly negativeSlope: number;

  constructor(...args: PyArgs<[negativeSlope: number, inplace: boolean], { negativeSlope?: number; inplace?: boolean }>) {
    super();
    const o = bindArgs('LeakyReLU', ['negativeSlope', 'inplace'], args, { negativeSlope: 0.01, inplace: false });
    if (o.inplace) throw new TypeError('LeakyReLU(inplace=true) is not supported: it returns a new tensor');
    this.negativeSlope = o.negativeSlope;
  }

  forward(x: Tensor): Tensor {
    return leakyRelu(x, this.negativeSlope);
  }
}

/** Options of `nn.GroupNorm` after (numGroups, numChannels). */
export interface GroupNormOptions extends FactoryOptions { eps?: number; affine?: boolean }

/** `nn.GroupNorm(numGroups, numChannels, eps = 1e-5, affine = true)`: weight ones and bias zeros of `[numChannels]`. */
export class GroupNorm extends Module {
  readonly eps: number;
  weight: Parameter | null;
  bias: Parameter | null;

  constructor(readonly numGroups: number, readonly numChannels: number,
    ...args: PyArgs<[eps: number, affine: boolean, device: FactoryOptions['device'], dtype: FactoryOptions['dtype']], GroupNormOptions>) {
    super();
    const o = bindArgs('GroupNorm', ['eps', 'affine', 'device', 'dtype'], args, { eps: 1e-5, affine: true } as GroupNormOptions, 2);
    if (!Number.isInteger(numGroups) || numGroups <= 0 || numChannels % numGroups !== 0) throw new RangeError(`num_channels must be divisible by num_groups (num_channels=${numChannels}, num_groups=${numGroups})`);
    this.eps = o.eps!;
    this.weight = o.affine ? param(ones([numChannels])) : null;
    this.bias = o.affine ? param(zeros([numChannels])) : null;
    this.registerParameter('weight', this.weight);
    this.registerParameter('bias', this.bias);
    this.place(o);
  }

  forward(x: Tensor): Tensor {
    return groupNorm(x, this.numGroups, this.weight, this.bias, this.eps);
  }
}

/** Options of `nn.RMSNorm` after the normalized shape. */
export interface RMSNormOptions extends FactoryOptions { eps?: number | null; elementwiseAffine?: boolean }

/** `nn.RMSNorm(normalizedShape, eps = null, elementwiseAffine = true)`: weight ones of the normalized shape. */
export class RMSNorm extends Module {
  readonly normalizedShape: number[];
  readonly eps: number | null;
  weight: Parameter | null;

  constructor(normalizedShape: number | number[],
    ...args: PyArgs<[eps: number | null, elementwiseAffine: boolean, device: FactoryOptions['device'], dtype: FactoryOptions['dtype']], RMSNormOptions>) {
    super();
    const o = bindArgs('RMSNorm', ['eps', 'elementwiseAffine', 'device', 'dtype'], args, { eps: null, elementwiseAffine: true } as RMSNormOptions, 1);
    this.normalizedShape = Array.isArray(normalizedShape) ? normalizedShape.slice() : [normalizedShape];
    this.eps = o.eps ?? null;
    this.weight = o.elementwiseAffine ? param(ones(this.normalizedShape)) : null;
    this.registerParameter('weight', this.weight);
    this.place(o);
  }

  forward(x: Tensor): Tensor {
    return rmsNorm(x, this.normalizedShape, this.weight, this.eps);
  }
}

/** Options of `nn.Upsample` (`F.interpolate`'s, without antialias). */
export type UpsampleOptions = Omit<InterpolateOptions, 'antialias'>;

/** `nn.Upsample(size = null, scaleFactor = null, mode = 'nearest', alignCorners = null, recomputeScaleFactor = null)`. */
export class Upsample extends Module {
  readonly options: UpsampleOptions;

  constructor(...args: PyArgs<[size: number | number[] | null, scaleFactor: number | number[] | null, mode: InterpolateMode,
    alignCorners: boolean | null, recomputeScaleFactor: boolean | null], UpsampleOptions>) {
    super();
    this.options = bindArgs('Upsample', INTERPOLATE_PARAMS.slice(0, 5) as (keyof UpsampleOptions)[], args, {} as UpsampleOptions);
  }

  forward(x: Tensor): Tensor {
    return interpolate(x, this.options);
  }
}
