/**
 * `torch.F`, the counterpart of `torch.nn.functional`: the NN ops plus the activations of the
 * op table, under PyTorch's names in camelCase (`F.crossEntropy` is `F.cross_entropy`).
 */
import type { Tensor } from '../tensor.js';
import { binaryOp, unaryOp, where } from './elementwise.js';
import { checkFloat } from './nn.js';
import { tidy } from './scoped.js';
import { embedding as embeddingOp } from './indexing.js';
import { bindArgs, type PyArgs } from '../args.js';

export {
  softmax, logSoftmax, nllLoss, crossEntropy, linear, mseLoss, l1Loss, binaryCrossEntropyWithLogits, dropout, layerNorm, batchNorm,
} from './nn.js';
export type { Reduction, NllOptions, CrossEntropyOptions } from './nn.js';
export { pad, unfold, conv1d, conv2d } from './conv.js';
export type { ConvOptions, UnfoldOptions, Size2 } from './conv.js';
export { maxPool2d, avgPool2d, adaptiveAvgPool2d } from './pool.js';
export type { MaxPool2dOptions, AvgPool2dOptions } from './pool.js';
export { gelu, softplus } from './elementwise.js';
export { oneHot } from './indexing.js';
export { scaledDotProductAttention } from './attention.js';
export type { SdpaOptions } from './attention.js';
export { groupNorm, rmsNorm } from './norms.js';
export { interpolate } from './interpolate.js';
export { convTranspose1d, convTranspose2d } from './conv-transpose.js';
export type { ConvTransposeOptions } from './conv-transpose.js';
export type { InterpolateOptions, InterpolateMode } from './interpolate.js';

/** `F.relu(x)`. */
export const relu = (x: Tensor, ...args: InplaceArgs): Tensor => activation('relu', x, args);
/** `F.silu(x)`: `x·sigmoid(x)`. */
export const silu = (x: Tensor, ...args: InplaceArgs): Tensor => activation('silu', x, args);
/** `F.sigmoid(x)`. */
export const sigmoid = (x: Tensor, ...args: []): Tensor => activation('sigmoid', x, args, []);
/** `F.tanh(x)`. */
export const tanh = (x: Tensor, ...args: []): Tensor => activation('tanh', x, args, []);

type InplaceArgs = PyArgs<[inplace: boolean], { inplace?: boolean }>;

/** A one-input activation; `inplace` (where PyTorch has it) is refused when true rather than ignored. */
function activation(op: string, x: Tensor, args: readonly unknown[], params: readonly 'inplace'[] = ['inplace']): Tensor {
  if (bindArgs(op, params, args, { inplace: false }, 1).inplace) throw new TypeError(`${op}(): inplace=true is not supported; use the returned tensor`);
  return unaryOp(op, x);
}

/** Options of `F.embedding` after (input, weight). */
export interface EmbeddingOptions {
  paddingIdx?: number | null;
  maxNorm?: number | null;
  normType?: number;
  scaleGradByFreq?: boolean;
  sparse?: boolean;
}

/**
 * `F.embedding(input, weight, paddingIdx, maxNorm, normType, scaleGradByFreq, sparse)`: rows of
 * `weight` at the int64/int32 `input`; rows at `paddingIdx` get no gradient. `maxNorm`,
 * `scaleGradByFreq` and `sparse` are refused rather than ignored.
 */
export function embedding(input: Tensor, weight: Tensor,
  ...args: PyArgs<[paddingIdx: number | null, maxNorm: number | null, normType: number, scaleGradByFreq: boolean, sparse: boolean], EmbeddingOptions>): Tensor {
  const o = bindArgs('embedding', ['paddingIdx', 'maxNorm', 'normType', 'scaleGradByFreq', 'sparse'], args, {} as EmbeddingOptions, 2);
  if (o.maxNorm != null || o.scaleGradByFreq || o.sparse) throw new TypeError('embedding(): maxNorm, scaleGradByFreq and sparse are not supported');
  let pad: number = o.paddingIdx ?? -1;
  if (o.paddingIdx != null && weight?.ndim === 2) {
    const rows = weight.shape[0];
    if (!Number.isInteger(pad) || pad >= rows || pad < -rows) throw new RangeError('Padding_idx must be within num_embeddings');
    if (pad < 0) pad += rows;
  }
  return embeddingOp(weight, input, pad);
}

/** `F.leaky_relu(x, negativeSlope = 0.01, inplace = false)`: `x` where positive, else `negativeSlope·x`. */
export function leakyRelu(x: Tensor, ...args: PyArgs<[negativeSlope: number, inplace: boolean], { negativeSlope?: number; inplace?: boolean }>): Tensor {
  const o = bindArgs('leaky_relu', ['negativeSlope', 'inplace'], args, { negativeSlope: 0.01, inplace: false }, 1);
  if (o.inplace) throw new TypeError('leaky_relu(): inplace=true is not supported; use the returned tensor');
  checkFloat('leaky_relu', x);
  return tidy(() => where(binaryOp('gt', x, 0), x, binaryOp('mul', x, o.negativeSlope)));
}
