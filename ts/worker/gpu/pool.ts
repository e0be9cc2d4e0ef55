/** Max pooling and its gradient on a GPU (the `maxPool` and `maxPoolGrad` commands; kernels in wgsl/pool.ts): one dispatch each. */
import { POOL_PARAMS, POOL_WG, maxPoolGradShader, maxPoolShader, maxPoolTileGradShader, poolKey } from '../../../wgsl/pool.js';
import type { PoolCommand } from '../protocol.js';
import { buf, dispatch, grid1d, slotsOf } from './core.js';

/**
 * Runs a `maxPool` (an invocation per output) or a `maxPoolGrad`: an invocation per window where
 * the windows tile the input, else per input element.
 */
export function runMaxPool(cmd: PoolCommand): void {
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
