/**
 * Launches over tensors larger than one binding (the adapter's maxStorageBufferBindingSize:
 * 128 MiB on lavapipe, 2 GiB on an NVIDIA GPU). A kernel sees at most that many bytes of a
 * buffer, so an op over a larger tensor runs in chunks, each binding a window of every buffer
 * (offset a multiple of the storage offset alignment) with its operands' offsets taken relative
 * to the window. Elementwise maps over contiguous 32-bit operands split by elements, row
 * reductions by rows; other launches over such a buffer raise `tooLarge`'s error.
 */

/** A contiguous operand of a chunked launch: its buffer and its first element (32-bit words). */
export interface Span<B> {
  b: B;
  start: number;
}

/** One chunk: its first element, its element count, and each buffer's window start in bytes. */
export interface Chunk<B> {
  first: number;
  count: number;
  window: Map<B, number>;
}

/**
 * Cuts `n` elements (`unit` words each: 1 for maps, a row's length for reductions) into chunks
 * whose windows fit `maxBinding` bytes. Every operand reads or writes `unit` words per element
 * from its start; `step[i]` overrides that for operand i (a reduction's output: 1 word a row).
 */
export function chunks<B>(n: number, spans: Span<B>[], maxBinding: number, align: number, unit = 1, step?: number[]): Chunk<B>[] {
  const words = (i: number) => step?.[i] ?? unit;
  const widest = Math.max(...spans.map((_, i) => words(i)));
  // room for the alignment slack, and a multiple of 4 elements so vec4 offsets keep their phase
  let per = Math.floor((maxBinding - align) / 4 / widest);
  if (unit === 1) per -= per % 4;
  if (per < 1) throw new RangeError(`one row of ${widest * 4} bytes exceeds the per-binding limit of ${maxBinding} bytes`);
  const out: Chunk<B>[] = [];
  for (let first = 0; first < n; first += per) {
    const count = Math.min(per, n - first), lo = new Map<B, number>(), hi = new Map<B, number>();
    spans.forEach((s, i) => {
      const a = (s.start + first * words(i)) * 4, z = a + count * words(i) * 4;
      lo.set(s.b, Math.min(lo.get(s.b) ?? a, a));
      hi.set(s.b, Math.max(hi.get(s.b) ?? z, z));
    });
    const window = new Map<B, number>();
    for (const [b, a] of lo) {
      const base = a - (a % align);
      if (hi.get(b)! - base > maxBinding) {
        throw new RangeError(`operands ${hi.get(b)! - base} bytes apart in one buffer exceed the per-binding limit of ${maxBinding} bytes`);
      }
      window.set(b, base);
    }
    out.push({ first, count, window });
  }
  return out;
}

/** The error of an op that cannot run over a buffer larger than one binding (`why`: what stops it). */
export function tooLarge(op: string, bytes: number, maxBinding: number, why = 'it does not run in chunks'): Error {
  return new RangeError(`${op}: a tensor of ${bytes} bytes exceeds the GPU's per-binding limit (maxStorageBufferBindingSize, ${maxBinding} bytes), ` +
    `and ${why}; elementwise ops over contiguous 32-bit tensors, copies, casts, fills, reads, writes and reductions run over larger tensors`);
}
