/**
 * Devices: `cpu` and `gpu:0`, `gpu:1`, … (`cuda:N` is accepted as an alias).
 *
 * Importing webtorch starts nothing. `cpu` starts its worker on first use. GPUs are discovered
 * once, asynchronously (`await torch.gpu.init()`, or any awaited query such as
 * `await torch.tryGpu()`): discovery starts `gpu:0`'s worker and asks it for an adapter. After
 * that, device indices are checked synchronously at every call, as in PyTorch. Using `gpu:N`
 * before discovery throws, saying so.
 *
 * By default there is one GPU device per adapter. `torch.gpu.configure({devices: N})` or the
 * environment variable `WEBTORCH_GPU_DEVICES=N` makes N logical devices share the adapter,
 * each with its own worker, GPUDevice and queue: multi-device code runs on one GPU.
 */
import { env } from './platform.js';
import { thenRestore } from './scope.js';
import { bindArgs } from './ops/options.js';
import { DeviceClient } from './runtime/client.js';
import type { DeviceInfo, WorkerProfile } from './worker/protocol.js';

/** A device a tensor lives on. Instances are interned: compare with `===`. */
export class Device {
  private constructor(readonly type: 'cpu' | 'gpu', readonly index: number) {}

  private static cache = new Map<string, Device>();

  /** @internal Interns a device. */
  static of(type: 'cpu' | 'gpu', index: number): Device {
    const key = type === 'cpu' ? 'cpu' : `gpu:${index}`;
    let d = Device.cache.get(key);
    if (!d) Device.cache.set(key, (d = new Device(type, index)));
    return d;
  }

  /** `'cpu'` or `'gpu:N'`. */
  toString(): string {
    return this.type === 'cpu' ? 'cpu' : `gpu:${this.index}`;
  }

  toJSON(): string {
    return this.toString();
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `device(type='${this.type}', index=${this.index})`;
  }
}

/** Anything that names a device. */
export type DeviceLike = Device | string | number;

/** The CPU device. */
export const CPU = Device.of('cpu', 0);

let currentIndex = 0;

/** Parses a device name: 'cpu', 'gpu', 'gpu:1', 'cuda:1', or a GPU index. Validates GPU indices. */
export function device(spec: DeviceLike): Device {
  let d: Device;
  if (spec instanceof Device) d = spec;
  else if (typeof spec === 'number') d = Device.of('gpu', spec);
  else {
    const m = typeof spec === 'string' ? /^(cpu|gpu|cuda)(?::(\d+))?$/.exec(spec.trim()) : null;
    if (!m) {
      throw new TypeError(`Expected one of cpu, gpu, cuda device type at start of device string: ${String(spec)}`);
    }
    if (m[1] === 'cpu') {
      if (m[2] !== undefined && m[2] !== '0') throw new RangeError(`cpu device index must be 0, got ${spec}`);
      return CPU;
    }
    d = Device.of('gpu', m[2] === undefined ? currentIndex : Number(m[2]));
  }
  if (d.type === 'gpu') checkGpuIndex(d.index);
  return d;
}

// ---- GPU discovery and clients ----

let configured: number | undefined;
let discovery: Promise<void> | null = null;
let gpuCount: number | null = null;
let discoveryError: string | null = null;
let limits: Record<string, number> = {};
const clients = new Map<Device, DeviceClient>();

function checkGpuIndex(i: number): void {
  if (gpuCount === null) {
    throw new Error(`webtorch: GPU devices are not initialised yet; await torch.gpu.init() (or torch.tryGpu()) before using gpu:${i}`);
  }
  if (!Number.isInteger(i) || i < 0 || i >= gpuCount) {
    const why = gpuCount === 0 ? ` (no WebGPU adapter: ${discoveryError})` : '';
    throw new RangeError(`Invalid device gpu:${i}: webtorch has ${gpuCount} GPU device${gpuCount === 1 ? '' : 's'}${why}. Invalid device ordinal`);
  }
}

/** @internal The client of a device (starting nothing). */
export function clientOf(d: Device): DeviceClient {
  let c = clients.get(d);
  if (!c) clients.set(d, (c = new DeviceClient(d.toString(), d.type, d.index)));
  return c;
}

/** @internal The adapter's limits (shared by every logical GPU device). */
export function gpuLimits(): Record<string, number> {
  return limits;
}

