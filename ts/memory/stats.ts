// Decoding of the allocator's statistics table into PyTorch's memory_stats keys.
//
// Rules: the WASM side keeps one f64 slot per (stat, stat type, metric) in the
// order of STAT_NAMES x STAT_TYPES x METRICS, then the oversize stats (type
// `all` only), then the plain counters; this file must mirror
// assembly/allocator/stats.ts exactly. Keys come out sorted, as
// torch.cuda.memory_stats() returns them.

/** Per-pool statistics, in table order. */
export const STAT_NAMES = [
  "allocation",
  "segment",
  "active",
  "inactive_split",
  "allocated_bytes",
  "reserved_bytes",
  "active_bytes",
  "inactive_split_bytes",
  "requested_bytes",
] as const;
/** Statistics kept for all pools together only. */
export const OVERSIZE_NAMES = ["oversize_allocations", "oversize_segments"] as const;
/** Stat types, in table order. */
export const STAT_TYPES = ["all", "small_pool", "large_pool"] as const;
/** Metrics of every statistic, in table order. */
export const METRICS = ["current", "peak", "allocated", "freed"] as const;
/** Plain counters, in table order. */
export const COUNTERS = [
  "num_alloc_retries",
  "num_ooms",
  "num_sync_all_streams",
  "num_device_alloc",
  "num_device_free",
] as const;

/** A per-pool statistic name. */
export type StatName = (typeof STAT_NAMES)[number];
/** A stat type. */
export type StatType = (typeof STAT_TYPES)[number];
/** A metric. */
export type Metric = (typeof METRICS)[number];
/** Every key of {@link MemoryStats}. */
export type MemoryStatKey =
  | `${StatName}.${StatType}.${Metric}`
  | `${(typeof OVERSIZE_NAMES)[number]}.${Metric}`
  | (typeof COUNTERS)[number]
  | "max_split_size";
/** Flat statistics object with torch.cuda.memory_stats() key names. */
export type MemoryStats = Record<MemoryStatKey, number>;

/** Number of f64 slots the table must have. */
export const STATS_TABLE_LENGTH = (STAT_NAMES.length + OVERSIZE_NAMES.length) * 12 + COUNTERS.length;

/** Builds the sorted stats object from the raw table and maxSplitSize (-1 = unlimited). */
export function decodeStats(table: Float64Array, maxSplitSize: number): MemoryStats {
  const entries: [string, number][] = [];
  STAT_NAMES.forEach((name, k) => {
    STAT_TYPES.forEach((type, t) => {
      METRICS.forEach((metric, m) => entries.push([`${name}.${type}.${metric}`, table[k * 12 + t * 4 + m]!]));
    });
  });
  OVERSIZE_NAMES.forEach((name, i) => {
    const base = (STAT_NAMES.length + i) * 12;
    METRICS.forEach((metric, m) => entries.push([`${name}.${metric}`, table[base + m]!]));
  });
  const countersAt = (STAT_NAMES.length + OVERSIZE_NAMES.length) * 12;
  COUNTERS.forEach((name, i) => entries.push([name, table[countersAt + i]!]));
  entries.push(["max_split_size", maxSplitSize]);
  entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return Object.fromEntries(entries) as MemoryStats;
}
