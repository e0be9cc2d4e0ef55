/**
 * Max and average pooling and their gradients on the cpu worker (assembly/kernels/pool.ts; each
 * descriptor is its note's), a plane at a time: on the pool's threads when the planes are large
 * enough to pay for waking them.
 */
import { StorageCode } from '../../dtype.js';
import type { AvgPoolCommand, PoolCommand } from '../../ir/commands.js';
import { K, POOL_MIN_MAP, at, desc, f32Word, pool } from './core.js';

export function runMaxPool(cmd: Exclude<PoolCommand, AvgPoolCommand>): void {
  const [H, W] = cmd.size, [oh, ow] = cmd.outSize, n = cmd.planes * H * W;
  if (!cmd.planes || !oh || !ow) return;
  const p = desc([cmd.planes, H, W, oh, ow, ...cmd.kernel, ...cmd.stride, ...cmd.padding, ...cmd.dilation]);
  const args = cmd.k === 'maxPool'
    ? [at(cmd.x, StorageCode.F32), at(cmd.values, StorageCode.F32), at(cmd.indices, StorageCode.I64), p]
    : [at(cmd.g, StorageCode.F32), at(cmd.indices, StorageCode.I64), at(cmd.grad, StorageCode.F32), p];
  if (pool && n >= POOL_MIN_MAP && cmd.planes > 1) return pool.run(cmd.k === 'maxPool' ? 'maxPoolPart' : 'maxPoolGradPart', args, Math.min(cmd.planes, 4 * pool.threads), 0, 0);
  if (cmd.k === 'maxPool') K.maxPool(args[0], args[1], args[2], p);
  else K.maxPoolGrad(args[0], args[1], args[2], p);
}

export function runAvgPool(cmd: AvgPoolCommand): void {
  const [H, W] = cmd.size, [oh, ow] = cmd.outSize, n = cmd.planes * H * W;
  if (!cmd.planes || !oh || !ow) return;
  const p = desc([cmd.planes, H, W, oh, ow, ...cmd.kernel, ...cmd.stride, ...cmd.padding, +cmd.includePad, f32Word(cmd.divisor)]);
  const grad = cmd.k === 'avgPoolGrad' ? 1 : 0;
  const [src, dst] = cmd.k === 'avgPool' ? [at(cmd.x, StorageCode.F32), at(cmd.values, StorageCode.F32)] : [at(cmd.g, StorageCode.F32), at(cmd.grad, StorageCode.F32)];
  if (pool && n >= POOL_MIN_MAP && cmd.planes > 1) return pool.run('avgPoolPart', [src, dst, p, grad], Math.min(cmd.planes, 4 * pool.threads), 0, 0);
  K.avgPool(src, dst, p, grad);
}
