/**
 * `torch.amp`: automatic mixed precision. `autocast(deviceType, {dtype, enabled, cacheEnabled}, fn)`
 * (ts/amp/autocast.ts) and `GradScaler` (ts/amp/grad-scaler.ts). `torch.gpu.amp` (also
 * `torch.cuda.amp`) has the same with the device type `gpu` implied, as `torch.cuda.amp` does.
 */
export { autocast, isAutocastEnabled, getAutocastDtype } from './autocast.js';
export type { AutocastOptions, AutocastDeviceType } from './autocast.js';
export { GradScaler } from './grad-scaler.js';
export type { GradScalerOptions, GradScalerState } from './grad-scaler.js';
