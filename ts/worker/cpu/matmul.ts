/**
 * Matrix products on the cpu worker (assembly/kernels/matmul.ts): batched, strided, f32 or 16-bit
 * floats through f32 copies; large products in chunks on the pool's threads, each with its own
 * workspace slice; an f32 product whose columns fit the micro-kernel's strips badly is computed
 * transposed (`swapsOperands`).
 */
import { StorageCode } from '../../dtype.js';
import type { Command, ViewRef } from '../../ir/commands.js';
import { releaseScratch, reserveScratch } from '../scratch.js';
import { K, POOL_MIN_MACS, allocRange, at, desc, freeRange, pool, ptr, viewDesc } from './core.js';

type MatmulCommand = Extract<Command, { k: 'matmul' }>;

export function runMatmul(cmd: MatmulCommand): void {
  if (cmd.dt === StorageCode.F32 && swapsOperands(cmd.m, cmd.n, cmd.kk)) return runMatmulTransposed(cmd);
  const p = [cmd.batch, cmd.m, cmd.n, cmd.kk, ...cmd.aStrides, cmd.a.offset, ...cmd.bStrides, cmd.b.offset];
  // Large products run on the pool's threads in chunks (up to 4 per thread, of at least 2^18
  // multiply-adds), each thread with its own workspace slice.
  const macs = cmd.batch * cmd.m * cmd.n * cmd.kk, threads = pool && macs >= POOL_MIN_MACS ? pool.threads : 1;
  const chunks = Math.min(4 * threads, Math.max(threads, Math.floor(macs / 2 ** 18)));
  const wsPart = K.matmulWorkspaceBytes(cmd.m, cmd.n, cmd.kk), wsBytes = wsPart * threads;
  const extent = (v: ViewRef, s: number[], rows: number, cols: number) => v.offset + (cmd.batch - 1) * s[0] + (rows - 1) * s[1] + (cols - 1) * s[2] + 1;
  const aN = extent(cmd.a, cmd.aStrides, cmd.m, cmd.kk), bN = extent(cmd.b, cmd.bStrides, cmd.kk, cmd.n), n = cmd.batch * cmd.m * cmd.n;
  // The workspace and the 16-bit path's f32 copies are the device's scratch (ts/worker/scratch.ts).
  const scratch = wsBytes + (cmd.dt === StorageCode.F32 ? 0 : (n + aN + bN) * 4);
  reserveScratch(scratch, 'matmul');
  const ws = wsBytes > 0 ? allocRange(wsBytes) : 0;
  const out = at(cmd.out, cmd.dt), a = ptr(cmd.a.id), b = ptr(cmd.b.id);
  const f32 = (a: number, b: number, out: number) =>
    threads > 1 ? pool!.run('matmulPart', [StorageCode.F32, a, b, out, desc(p)], chunks, ws, wsPart) : K.matmul(StorageCode.F32, a, b, out, desc(p), ws);
  if (cmd.dt === StorageCode.F32) f32(a, b, out);
  else {
    // 16-bit floats: multiply in f32, then round into the output once.
    const tmp = allocRange(n * 4);
    const conv = (src: number, dt: number, count: number) => {
      const dst = allocRange(count * 4);
      K.copy(dt, StorageCode.F32, src, dst, desc([1, count, count, 1, 0]));
      return dst;
    };
    const a32 = conv(a, cmd.dt, aN), b32 = conv(b, cmd.dt, bN);
    f32(a32, b32, tmp);
    K.copy(StorageCode.F32, cmd.dt, tmp, out, desc([1, n, n, 1, 0]));
    freeRange(a32, aN * 4);
    freeRange(b32, bN * 4);
    freeRange(tmp, n * 4);
  }
  if (ws) freeRange(ws, wsBytes);
  releaseScratch(scratch);
}

/**
 * The micro-kernel's work for an M×N output: 8-column strips (a ragged last strip costs a whole
 * one) times 4-row tiles, a leftover row costing about half a tile (assembly/kernels/matmul.ts).
 */
const tileCost = (m: number, n: number) => Math.ceil(n / 8) * (Math.floor(m / 4) + 0.5 * (m % 4));

/**
 * Whether an f32 product is cheaper as its transpose, Cᵀ = Bᵀ·Aᵀ, then copied into place: when
 * N's strips are mostly padding and M fits them better (a 3×3 convolution's weight gradient,
 * 8 channels × 9 taps: 2 strips for 9 columns, 1 for 8: 284 → 144 µs in the small CNN's step).
 * The same sums in the same k order, so the same bits. K of at least 16 repays the transposing
 * copy (M·N elements). A 10-way linear layer's x·Wᵀ (16 rows: 0.75 of the cost) measured no
 * gain, so only clearer cases swap.
 */
function swapsOperands(m: number, n: number, k: number): boolean {
  return k >= 16 && tileCost(n, m) < 0.7 * tileCost(m, n);
}

/** An f32 product computed as Cᵀ = Bᵀ·Aᵀ into scratch, then copied into out transposed (see `swapsOperands`). */
function runMatmulTransposed(cmd: MatmulCommand): void {
  const { batch, m, n, kk } = cmd, a = cmd.aStrides, b = cmd.bStrides, count = batch * m * n;
  const macs = count * kk, threads = pool && macs >= POOL_MIN_MACS ? pool.threads : 1;
  const chunks = Math.min(4 * threads, Math.max(threads, Math.floor(macs / 2 ** 18)));
  const wsPart = K.matmulWorkspaceBytes(n, m, kk), wsBytes = wsPart * threads;
  const scratch = wsBytes + count * 4;
  reserveScratch(scratch, 'matmul');
  const ws = wsBytes > 0 ? allocRange(wsBytes) : 0, tmp = allocRange(count * 4);
  const p = desc([batch, n, m, kk, b[0], b[2], b[1], cmd.b.offset, a[0], a[2], a[1], cmd.a.offset]);
  const A = ptr(cmd.b.id), B = ptr(cmd.a.id);
  if (threads > 1) pool!.run('matmulPart', [StorageCode.F32, A, B, tmp, p], chunks, ws, wsPart);
  else K.matmul(StorageCode.F32, A, B, tmp, p, ws);
  // tmp is [batch, n, m]: read it as [batch, m, n]
  K.copy(StorageCode.F32, StorageCode.F32, tmp, at(cmd.out, StorageCode.F32), viewDesc([batch, m, n], [{ id: -1, offset: 0, strides: [m * n, 1, m] }]));
  freeRange(tmp, count * 4);
  if (ws) freeRange(ws, wsBytes);
  releaseScratch(scratch);
}
