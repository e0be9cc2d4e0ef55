/** The fused negative log likelihood and its gradient on the cpu worker (assembly/kernels/loss.ts; the descriptor is its note's). */
import { StorageCode } from '../../dtype.js';
import type { NllCommand, Place } from '../../ir/commands.js';
import { K, at, checked, desc, f32Word } from './core.js';

const REDUCTIONS = { none: 0, sum: 1, mean: 2 } as const;

export function runNll(cmd: NllCommand): void {
  const rows = cmd.outer * cmd.inner;
  if (!(rows && cmd.classes) && (cmd.k === 'nllGrad' || cmd.reduction === 'none')) return;
  const f32 = (p: Place | null) => (p ? at(p, StorageCode.F32) : 0);
  const ignore = BigInt.asUintN(64, BigInt(cmd.ignore));
  const words = [cmd.k === 'nll' ? f32(cmd.x) : 0, at(cmd.target, StorageCode.I64), f32(cmd.w), f32(cmd.out), cmd.outer, cmd.classes, cmd.inner,
    Number(ignore & 0xffffffffn) | 0, Number(ignore >> 32n) | 0, REDUCTIONS[cmd.reduction], f32Word(1 - cmd.eps), f32Word(cmd.classes ? cmd.eps / cmd.classes : 0)];
  words.push(cmd.k === 'nllGrad' ? f32(cmd.g) : 0, f32(cmd.total));
  if (cmd.k === 'nll') return checked(K.nll(desc(words)), cmd.check);
  K.nllGrad(desc(words));
}
