/** `torch.nn`: modules, layers and parameters. */
export { Module, Parameter } from './module.js';
export { Linear, LazyLinear, ReLU, GELU, SiLU, Tanh, Sigmoid, Flatten, Sequential, ModuleList, ModuleDict, linear } from './layers.js';
