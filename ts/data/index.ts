/** `torch.utils.data`: datasets and the loader. */
export { Dataset, TensorDataset } from './dataset.js';
export { DataLoader } from './loader.js';
export type { DataLoaderOptions } from './loader.js';
export { DistributedSampler } from './sampler.js';
export { SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler, BatchSampler } from './samplers.js';
export type { RandomSamplerOptions, WeightedRandomSamplerOptions } from './samplers.js';
export { Subset, randomSplit } from './subset.js';
export type { Sampler, DistributedSamplerOptions } from './sampler.js';
