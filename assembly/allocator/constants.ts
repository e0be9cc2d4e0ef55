// Size classes, result codes and block states shared by the allocator modules.
//
// Rules: every size the allocator hands out is a multiple of MIN_BLOCK, so any
// host alignment that divides 512 holds for every offset. The size classes are
// PyTorch's: requests up to SMALL_SIZE live in 2 MiB segments of the small
// pool, requests below MIN_LARGE_ALLOC share 20 MiB segments of the large pool,
// anything bigger gets a segment of its own rounded to ROUND_LARGE.

/** Every block size is a multiple of this (and at least this). */
export const MIN_BLOCK: i64 = 512;
/** Largest request served from the small pool. */
export const SMALL_SIZE: i64 = 1048576;
/** Segment size of the small pool. */
export const SMALL_BUFFER: i64 = 2097152;
/** Segment size for large-pool requests below MIN_LARGE_ALLOC. */
export const LARGE_BUFFER: i64 = 20971520;
/** Requests of at least this size get a segment of their own. */
export const MIN_LARGE_ALLOC: i64 = 10485760;
/** Granularity of dedicated large segments. */
export const ROUND_LARGE: i64 = 2097152;
/** Sizes at or above this are refused (2^53, the largest exact JS integer + 1). */
export const MAX_BYTES: f64 = 9007199254740992.0;
/** maxSplitSize meaning "never refuse to split". */
export const UNLIMITED: i64 = i64.MAX_VALUE;

/** Result code: no block fits and no segment could be created. */
export const ERR_OOM: i32 = -1;
/** Result code: size is not an integer in [0, 2^53). */
export const ERR_BAD_SIZE: i32 = -2;
/** Result code: handle never issued by this instance. */
export const ERR_UNKNOWN_BLOCK: i32 = -3;
/** Result code: handle already freed. */
export const ERR_ALREADY_FREED: i32 = -4;
/** Result code: negative stream id. */
export const ERR_BAD_STREAM: i32 = -5;
/** Result code: invalid capacity, fraction or maxSplitSize. */
export const ERR_BAD_CONFIG: i32 = -6;

/** Record state: on the spare list. */
export const ST_UNUSED: u8 = 0;
/** Record state: free, in its pool. */
export const ST_FREE: u8 = 1;
/** Record state: handed out. */
export const ST_ALLOCATED: u8 = 2;
/** Record state: freed, waiting for recorded streams. */
export const ST_PENDING_FREE: u8 = 3;

/** Small pool index (stat type 1). */
export const POOL_SMALL: i32 = 0;
/** Large pool index (stat type 2). */
export const POOL_LARGE: i32 = 1;
