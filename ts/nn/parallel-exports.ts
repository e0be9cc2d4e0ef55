/** `torch.nn.parallel`: DataParallel and its building blocks. */
export { DataParallel } from './parallel.js';
export type { DataParallelOptions } from './parallel.js';
export { scatter, replicate, parallelApply, gather } from './parallel-apply.js';
export { DistributedDataParallel } from '../distributed/ddp.js';
export type { DDPOptions, JoinOptions } from '../distributed/ddp.js';
export { Pipe } from './parallel-pipe.js';
export type { PipeOptions } from './parallel-pipe.js';
