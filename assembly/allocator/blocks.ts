// Record tables: blocks, segments, the two free pools, handles, stream uses.
//
// Rules and hard parts:
// - The module is built with the stub runtime, which never reclaims memory.
//   Every table is therefore an Array that only grows (pop() keeps capacity)
//   and records are recycled through free lists, so steady-state churn
//   allocates nothing. Index 0 of every record table is a null sentinel.
// - A block record is recycled as soon as it is merged away, so the host never
//   sees record indices. It sees handles: serial numbers issued from a
//   per-instance base, mapped back through a sorted (serial, record) table
//   with tombstones. A stale handle can thus never alias a newer block.
// - Free pools are arrays sorted by (stream, size, segment, offset): the first
//   entry at or after (stream, size) is the best fit, ties going to the lower
//   segment id and offset. A block's size must not change while it is pooled.

import { ERR_ALREADY_FREED, ERR_UNKNOWN_BLOCK, POOL_SMALL, ST_UNUSED } from "./constants";

/** Segment id of each block record. */
export const recSeg: Array<i32> = [0];
/** Byte offset of each block within its segment. */
export const recOffset: Array<i64> = [0];
/** Block size (multiple of 512). */
export const recSize: Array<i64> = [0];
/** Caller's unrounded size while active, else 0. */
export const recRequested: Array<i64> = [0];
/** Previous block of the same segment in address order, 0 if none. */
export const recPrev: Array<i32> = [0];
/** Next block of the same segment in address order, 0 if none. */
export const recNext: Array<i32> = [0];
/** ST_* state of each record. */
export const recState: Array<u8> = [ST_UNUSED];
/** Handle of an allocated block, else 0. */
export const recHandle: Array<i64> = [0];
/** Stream events a pending free still waits for. */
export const recEvents: Array<i32> = [0];
/** Head of the record's list of recorded streams (use nodes). */
export const recUses: Array<i32> = [0];
const spareRecords: Array<i32> = [];

/** Size of each segment, indexed by segment id. */
export const segSize: Array<i64> = [0];
/** Stream owning each segment. */
export const segStream: Array<i32> = [0];
/** POOL_* of each segment. */
export const segPool: Array<i32> = [0];
/** First block record of each segment; 0 marks an unused id. */
export const segHead: Array<i32> = [0];

/** Stream of each recorded-stream list node. */
export const useStream: Array<i32> = [0];
/** Next node of each recorded-stream list. */
export const useNext: Array<i32> = [0];
const spareUses: Array<i32> = [];

/** Deferred frees: record of each outstanding stream event. */
export const pendRec: Array<i32> = [];
/** Deferred frees: stream of each outstanding stream event. */
export const pendStream: Array<i32> = [];
/** Deferred frees: the stream's mark each outstanding event waits for (see setStreamMark). */
export const pendMark: Array<f64> = [];
/** Per stream id: the mark that the host says stands for the stream's work so far (0 until set). */
const streamMarks: Array<f64> = [];

/**
 * Host: the stream's work queued so far ends at `mark` (the host's own numbering, increasing).
 * Frees of blocks recorded on the stream from now on wait for that mark.
 */
export function setStreamMark(stream: i32, mark: f64): void {
  while (streamMarks.length <= stream) streamMarks.push(0);
  unchecked((streamMarks[stream] = mark));
}

function markOf(stream: i32): f64 {
  return stream < streamMarks.length ? unchecked(streamMarks[stream]) : 0;
}

const smallPool: Array<i32> = [];
const largePool: Array<i32> = [];

/** Takes a record from the spare list or appends one. */
export function newRecord(): i32 {
  if (spareRecords.length > 0) return spareRecords.pop();
  const r = recSeg.length;
  recSeg.push(0);
  recOffset.push(0);
  recSize.push(0);
  recRequested.push(0);
  recPrev.push(0);
  recNext.push(0);
  recState.push(ST_UNUSED);
  recHandle.push(0);
  recEvents.push(0);
  recUses.push(0);
  return r;
}

/** Returns a record to the spare list. */
export function dropRecord(r: i32): void {
  unchecked((recState[r] = ST_UNUSED));
  unchecked((recHandle[r] = 0));
  unchecked((recPrev[r] = 0));
  unchecked((recNext[r] = 0));
  spareRecords.push(r);
}

/** Lowest unused segment id (ids are reused after release). */
export function segmentSlot(): i32 {
  const n = segHead.length;
  for (let s = 1; s < n; s++) if (unchecked(segHead[s]) == 0) return s;
  segSize.push(0);
  segStream.push(0);
  segPool.push(0);
  segHead.push(0);
  return n;
}

/** Stream that owns record `r` (the stream of its segment). */
// @ts-ignore: decorator
@inline export function streamOf(r: i32): i32 {
  return unchecked(segStream[unchecked(recSeg[r])]);
}

/** The sorted free list of pool `pool`. */
export function poolArray(pool: i32): Array<i32> {
  return pool == POOL_SMALL ? smallPool : largePool;
}

