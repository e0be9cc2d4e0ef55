// Allocation, free, split/merge, segment creation/release and stream events.
//
// Rules (PyTorch's CUDACachingAllocator design, restated):
// - A request is rounded up to 512 B (0 B becomes 512 B). Rounded sizes up to
//   1 MiB use the small pool, the rest the large pool.
// - Lookup: best fit among free blocks of the same pool *and stream*. With a
//   finite maxSplitSize, a request below it never takes a block at or above it,
//   and a request at or above it only takes a block less than 20 MiB bigger.
// - The found block is split when the rest is worth keeping: >= 512 B in the
//   small pool; > 1 MiB in the large pool and only for requests below
//   maxSplitSize. The allocated part keeps the lower offset.
// - On a miss, a new segment is asked from the host unless it would push the
//   reserved total past capacity * fraction. If that fails: release cached
//   oversize segments (finite maxSplitSize only), retry; then synchronize (when
//   the host can), release every fully free segment and retry once more,
//   counting that as an alloc retry. Only then is it an OOM.
// - free() ends the allocation at once (allocation/allocated_bytes stats), but
//   a block whose memory was recorded on other streams stays active, out of the
//   pool and unmergeable, until the host reports every such stream done: done
//   up to the mark the host set for that stream before the free (PyTorch records
//   an event on each such stream at free time; a mark is that event).
// - A freed block merges with free neighbours of its segment; a segment whose
//   single block is free is "cached" and is what emptyCache() releases.
// - Host callbacks run last, once the tables are consistent.

import {
  ERR_BAD_CONFIG, ERR_BAD_SIZE, ERR_BAD_STREAM, ERR_OOM, LARGE_BUFFER, MAX_BYTES, MIN_BLOCK,
  MIN_LARGE_ALLOC, POOL_LARGE, POOL_SMALL, ROUND_LARGE, SMALL_BUFFER, SMALL_SIZE, ST_ALLOCATED,
  ST_FREE, ST_PENDING_FREE, UNLIMITED,
} from "./constants";
import {
  addUse, dropRecord, findHandle, issueHandle, lowerBound, newRecord, pendMark, pendRec, pendStream,
  poolArray, poolInsert, poolRemove, recEvents, recNext, recOffset, recPrev, recRequested,
  recSeg, recSize, recState, recUses, removeAt, retireHandle, segHead, segPool, segSize,
  segStream, segmentSlot, streamOf, usesToEvents,
} from "./blocks";
import {
  bump, C_ALLOC_RETRIES, C_DEVICE_ALLOC, C_DEVICE_FREE, C_OOMS, C_SYNC_ALL_STREAMS,
  K_ACTIVE, K_ACTIVE_BYTES, K_ALLOCATED_BYTES, K_ALLOCATION, K_INACTIVE_SPLIT,
  K_INACTIVE_SPLIT_BYTES, K_OVERSIZE_ALLOCATIONS, K_OVERSIZE_SEGMENTS, K_REQUESTED_BYTES,
  K_RESERVED_BYTES, K_SEGMENT, update, updateOversize,
} from "./stats";

// @ts-ignore: decorator
@external("env", "createSegment")
declare function hostCreateSegment(id: i32, bytes: f64): i32;
// @ts-ignore: decorator
@external("env", "releaseSegment")
declare function hostReleaseSegment(id: i32): void;
// @ts-ignore: decorator
@external("env", "synchronize")
declare function hostSynchronize(): i32;

/** Device capacity in bytes. */
export let capacity: i64 = 0;
/** Usable fraction of the capacity. */
export let fraction: f64 = 1.0;
/** Blocks at or above this size are oversize (UNLIMITED = none). */
export let maxSplit: i64 = UNLIMITED;
/** Sum of all segment sizes. */
export let reservedTotal: i64 = 0;
/** Segment size of the last request that ran out of memory. */
export let oomAllocSize: i64 = 0;

/** Device budget: capacity x fraction, floored. */
export function budget(): i64 {
  return <i64>Math.floor(<f64>capacity * fraction);
}

/** Sets maxSplitSize; only while no segment exists. */
export function configureMaxSplit(bytes: f64): i32 {
  if (reservedTotal != 0) return ERR_BAD_CONFIG;
  if (bytes >= MAX_BYTES) {
    maxSplit = UNLIMITED;
    return 0;
  }
  if (!(bytes > <f64>LARGE_BUFFER) || bytes != Math.floor(bytes)) return ERR_BAD_CONFIG;
  maxSplit = <i64>bytes;
  return 0;
}

/** Sets the device capacity in bytes. */
export function configureCapacity(bytes: f64): i32 {
  if (!(bytes >= 0) || bytes >= MAX_BYTES || bytes != Math.floor(bytes)) return ERR_BAD_CONFIG;
  capacity = <i64>bytes;
  return 0;
}

