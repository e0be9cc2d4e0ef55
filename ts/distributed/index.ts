/**
 * `torch.distributed`: ranks in one process (`spawn` runs one task per rank, rank r on gpu:r;
 * ts/distributed/group.ts), or ranks as separate processes or worker threads (`env://` or
 * `tcp://`, as `webtorch-run` starts them; ts/distributed/socket-group.ts).
 * `initProcessGroup({backend, worldSize, rank, initMethod})` joins them, and the collectives are
 * issued by each rank on its own.
 */
export { initProcessGroup, destroyProcessGroup, getRank, getWorldSize, isInitialized, spawn, ProcessGroup } from './group.js';
export type { InitOptions, Work, Group } from './group.js';
export { SocketGroup } from './socket-group.js';
export { TCPStore } from './store.js';
export type { TCPStoreOptions } from './store.js';
export { allReduce, broadcast, allGather, reduceScatter, barrier } from './collectives.js';
export type { CollectiveOptions } from './collectives.js';
export { ReduceOp } from './comm.js';
export type { ReduceOpName } from './comm.js';
export { GradBucket, algorithms } from './comm-hooks.js';
export type { CommHook } from './comm-hooks.js';
