/**
 * `torch.gpu.getDeviceProperties`, `getDeviceName`, `getDeviceCapability`, `getArchList`.
 *
 * WebGPU tells an adapter's vendor, architecture, description and limits, but not the figures
 * PyTorch reads from the CUDA driver. What each field here comes from:
 * - `name`: the adapter's description (`GPUAdapterInfo.description`, else `.device`), else
 *   vendor and architecture; never the device's `gpu:N` label.
 * - `totalMemory`: the memory budget the device's caching allocator enforces (8 GiB by default,
 *   `torch.gpu.configure({memory})`, `WEBTORCH_GPU_MEMORY`): WebGPU cannot report the GPU's size.
 * - `major`/`minor`: for an NVIDIA adapter, the first compute capability of the architecture
 *   Dawn names (`CAPABILITY` below: pascal 6.0, ampere 8.0, hopper 9.0, …; a generation's later
 *   chips, e.g. 8.6, report their generation's first); 0.0 for every other adapter, and for an
 *   NVIDIA adapter whose architecture Dawn does not name.
 * - `multiProcessorCount`: 0, meaning unknown: WebGPU has no way to count SMs or compute units.
 * - `maxStorageBufferBindingSize`, `maxBufferSize`: the adapter's limits (also in `limits`): the
 *   largest tensor a kernel can bind whole, and the largest segment.
 */
import { bindArgs, type PyArgs } from './ops/options.js';
import { clientOf, currentDevice, device, Device, init, type DeviceLike } from './device.js';
import { memoryBudget } from './runtime/memory.js';
import type { DeviceInfo } from './worker/protocol.js';

/** What `getDeviceProperties` reports (PyTorch's `_CudaDeviceProperties`, camelCase, plus WebGPU's own). */
export interface DeviceProperties extends Omit<DeviceInfo, 'name' | 'scratch'> {
  /** The adapter's name, e.g. `'NVIDIA H100 80GB HBM3'` or `'llvmpipe: Mesa 25.0.7 (LLVM 15.0.6)'`. */
  name: string;
  /** The GPU index. */
  index: number;
  /** The device's label, `'gpu:N'`. */
  device: string;
  /** A software adapter (lavapipe, SwiftShader): see `torch.gpu.configure({allowSoftware})`. */
  isSoftware: boolean;
  /** Bytes: the budget the caching allocator enforces on this device (WebGPU cannot report the GPU's size). */
  totalMemory: number;
  /** Compute capability: from the NVIDIA architecture Dawn names, else 0 (see ts/properties.ts). */
  major: number;
  minor: number;
  /** 0: unknown, WebGPU cannot count multiprocessors. */
  multiProcessorCount: number;
  /** The largest binding a kernel sees (`limits.maxStorageBufferBindingSize`). */
  maxStorageBufferBindingSize: number;
  /** The largest buffer, so the largest segment (`limits.maxBufferSize`). */
  maxBufferSize: number;
}

/** The first compute capability of each NVIDIA architecture, by the name Dawn's adapter info gives it. */
const CAPABILITY: Record<string, [number, number]> = {
  fermi: [2, 0], kepler: [3, 0], maxwell: [5, 0], pascal: [6, 0], volta: [7, 0], turing: [7, 5],
  ampere: [8, 0], lovelace: [8, 9], 'ada-lovelace': [8, 9], hopper: [9, 0], blackwell: [10, 0],
};

/** @internal `[major, minor]` for an adapter (see the file's note). */
export function capability(info: Pick<DeviceInfo, 'vendor' | 'architecture'>): [number, number] {
  if (!/nvidia/i.test(info.vendor)) return [0, 0];
  return CAPABILITY[info.architecture.toLowerCase()] ?? [0, 0];
}

/** The adapter's name. */
const adapterName = (info: DeviceInfo): string => info.description || `${info.vendor} ${info.architecture}`.trim() || 'unknown WebGPU adapter';

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
    device: String(d),
    isSoftware: info.cpuAdapter || info.architecture === 'software',
    totalMemory: memoryBudget(d),
    major,
    minor,
    multiProcessorCount: 0,
    maxStorageBufferBindingSize: info.limits.maxStorageBufferBindingSize,
    maxBufferSize: info.limits.maxBufferSize,
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