/** Sets the usable fraction of the capacity, 0 < f <= 1. */
export function configureFraction(f: f64): i32 {
  if (!(f > 0) || !(f <= 1)) return ERR_BAD_CONFIG;
  fraction = f;
  return 0;
}

/** Request size rounded to the block granularity. */
export function roundSize(size: i64): i64 {
  return size < MIN_BLOCK ? MIN_BLOCK : (size + MIN_BLOCK - 1) & ~(MIN_BLOCK - 1);
}

/** Size of the segment created for a rounded request. */
export function allocationSize(size: i64): i64 {
  if (size <= SMALL_SIZE) return SMALL_BUFFER;
  if (size < MIN_LARGE_ALLOC) return LARGE_BUFFER;
  return (size + ROUND_LARGE - 1) & ~(ROUND_LARGE - 1);
}

function isSplit(r: i32): bool {
  return unchecked(recPrev[r]) != 0 || unchecked(recNext[r]) != 0;
}

function takeFree(pool: i32, stream: i32, size: i64): i32 {
  const arr = poolArray(pool);
  const i = lowerBound(arr, stream, size, 0, 0);
  if (i >= arr.length) return 0;
  const r = unchecked(arr[i]);
  if (streamOf(r) != stream) return 0;
  const z = unchecked(recSize[r]);
  if (size < maxSplit && z >= maxSplit) return 0;
  if (size >= maxSplit && z >= size + LARGE_BUFFER) return 0;
  removeAt(arr, i);
  return r;
}

function newSegment(pool: i32, stream: i32, bytes: i64, isRetry: bool): i32 {
  if (isRetry) bump(C_ALLOC_RETRIES);
  if (reservedTotal + bytes > budget()) return 0;
  const id = segmentSlot();
  if (hostCreateSegment(id, <f64>bytes) == 0) return 0;
  bump(C_DEVICE_ALLOC);
  const r = newRecord();
  unchecked((recSeg[r] = id));
  unchecked((recOffset[r] = 0));
  unchecked((recSize[r] = bytes));
  unchecked((recState[r] = ST_FREE));
  unchecked((segSize[id] = bytes));
  unchecked((segStream[id] = stream));
  unchecked((segPool[id] = pool));
  unchecked((segHead[id] = r));
  reservedTotal += bytes;
  update(K_SEGMENT, pool, 1);
  update(K_RESERVED_BYTES, pool, <f64>bytes);
  if (bytes >= maxSplit) updateOversize(K_OVERSIZE_SEGMENTS, 1);
  return r;
}

function releaseSegment(id: i32): void {
  const r = unchecked(segHead[id]);
  const bytes = unchecked(segSize[id]);
  const pool = unchecked(segPool[id]);
  poolRemove(r);
  dropRecord(r);
  unchecked((segHead[id] = 0));
  reservedTotal -= bytes;
  update(K_SEGMENT, pool, -1);
  update(K_RESERVED_BYTES, pool, -<f64>bytes);
  if (bytes >= maxSplit) updateOversize(K_OVERSIZE_SEGMENTS, -1);
  bump(C_DEVICE_FREE);
  hostReleaseSegment(id);
}

function isWholeFreeSegment(r: i32): bool {
  return unchecked(recState[r]) == ST_FREE && !isSplit(r);
}

/**
 * Streams whose segments are kept: a captured graph's private pool (the host gives each pool a
 * stream of its own). Their free blocks are what the graph's kernels use at replay, so no
 * emptyCache or out-of-memory retry releases them while the pool lives.
 */
const keptStreams: Array<i32> = [];

function isKept(stream: i32): bool {
  for (let i = 0; i < keptStreams.length; i++) if (unchecked(keptStreams[i]) == stream) return true;
  return false;
}

/** Keeps (or stops keeping) the segments of `stream` from being released. */
export function keepStream(stream: i32, kept: bool): void {
  const i = keptStreams.indexOf(stream);
  if (kept && i < 0) keptStreams.push(stream);
  else if (!kept && i >= 0) keptStreams.splice(i, 1);
}

/** Releases the fully free segments of `stream` (a pool that is no longer kept). */
export function releaseStreamSegments(stream: i32): void {
  const n = segHead.length;
  for (let id = 1; id < n; id++) {
    const r = unchecked(segHead[id]);
    if (r != 0 && unchecked(segStream[id]) == stream && isWholeFreeSegment(r)) releaseSegment(id);
  }
}

