/**
 * `torch.F`, the counterpart of `torch.nn.functional`: the NN ops plus the activations of the
 * op table, under PyTorch's names in camelCase (`F.crossEntropy` is `F.cross_entropy`).
 */
import type { Tensor } from '../tensor.js';
import { unaryOp } from './elementwise.js';

export {
  softmax, logSoftmax, nllLoss, crossEntropy, linear, mseLoss, l1Loss, binaryCrossEntropyWithLogits, dropout, layerNorm, batchNorm,
} from './nn.js';
export type { Reduction, NllOptions, CrossEntropyOptions } from './nn.js';
export { pad, unfold, conv1d, conv2d } from './conv.js';
export type { ConvOptions, UnfoldOptions, Size2 } from './conv.js';
export { maxPool2d, avgPool2d, adaptiveAvgPool2d } from './pool.js';
export type { MaxPool2dOptions, AvgPool2dOptions } from './pool.js';
export { gelu, softplus } from './elementwise.js';
export { embedding, oneHot } from './indexing.js';

/** `F.relu(x)`. */
export const relu = (x: Tensor): Tensor => unaryOp('relu', x);
/** `F.silu(x)`: `x·sigmoid(x)`. */
export const silu = (x: Tensor): Tensor => unaryOp('silu', x);
/** `F.sigmoid(x)`. */
export const sigmoid = (x: Tensor): Tensor => unaryOp('sigmoid', x);
/** `F.tanh(x)`. */
export const tanh = (x: Tensor): Tensor => unaryOp('tanh', x);
