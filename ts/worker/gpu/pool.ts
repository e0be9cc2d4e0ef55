/** Max pooling and its gradient on a GPU (the `maxPool` and `maxPoolGrad` commands; kernels in wgsl/pool.ts): one dispatch each. */
import { POOL_PARAMS, POOL_WG, maxPoolGradShader, maxPoolShader, poolKey } from '../../../wgsl/pool.js';
import type { PoolCommand } from '../protocol.js';
import { buf, dispatch, grid1d, slotsOf } from './core.js';

/** Runs a `maxPool` (an invocation per output) or a `maxPoolGrad` (an invocation per input element). */
export function runMaxPool(cmd: PoolCommand): void {
  const [H, W] = cmd.size, [oh, ow] = cmd.outSize;
  const n = cmd.k === 'maxPool' ? cmd.planes * oh * ow : cmd.planes * H * W;
  if (!n) return;
  const p = new Uint32Array(POOL_PARAMS);
  p.set([n, H, W, oh, ow, ...cmd.kernel, ...cmd.stride, ...cmd.padding, ...cmd.dilation]);
  if (cmd.k === 'maxPool') {
    const { bind, slot } = slotsOf(buf(cmd.values.id), [buf(cmd.x.id), buf(cmd.indices.id)]);
    p.set([cmd.x.offset, cmd.indices.offset, cmd.values.offset], 13);
    dispatch(poolKey(false, slot[0], slot[1], bind.length), () => maxPoolShader(slot[0], slot[1], bind.length), bind, p.buffer, grid1d(n, POOL_WG));
  } else {
    const { bind, slot } = slotsOf(buf(cmd.grad.id), [buf(cmd.g.id), buf(cmd.indices.id)]);
    p.set([cmd.g.offset, cmd.indices.offset, cmd.grad.offset], 13);
    dispatch(poolKey(true, slot[0], slot[1], bind.length), () => maxPoolGradShader(slot[0], slot[1], bind.length), bind, p.buffer, grid1d(n, POOL_WG));
  }
}
