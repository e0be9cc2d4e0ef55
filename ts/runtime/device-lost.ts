/**
 * `DeviceLostError`: a WebGPU device was lost (the browser's GPU process reset, a driver update,
 * `GPUDevice.destroy()`), and with it every buffer and tensor on it.
 *
 * Why it surfaces where it does: like CUDA's sticky errors, a loss is asynchronous. The worker
 * learns of it from `GPUDevice.lost` and answers every later read and sync with this error; the
 * calling thread raises it at the next sync point (`item`, `data`, `synchronize`, …), and from
 * then on at every op call on the device, before anything is allocated or queued, so that a
 * training loop stops at once and leaks nothing. The other devices go on: each has its own
 * worker and GPUDevice. `await torch.gpu.init()` brings a lost device back with a fresh worker,
 * GPUDevice and allocator; tensors made before stay on the lost device and raise when used.
 */

/** Raised when a GPU device was lost: names the device and the browser's (or Dawn's) reason. */
export class DeviceLostError extends Error {
  /**
   * @param device the device's name (`'gpu:0'`)
   * @param reason `GPUDeviceLostInfo.reason`: `'destroyed'` or `'unknown'`
   * @param detail `GPUDeviceLostInfo.message`, or why the tensor cannot be used
   */
  constructor(readonly device: string, readonly reason: string, readonly detail: string) {
    super(`${device} was lost (reason: ${reason}${detail ? `: ${detail}` : ''}); its tensors are gone. ` +
      `await torch.gpu.init() brings the device back with a fresh worker and allocator; tensors made before stay unusable`);
    this.name = 'DeviceLostError';
  }
}

/** What the worker posts on its loss port, and reads back from an error that crossed the call port. */
export interface LostInfo {
  reason: string;
  message: string;
}

/**
 * The worker's message for a lost device, readable where it surfaces as another device's error
 * (a copy from the lost device fails on the receiving one), and parsed back by `lostInfoOf`.
 */
export function lostMessage(device: string, info: LostInfo): string {
  return `${device} was lost (reason: ${info.reason}${info.message ? `: ${info.message}` : ''})`;
}

/** Parses a `DeviceLostError` that crossed the call port (its message is `lostMessage`'s). */
export function lostInfoOf(e: unknown): LostInfo | null {
  if (!(e instanceof Error) || e.name !== 'DeviceLostError') return null;
  const m = /^\S+ was lost \(reason: ([^:)]*)(?:: ([\s\S]*))?\)$/.exec(e.message);
  return m ? { reason: m[1], message: m[2] ?? '' } : null;
}
