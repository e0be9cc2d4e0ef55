/** `torch.utils`: `torch.utils.data` (datasets, `DataLoader`, `DistributedSampler`) and `torch.utils.checkpoint`, as in PyTorch. */
export * as data from './data/index.js';
/** `torch.utils.checkpoint`: `checkpoint(fn, ...args, {useReentrant, preserveRngState})`, `checkpointSequential` (ts/autograd/checkpoint.ts). */
export * as checkpoint from './autograd/checkpoint.js';
