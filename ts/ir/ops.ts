/**
 * The op codes that IR commands carry (ts/ir/commands.ts): what a `reduce` or a `random` command
 * computes. The facade's ops choose them; every backend's kernels (wgsl/, assembly/kernels/)
 * read them, so the numbering is shared with the AssemblyScript side.
 */

/** Reduction op codes of the `reduce` command, shared with the AssemblyScript kernels. */
export enum ReduceOp { Sum = 0, Prod = 1, Max = 2, Min = 3, ArgMax = 4, ArgMin = 5, All = 6, Any = 7, Mean = 8, SumSq = 9 }

/** Distribution codes of the `random` command (the AssemblyScript kernel's too): wgsl/random.ts and assembly/kernels/random.ts. */
export const enum Dist {
  /** The raw words (Philox's output; the known-answer tests). */
  Bits = 0,
  /** from + u · scale, u in [0, 1) (a = from, b = scale, f32 bits). */
  Uniform = 1,
  /** mean + z · std, z standard normal (a = mean, b = std, f32 bits). */
  Normal = 2,
  /** low + ⌊w · range / 2^32⌋ (a = low, b = range, 0 meaning 2^32). */
  Int = 3,
  /** u < p ? value : 0 (a = p, b = value, f32 bits). */
  Bernoulli = 4,
}
