/**
 * `torch.gpu`: PyTorch's `torch.cuda` device API, for WebGPU devices.
 * Discovery is asynchronous (`await torch.gpu.init()`); see `ts/device.ts`.
 */
export {
  init, configure, isAvailable, deviceCount, currentDevice, setDevice, withDevice,
  getDeviceName, getDeviceProperties, synchronize,
} from './device.js';
