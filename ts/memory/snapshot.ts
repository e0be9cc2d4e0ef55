// memorySnapshot(): segments and their blocks in address order, PyTorch-like.
//
// Rules: a segment's allocatedSize counts allocated blocks only, activeSize
// adds blocks whose free waits on other streams (still in use by the device),
// requestedSize sums the callers' original sizes of active blocks. Segments
// are listed by id, blocks by offset.

import type { AllocatorExports } from "./wasm.js";

/** State of a block, as in torch.cuda.memory_snapshot(). */
export type BlockState = "active_allocated" | "active_pending_free" | "inactive";

/** One block of a segment. */
export interface SnapshotBlock {
  /** Byte offset within the segment. */
  offset: number;
  /** Block size (a multiple of 512). */
  size: number;
  /** Size the caller asked for; 0 for inactive blocks. */
  requestedSize: number;
  /** Allocation state. */
  state: BlockState;
  /** Handle of an allocated block (as returned by malloc), else undefined. */
  block?: number;
}

/** One segment (one host buffer). */
export interface SnapshotSegment {
  /** Segment id, as passed to createSegment. */
  segment: number;
  /** Segment size in bytes. */
  totalSize: number;
  /** Bytes in allocated blocks. */
  allocatedSize: number;
  /** Bytes in allocated blocks and blocks pending free. */
  activeSize: number;
  /** Requested bytes of active blocks. */
  requestedSize: number;
  /** Stream that owns the segment. */
  stream: number;
  /** Pool of the segment. */
  segmentType: "small" | "large";
  /** Blocks in offset order. */
  blocks: SnapshotBlock[];
}

const STATES: Record<number, BlockState> = {
  1: "inactive",
  2: "active_allocated",
  3: "active_pending_free",
};

/** Walks the allocator's tables into snapshot objects. */
export function takeSnapshot(w: AllocatorExports): SnapshotSegment[] {
  const segments: SnapshotSegment[] = [];
  const limit = w.segmentLimit();
  for (let id = 1; id < limit; id++) {
    let record = w.segmentFirst(id);
    if (record === 0) continue;
    const seg: SnapshotSegment = {
      segment: id,
      totalSize: w.segmentBytes(id),
      allocatedSize: 0,
      activeSize: 0,
      requestedSize: 0,
      stream: w.segmentStream(id),
      segmentType: w.segmentIsSmall(id) === 1 ? "small" : "large",
      blocks: [],
    };
    for (; record !== 0; record = w.blockNext(record)) {
      const state = STATES[w.blockState(record)] ?? "inactive";
      const block: SnapshotBlock = {
        offset: w.blockOffset(record),
        size: w.blockSize(record),
        requestedSize: state === "inactive" ? 0 : w.blockRequested(record),
        state,
      };
      if (state === "active_allocated") {
        block.block = w.blockHandle(record);
        seg.allocatedSize += block.size;
      }
      if (state !== "inactive") {
        seg.activeSize += block.size;
        seg.requestedSize += block.requestedSize;
      }
      seg.blocks.push(block);
    }
    segments.push(seg);
  }
  return segments;
}
