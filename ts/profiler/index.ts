/**
 * `torch.profiler`: PyTorch's profiler (`profile`, `schedule`, `ProfilerActivity`,
 * `recordFunction`, `tensorboardTraceHandler`). See ts/profiler/profile.ts.
 */
export { profile, schedule, Profile, ProfilerActivity, ProfilerAction, tensorboardTraceHandler } from './profile.js';
export type { Activity, ProfileOptions, ScheduleOptions } from './profile.js';
export { recordFunction } from './ranges.js';
export { KeyAverages, formatTime, formatMemory } from './table.js';
export type { EventAverage, TableOptions } from './table.js';
export type { CallerEvent, MemoryEvent } from './recorder.js';
export type { KernelEvent } from './kernels.js';
