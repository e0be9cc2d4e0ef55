/** `torch.optim`: the optimizers and `lrScheduler`. */
export { Optimizer } from './optimizer.js';
export type { Params, ParamGroup, ParamState, OptimizerState } from './optimizer.js';
export type { SGDOptions, AdamOptions, RMSpropOptions } from './algorithms.js';
export { SGD, Adam, AdamW, RMSprop } from './algorithms.js';
export { Adagrad } from './adagrad.js';
export type { AdagradOptions } from './adagrad.js';
export * as lrScheduler from './lr_scheduler.js';
export { Adadelta } from './adadelta.js';
export type { AdadeltaOptions } from './adadelta.js';
