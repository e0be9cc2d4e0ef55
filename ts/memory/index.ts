// Public surface of the memory module: the caching allocator and its reports.
//
// Rules: import from here rather than from the individual files; the WASM
// loader (wasm.ts) stays internal except for tests and tooling.

export { CachingAllocator, type Allocation, type CachingAllocatorOptions } from "./allocator.js";
export { BlockError, formatSize, OutOfMemoryError, outOfMemoryMessage, type BlockErrorReason, type OutOfMemoryDetails } from "./errors.js";
export { type MemoryStatKey, type MemoryStats } from "./stats.js";
export { formatCountCell, formatSizeCell, memorySummary } from "./summary.js";
export { type BlockState, type SnapshotBlock, type SnapshotSegment } from "./snapshot.js";
