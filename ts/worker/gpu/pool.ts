/**
 * Max and average pooling and their gradients on a GPU (the `maxPool`, `maxPoolGrad`, `avgPool`
 * and `avgPoolGrad` commands; kernels in wgsl/pool.ts): one dispatch each.
 */
import { POOL_PARAMS, POOL_WG, avgPoolGradShader, avgPoolShader, maxPoolGradShader, maxPoolShader, maxPoolTileGradShader, poolKey } from '../../../wgsl/pool.js';
import type { AvgPoolCommand, PoolCommand } from '../../ir/commands.js';
import { buf, dispatch, grid1d, slotsOf } from './core.js';

/**
 * Runs a pooling command: a `maxPool` (an invocation per output) or a `maxPoolGrad` (an invocation per window where
 * the windows tile the input, else per input element); average pooling in `runAvgPool`.
 */
export function runPool(cmd: PoolCommand): void {
  if (cmd.k === 'avgPool' || cmd.k === 'avgPoolGrad') return runAvgPool(cmd);
  const [H, W] = cmd.size, [oh, ow] = cmd.outSize, [kh, kw] = cmd.kernel;
  const tiles = cmd.k === 'maxPoolGrad' && cmd.stride[0] === kh && cmd.stride[1] === kw && cmd.dilation.every((d) => d === 1) &&
    cmd.padding.every((p) => p === 0) && oh * kh === H && ow * kw === W;
  const n = cmd.k === 'maxPool' || tiles ? cmd.planes * oh * ow : cmd.planes * H * W;
  if (!n) return;
  const p = new Uint32Array(POOL_PARAMS);
  p.set([n, H, W, oh, ow, ...cmd.kernel, ...cmd.stride, ...cmd.padding, ...cmd.dilation]);
  if (cmd.k === 'maxPool') {
    const { bind, slot } = slotsOf(buf(cmd.values.id), [buf(cmd.x.id), buf(cmd.indices.id)]);
    p.set([cmd.x.offset, cmd.indices.offset, cmd.values.offset], 13);
    dispatch(poolKey('forward', slot[0], slot[1], bind.length), () => maxPoolShader(slot[0], slot[1], bind.length), bind, p.buffer, grid1d(n, POOL_WG));
  } else {
    const { bind, slot } = slotsOf(buf(cmd.grad.id), [buf(cmd.g.id), buf(cmd.indices.id)]);
    p.set([cmd.g.offset, cmd.indices.offset, cmd.grad.offset], 13);
    const shader = tiles ? maxPoolTileGradShader : maxPoolGradShader;
    dispatch(poolKey(tiles ? 'tiles' : 'gather', slot[0], slot[1], bind.length), () => shader(slot[0], slot[1], bind.length), bind, p.buffer, grid1d(n, POOL_WG));
  }
}

/** Runs an `avgPool` (an invocation per output) or an `avgPoolGrad` (an invocation per input element). */
function runAvgPool(cmd: AvgPoolCommand): void {
  const [H, W] = cmd.size, [oh, ow] = cmd.outSize;
  const n = cmd.k === 'avgPool' ? cmd.planes * oh * ow : cmd.planes * H * W;
  if (!n) return;
  const p = new Uint32Array(POOL_PARAMS);
  p.set([n, H, W, oh, ow, ...cmd.kernel, ...cmd.stride, ...cmd.padding, +cmd.includePad]);
  new Float32Array(p.buffer, 12 * 4, 1)[0] = cmd.divisor;
  const [src, dst] = cmd.k === 'avgPool' ? [cmd.x, cmd.values] : [cmd.g, cmd.grad];
  const { bind, slot } = slotsOf(buf(dst.id), [buf(src.id)]);
  p[13] = src.offset;
  p[15] = dst.offset;
  const grad = cmd.k === 'avgPoolGrad';
  dispatch(poolKey(grad ? 'avgGrad' : 'avg', slot[0], -1, bind.length), () => (grad ? avgPoolGradShader : avgPoolShader)(slot[0], bind.length), bind, p.buffer,
    grid1d(n, POOL_WG));
}
