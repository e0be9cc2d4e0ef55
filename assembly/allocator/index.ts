// Build: npx asc assembly/allocator/index.ts --target allocator -o build/allocator.wasm -O3 --runtime stub --noAssert
// (`--target allocator` keeps asconfig.json's release target, which writes
// build/webtorch.wat, from applying; then run
// `node scripts/embed-wasm.mjs build/allocator.wasm ts/memory/allocator-wasm.generated.ts allocatorWasm`.)
//
// Entry point of the caching allocator's bookkeeping, one instance per device.
//
// Rules of the boundary:
// - Sizes, offsets and handles cross as f64 (exact integers below 2^53) so the
//   host never deals with BigInt; streams and segment ids are i32.
// - Every entry point validates its arguments and answers with a negative
//   code instead of trapping, leaving the tables untouched on error:
//   -1 out of memory, -2 bad size, -3 unknown block, -4 already freed,
//   -5 bad stream, -6 bad configuration.
// - The host supplies env.createSegment(id, bytes) -> 0|1,
//   env.releaseSegment(id) and env.synchronize() -> 0|1 (1 = every stream is
//   now idle). They must not call back into this module.
// - Statistics live in a flat f64 table read in place (see stats.ts).

import {
  allocate, allocationSize, capacity, completeStream, configureCapacity, configureFraction,
  configureMaxSplit, fraction, keepStream, maxSplit, oomAllocSize, release, releaseCached, releaseStreamSegments, resultOffset,
  resultSegment, resultSize, roundSize, useOnStream,
} from "./core";
import {
  recHandle, recNext, recOffset, recRequested, recSize, recState, segHead, segPool, segSize,
  segStream, setHandleBase, setStreamMark,
} from "./blocks";
import { resetAccumulated, resetPeaks, STATS, STATS_LENGTH } from "./stats";
import { ERR_BAD_STREAM, UNLIMITED } from "./constants";

/** Sets the device capacity, usable fraction, maxSplitSize (>= 2^53 = unlimited) and handle base. */
export function init(capacityBytes: f64, usableFraction: f64, maxSplitBytes: f64, handleBase: f64): i32 {
  let rc = configureCapacity(capacityBytes);
  if (rc == 0) rc = configureFraction(usableFraction);
  if (rc == 0) rc = configureMaxSplit(maxSplitBytes);
  if (rc == 0) setHandleBase(<i64>handleBase);
  return rc;
}

/** Changes the device capacity in bytes. */
export function setCapacity(bytes: f64): i32 {
  return configureCapacity(bytes);
}

/** Current device capacity in bytes. */
export function getCapacity(): f64 {
  return <f64>capacity;
}

/** Changes the usable fraction of the capacity (0 < f <= 1). */
export function setFraction(f: f64): i32 {
  return configureFraction(f);
}

/** Current usable fraction. */
export function getFraction(): f64 {
  return fraction;
}

/** maxSplitSize in bytes, or -1 when unlimited (PyTorch's reporting). */
export function getMaxSplitSize(): f64 {
  return maxSplit == UNLIMITED ? -1 : <f64>maxSplit;
}

/** Allocates `bytes` for `stream`; a handle (>= 1) or a negative code. */
export function malloc(bytes: f64, stream: i32): f64 {
  return allocate(bytes, stream);
}

/** Segment id of the last successful malloc. */
export function lastSegment(): i32 {
  return resultSegment;
}

/** Byte offset within its segment of the last successful malloc. */
export function lastOffset(): f64 {
  return <f64>resultOffset;
}

/** Rounded block size of the last successful malloc. */
export function lastSize(): f64 {
  return <f64>resultSize;
}

/** Segment size the last failed malloc asked for. */
export function lastOomSize(): f64 {
  return <f64>oomAllocSize;
}

/** Frees a block handle; 0 or a negative code. */
export function free(handle: f64): i32 {
  return release(handle);
}

