/**
 * `foreachNorm`, `foreachMul` and `foreachClamp` on the cpu worker (the kernels are assembly/kernels/foreach.ts):
 * one call over a table of (address, count) per tensor in the scratch area, or one per part where
 * the table outgrows it.
 */
import { StorageCode } from '../../dtype.js';
import type { ForeachClampCommand, ForeachMulCommand, ForeachNormCommand } from '../../ir/commands.js';
import { K, at, desc } from './core.js';

/** Tensors per call: the scratch area holds 4096 words, two a tensor. */
const PER_CALL = 2048;

/** The kernel's code for a norm of order `ord` (0: any p, 1, 2, 3: Infinity). */
const kindOf = (ord: number): number => (ord === Infinity ? 3 : ord === 1 ? 1 : ord === 2 ? 2 : 0);

/** Writes the table of `tensors[from, from + PER_CALL)` and returns its address and length. */
function table(tensors: { at: { id: number; offset: number }; n: number }[], from: number): [number, number] {
  const part = tensors.slice(from, from + PER_CALL), words: number[] = [];
  for (const t of part) words.push(t.n ? at(t.at, StorageCode.F32) : 0, t.n);
  return [desc(words), part.length];
}

/** Tensors per norm call: three words a tensor (address, count, storage code). */
const NORM_PER_CALL = 1365;

export function runForeachNorm(cmd: ForeachNormCommand): void {
  const out = cmd.tensors.length ? at(cmd.out, StorageCode.F32) : 0;
  for (let i = 0; i < cmd.tensors.length; i += NORM_PER_CALL) {
    const part = cmd.tensors.slice(i, i + NORM_PER_CALL), words: number[] = [];
    for (const t of part) words.push(t.n ? at(t.at, t.dt) : 0, t.n, t.dt);
    K.foreachNorm(desc(words), part.length, kindOf(cmd.ord), cmd.ord, out + 4 * i);
  }
}

export function runForeachMul(cmd: ForeachMulCommand): void {
  const s = at(cmd.scalar, StorageCode.F32);
  for (let i = 0; i < cmd.tensors.length; i += PER_CALL) {
    const [p, n] = table(cmd.tensors, i);
    K.foreachMul(p, n, s);
  }
}

export function runForeachClamp(cmd: ForeachClampCommand): void {
  for (let i = 0; i < cmd.tensors.length; i += PER_CALL) {
    const [p, n] = table(cmd.tensors, i);
    K.foreachClamp(p, n, cmd.lo, cmd.hi);
  }
}
