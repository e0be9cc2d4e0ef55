/**
 * The window family of the cpu worker: conv windows and their fold (assembly/kernels/window.ts:
 * im2col with the padding inside, and col2im a plane at a time), and the float32 convolution and
 * its gradients as one kernel each way (assembly/kernels/conv.ts); each on the pool's threads
 * when there is work enough.
 */
import { StorageCode } from '../../dtype.js';
import type { Command, ConvCommand, Place } from '../../ir/commands.js';
import { releaseScratch, reserveScratch } from '../scratch.js';
import { K, POOL_MIN_MACS, POOL_MIN_MAP, allocRange, at, desc, freeRange, pool, ptr } from './core.js';

/** The windows of a padded, strided, dilated input (im2col; `kernelLast` picks their order). */
export function runWindows(cmd: Extract<Command, { k: 'windows' }>): void {
  const [N, C] = cmd.shape, [kh, kw] = cmd.kernel, [oh, ow] = cmd.size;
  const n = N * C * kh * kw * oh * ow;
  if (!n) return;
  const value = new Int32Array(new Float32Array([cmd.value]).buffer)[0];
  const p = desc([...cmd.shape, kh, kw, oh, ow, ...cmd.stride, ...cmd.dilation, ...cmd.padding, cmd.x.offset, ...cmd.x.strides, +cmd.kernelLast, value]);
  const x = ptr(cmd.x.id), out = at(cmd.out, StorageCode.F32);
  if (!pool || n < POOL_MIN_MAP) return K.windows(x, out, p);
  return pool.run('windowsPart', [x, out, p], 4 * pool.threads, 0, 0);
}

/** The windows' gradient: windows summed back into their planes (col2im), a plane at a time. */
export function runFoldWindows(cmd: Extract<Command, { k: 'foldWindows' }>): void {
  const [N, C, H, W] = cmd.shape, n = N * C * H * W;
  if (!n) return;
  const p = desc([...cmd.shape, ...cmd.kernel, ...cmd.size, ...cmd.stride, ...cmd.dilation, cmd.g.offset, ...cmd.g.strides]);
  const g = ptr(cmd.g.id), out = at(cmd.out, StorageCode.F32);
  if (!pool || n < POOL_MIN_MAP || N * C < 2) return K.foldWindows(g, out, p);
  return pool.run('foldWindowsPart', [g, out, p], Math.min(N * C, 4 * pool.threads), 0, 0);
}

/**
 * A convolution or its gradients (assembly/kernels/conv.ts), images split across the pool when
 * there are products enough. Each thread's workspace holds an image's windows; the gradient's
 * parts each sum dw and db over their images into scratch, added up in part order afterwards.
 */
export function runConv(cmd: ConvCommand): void {
  const [N, C] = cmd.shape, [kh, kw] = cmd.kernel, [oh, ow] = cmd.size, { cout, groups } = cmd;
  if (!N || !cout || !oh || !ow) return;
  const grad = cmd.k === 'convGrad';
  const p = desc([...cmd.shape, kh, kw, oh, ow, ...cmd.stride, ...cmd.dilation, ...cmd.padding, cmd.x.offset, ...cmd.x.strides, 0, 0, cout, groups]);
  const wn = cout * (C / groups) * kh * kw;
  const products = grad ? (cmd.dx ? 1 : 0) + (cmd.dw ? 1 : 0) : 1;
  const threads = pool && N >= 2 && N * oh * ow * wn * products >= POOL_MIN_MACS ? Math.min(pool.threads, N) : 1;
  const wsPart = K.convWorkspaceBytes(p, +grad), wsBytes = wsPart * threads;
  const f32 = (q: Place | null) => (q ? at(q, StorageCode.F32) : 0);
  const x = ptr(cmd.x.id), w = f32(cmd.w), saved = f32(cmd.saved);
  if (!grad) {
    reserveScratch(wsBytes, 'conv');
    const ws = allocRange(wsBytes), out = f32(cmd.out), b = f32(cmd.b);
    if (threads > 1) pool!.run('convPart', [x, w, b, out, p, saved], Math.min(N, 4 * threads), ws, wsPart);
    else K.conv(x, w, b, out, p, saved, ws);
    freeRange(ws, wsBytes);
    releaseScratch(wsBytes);
    return;
  }
  // one part per thread (threads ≤ N: each has an image), its sums in scratch
  const sums = threads > 1 ? threads * ((cmd.dw ? wn : 0) + (cmd.db ? cout : 0)) * 4 : 0;
  reserveScratch(wsBytes + sums, 'conv');
  const ws = allocRange(wsBytes), gy = f32(cmd.gy), dx = f32(cmd.dx), dw = f32(cmd.dw), db = f32(cmd.db);
  if (threads > 1) {
    const part = sums ? allocRange(sums) : 0, dwParts = dw ? part : 0, dbParts = db ? part + (dw ? threads * wn * 4 : 0) : 0;
    pool!.run('convGradPart', [x, w, gy, dx, dwParts, dbParts, p, saved], threads, ws, wsPart);
    if (dw) K.convGradSum(dwParts, dw, wn, threads);
    if (db) K.convGradSum(dbParts, db, cout, threads);
    if (part) freeRange(part, sums);
  } else {
    K.convGrad(x, w, gy, dx, dw, db, p, saved, ws);
  }
  freeRange(ws, wsBytes);
  releaseScratch(wsBytes + sums);
}
