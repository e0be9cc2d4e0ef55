/**
 * The row family of the cpu worker: softmax, log-softmax, layer norm and their input gradients,
 * a row at a time (assembly/kernels/rownorm.ts), rows on the pool's threads when there are
 * elements enough. Reductions along the last dim are one kernel call (`reduce`) in the `run`
 * switch (ts/worker/cpu.ts).
 */
import { StorageCode } from '../../dtype.js';
import type { Command, Place } from '../../ir/commands.js';
import { K, at, desc, pool } from './core.js';

/** Row normalisations of fewer elements than this run on one thread. */
const POOL_MIN_ROWS = 1 << 15;
const ROW_KINDS = { softmax: 0, log_softmax: 1, layer_norm: 2 } as const;

/** Softmax, log-softmax, layer norm (the `softmax` command) and their input gradients (`rowGrad`). */
export function runRowNorm(cmd: Extract<Command, { k: 'softmax' | 'rowGrad' }>): void {
  const n = cmd.outer * cmd.inner;
  if (n === 0) return;
  const f32 = (p: Place | null | undefined) => (p ? at(p, StorageCode.F32) : 0);
  let kind: number, x: number, g = 0, w = 0, b = 0;
  if (cmd.k === 'softmax') {
    kind = cmd.norm ? ROW_KINDS.layer_norm : cmd.log ? ROW_KINDS.log_softmax : ROW_KINDS.softmax;
    (x = f32(cmd.a)), (w = f32(cmd.norm?.w)), (b = f32(cmd.norm?.b));
  } else {
    kind = 3 + ROW_KINDS[cmd.kind];
    (x = f32(cmd.x)), (g = f32(cmd.g)), (w = f32(cmd.norm?.w));
  }
  const eps = new Int32Array(new Float32Array([cmd.norm?.eps ?? 0]).buffer)[0];
  const p = desc([kind, x, f32(cmd.out), cmd.outer, cmd.inner, w, b, eps, g]);
  if (!pool || n < POOL_MIN_ROWS || cmd.outer < 2) return K.rowNorm(p);
  pool.run('rowNormPart', [p], Math.min(cmd.outer, 4 * pool.threads), 0, 0);
}
