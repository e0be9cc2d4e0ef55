/**
 * `torch.autograd`: `grad(outputs, inputs)` computes gradients without touching `.grad`;
 * `Function` (custom differentiable ops) and `gradcheck`.
 */
export { grad } from './grad.js';
export type { GradOptions } from './grad.js';
export { Function, FunctionCtx } from './function.js';
export { gradcheck } from './gradcheck.js';
export type { GradcheckOptions } from './gradcheck.js';
