// Strided iteration shared by the elementwise, copy and where kernels.
//
// The hard part is keeping the per-element cost low for arbitrary rank-8
// views. The host descriptor is first normalised into a private copy: size-1
// dimensions are dropped and adjacent dimensions are merged whenever every
// operand steps through them as one (stride[d] == stride[d+1] * shape[d+1]).
// A contiguous tensor of any rank thus becomes rank 1 with stride 1, and the
// kernels only walk the last dimension in a tight loop; the outer dimensions
// advance once per row through a counter array held in static memory.
//
// Descriptor layout (i32 words): [r, n, shape[r], (strides[r], offset) per operand].

// Each pool thread has its own instance of the module (its own globals) on one shared memory,
// so the private descriptor and counters live in a slice of static memory per thread, chosen by
// `setThread` (the helper's part number; 0 on the worker's own thread).
const THREADS = 16;
const DESC_AREA = memory.data(256 * THREADS, 16);
const COUNT_AREA = memory.data(32 * THREADS, 16);
let DESC: usize = DESC_AREA;
let COUNT: usize = COUNT_AREA;

/** Selects this instance's slice of the iterator's static memory (the cpu pool's helpers call it once). */
export function setThread(thread: i32): void {
  const t = <usize>(thread & (THREADS - 1));
  DESC = DESC_AREA + t * 256;
  COUNT = COUNT_AREA + t * 32;
}

/** Running element offsets of operands 0..2 for the current row. */
export let off0: i32 = 0;
export let off1: i32 = 0;
export let off2: i32 = 0;

/** Address of operand j's stride array in descriptor d of rank r. */
// @ts-ignore: decorator
@inline export function stridesAt(d: usize, r: i32, j: i32): usize {
  return d + (<usize>(2 + r + j * (r + 1)) << 2);
}

/** Shape of dimension k. */
// @ts-ignore: decorator
@inline export function dimAt(d: usize, k: i32): i32 {
  return load<i32>(d + 8 + (<usize>k << 2));
}

function mergeable(p: usize, r: i32, nops: i32, prevK: i32, k: i32): bool {
  const size = dimAt(p, k);
  for (let j = 0; j < nops; j++) {
    const s = stridesAt(p, r, j);
    if (load<i32>(s + (<usize>prevK << 2)) != load<i32>(s + (<usize>k << 2)) * size) return false;
  }
  return true;
}

/** Rank after dropping size-1 dims and merging (pass 0), or writes it (pass 1). */
function coalesce(p: usize, r: i32, nops: i32, q: i32, write: bool): i32 {
  let w = -1;
  let prevK = -1;
  for (let k = 0; k < r; k++) {
    const size = dimAt(p, k);
    if (size == 1) continue;
    const merge = prevK >= 0 && mergeable(p, r, nops, prevK, k);
    if (!merge) w++;
    if (write) {
      const at = DESC + 8 + (<usize>w << 2);
      store<i32>(at, merge ? load<i32>(at) * size : size);
      for (let j = 0; j < nops; j++) {
        store<i32>(stridesAt(DESC, q, j) + (<usize>w << 2), load<i32>(stridesAt(p, r, j) + (<usize>k << 2)));
      }
    }
    prevK = k;
  }
  return w + 1;
}

/**
 * Copies host descriptor p (with `nops` strided operands) into a private,
 * coalesced descriptor and returns its address. The element count word is
 * recomputed from the shape; a zero-size shape yields n = 0.
 */
export function normalize(p: usize, nops: i32): usize {
  const r = load<i32>(p);
  let n: i32 = 1;
  for (let k = 0; k < r; k++) n *= dimAt(p, k);
  store<i32>(DESC, 0);
  store<i32>(DESC, n, 4);
  if (n <= 0) return DESC;
  const q = coalesce(p, r, nops, 0, false);
  store<i32>(DESC, q);
  coalesce(p, r, nops, q, true);
  for (let j = 0; j < nops; j++) {
    store<i32>(stridesAt(DESC, q, j) + (<usize>q << 2), load<i32>(stridesAt(p, r, j) + (<usize>r << 2)));
  }
  return DESC;
}

/** Length of the innermost (row) dimension; 1 for rank 0. */
// @ts-ignore: decorator
@inline export function rowLen(d: usize): i32 {
  const r = load<i32>(d);
  return r > 0 ? dimAt(d, r - 1) : 1;
}

