/** The index family of the gpu worker (wgsl/index.ts): gather, scatter, cumulative, sort, one_hot. */
import { StorageCode } from '../../dtype.js';
import { computeType, invocationsFor, valueClass } from '../../../wgsl/dtype.js';
import { IWG, SORT_BLOCK, cumulativeShader, gatherShader, indexParams, oneHotShader, scalarWord, scatterIndexShader, sortGlobalShader,
  sortInitShader, sortLocalShader, sortOutShader, sortParams, wordDt } from '../../../wgsl/index.js';
import type { IndexCommand } from '../../ir/commands.js';
import { createScratch } from '../scratch.js';
import { buf, device, dispatchCode, grid1d, retired, slotsOf } from './core.js';
import { checkCode, deviceErrors, words64 } from './checks.js';
import { runMap, viaScratch } from './map.js';

const count = (shape: number[]) => shape.reduce((a, b) => a * b, 1);

export function runIndex(cmd: IndexCommand): void {
  switch (cmd.k) {
    case 'gather': {
      const n = count(cmd.shape);
      if (!n) return;
      const { bind, slot } = slotsOf(buf(cmd.out.id), [buf(cmd.x.id), buf(cmd.idx.id)]);
      const p = indexParams(n, cmd.shape, cmd.out.offset, [cmd.x, cmd.idx], [cmd.dimStride, cmd.check.size, +cmd.check.wrap, checkCode(cmd.k, cmd.check.message)]);
      dispatchCode(gatherShader(cmd.shape.length, cmd.dt, slot[0], slot[1], bind.length), [...bind, deviceErrors!], p, grid1d(invocationsFor(n, cmd.dt)));
      return;
    }
    case 'scatter': {
      const n = count(cmd.shape), m = count(cmd.idxShape), wdt = wordDt(cmd.dt);
      if (!n) return;
      viaScratch(cmd.out, cmd.dt, n, wdt, (target, offset) => {
        runMap([{ r: cmd.x, dt: cmd.dt }], cmd.shape, target, offset, wdt, 'x0', valueClass(cmd.dt));
        if (!m) return;
        const { bind, slot } = slotsOf(target, [buf(cmd.idx.id), ...(cmd.src ? [buf(cmd.src.id)] : [])]);
        const views = [{ offset, strides: cmd.dstStrides }, cmd.idx, cmd.src ?? { offset: 0, strides: [] }];
        const extra = [cmd.dimStride, cmd.check.size, +cmd.check.wrap, checkCode(cmd.k, cmd.check.message),
          ...(cmd.dt === StorageCode.I64 ? words64(cmd.value) : [scalarWord(cmd.value, computeType(cmd.dt))])];
        dispatchCode(scatterIndexShader(cmd.idxShape.length, cmd.dt, cmd.add, slot[0], cmd.src ? slot[1] : -1, bind.length), [...bind, deviceErrors!],
          indexParams(m, cmd.idxShape, 0, views, extra), grid1d(m));
      });
      return;
    }
    case 'cumulative': {
      const lines = count(cmd.lines);
      if (!lines || !cmd.len) return;
      // integers run in 64 bits into the int64 output; floats in f32 (wgsl/index.ts)
      viaScratch(cmd.out, cmd.outDt, lines * cmd.len, cmd.outDt === StorageCode.I64 ? StorageCode.I64 : wordDt(cmd.dt), (target, offset) => {
        const { bind, slot } = slotsOf(target, [buf(cmd.x.id)]);
        dispatchCode(cumulativeShader(cmd.lines.length, cmd.dt, cmd.prod, slot[0], bind.length), bind,
          indexParams(lines, cmd.lines, offset, [cmd.x], [cmd.len, cmd.dimStride, cmd.inner]), grid1d(lines));
      });
      return;
    }
    case 'sort': {
      const { len, inner } = cmd, n = cmd.outer * len * inner;
      if (!n) return;
      const padded = 2 ** Math.ceil(Math.log2(len)), total = (n / len) * padded, blocks = Math.ceil(total / SORT_BLOCK);
      // int64 keys take two words (a third array of the scratch: wgsl/index.ts)
      const wide = cmd.dt === StorageCode.I64;
      const tmp = createScratch(device, total * (wide ? 12 : 8), GPUBufferUsage.STORAGE, false, 'sort');
      retired.push(tmp);
      const params = (k = 0, j = 0, outOffset = 0) => sortParams(total, padded, len, inner, cmd.x.offset, k, j, outOffset, n);
      const init = slotsOf(tmp, [buf(cmd.x.id)]);
      dispatchCode(sortInitShader(cmd.dt, cmd.descending, init.slot[0], init.bind.length), init.bind, params(), grid1d(total));
      dispatchCode(sortLocalShader(false, wide), [tmp], params(), grid1d(blocks * IWG));
      for (let k = 2 * SORT_BLOCK; k <= padded; k *= 2) {
        for (let j = k / 2; j >= SORT_BLOCK; j /= 2) dispatchCode(sortGlobalShader(wide), [tmp], params(k, j), grid1d(total / 2));
        dispatchCode(sortLocalShader(true, wide), [tmp], params(k), grid1d(blocks * IWG));
      }
      // positions as i32 words, widened into the int64 output
      viaScratch(cmd.out, StorageCode.I64, n, StorageCode.I32, (target, offset) => dispatchCode(sortOutShader(), [target, tmp], params(0, 0, offset), grid1d(n)));
      return;
    }
    case 'oneHot': {
      const n = cmd.n * cmd.classes;
      if (!n) return;
      const { bind, slot } = slotsOf(buf(cmd.out.id), [buf(cmd.idx.id)]);
      const p = new Uint32Array([n, cmd.classes, cmd.idx.offset, cmd.out.offset, checkCode(cmd.k, cmd.check.message)]).buffer;
      dispatchCode(oneHotShader(slot[0], bind.length), [...bind, deviceErrors!], p, grid1d(n));
      return;
    }
  }
}