/** Sets how many logical GPU devices to create; call before `init()`. */
export function configure(options: { devices?: number }): void {
  if (options.devices !== undefined) {
    if (!Number.isInteger(options.devices) || options.devices < 1) {
      throw new RangeError(`torch.gpu.configure: devices must be a positive integer, got ${options.devices}`);
    }
    if (gpuCount !== null && gpuCount > 0 && options.devices !== gpuCount) {
      throw new Error(`torch.gpu.configure: GPU devices are already initialised (${gpuCount}); configure before the first GPU call`);
    }
    configured = options.devices;
  }
}

/** Discovers the GPU adapter (once). Resolves whether or not one is found. */
export function init(): Promise<void> {
  discovery ??= (async () => {
    const c = clientOf(Device.of('gpu', 0));
    try {
      await c.start();
      limits = c.info!.limits;
      const fromEnv = Number(env('WEBTORCH_GPU_DEVICES'));
      gpuCount = configured ?? (Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : 1);
    } catch (e) {
      discoveryError = (e as Error).message;
      clients.delete(Device.of('gpu', 0));
      gpuCount = 0;
    }
  })();
  return discovery;
}

/** Whether a WebGPU adapter is available. */
export async function isAvailable(): Promise<boolean> {
  await init();
  return gpuCount! > 0;
}

/** Number of GPU devices. */
export async function deviceCount(): Promise<number> {
  await init();
  return gpuCount!;
}

/** The current GPU index (used by 'gpu' without an index). */
export const currentDevice = (): number => currentIndex;

/** Sets the current GPU index. */
export function setDevice(i: DeviceLike): void {
  currentIndex = device(typeof i === 'number' ? Device.of('gpu', i) : i).index;
}

/** Runs `fn` with `i` as the current GPU (like `with torch.cuda.device(i):`); works with async `fn`. */
export function withDevice<T>(i: DeviceLike, fn: () => T): T {
  const prev = currentIndex;
  setDevice(i);
  return thenRestore(fn, () => (currentIndex = prev));
}

/** What `getDeviceProperties` reports. */
export interface DeviceProperties extends DeviceInfo {
  index: number;
}

/** Adapter info, limits and features of a GPU device (starts its worker). */
export async function getDeviceProperties(i: DeviceLike = currentIndex): Promise<DeviceProperties> {
  await init();
  const d = device(typeof i === 'number' ? Device.of('gpu', i) : i);
  const c = clientOf(d);
  await c.start();
  return { ...c.info!, index: d.index };
}

/** The adapter's description for a GPU device. */
export async function getDeviceName(i: DeviceLike = currentIndex): Promise<string> {
  const p = await getDeviceProperties(i);
  return p.description || `${p.vendor} ${p.architecture}`.trim();
}

/** Waits for all queued work on a device (all devices when none is given). */
export async function synchronize(...args: [device?: DeviceLike | null] | [{ device?: DeviceLike | null }]): Promise<void> {
  const d = bindArgs('synchronize', ['device'], args, { device: null as DeviceLike | null }).device ?? undefined;
  const targets = d === undefined ? [...clients.values()].filter((c) => c.inUse) : [clientOf(device(d))];
  await Promise.all(targets.map((c) => c.sync()));
}

/** `d2l.try_gpu(i)`: gpu:i if it exists, else cpu. */
export async function tryGpu(i = 0): Promise<Device> {
  await init();
  return i < gpuCount! ? Device.of('gpu', i) : CPU;
}

/** `d2l.try_all_gpus()`: every GPU device, or [cpu] when there is none. */
export async function tryAllGpus(): Promise<Device[]> {
  await init();
  return gpuCount! > 0 ? Array.from({ length: gpuCount! }, (_, i) => Device.of('gpu', i)) : [CPU];
}

/** `d2l.num_gpus()`. */
export const numGpus = deviceCount;

/** @internal The devices whose workers were started (the lazy-start test). */
export function startedDevices(): string[] {
  return [...clients.values()].filter((c) => c.started).map((c) => c.name);
}

/**
 * @internal Turns a device worker's own profile on (clearing it) or off; off resolves, once the
 * work queued before it is done, with where the worker's time went (`bench/profile-step.mjs`).
 */
export function profileWorker(d: DeviceLike, on: boolean): Promise<WorkerProfile | null> {
  return clientOf(device(d)).profile(on);
}

/** Stops every device worker; tensors created before become unusable. Lets a program exit at once. */
export async function shutdown(): Promise<void> {
  await Promise.all([...clients.values()].map((c) => c.close()));
  clients.clear();
  discovery = null;
  gpuCount = null;
}
