/**
 * The index family of the cpu worker (assembly/kernels/index.ts): gather, scatter, cumulative
 * sums and products, sort and one-hot. Each checking kernel returns 1 on a bad index (then
 * `badIndex()` is it), raised as the op's message (`checked`).
 */
import { StorageCode } from '../../dtype.js';
import type { IndexCommand } from '../../ir/commands.js';
import { K, allocRange, at, checked, freeRange, ptr, viewDesc } from './core.js';

/** The index kernels' exports. */
interface IndexKernels {
  gather(dt: number, x: number, idx: number, out: number, p: number, dimStride: number, size: number, wrap: number): number;
  scatter(dt: number, add: number, out: number, idx: number, src: number, p: number, dimStride: number, size: number, value: number): number;
  cumulative(prod: number, dt: number, outDt: number, x: number, out: number, p: number, len: number, dimStride: number, inner: number): void;
  sortWorkspaceBytes(len: number): number;
  sortIndices(dt: number, descending: number, x: number, out: number, outer: number, len: number, inner: number, ws: number): void;
  oneHot(idx: number, out: number, n: number, classes: number): number;
}

export function runIndex(cmd: IndexCommand): void {
  const I = K as unknown as IndexKernels;
  switch (cmd.k) {
    case 'gather':
      return checked(I.gather(cmd.dt, ptr(cmd.x.id), ptr(cmd.idx.id), at(cmd.out, cmd.dt), viewDesc(cmd.shape, [cmd.x, cmd.idx]),
        cmd.dimStride, cmd.check.size, +cmd.check.wrap), cmd.check);
    case 'scatter': {
      if (!cmd.shape.every((s) => s > 0)) return;
      K.copy(cmd.dt, cmd.dt, ptr(cmd.x.id), at(cmd.out, cmd.dt), viewDesc(cmd.shape, [cmd.x]));
      const views = [{ id: cmd.out.id, offset: cmd.out.offset, strides: cmd.dstStrides }, cmd.idx, ...(cmd.src ? [cmd.src] : [])];
      return checked(I.scatter(cmd.dt, +cmd.add, ptr(cmd.out.id), ptr(cmd.idx.id), cmd.src ? ptr(cmd.src.id) : 0, viewDesc(cmd.idxShape, views),
        cmd.dimStride, cmd.check.size, cmd.value), cmd.check);
    }
    case 'cumulative':
      return I.cumulative(+cmd.prod, cmd.dt, cmd.outDt, ptr(cmd.x.id), at(cmd.out, cmd.outDt), viewDesc(cmd.lines, [cmd.x]), cmd.len, cmd.dimStride, cmd.inner);
    case 'sort': {
      if (!cmd.outer || !cmd.len || !cmd.inner) return;
      const bytes = I.sortWorkspaceBytes(cmd.len), ws = allocRange(bytes);
      I.sortIndices(cmd.dt, +cmd.descending, at(cmd.x, cmd.dt), at(cmd.out, StorageCode.I64), cmd.outer, cmd.len, cmd.inner, ws);
      return freeRange(ws, bytes);
    }
    case 'oneHot':
      return checked(I.oneHot(at(cmd.idx, StorageCode.I64), at(cmd.out, StorageCode.I64), cmd.n, cmd.classes), cmd.check);
  }
}
