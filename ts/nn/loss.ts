/**
 * The loss modules: thin holders of a functional loss's options, bound at construction in
 * PyTorch's positional order (deprecated `sizeAverage`/`reduce` included, folded into
 * `reduction` as PyTorch does), so a wrong keyword fails when the module is built.
 */
import {
  binaryCrossEntropyWithLogits, crossEntropy, l1Loss, legacyReduction, mseLoss, nllLoss,
  type BceOptions, type CrossEntropyOptions, type LegacyReduction, type NllOptions, type Reduction,
} from '../ops/nn.js';
import { bindArgs, type PyArgs } from '../args.js';
import type { Tensor } from '../tensor.js';
import { Module } from './module.js';

type Legacy = boolean | null;

/** Binds a loss module's arguments and folds the legacy reduction arguments into `reduction`. */
function lossOptions<T extends LegacyReduction>(name: string, params: readonly (keyof T & string)[], args: readonly unknown[]): T {
  const o = bindArgs(name, params, args, {} as T);
  const reduction = legacyReduction(o);
  delete o.sizeAverage;
  delete o.reduce;
  return { ...o, reduction };
}

/** `nn.CrossEntropyLoss(weight, sizeAverage, ignoreIndex, reduce, reduction, labelSmoothing)`. */
export class CrossEntropyLoss extends Module {
  readonly options: CrossEntropyOptions;

  constructor(...args: PyArgs<[weight: Tensor | null, sizeAverage: Legacy, ignoreIndex: number, reduce: Legacy, reduction: Reduction, labelSmoothing: number], CrossEntropyOptions>) {
    super();
    this.options = lossOptions<CrossEntropyOptions>('CrossEntropyLoss', ['weight', 'sizeAverage', 'ignoreIndex', 'reduce', 'reduction', 'labelSmoothing'], args);
  }

  forward(input: Tensor, target: Tensor): Tensor {
    return crossEntropy(input, target, this.options);
  }
}

/** `nn.NLLLoss(weight, sizeAverage, ignoreIndex, reduce, reduction)`. */
export class NLLLoss extends Module {
  readonly options: NllOptions;

  constructor(...args: PyArgs<[weight: Tensor | null, sizeAverage: Legacy, ignoreIndex: number, reduce: Legacy, reduction: Reduction], NllOptions>) {
    super();
    this.options = lossOptions<NllOptions>('NLLLoss', ['weight', 'sizeAverage', 'ignoreIndex', 'reduce', 'reduction'], args);
  }

  forward(input: Tensor, target: Tensor): Tensor {
    return nllLoss(input, target, this.options);
  }
}

/** `nn.MSELoss(sizeAverage, reduce, reduction)`. */
export class MSELoss extends Module {
  readonly options: LegacyReduction;

  constructor(...args: PyArgs<[sizeAverage: Legacy, reduce: Legacy, reduction: Reduction], LegacyReduction>) {
    super();
    this.options = lossOptions<LegacyReduction>('MSELoss', ['sizeAverage', 'reduce', 'reduction'], args);
  }

  forward(input: Tensor, target: Tensor): Tensor {
    return mseLoss(input, target, this.options);
  }
}

/** `nn.L1Loss(sizeAverage, reduce, reduction)`. */
export class L1Loss extends Module {
  readonly options: LegacyReduction;

  constructor(...args: PyArgs<[sizeAverage: Legacy, reduce: Legacy, reduction: Reduction], LegacyReduction>) {
    super();
    this.options = lossOptions<LegacyReduction>('L1Loss', ['sizeAverage', 'reduce', 'reduction'], args);
  }

  forward(input: Tensor, target: Tensor): Tensor {
    return l1Loss(input, target, this.options);
  }
}

/** `nn.BCEWithLogitsLoss(weight, sizeAverage, reduce, reduction, posWeight)`. */
export class BCEWithLogitsLoss extends Module {
  readonly options: BceOptions;

  constructor(...args: PyArgs<[weight: Tensor | null, sizeAverage: Legacy, reduce: Legacy, reduction: Reduction, posWeight: Tensor | null], BceOptions>) {
    super();
    this.options = lossOptions<BceOptions>('BCEWithLogitsLoss', ['weight', 'sizeAverage', 'reduce', 'reduction', 'posWeight'], args);
  }

  forward(input: Tensor, target: Tensor): Tensor {
    return binaryCrossEntropyWithLogits(input, target, this.options);
  }
}
