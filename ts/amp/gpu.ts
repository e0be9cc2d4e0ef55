/**
 * `torch.gpu.amp` (also `torch.cuda.amp`): PyTorch's `torch.cuda.amp`, whose `autocast` takes no
 * device type (it is the GPU) and whose `GradScaler` scales on the GPU.
 */
import { autocast as autocastOn, type AutocastOptions } from './autocast.js';
import { GradScaler as BaseScaler, type GradScalerOptions } from './grad-scaler.js';

/** `torch.gpu.amp.autocast({dtype = 'float16', enabled, cacheEnabled}?, fn)`: `torch.autocast('gpu', …)`. */
export function autocast<R>(...args: [fn: () => R] | [options: AutocastOptions | undefined, fn: () => R]): R {
  return autocastOn('gpu', ...args);
}

/** `new torch.gpu.amp.GradScaler({initScale, growthFactor, backoffFactor, growthInterval, enabled}?)`: a GradScaler for `gpu`. */
export class GradScaler extends BaseScaler {
  constructor(options?: GradScalerOptions) {
    super('gpu', options);
  }
}
export type { AutocastOptions, GradScalerOptions };
