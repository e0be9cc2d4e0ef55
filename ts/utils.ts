/** `torch.utils`: `torch.utils.data` (datasets, `DataLoader`, `DistributedSampler`), as in PyTorch. */
export * as data from './data/index.js';
