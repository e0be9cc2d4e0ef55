/**
 * The habits suites' setup: four logical GPU devices (the seeds' examples use up to `cuda:3`),
 * the leak check after each test and `torch.shutdown()` at the end. GPU suites never skip under CI.
 *
 * test/habits/ runs the seeds' examples (../shared/seeds/, i.e. /work/shared/seeds) translated line
 * by line: snake_case → camelCase, `torch.cuda` → `torch.gpu`, `'cuda'` device strings as they are
 * (webtorch accepts them), `await` at the sync points, sizes as arrays (`torch.zeros([4, 3])`),
 * `with` blocks as callbacks, `a + b` as `a.add(b)`. Issue 34's names (checkpointing,
 * `torch.cuda.OutOfMemoryError`, TF32, `torch.multiprocessing`, peer access, `net[0]`, `newOnes`,
 * `multiProcessorCount`, DataLoader workers) are in checkpoint.test.ts and seeds-last-names.test.ts. (CUDA graphs are in graphs.test.ts.) (RNG state is in rng.test.ts;
 * streams, events and pinned memory in streams.test.ts; the profiler and NVTX in profiler.test.ts;
 * AMP in amp.test.ts; DataParallel, model parallelism and DDP in parallel.test.ts.) `torch.cuda` is `torch.gpu`, so the
 * seeds' `torch.cuda.X` stays as it is where a test shows it (cuda-semantics.test.ts).
 */
import { logicalGpuSuite } from '../devices.js';

export const GPUS = 4;

export function habitsSetup(): string[] {
  return logicalGpuSuite(GPUS, 'GPU habits');
}
