/** The loss modules: thin holders of a functional loss's options. */
import { binaryCrossEntropyWithLogits, crossEntropy, l1Loss, mseLoss, nllLoss, type CrossEntropyOptions, type NllOptions, type Reduction } from '../ops/nn.js';
import type { Tensor } from '../tensor.js';
import { Module } from './module.js';

/** `nn.CrossEntropyLoss({weight, ignoreIndex, labelSmoothing, reduction})`. */
export class CrossEntropyLoss extends Module {
  constructor(readonly options: CrossEntropyOptions = {}) {
    super();
  }

  forward(input: Tensor, target: Tensor): Tensor {
    return crossEntropy(input, target, this.options);
  }
}

/** `nn.NLLLoss({weight, ignoreIndex, reduction})`. */
export class NLLLoss extends Module {
  constructor(readonly options: NllOptions = {}) {
    super();
  }

  forward(input: Tensor, target: Tensor): Tensor {
    return nllLoss(input, target, this.options);
  }
}

/** `nn.MSELoss({reduction})`. */
export class MSELoss extends Module {
  constructor(readonly options: { reduction?: Reduction } = {}) {
    super();
  }

  forward(input: Tensor, target: Tensor): Tensor {
    return mseLoss(input, target, this.options);
  }
}

/** `nn.L1Loss({reduction})`. */
export class L1Loss extends Module {
  constructor(readonly options: { reduction?: Reduction } = {}) {
    super();
  }

  forward(input: Tensor, target: Tensor): Tensor {
    return l1Loss(input, target, this.options);
  }
}

/** `nn.BCEWithLogitsLoss({weight, posWeight, reduction})`. */
export class BCEWithLogitsLoss extends Module {
  constructor(readonly options: { weight?: Tensor | null; posWeight?: Tensor | null; reduction?: Reduction } = {}) {
    super();
  }

  forward(input: Tensor, target: Tensor): Tensor {
    return binaryCrossEntropyWithLogits(input, target, this.options);
  }
}
