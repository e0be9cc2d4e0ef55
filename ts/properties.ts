/**
 * `torch.gpu.getDeviceProperties`, `getDeviceName`, `getDeviceCapability`, `getArchList`.
 *
 * WebGPU tells an adapter's vendor, architecture, description and limits, but not the figures
 * PyTorch reads from the CUDA driver. What each field here comes from:
 * - `name`: `GPUAdapterInfo.device`, the adapter's identifier of the GPU (Dawn writes the
 *   driver's device name in lower case with dashes, e.g. `llvmpipe-llvm-15-0-6-256-bits-` for
 *   lavapipe), else its description, else vendor and architecture; never the `gpu:N` label.
 *   (On NVIDIA, Dawn's description is the driver's version, `NVIDIA: 580.159.04 …`, not the GPU.)
 * - `totalMemory`: the memory budget the device's caching allocator enforces (8 GiB by default,
 *   `torch.gpu.configure({memory})`, `WEBTORCH_GPU_MEMORY`): WebGPU cannot report the GPU's size.
 * - `major`/`minor`: for an NVIDIA adapter, the first compute capability of the architecture
 *   Dawn names (`CAPABILITY` below: pascal 6.0, ampere 8.0, lovelace 8.9, …; a generation's
 *   later chips, e.g. 8.6, report their generation's first). Dawn names no Hopper architecture,
 *   so an NVIDIA adapter whose device is an H100, H200, H800, H20 or GH200 reports 9.0. Every
 *   other adapter (AMD, Intel, Apple, software) reports 0.0, as does an NVIDIA GPU neither rule knows.
 * - `multiProcessorCount`: WebGPU has no way to count SMs or compute units, so it comes from a
 *   table of NVIDIA GPUs by the device name Dawn gives (`SM_COUNTS` below: `nvidia-h100-80gb-hbm3`
 *   is an H100 SXM, 132 SMs); every other adapter, and an NVIDIA GPU the table does not name,
 *   reports null (unknown), never a number that looks real.
 * - `maxStorageBufferBindingSize`, `maxBufferSize`: the adapter's limits (also in `limits`): the
 *   largest tensor a kernel can bind whole, and the largest segment.
 * - `f16Path`: the worker's choice at start (ts/worker/half.ts): `'shader-f16'` where the adapter
 *   has the feature and `WEBTORCH_F16` is not `storage`, else `'storage'`.
 */
import { busOf } from './runtime/physical.js';
import { bindArgs, type PyArgs } from './args.js';
import { clientOf, currentDevice, device, Device, init, type DeviceLike } from './device.js';
import { memoryBudget } from './runtime/memory.js';
import { isolationInfo, type IsolationInfo } from './backends.js';
import type { DeviceInfo } from './worker/protocol.js';

/** What `getDeviceProperties` reports (PyTorch's `_CudaDeviceProperties`, camelCase, plus WebGPU's own). */
/**
 * Besides the adapter's facts, the platform's (`IsolationInfo`, as `torch.backends.summary()`
 * reports them): whether the page is cross-origin isolated, and so has SharedArrayBuffer, pinned
 * memory and the cpu device's helper threads.
 */