function releaseOversize(pool: i32, stream: i32, size: i64): bool {
  if (maxSplit == UNLIMITED || (keptStreams.length > 0 && isKept(stream))) return false;
  const key = size < maxSplit ? maxSplit : size;
  const arr = poolArray(pool);
  const i = lowerBound(arr, stream, key, 0, 0);
  if (i < arr.length && streamOf(unchecked(arr[i])) == stream) {
    const r = unchecked(arr[i]);
    if (!isWholeFreeSegment(r)) return false;
    releaseSegment(unchecked(recSeg[r]));
    return true;
  }
  let total: i64 = 0;
  for (let j = i - 1; j >= 0 && total < key; j--) {
    const r = unchecked(arr[j]);
    if (unchecked(recSize[r]) < maxSplit || streamOf(r) != stream) break;
    if (!isWholeFreeSegment(r)) continue;
    total += unchecked(recSize[r]);
    releaseSegment(unchecked(recSeg[r]));
  }
  return total >= key;
}

/** Completes every deferred free if the host can synchronize all streams. */
function synchronizeAll(): void {
  if (hostSynchronize() == 0) return;
  bump(C_SYNC_ALL_STREAMS);
  const n = pendRec.length;
  for (let i = 0; i < n; i++) {
    const r = unchecked(pendRec[i]);
    const left = unchecked(recEvents[r]) - 1;
    unchecked((recEvents[r] = left));
    if (left == 0) freeBlock(r);
  }
  while (pendRec.length > 0) {
    pendRec.pop();
    pendStream.pop();
    pendMark.pop();
  }
}

/** Releases every segment that is one free block. Always returns true. */
export function releaseCached(): bool {
  synchronizeAll();
  const n = segHead.length;
  for (let id = 1; id < n; id++) {
    const r = unchecked(segHead[id]);
    if (r != 0 && isWholeFreeSegment(r) && (keptStreams.length == 0 || !isKept(unchecked(segStream[id])))) releaseSegment(id);
  }
  return true;
}

function allocateFound(r: i32, size: i64, requested: i64): void {
  const pool = unchecked(segPool[unchecked(recSeg[r])]);
  const rest = unchecked(recSize[r]) - size;
  const wasSplit = isSplit(r);
  const split = pool == POOL_SMALL ? rest >= MIN_BLOCK : size < maxSplit && rest > SMALL_SIZE;
  if (split) {
    const n = newRecord();
    const next = unchecked(recNext[r]);
    unchecked((recSeg[n] = recSeg[r]));
    unchecked((recOffset[n] = recOffset[r] + size));
    unchecked((recSize[n] = rest));
    unchecked((recState[n] = ST_FREE));
    unchecked((recPrev[n] = r));
    unchecked((recNext[n] = next));
    if (next != 0) unchecked((recPrev[next] = n));
    unchecked((recNext[r] = n));
    unchecked((recSize[r] = size));
    poolInsert(n);
    if (wasSplit) update(K_INACTIVE_SPLIT_BYTES, pool, -<f64>size);
    else {
      update(K_INACTIVE_SPLIT, pool, 1);
      update(K_INACTIVE_SPLIT_BYTES, pool, <f64>rest);
    }
  } else if (wasSplit) {
    update(K_INACTIVE_SPLIT, pool, -1);
    update(K_INACTIVE_SPLIT_BYTES, pool, -<f64>unchecked(recSize[r]));
  }
  const bytes = <f64>unchecked(recSize[r]);
  unchecked((recState[r] = ST_ALLOCATED));
  unchecked((recRequested[r] = requested));
  update(K_ALLOCATION, pool, 1);
  update(K_ALLOCATED_BYTES, pool, bytes);
  update(K_ACTIVE, pool, 1);
  update(K_ACTIVE_BYTES, pool, bytes);
  update(K_REQUESTED_BYTES, pool, <f64>requested);
  if (unchecked(recSize[r]) >= maxSplit) updateOversize(K_OVERSIZE_ALLOCATIONS, 1);
}

function absorb(r: i32, n: i32): bool {
  if (n == 0 || unchecked(recState[n]) != ST_FREE) return false;
  poolRemove(n);
  const seg = unchecked(recSeg[r]);
  if (unchecked(recPrev[r]) == n) {
    const before = unchecked(recPrev[n]);
    unchecked((recOffset[r] = recOffset[n]));
    unchecked((recPrev[r] = before));
    if (before != 0) unchecked((recNext[before] = r));
    else unchecked((segHead[seg] = r));
  } else {
    const after = unchecked(recNext[n]);
    unchecked((recNext[r] = after));
    if (after != 0) unchecked((recPrev[after] = r));
  }
  unchecked((recSize[r] += recSize[n]));
  dropRecord(n);
  return true;
}

