/**
 * `torch.gpu` (also `torch.cuda`): PyTorch's `torch.cuda` device and memory API, for WebGPU
 * devices. Discovery is asynchronous and starts at the first GPU call; GPU work queues behind it
 * (`await torch.gpu.init()` waits for it); see `ts/device.ts`. The memory functions take any
 * device (`'cpu'` too) and default to the current GPU, as in PyTorch. Every function that takes a
 * device takes it positionally or as a keyword (`memorySummary({device: 0})`).
 */
import { configure as configureDevices } from './device.js';
import { legacyType } from './legacy.js';
import { checkOptions } from './args.js';
import { setGpuMemory } from './runtime/memory.js';

export {
  gpuInit as init, isAvailable, deviceCount, currentDevice, setDevice, withDevice, synchronize,
} from './device.js';
export { getDeviceName, getDeviceProperties, getDeviceCapability, getArchList } from './properties.js';
export type { DeviceProperties, GpuArgs } from './properties.js';
export {
  memoryAllocated, maxMemoryAllocated, memoryReserved, maxMemoryReserved, memoryStats, memorySummary,
  memorySnapshot, emptyCache, resetPeakMemoryStats, resetAccumulatedMemoryStats, setPerProcessMemoryFraction,
  cachingAllocatorAlloc, cachingAllocatorDelete,
} from './runtime/memory.js';
export type { RawBlock } from './runtime/memory.js';
// The GPUs' random number generators (ts/rng.ts).
export {
  gpuManualSeed as manualSeed, manualSeedAll, gpuSeed as seed, gpuSeedAll as seedAll, gpuInitialSeed as initialSeed,
  gpuGetRngState as getRngState, gpuSetRngState as setRngState, gpuGetRngStateAll as getRngStateAll, gpuSetRngStateAll as setRngStateAll,
} from './rng.js';
export { Stream, currentStream, defaultStream, setStream, stream, withStream } from './runtime/streams.js';
export { Event } from './runtime/streams.js';
export { DeviceLostError } from './runtime/device-lost.js';
/** `torch.cuda.OutOfMemoryError`: the same class as `torch.OutOfMemoryError` (ts/memory/errors.ts). */
export { OutOfMemoryError } from './memory/index.js';
export { isTf32Supported, canDeviceAccessPeer } from './capabilities.js';
/** @internal Test-only: loses gpu:i's GPUDevice (`GPUDevice.destroy()` in its worker); see ts/runtime/device-lost.ts. */
export { loseDevice as _loseDevice, gpuError as _gpuError } from './device.js';
/** `torch.gpu.nvtx` (`torch.cuda.nvtx`): `rangePush`, `rangePop`, `range(name, fn)`, `mark`; ranges in the profiler (ts/profiler). */
export * as nvtx from './profiler/nvtx.js';
/** `torch.gpu.comm` (PyTorch's `torch.cuda.comm`): collectives over a list of tensors on several devices (ts/distributed/comm.ts). */
export * as comm from './distributed/comm.js';
export type { LegacyTensorType } from './legacy.js';
/** `torch.gpu.amp` (`torch.cuda.amp`): `autocast(options?, fn)` and `GradScaler` for the GPU (ts/amp/gpu.ts). */
export * as amp from './amp/gpu.js';

/**
 * `torch.gpu.isBf16Supported(includingEmulation = true)`: bfloat16 tensors work on every WebGPU
 * device, stored as 16 bits and computed in float32 (WebGPU has no bfloat16 arithmetic), so this
 * is true, and false when `includingEmulation` is false (as PyTorch says for a GPU without native bf16).
 */
export function isBf16Supported(includingEmulation = true): boolean {
  return includingEmulation;
}

/** What `torch.gpu.configure` takes. */
export interface GpuOptions {
  /** Logical GPU devices sharing the adapter (default 1); before the first GPU call. */
  devices?: number;
  /** Each GPU device's memory budget in bytes (default 8 GiB; WebGPU cannot report it). */
  memory?: number;
  /**
   * Count a software adapter (Mesa's lavapipe, SwiftShader) as a GPU in `isAvailable`,
   * `deviceCount`, `tryGpu`, `tryAllGpus`, `numGpus` (default false, or `WEBTORCH_ALLOW_SOFTWARE_GPU=1`).
   * `'gpu:0'` by name works on one either way.
   */
  allowSoftware?: boolean;
}

/** Configures the GPU runtime (see `GpuOptions`). */
export function configure(options: GpuOptions): void {
  checkOptions('torch.gpu.configure', options, ['devices', 'memory', 'allowSoftware']);
  configureDevices(options);
  if (options.memory !== undefined) setGpuMemory(options.memory);
}

// PyTorch's legacy typed constructors (`torch.cuda.FloatTensor(1)`): on the current GPU (ts/legacy.ts).
/** `torch.cuda.FloatTensor`: float32 on the current GPU. */
export const FloatTensor = legacyType('FloatTensor', 'gpu');
/** `torch.cuda.DoubleTensor`: raises (WebGPU has no float64). */
export const DoubleTensor = legacyType('DoubleTensor', 'gpu');
/** `torch.cuda.HalfTensor`: float16 on the current GPU. */
export const HalfTensor = legacyType('HalfTensor', 'gpu');
/** `torch.cuda.BFloat16Tensor`: bfloat16 on the current GPU. */
export const BFloat16Tensor = legacyType('BFloat16Tensor', 'gpu');
/** `torch.cuda.LongTensor`: int64 on the current GPU. */
export const LongTensor = legacyType('LongTensor', 'gpu');
/** `torch.cuda.IntTensor`: int32 on the current GPU. */
export const IntTensor = legacyType('IntTensor', 'gpu');
/** `torch.cuda.ShortTensor`: raises (no int16). */
export const ShortTensor = legacyType('ShortTensor', 'gpu');
/** `torch.cuda.CharTensor`: raises (no int8). */
export const CharTensor = legacyType('CharTensor', 'gpu');
/** `torch.cuda.ByteTensor`: uint8 on the current GPU. */
export const ByteTensor = legacyType('ByteTensor', 'gpu');
/** `torch.cuda.BoolTensor`: bool on the current GPU. */
export const BoolTensor = legacyType('BoolTensor', 'gpu');

// Graphs: capture once, replay with one command (ts/runtime/graphs.ts).
export { Graph, Graph as CUDAGraph, graph, graphPoolHandle, isCurrentStreamCapturing, GraphPool } from './runtime/graphs.js';
export type { GraphOptions, CaptureErrorMode, CaptureOptions } from './runtime/graphs.js';
export { makeGraphedCallables } from './nn/graphed.js';
export type { GraphedOptions, GraphedFunction } from './nn/graphed.js';