function recordLess(r: i32, stream: i32, size: i64, seg: i32, off: i64): bool {
  const s = streamOf(r);
  if (s != stream) return s < stream;
  const z = unchecked(recSize[r]);
  if (z != size) return z < size;
  const g = unchecked(recSeg[r]);
  if (g != seg) return g < seg;
  return unchecked(recOffset[r]) < off;
}

/** First index in `arr` whose key is >= (stream, size, seg, off). */
export function lowerBound(arr: Array<i32>, stream: i32, size: i64, seg: i32, off: i64): i32 {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (recordLess(unchecked(arr[mid]), stream, size, seg, off)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Removes the entry at index `i` of a pool array. */
export function removeAt(arr: Array<i32>, i: i32): void {
  const last = arr.length - 1;
  for (let j = i; j < last; j++) unchecked((arr[j] = arr[j + 1]));
  arr.pop();
}

/** Inserts free record `r` into its pool. */
export function poolInsert(r: i32): void {
  const arr = poolArray(unchecked(segPool[unchecked(recSeg[r])]));
  const i = lowerBound(arr, streamOf(r), unchecked(recSize[r]), unchecked(recSeg[r]), unchecked(recOffset[r]));
  arr.push(0);
  for (let j = arr.length - 1; j > i; j--) unchecked((arr[j] = arr[j - 1]));
  unchecked((arr[i] = r));
}

/** Removes free record `r` from its pool. */
export function poolRemove(r: i32): void {
  const arr = poolArray(unchecked(segPool[unchecked(recSeg[r])]));
  const i = lowerBound(arr, streamOf(r), unchecked(recSize[r]), unchecked(recSeg[r]), unchecked(recOffset[r]));
  if (i < arr.length && unchecked(arr[i]) == r) removeAt(arr, i);
}

// ---- handles -------------------------------------------------------------

const handleKeys: Array<i64> = [];
const handleRecs: Array<i32> = [];
let handleBase: i64 = 0;
let nextHandle: i64 = 1;
let deadHandles: i32 = 0;

/** Makes this instance issue handles base+1, base+2, ... */
export function setHandleBase(base: i64): void {
  handleBase = base;
  nextHandle = base + 1;
}

/** Issues a fresh handle for record `r`. */
export function issueHandle(r: i32): i64 {
  const h = nextHandle++;
  handleKeys.push(h);
  handleRecs.push(r);
  unchecked((recHandle[r] = h));
  return h;
}

function handleIndex(h: i64): i32 {
  let lo = 0;
  let hi = handleKeys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (unchecked(handleKeys[mid]) < h) lo = mid + 1;
    else hi = mid;
  }
  return lo < handleKeys.length && unchecked(handleKeys[lo]) == h ? lo : -1;
}

/** Record of a live handle, or ERR_UNKNOWN_BLOCK / ERR_ALREADY_FREED. */
export function findHandle(h: i64): i32 {
  if (h <= handleBase || h >= nextHandle) return ERR_UNKNOWN_BLOCK;
  const i = handleIndex(h);
  if (i < 0) return ERR_ALREADY_FREED;
  const r = unchecked(handleRecs[i]);
  return r != 0 ? r : ERR_ALREADY_FREED;
}

/** Invalidates the handle of record `r`. */
export function retireHandle(r: i32): void {
  const i = handleIndex(unchecked(recHandle[r]));
  unchecked((recHandle[r] = 0));
  if (i < 0) return;
  unchecked((handleRecs[i] = 0));
  deadHandles++;
  if (deadHandles < 64 || deadHandles * 2 < handleKeys.length) return;
  let j = 0;
  const n = handleKeys.length;
  for (let k = 0; k < n; k++) {
    const rec = unchecked(handleRecs[k]);
    if (rec == 0) continue;
    unchecked((handleKeys[j] = handleKeys[k]));
    unchecked((handleRecs[j] = rec));
    j++;
  }
  while (handleKeys.length > j) {
    handleKeys.pop();
    handleRecs.pop();
  }
  deadHandles = 0;
}

// ---- recorded streams ----------------------------------------------------

/** Adds `stream` to the recorded streams of record `r` (once). */
export function addUse(r: i32, stream: i32): void {
  for (let n = unchecked(recUses[r]); n != 0; n = unchecked(useNext[n])) {
    if (unchecked(useStream[n]) == stream) return;
  }
  let node: i32;
  if (spareUses.length > 0) node = spareUses.pop();
  else {
    node = useStream.length;
    useStream.push(0);
    useNext.push(0);
  }
  unchecked((useStream[node] = stream));
  unchecked((useNext[node] = recUses[r]));
  unchecked((recUses[r] = node));
}

/** Turns the recorded streams of `r` into pending events; returns their count. */
export function usesToEvents(r: i32): i32 {
  let count = 0;
  let n = unchecked(recUses[r]);
  while (n != 0) {
    pendRec.push(r);
    pendStream.push(unchecked(useStream[n]));
    pendMark.push(markOf(unchecked(useStream[n])));
    const next = unchecked(useNext[n]);
    spareUses.push(n);
    n = next;
    count++;
  }
  unchecked((recUses[r] = 0));
  unchecked((recEvents[r] = count));
  return count;
}
