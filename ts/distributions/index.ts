/**
 * `torch.distributions`: `Distribution`, `Bernoulli`, `Categorical`, `Multinomial`, `Normal`,
 * `Uniform`, `constraints`, and PyTorch's submodule paths to the same classes
 * (`torch.distributions.multinomial.Multinomial`, as d2l imports it). They sample on their
 * parameters' device with webtorch's random ops, and validate as PyTorch does (see Note
 * [Validation on the device] in ts/distributions/distribution.ts); `dispose()` frees the tensors
 * a distribution made.
 */
export { Distribution } from './distribution.js';
export type { SampleArgs, ValidateOptions } from './distribution.js';
export { Bernoulli } from './bernoulli.js';
export type { BernoulliOptions } from './bernoulli.js';
export { Categorical } from './categorical.js';
export type { CategoricalOptions } from './categorical.js';
export { Multinomial } from './multinomial.js';
export type { MultinomialOptions } from './multinomial.js';
export { Normal } from './normal.js';
export { Uniform } from './uniform.js';
/** `torch.distributions.constraints`. */
export * as constraints from './constraints.js';
/** `torch.distributions.utils`: `broadcastAll`, `probsToLogits`, `logitsToProbs`, `clampProbs`. */
export * as utils from './utils.js';
/** `torch.distributions.distribution`: `Distribution`. */
export * as distribution from './distribution.js';
/** `torch.distributions.bernoulli`: `Bernoulli`. */
export * as bernoulli from './bernoulli.js';
/** `torch.distributions.categorical`: `Categorical`. */
export * as categorical from './categorical.js';
/** `torch.distributions.multinomial`: `Multinomial`. */
export * as multinomial from './multinomial.js';
/** `torch.distributions.normal`: `Normal`. */
export * as normal from './normal.js';
/** `torch.distributions.uniform`: `Uniform`. */
export * as uniform from './uniform.js';