/** Returns an allocated or pending block to its pool, merging neighbours. */
export function freeBlock(r: i32): void {
  const pool = unchecked(segPool[unchecked(recSeg[r])]);
  const activeBytes = <f64>unchecked(recSize[r]);
  let splitBlocks: f64 = 0;
  let splitBytes: f64 = 0;
  const prev = unchecked(recPrev[r]);
  const prevSize = prev != 0 ? unchecked(recSize[prev]) : 0;
  if (absorb(r, prev)) {
    splitBlocks -= 1;
    splitBytes -= <f64>prevSize;
  }
  const next = unchecked(recNext[r]);
  const nextSize = next != 0 ? unchecked(recSize[next]) : 0;
  if (absorb(r, next)) {
    splitBlocks -= 1;
    splitBytes -= <f64>nextSize;
  }
  unchecked((recState[r] = ST_FREE));
  if (isSplit(r)) {
    splitBlocks += 1;
    splitBytes += <f64>unchecked(recSize[r]);
  }
  poolInsert(r);
  update(K_INACTIVE_SPLIT, pool, splitBlocks);
  update(K_INACTIVE_SPLIT_BYTES, pool, splitBytes);
  update(K_ACTIVE, pool, -1);
  update(K_ACTIVE_BYTES, pool, -activeBytes);
  update(K_REQUESTED_BYTES, pool, -<f64>unchecked(recRequested[r]));
  unchecked((recRequested[r] = 0));
}

/** Segment of the last successful allocation. */
export let resultSegment: i32 = 0;
/** Offset of the last successful allocation. */
export let resultOffset: i64 = 0;
/** Block size of the last successful allocation. */
export let resultSize: i64 = 0;

/** Allocates; returns a handle, or ERR_BAD_SIZE / ERR_BAD_STREAM / ERR_OOM. */
export function allocate(bytes: f64, stream: i32): f64 {
  if (!(bytes >= 0) || bytes >= MAX_BYTES || bytes != Math.floor(bytes)) return ERR_BAD_SIZE;
  if (stream < 0) return ERR_BAD_STREAM;
  const requested = <i64>bytes;
  const size = roundSize(requested);
  const pool = size <= SMALL_SIZE ? POOL_SMALL : POOL_LARGE;
  const segBytes = allocationSize(size);
  let r = takeFree(pool, stream, size);
  if (r == 0) r = newSegment(pool, stream, segBytes, false);
  if (r == 0 && releaseOversize(pool, stream, size)) r = newSegment(pool, stream, segBytes, false);
  if (r == 0 && releaseCached()) r = newSegment(pool, stream, segBytes, true);
  if (r == 0) {
    bump(C_OOMS);
    oomAllocSize = segBytes;
    return ERR_OOM;
  }
  allocateFound(r, size, requested);
  resultSegment = unchecked(recSeg[r]);
  resultOffset = unchecked(recOffset[r]);
  resultSize = unchecked(recSize[r]);
  return <f64>issueHandle(r);
}

function lookup(handle: f64): i32 {
  if (!(handle >= 1) || handle >= MAX_BYTES || handle != Math.floor(handle)) return findHandle(0);
  return findHandle(<i64>handle);
}

/** Frees a handle; 0 or an error code. */
export function release(handle: f64): i32 {
  const r = lookup(handle);
  if (r < 0) return r;
  const pool = unchecked(segPool[unchecked(recSeg[r])]);
  const bytes = unchecked(recSize[r]);
  retireHandle(r);
  update(K_ALLOCATION, pool, -1);
  update(K_ALLOCATED_BYTES, pool, -<f64>bytes);
  if (bytes >= maxSplit) updateOversize(K_OVERSIZE_ALLOCATIONS, -1);
  if (unchecked(recUses[r]) != 0) {
    unchecked((recState[r] = ST_PENDING_FREE));
    usesToEvents(r);
  } else {
    freeBlock(r);
  }
  return 0;
}

/** Marks a live block as used by `stream`; 0 or an error code. */
export function useOnStream(handle: f64, stream: i32): i32 {
  if (stream < 0) return ERR_BAD_STREAM;
  const r = lookup(handle);
  if (r < 0) return r;
  if (stream != streamOf(r)) addUse(r, stream);
  return 0;
}

/** The work of `stream` up to `mark` is done (Infinity: all of it); returns frees completed. */
export function completeStream(stream: i32, mark: f64): i32 {
  let done = 0;
  let kept = 0;
  const n = pendRec.length;
  for (let i = 0; i < n; i++) {
    const r = unchecked(pendRec[i]);
    const s = unchecked(pendStream[i]);
    const m = unchecked(pendMark[i]);
    if (s != stream || m > mark) {
      unchecked((pendRec[kept] = r));
      unchecked((pendStream[kept] = s));
      unchecked((pendMark[kept] = m));
      kept++;
    } else {
      const left = unchecked(recEvents[r]) - 1;
      unchecked((recEvents[r] = left));
      if (left == 0) {
        freeBlock(r);
        done++;
      }
    }
  }
  while (pendRec.length > kept) {
    pendRec.pop();
    pendStream.pop();
    pendMark.pop();
  }
  return done;
}
