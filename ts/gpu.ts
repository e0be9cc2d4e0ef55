/**
 * `torch.gpu`: PyTorch's `torch.cuda` device and memory API, for WebGPU devices.
 * Discovery is asynchronous (`await torch.gpu.init()`); see `ts/device.ts`. The memory
 * functions take any device (`'cpu'` too) and default to the current GPU, as in PyTorch.
 */
import { configure as configureDevices } from './device.js';
import { setGpuMemory } from './runtime/memory.js';

export {
  init, isAvailable, deviceCount, currentDevice, setDevice, withDevice,
  getDeviceName, getDeviceProperties, synchronize,
} from './device.js';
export {
  memoryAllocated, maxMemoryAllocated, memoryReserved, maxMemoryReserved, memoryStats, memorySummary,
  memorySnapshot, emptyCache, resetPeakMemoryStats, resetAccumulatedMemoryStats, setPerProcessMemoryFraction,
  cachingAllocatorAlloc, cachingAllocatorDelete,
} from './runtime/memory.js';
export type { RawBlock } from './runtime/memory.js';
export { Stream, currentStream, defaultStream, setStream, stream, withStream } from './runtime/streams.js';
export { Event } from './runtime/events.js';

/**
 * Configures the GPU runtime before first use: `devices` logical GPU devices (default one per
 * adapter), and each device's memory budget in bytes (default 8 GiB; WebGPU cannot report it).
 */
export function configure(options: { devices?: number; memory?: number }): void {
  configureDevices(options);
  if (options.memory !== undefined) setGpuMemory(options.memory);
}
