// PyTorch-style counters kept in one flat f64 table that the host reads in place.
//
// Rules: each stat has current/peak/allocated/freed. A positive update adds to
// `allocated` and may raise `peak`; a negative one adds its magnitude to
// `freed`. Callers apply one *net* change per operation (PyTorch does the same),
// which is what makes the accumulated totals comparable with PyTorch's.
// Array stats exist for the stat types all / small pool / large pool; the
// oversize stats only use the `all` slot. The layout is mirrored by
// ts/memory/stats.ts, so append, never reorder.

/** Stat `allocation`: live allocations. */
export const K_ALLOCATION: i32 = 0;
/** Stat `segment`: reserved segments. */
export const K_SEGMENT: i32 = 1;
/** Stat `active`: allocated or pending-free blocks. */
export const K_ACTIVE: i32 = 2;
/** Stat `inactive_split`: free blocks of split segments. */
export const K_INACTIVE_SPLIT: i32 = 3;
/** Stat `allocated_bytes`. */
export const K_ALLOCATED_BYTES: i32 = 4;
/** Stat `reserved_bytes`. */
export const K_RESERVED_BYTES: i32 = 5;
/** Stat `active_bytes`. */
export const K_ACTIVE_BYTES: i32 = 6;
/** Stat `inactive_split_bytes`. */
export const K_INACTIVE_SPLIT_BYTES: i32 = 7;
/** Stat `requested_bytes`: callers' unrounded sizes. */
export const K_REQUESTED_BYTES: i32 = 8;
/** Stat `oversize_allocations` (type all only). */
export const K_OVERSIZE_ALLOCATIONS: i32 = 9;
/** Stat `oversize_segments` (type all only). */
export const K_OVERSIZE_SEGMENTS: i32 = 10;
/** Number of per-type stats (each 3 types x 4 metrics). */
export const NUM_KINDS: i32 = 11;

/** Counter `num_alloc_retries` (first slot after the stat blocks). */
export const C_ALLOC_RETRIES: i32 = NUM_KINDS * 12;
/** Counter `num_ooms`. */
export const C_OOMS: i32 = C_ALLOC_RETRIES + 1;
/** Counter `num_sync_all_streams`. */
export const C_SYNC_ALL_STREAMS: i32 = C_ALLOC_RETRIES + 2;
/** Counter `num_device_alloc`: segments created. */
export const C_DEVICE_ALLOC: i32 = C_ALLOC_RETRIES + 3;
/** Counter `num_device_free`: segments released. */
export const C_DEVICE_FREE: i32 = C_ALLOC_RETRIES + 4;
/** Total table length in f64 slots. */
export const STATS_LENGTH: i32 = C_ALLOC_RETRIES + 5;

const M_CURRENT: i32 = 0;
const M_PEAK: i32 = 1;
const M_ALLOCATED: i32 = 2;
const M_FREED: i32 = 3;

/** The table itself; the host reads it through statsPointer(). */
export const STATS = new StaticArray<f64>(STATS_LENGTH);

function applyAt(base: i32, amount: f64): void {
  if (amount > 0) {
    const cur = unchecked(STATS[base + M_CURRENT]) + amount;
    unchecked((STATS[base + M_CURRENT] = cur));
    unchecked((STATS[base + M_ALLOCATED] += amount));
    if (cur > unchecked(STATS[base + M_PEAK])) unchecked((STATS[base + M_PEAK] = cur));
  } else if (amount < 0) {
    unchecked((STATS[base + M_CURRENT] += amount));
    unchecked((STATS[base + M_FREED] -= amount));
  }
}

/** Applies a net change to stat `kind` for `all` and for `pool`. */
export function update(kind: i32, pool: i32, amount: f64): void {
  applyAt(kind * 12, amount);
  applyAt(kind * 12 + (pool + 1) * 4, amount);
}

/** Applies a net change to an oversize stat (type `all` only). */
export function updateOversize(kind: i32, amount: f64): void {
  applyAt(kind * 12, amount);
}

/** Adds one to a plain counter. */
export function bump(counter: i32): void {
  unchecked((STATS[counter] += 1));
}

/** Current value of stat `kind` for stat type `type` (0 all, 1 small, 2 large). */
export function current(kind: i32, type: i32): f64 {
  return unchecked(STATS[kind * 12 + type * 4]);
}

/** Sets every peak to its current value. */
export function resetPeaks(): void {
  for (let base = 0; base < C_ALLOC_RETRIES; base += 4) {
    unchecked((STATS[base + M_PEAK] = STATS[base + M_CURRENT]));
  }
}

/** Zeroes the allocated/freed totals and the plain counters. */
export function resetAccumulated(): void {
  for (let base = 0; base < C_ALLOC_RETRIES; base += 4) {
    unchecked((STATS[base + M_ALLOCATED] = 0));
    unchecked((STATS[base + M_FREED] = 0));
  }
  for (let i = C_ALLOC_RETRIES; i < STATS_LENGTH; i++) unchecked((STATS[i] = 0));
}