export interface DeviceProperties extends Omit<DeviceInfo, 'name' | 'scratch'>, IsolationInfo {
  /** The GPU's name as the adapter gives it (see ts/properties.ts), e.g. `'llvmpipe-llvm-15-0-6-256-bits-'`. */
  name: string;
  /** The GPU index (`gpu:index`). */
  index: number;
  /** A software adapter (lavapipe, SwiftShader): see `torch.gpu.configure({allowSoftware})`. */
  isSoftware: boolean;
  /** Bytes: the budget the caching allocator enforces on this device (WebGPU cannot report the GPU's size). */
  totalMemory: number;
  /** Compute capability: from the NVIDIA architecture Dawn names, else 0 (see ts/properties.ts). */
  major: number;
  minor: number;
  /** The SM count of an NVIDIA GPU the adapter names (see ts/properties.ts); null where unknown (WebGPU cannot count them). */
  multiProcessorCount: number | null;
  /** The largest binding a kernel sees (`limits.maxStorageBufferBindingSize`). */
  maxStorageBufferBindingSize: number;
  /** The largest buffer, so the largest segment (`limits.maxBufferSize`). */
  maxBufferSize: number;
  /** Whether the adapter offers WebGPU's `shader-f16` feature (16-bit arithmetic in shaders). */
  shaderF16: boolean;
  /**
   * How float16 and bfloat16 tensors compute here: `'float32'`, i.e. 16-bit storage with float32
   * arithmetic in every kernel, as PyTorch's CUDA kernels compute half in float and accumulate its
   * matmuls in float. Mixed precision saves memory and bandwidth, not arithmetic.
   */
  halfPrecisionMath: 'float32';
  /**
   * How float16 kernels load and store: `'shader-f16'` (WGSL's `f16` types, `enable f16;`) where
   * the adapter has `shader-f16` and `WEBTORCH_F16` is not `storage`; else `'storage'`: 16-bit
   * words unpacked to float32 (`unpack2x16float`) and packed at the store. bfloat16 always takes
   * the storage path (WGSL has no bfloat16 type). See wgsl/half.ts.
   */
  f16Path: 'shader-f16' | 'storage';
  /**
   * The PCI bus of the GPU this device runs on (`'0000:00:07.0'`, PyTorch's `pci_bus_id`), as the
   * adapter reports it; null where the adapter does not say. A WebGPU adapter's info (in Dawn's
   * Node build: vendor, architecture, device, description, subgroup sizes, isFallbackAdapter)
   * names no bus, so it is null there: the bus webtorch asked for is `requestedPciBusId`, never
   * reported as if measured.
   */
  pciBusId: string | null;
  /**
   * The PCI bus webtorch asked the driver for (`DRI_PRIME`, ts/runtime/physical.ts) where gpu:N
   * map to several identical GPUs; null for a logical device on the one adapter. A request, not a
   * measurement: the adapter cannot confirm it (see `pciBusId`).
   */
  requestedPciBusId: string | null;
}

/** The first compute capability of each NVIDIA architecture, by the name Dawn's adapter info gives it. */
const CAPABILITY: Record<string, [number, number]> = {
  fermi: [2, 0], kepler: [3, 0], maxwell: [5, 0], pascal: [6, 0], volta: [7, 0], turing: [7, 5],
  ampere: [8, 0], lovelace: [8, 9], 'ada-lovelace': [8, 9], hopper: [9, 0], blackwell: [10, 0],
};

/** @internal `[major, minor]` for an adapter (see the file's note). */
export function capability(info: Pick<DeviceInfo, 'vendor' | 'architecture' | 'device'>): [number, number] {
  if (!/nvidia/i.test(info.vendor)) return [0, 0];
  const known = CAPABILITY[info.architecture.toLowerCase()];
  if (known) return known;
  return /(^|[^a-z0-9])g?h(100|200|800|20)([^a-z0-9]|$)/i.test(info.device ?? '') ? [9, 0] : [0, 0];
}

/**
 * SMs per NVIDIA GPU, matched against Dawn's device name (lower case, dashes: `nvidia-h100-pcie`),
 * first match wins, so the PCIe parts come before their SXM namesakes. Figures from NVIDIA's
 * data sheets (the count `cudaDeviceProp.multiProcessorCount` reports).
 */
