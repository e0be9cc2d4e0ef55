/**
 * Random draws on the cpu worker: Philox4x32-10 (assembly/kernels/random.ts, four blocks at a
 * time in SIMD), large draws in chunks on the pool's threads.
 */
import { StorageCode } from '../../dtype.js';
import type { RandomCommand } from '../../ir/commands.js';
import { K, at, desc, pool } from './core.js';

/** Random draws with fewer elements than this run on one thread. */
const POOL_MIN_RANDOM = 1 << 16;

export function runRandom(cmd: RandomCommand): void {
  const out = at(cmd.out, StorageCode.F32);
  if (!pool || cmd.n < POOL_MIN_RANDOM) return K.random(cmd.dist, out, cmd.n, 0, ...cmd.key, ...cmd.counter, cmd.a, cmd.b);
  return pool.run('randomPart', [desc([cmd.dist, out, cmd.n, 0, ...cmd.key, ...cmd.counter, cmd.a, cmd.b])], 4 * pool.threads, 0, 0);
}