/** Records that a block is used by `stream`; 0 or a negative code. */
export function recordStream(handle: f64, stream: i32): i32 {
  return useOnStream(handle, stream);
}

/** Host report: all work queued on `stream` so far is done. Returns frees completed. */
export function streamDone(stream: i32): i32 {
  return stream < 0 ? -5 : completeStream(stream, Infinity);
}

/** Host report: the work of `stream` up to `mark` (see streamMark) is done. Returns frees completed. */
export function streamDoneUpTo(stream: i32, mark: f64): i32 {
  return stream < 0 ? -5 : completeStream(stream, mark);
}

/** Host: the work queued on `stream` so far ends at `mark`; later frees of blocks recorded on it wait for it. */
export function streamMark(stream: i32, mark: f64): i32 {
  if (stream < 0) return -5;
  setStreamMark(stream, mark);
  return 0;
}

/** Releases every fully free segment through env.releaseSegment. */
export function emptyCache(): void {
  releaseCached();
}

/** Keeps `stream`'s segments (a graph's private pool) from emptyCache and OOM retries (kept = 1), or stops (0). */
export function keepPool(stream: i32, kept: i32): i32 {
  if (stream < 0) return ERR_BAD_STREAM;
  keepStream(stream, kept != 0);
  return 0;
}

/** Releases the fully free segments of `stream` through env.releaseSegment. */
export function releasePool(stream: i32): i32 {
  if (stream < 0) return ERR_BAD_STREAM;
  releaseStreamSegments(stream);
  return 0;
}

/** Block size a request of `bytes` rounds to. */
export function roundedSize(bytes: f64): f64 {
  return <f64>roundSize(<i64>bytes);
}

/** Segment size a (rounded) request gets. */
export function segmentSizeFor(rounded: f64): f64 {
  return <f64>allocationSize(<i64>rounded);
}

/** Address of the f64 statistics table in linear memory. */
export function statsPointer(): usize {
  return changetype<usize>(STATS);
}

/** Number of f64 slots in the statistics table. */
export function statsLength(): i32 {
  return STATS_LENGTH;
}

/** Sets every peak to its current value. */
export function resetPeakStats(): void {
  resetPeaks();
}

/** Zeroes the accumulated totals and counters. */
export function resetAccumulatedStats(): void {
  resetAccumulated();
}

/** One past the highest segment id ever used (for snapshots). */
export function segmentLimit(): i32 {
  return segHead.length;
}

/** First block record of segment `id`, 0 when the id is not in use. */
export function segmentFirst(id: i32): i32 {
  return id > 0 && id < segHead.length ? unchecked(segHead[id]) : 0;
}

/** Segment size. */
export function segmentBytes(id: i32): f64 {
  return <f64>unchecked(segSize[id]);
}

/** Stream that owns segment `id`. */
export function segmentStream(id: i32): i32 {
  return unchecked(segStream[id]);
}

/** 1 if segment `id` belongs to the small pool. */
export function segmentIsSmall(id: i32): i32 {
  return unchecked(segPool[id]) == 0 ? 1 : 0;
}

/** Next block record in address order, 0 at the end. */
export function blockNext(r: i32): i32 {
  return unchecked(recNext[r]);
}

/** Offset of a block record. */
export function blockOffset(r: i32): f64 {
  return <f64>unchecked(recOffset[r]);
}

/** Size of a block record. */
export function blockSize(r: i32): f64 {
  return <f64>unchecked(recSize[r]);
}

/** Requested size of a block record (0 when free). */
export function blockRequested(r: i32): f64 {
  return <f64>unchecked(recRequested[r]);
}

/** State of a block record: 1 free, 2 allocated, 3 pending free. */
export function blockState(r: i32): i32 {
  return unchecked(recState[r]);
}

/** Handle of a block record, 0 when not allocated. */
export function blockHandle(r: i32): f64 {
  return <f64>unchecked(recHandle[r]);
}