const word = (alternatives: string): RegExp => new RegExp(`(^|-)(${alternatives})(-|$)`);
const SM_COUNTS: [RegExp, number][] = [
  [word('h100-pcie|h800-pcie'), 114], [word('gh200|h100|h200|h800'), 132], [word('a100|a800'), 108],
  [word('a10g'), 80], [word('a10'), 72], [word('l40s|l40'), 142], [/(^|-)rtx-6000-ada(-|$)/, 142], [word('l4'), 58],
  [word('t4'), 40], [word('v100'), 80], [/(^|-)rtx-a6000(-|$)/, 84], [/(^|-)rtx-4090(-|$)/, 128],
  [/(^|-)rtx-4080(-|$)/, 76], [/(^|-)rtx-3090(-|$)/, 82], [/(^|-)rtx-3080(-|$)/, 68],
];

/** @internal The SM count of an adapter's GPU, or null where it is not an NVIDIA GPU the table names. */
export function multiProcessorCount(info: Pick<DeviceInfo, 'vendor' | 'device'>): number | null {
  if (!/nvidia/i.test(info.vendor) || !info.device) return null;
  const name = info.device.toLowerCase();
  return SM_COUNTS.find(([re]) => re.test(name))?.[1] ?? null;
}

/** The GPU's name (see the file's note). */
const adapterName = (info: DeviceInfo): string => info.device || info.description || `${info.vendor} ${info.architecture}`.trim() || 'unknown WebGPU adapter';

/** Binds `(device?)` / `({device})` to a GPU device (the current one by default); a cpu device raises as PyTorch does. */
function gpuArg(op: string, args: readonly unknown[]): Device {
  const o = bindArgs(op, ['device'], args, { device: null as DeviceLike | null });
  const d = device(o.device ?? currentDevice());
  if (d.type !== 'gpu') throw new TypeError(`${op}: Expected a gpu device, but got: ${d}`);
  return d;
}

/** A device argument: `(0)`, `('gpu:1')`, `({device: 0})`, or nothing (the current GPU). */
export type GpuArgs = PyArgs<[device: DeviceLike | null], { device?: DeviceLike | null }>;

/** Adapter info, limits, features and the memory budget of a GPU device (starts its worker). */
export async function getDeviceProperties(...args: GpuArgs): Promise<DeviceProperties> {
  gpuArg('get_device_properties', args); // named before discovery, the device is the one it starts
  await init();
  const d = gpuArg('get_device_properties', args);
  const c = clientOf(d);
  await c.start();
  const { name: _label, ...info } = c.info!;
  const [major, minor] = capability(c.info!);
  return {
    ...info,
    name: adapterName(c.info!),
    index: d.index,
    isSoftware: info.cpuAdapter || info.architecture === 'software',
    totalMemory: memoryBudget(d),
    major,
    minor,
    multiProcessorCount: multiProcessorCount(c.info!),
    maxStorageBufferBindingSize: info.limits.maxStorageBufferBindingSize,
    maxBufferSize: info.limits.maxBufferSize,
    shaderF16: info.features.includes('shader-f16'),
    halfPrecisionMath: 'float32',
    f16Path: info.nativeF16 ? 'shader-f16' : 'storage',
    pciBusId: info.pciBusId ?? null,
    requestedPciBusId: busOf(d.index),
    ...(await isolationInfo()),
  };
}

/** The adapter's name for a GPU device (`torch.cuda.get_device_name`). */
export async function getDeviceName(...args: GpuArgs): Promise<string> {
  return (await getDeviceProperties(...args)).name;
}

/** `[major, minor]` (`torch.cuda.get_device_capability`): see `DeviceProperties.major`. */
export async function getDeviceCapability(...args: GpuArgs): Promise<[number, number]> {
  const p = await getDeviceProperties(...args);
  return [p.major, p.minor];
}

/**
 * The architectures the GPU kernels are built for (`torch.cuda.get_arch_list`): `['wgsl']`.
 * webtorch's GPU kernels are WGSL, compiled by the adapter's driver when first used, so there is
 * no list of `sm_XX` targets; every WebGPU adapter runs them.
 */
export function getArchList(): string[] {
  return ['wgsl'];
}
