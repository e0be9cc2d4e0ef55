/**
 * The elementwise family of the cpu worker: unary and binary ops (assembly/kernels/unary.ts,
 * binary.ts), large ones in chunks on the pool's threads. Fill, arange, copies and `where` are
 * one kernel call each, in the `run` switch (ts/worker/cpu.ts).
 */
import { StorageCode } from '../../dtype.js';
import type { Command, Operand, ViewRef } from '../../ir/commands.js';
import { K, POOL_MIN_MAP, at, pool, ptr, scratchWords, viewDesc } from './core.js';

export function runUnary(cmd: Extract<Command, { k: 'unary' }>): void {
  const a = ptr(cmd.a.id), out = at(cmd.out, cmd.outDt), p = viewDesc(cmd.shape, [cmd.a]);
  if (!pooled(cmd.shape)) return K.unary(cmd.op, cmd.dt, cmd.outDt, a, out, p, ...cmd.s);
  return mapOnPool('unaryPart', [cmd.op, cmd.dt, cmd.outDt, a, out, p], cmd.s);
}

export function runBinary(cmd: Extract<Command, { k: 'binary' }>): void {
  const [a, av] = operand(cmd.a, 0, cmd.shape.length, cmd.dt), [b, bv] = operand(cmd.b, 1, cmd.shape.length, cmd.dt);
  const out = at(cmd.out, cmd.outDt), p = viewDesc(cmd.shape, [av, bv]);
  // Float ops only on the pool: integer division's zero-divisor flag is per thread.
  if (pooled(cmd.shape) && isFloatCode(cmd.dt)) return mapOnPool('binaryPart', [cmd.op, cmd.dt, cmd.outDt, a, b, out, p], [cmd.alpha]);
  // the cpu computes int64 in i64, so `check.overflow` (the GPU's 32-bit fallback) never applies here
  const failed = K.binary(cmd.op, cmd.dt, cmd.outDt, a, b, out, p, cmd.alpha);
  if (failed && cmd.check) throw new Error(cmd.check.message);
}

/** Zero strides of each rank (a scalar operand's view). */
const ZEROS: number[][] = [];
const zeros = (rank: number): number[] => (ZEROS[rank] ??= new Array(rank).fill(0));

/**
 * A kernel operand's address and view: a strided view of a segment, or a scalar's storage bits
 * written to slot `j` at the end of the scratch area (descriptors use its start) and read with
 * stride 0, as a broadcast 0-dim tensor would be. An int64 scalar (`dt`) is its 32-bit value,
 * sign-extended into two words.
 */
function operand(o: Operand, j: number, rank: number, dt: number): [number, ViewRef] {
  if (typeof o !== 'number') return [ptr(o.id), o];
  const w = scratchWords(), slot = 4096 - 4 * (j + 1);
  w[slot] = o;
  if (dt === StorageCode.I64) w[slot + 1] = o < 0 ? -1 : 0;
  return [w.byteOffset + slot * 4, { id: -1, offset: 0, strides: zeros(rank) }];
}

/** Whether an elementwise op over `shape` is large enough for the pool. */
function pooled(shape: number[]): boolean {
  if (!pool) return false;
  let n = 1;
  for (const s of shape) n *= s;
  return n >= POOL_MIN_MAP;
}

/** Storage codes of floating dtypes (f32, f16, bf16). */
const isFloatCode = (dt: number) => dt === StorageCode.F32 || dt === StorageCode.F16 || dt === StorageCode.BF16;

/**
 * Runs an elementwise kernel's `…Part` export on the pool: its i32 arguments (8 words) then its
 * f64 parameters, written after the descriptor in the scratch area (the kernels read them by
 * pointer; the control block carries i32s only). Each thread takes chunks of rows, or of the
 * one row of a contiguous operand (assembly/kernels/iter.ts: chunkOf).
 */
function mapOnPool(job: 'unaryPart' | 'binaryPart', words: number[], params: number[]): void {
  const w = scratchWords(), q = MAP_ARGS;
  for (let i = 0; i < 8; i++) w[q + i] = words[i] ?? 0;
  const f = new Float64Array(K.memory.buffer, w.byteOffset + (q + 8) * 4, params.length);
  f.set(params);
  pool!.run(job, [w.byteOffset + q * 4], 4 * pool!.threads, 0, 0);
}
/** Where `mapOnPool`'s arguments go, in scratch words: past any descriptor (rank ≤ 8, 3 views) and before the scalar slots at the end. */
const MAP_ARGS = 2048;
