/**
 * GradScaler's fused check on the cpu worker (the `ampUnscale` command; the kernel is
 * assembly/kernels/amp.ts): one call for every gradient, its table of (address, dtype, count) in
 * the scratch area.
 */
import { StorageCode } from '../../dtype.js';
import type { AmpUnscaleCommand } from '../../ir/commands.js';
import { K, at, desc } from './core.js';

export function runAmpUnscale(cmd: AmpUnscaleCommand): void {
  const words: number[] = [];
  for (const g of cmd.grads) words.push(at(g.at, g.dt), g.dt, g.n);
  // the table may outgrow the scratch area's 4096 words (1365 gradients): then in parts
  for (let i = 0; i < words.length; i += 4095) K.ampUnscale(desc(words.slice(i, i + 4095)), Math.min(words.length - i, 4095) / 3, at(cmd.invScale, StorageCode.F32), at(cmd.found, StorageCode.F32));
}
