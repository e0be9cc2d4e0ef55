/** Random numbers of the gpu worker: Philox blocks (wgsl/random.ts). */
import { RANDOM_PARAM_WORDS, RANDOM_WG, randomBlocks, randomShader } from '../../../wgsl/random.js';
import type { RandomCommand } from '../../ir/commands.js';
import { chunks } from '../split.js';
import { buf, dispatchAt, grid1d, maxBinding, paramAlign, paramWords, reserveParams, setWindow } from './core.js';

/** Philox numbers (wgsl/random.ts) into a contiguous 32-bit output; in chunks over a buffer larger than one binding. */
export function runRandom(cmd: RandomCommand): void {
  if (!cmd.n) return;
  const out = buf(cmd.out.id);
  const one = (first: number, n: number, offset: number) => {
    const at = reserveParams(RANDOM_PARAM_WORDS);
    paramWords.set([n, offset, first, cmd.dist, ...cmd.key, ...cmd.counter, cmd.a, cmd.b, 0], at);
    dispatchAt('random', randomShader, [out], at, RANDOM_PARAM_WORDS, grid1d(randomBlocks(first, n), RANDOM_WG));
  };
  if (out.size <= maxBinding) return one(0, cmd.n, cmd.out.offset);
  for (const c of chunks(cmd.n, [{ b: out, start: cmd.out.offset }], maxBinding, paramAlign)) {
    setWindow(c.window);
    try {
      one(c.first, c.count, cmd.out.offset + c.first - c.window.get(out)! / 4);
    } finally {
      setWindow(null);
    }
  }
}