/** Innermost stride of operand j; 0 for rank 0. */
// @ts-ignore: decorator
@inline export function rowStride(d: usize, j: i32): i32 {
  const r = load<i32>(d);
  return r > 0 ? load<i32>(stridesAt(d, r, j) + (<usize>(r - 1) << 2)) : 0;
}

/** Resets the row counters and loads the operands' base offsets. */
export function begin(d: usize, nops: i32): void {
  const r = load<i32>(d);
  memory.fill(COUNT, 0, 32);
  off0 = load<i32>(stridesAt(d, r, 0) + (<usize>r << 2));
  if (nops > 1) off1 = load<i32>(stridesAt(d, r, 1) + (<usize>r << 2));
  if (nops > 2) off2 = load<i32>(stridesAt(d, r, 2) + (<usize>r << 2));
}

/**
 * Like `begin`, then moves to the start of row `row` (rows counted over dims 0..r-2): a chunk of
 * the cpu pool starts mid-iteration.
 */
export function beginAt(d: usize, nops: i32, row: i32): void {
  begin(d, nops);
  if (row == 0) return;
  const r = load<i32>(d);
  let rem = row;
  for (let k = r - 2; k >= 0 && rem > 0; k--) {
    const size = dimAt(d, k);
    const c = rem % size;
    rem /= size;
    store<i32>(COUNT + (<usize>k << 2), c);
    const ks = <usize>k << 2;
    off0 += c * load<i32>(stridesAt(d, r, 0) + ks);
    if (nops > 1) off1 += c * load<i32>(stridesAt(d, r, 1) + ks);
    if (nops > 2) off2 += c * load<i32>(stridesAt(d, r, 2) + ks);
  }
}

/**
 * Narrows a rank-1 descriptor (after `normalize`) to elements [first, first + count): the shape
 * and each operand's offset move; the caller moves the output.
 */
export function narrow1(d: usize, nops: i32, first: i32, count: i32): void {
  store<i32>(d, count, 4);
  store<i32>(d, count, 8);
  for (let j = 0; j < nops; j++) {
    const s = stridesAt(d, 1, j);
    store<i32>(s, load<i32>(s + 4) + first * load<i32>(s), 4);
  }
}

/**
 * The rows (or, for one row, the elements) of chunk `part` of `parts` of a normalised descriptor:
 * sets `chunkFirst` and `chunkLast` (rows), narrowing a single row in place (`narrow1`) and
 * returning the first output element; -1 when the chunk is empty.
 */
export let chunkFirst: i32 = 0;
export let chunkLast: i32 = 0;
export function chunkOf(d: usize, nops: i32, part: i32, parts: i32): i32 {
  const n = load<i32>(d, 4);
  const len = rowLen(d);
  const rows = n / len;
  if (rows > 1 || load<i32>(d) != 1) {
    const per = (rows + parts - 1) / parts;
    chunkFirst = part * per;
    chunkLast = min(rows, chunkFirst + per);
    return chunkFirst < chunkLast ? chunkFirst * len : -1;
  }
  // One row: chunks of whole vectors (a multiple of 16 elements) of it.
  const per = (((len + parts - 1) / parts) + 15) & ~15;
  const first = part * per;
  if (first >= len) return -1;
  narrow1(d, nops, first, min(per, len - first));
  chunkFirst = 0;
  chunkLast = 1;
  return first;
}

/** Moves the operand offsets to the start of the next row (dims 0..r-2). */
export function nextRow(d: usize, nops: i32): void {
  const r = load<i32>(d);
  for (let k = r - 2; k >= 0; k--) {
    const cp = COUNT + (<usize>k << 2);
    const size = dimAt(d, k);
    const c = load<i32>(cp) + 1;
    const wrap = c >= size;
    store<i32>(cp, wrap ? 0 : c);
    const m = wrap ? 1 - size : 1;
    const ks = <usize>k << 2;
    off0 += m * load<i32>(stridesAt(d, r, 0) + ks);
    if (nops > 1) off1 += m * load<i32>(stridesAt(d, r, 1) + ks);
    if (nops > 2) off2 += m * load<i32>(stridesAt(d, r, 2) + ks);
    if (!wrap) return;
  }
}
