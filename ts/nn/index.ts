/** `torch.nn`: modules, layers, losses and parameters. */
export { Module, Parameter, RemovableHandle } from './module.js';
export * as utils from './utils.js';
/** `torch.nn.init`: in-place initialisers (ts/nn/init.ts). */
export * as init from './init.js';
export { Linear, LazyLinear, ReLU, GELU, SiLU, Tanh, Sigmoid, Flatten, Sequential, ModuleList, ModuleDict } from './layers.js';
export {
  Conv1d, Conv2d, BatchNorm1d, BatchNorm2d, BatchNorm3d, LayerNorm, Embedding, Dropout, Softmax, LogSoftmax, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d,
} from './spatial.js';
export type { ConvLayerOptions } from './spatial.js';
export { MultiheadAttention, TransformerEncoderLayer, TransformerEncoder } from './attention.js';
export type { MultiheadAttentionOptions, MhaForwardOptions, TransformerEncoderLayerOptions, EncoderForwardOptions } from './attention.js';
export { TransformerDecoderLayer, TransformerDecoder, Transformer } from './transformer.js';
export type { DecoderForwardOptions, TransformerOptions, TransformerForwardOptions } from './transformer.js';
export { RNN, LSTM, GRU } from './rnn.js';
export { RNNCell, LSTMCell, GRUCell } from './rnn-cells.js';
export type { RNNCellOptions } from './rnn-cells.js';
export { ConvTranspose1d, ConvTranspose2d } from './conv-transpose.js';
export type { ConvTransposeLayerOptions } from './conv-transpose.js';
export type { RNNOptions, LSTMOptions, RNNBaseOptions } from './rnn.js';
export { Identity, LeakyReLU, GroupNorm, RMSNorm, Upsample } from './layers-extra.js';
export type { GroupNormOptions, RMSNormOptions, UpsampleOptions } from './layers-extra.js';
export { CrossEntropyLoss, NLLLoss, MSELoss, L1Loss, BCEWithLogitsLoss } from './loss.js';
export { LazyConv1d, LazyConv2d, LazyBatchNorm1d, LazyBatchNorm2d } from './lazy.js';
export { SyncBatchNorm } from './sync-batchnorm.js';
export type { SyncBatchNormOptions } from './sync-batchnorm.js';
export * as functional from '../ops/functional.js';
export { DataParallel } from './parallel.js';
export type { DataParallelOptions } from './parallel.js';
export * as parallel from './parallel-exports.js';
