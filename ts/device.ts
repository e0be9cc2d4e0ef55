/**
 * Devices: `cpu` and `gpu:0`, `gpu:1`, … (`cuda:N` is accepted as an alias).
 *
 * Importing webtorch starts nothing. `cpu` starts its worker on first use. GPUs are discovered
 * once, asynchronously: discovery starts the worker of the first GPU the program names (else the
 * current GPU's, gpu:0 unless set) and asks it for an adapter, so that a rank that uses only
 * gpu:r (`webtorch-run`, `setDevice(localRank)`) never holds a device on GPU 0 too. It starts
 * at the first GPU call of any kind (`model.to('cuda')`, `torch.zeros(3, {device: 'cuda'})`,
 * `torch.gpu.isAvailable()`, `await torch.gpu.init()`), and code need not wait for it: a GPU
 * device named before it ends is taken on trust, and its commands queue in its client until its
 * worker is up (ts/runtime/client.ts), as they do while any worker starts. A device whose index
 * turns out not to exist (`gpu:7` with 2 GPUs), or any GPU when there is no adapter, never starts:
 * its next sync point (`await t.item()`, `synchronize`) raises `CUDA error: invalid device ordinal
 * (gpu:7; 2 GPU devices)`. Once discovery has ended, indices are checked at every call, as in PyTorch.
 * `torch.gpu.isAvailable()` answers at once from then on; before, it returns a Promise of the
 * answer (it cannot know yet), so `await torch.gpu.isAvailable()` is exact either way.
 *
 * By default there is one GPU device per adapter. `torch.gpu.configure({devices: N})` or the
 * environment variable `WEBTORCH_GPU_DEVICES=N` makes N logical devices share the adapter,
 * each with its own worker, GPUDevice and queue: multi-device code runs on one GPU.
 *
 * A software adapter (Mesa's lavapipe, SwiftShader: `isFallbackAdapter`, or architecture
 * `'software'`) runs kernels on the CPU, usually slower than the `cpu` device. It is not a GPU to
 * the questions code asks before choosing a device (`isAvailable`, `deviceCount`, `numGpus`,
 * `tryGpu`, `tryAllGpus`) unless the user opts in with `torch.gpu.configure({allowSoftware: true})`
 * or `WEBTORCH_ALLOW_SOFTWARE_GPU=1`; naming `'gpu:0'` still uses it.
 */
import { physicalGpus } from './runtime/physical.js';
import { env } from './platform.js';
import { ContextVar } from './context.js';
import { bindArgs, isKeywords, REQUIRED } from './args.js';
import { DeviceClient } from './runtime/client.js';
import type { WorkerProfile } from './worker/protocol.js';

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

/**
 * The current GPU index: PyTorch's thread-local current device, with the program's top level as
 * the thread. `withDevice` scopes it to a callback and the async work that callback starts
 * (ts/context.ts); `setDevice` changes it for the innermost `withDevice` run, or for the program.
 */
const current = new ContextVar('withDevice', 0);

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
    d = Device.of('gpu', m[2] === undefined ? current.get() : Number(m[2]));
  }
  if (d.type === 'gpu') checkGpuIndex(d.index);
  return d;
}

// ---- GPU discovery and clients ----

let configured: number | undefined;
let allowSoftware: boolean | undefined;
/** Whether the adapter found is a software one (set at discovery). */
let softwareAdapter = false;
let discovery: Promise<void> | null = null;
/** The GPU index whose worker discovery starts (set when discovery starts). */
let probe: number | null = null;
let gpuCount: number | null = null;
let discoveryError: string | null = null;
let limits: Record<string, number> = {};
const clients = new Map<Device, DeviceClient>();

function checkGpuIndex(i: number): void {
  if (gpuCount === null && Number.isInteger(i) && i >= 0) {
    // Before discovery ends: taken on trust, and checked when it does (`gpuGate`).
    void init(i);
    return;
  }
  if (gpuCount === null || !Number.isInteger(i) || i < 0 || i >= gpuCount) {
    const why = gpuCount === 0 ? ` (no WebGPU adapter: ${discoveryError})` : '';
    throw new RangeError(`Invalid device gpu:${i}: webtorch has ${gpuCount ?? 0} GPU device${gpuCount === 1 ? '' : 's'}${why}. Invalid device ordinal`);
  }
}

/**
 * What a GPU device's worker waits for before it starts (`DeviceClient`'s gate): the end of
 * discovery, and its index among the devices found; nothing for the worker discovery starts.
 */
async function gpuGate(i: number): Promise<void> {
  if (probe === null) void init(i); // this start begins discovery: `probe` is set now
  if (i === probe) return;
  await init();
  const n = gpuCount ?? 0;
  if (i < n) return;
  const why = n === 0 ? `; no WebGPU adapter: ${discoveryError}` : '';
  throw new RangeError(`CUDA error: invalid device ordinal (gpu:${i}; ${n} GPU device${n === 1 ? '' : 's'}${why})`);
}

/** @internal The client of a device (starting nothing). */
export function clientOf(d: Device): DeviceClient {
  let c = clients.get(d);
  if (!c) clients.set(d, (c = new DeviceClient(d.toString(), d.type, d.index, d.type === 'gpu' ? () => gpuGate(d.index) : null)));
  return c;
}

/**
 * @internal How a device's answers came back so far: through the shared reply slot, or by
 * message; and the reads, writes and syncs an idle cpu device took without a message
 * (test/device/sync-point.test.ts).
 */
export function replyCounts(d: DeviceLike): { slot: number; message: number; polled: number; hasSlot: boolean; direct: { read: number; write: number; sync: number } } {
  const c = clientOf(device(d));
  return { ...c.answered, direct: { ...c.direct } };
}

/** @internal The adapter's limits (shared by every logical GPU device). */
export function gpuLimits(): Record<string, number> {
  return limits;
}

/** What `configure` takes besides the memory budget (`ts/gpu.ts`). */
export interface DeviceOptions {
  /** Logical GPU devices on the adapter; before the first GPU call. */
  devices?: number;
  /** Count a software adapter (lavapipe, SwiftShader) as a GPU in `isAvailable`, `tryGpu`, …; any time. */
  allowSoftware?: boolean;
}

/** Sets how many logical GPU devices to create (before `init()`), and whether a software adapter counts as a GPU. */
export function configure(options: DeviceOptions): void {
  if (options.devices !== undefined) {
    if (!Number.isInteger(options.devices) || options.devices < 1) {
      throw new RangeError(`torch.gpu.configure: devices must be a positive integer, got ${options.devices}`);
    }
    if (gpuCount !== null && gpuCount > 0 && options.devices !== gpuCount) {
      throw new Error(`torch.gpu.configure: GPU devices are already initialised (${gpuCount}); configure before the first GPU call`);
    }
    configured = options.devices;
  }
  if (options.allowSoftware !== undefined) {
    if (typeof options.allowSoftware !== 'boolean') throw new TypeError(`torch.gpu.configure: allowSoftware must be a boolean, got ${String(options.allowSoftware)}`);
    allowSoftware = options.allowSoftware;
  }
}

/** Whether a software adapter counts as a GPU: `configure({allowSoftware})`, else `WEBTORCH_ALLOW_SOFTWARE_GPU`. */
function softwareAllowed(): boolean {
  return allowSoftware ?? /^(1|true|yes|on)$/i.test(env('WEBTORCH_ALLOW_SOFTWARE_GPU')?.trim() ?? '');
}

/** The GPU devices code should choose by itself: none on a software adapter unless allowed. */
function usableCount(): number {
  return softwareAdapter && !softwareAllowed() ? 0 : gpuCount!;
}

/** How many GPU devices there are once an adapter is found: configured, else one per physical GPU where gpu:N map to several (ts/runtime/physical.ts), else one. */
function devicesPerAdapter(): number {
  const fromEnv = Number(env('WEBTORCH_GPU_DEVICES'));
  return configured ?? (Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : physicalGpus()?.length ?? 1);
}

/**
 * Discovers the GPU adapter (once), through the worker of gpu:`first` (the GPU whose use began
 * discovery), else of the current GPU, else gpu:0: an index that cannot exist is never started.
 * Resolves whether or not an adapter is found.
 */
export function init(first?: number): Promise<void> {
  discovery ??= (async () => {
    // Set before the first await: a GPU worker starting meanwhile asks `gpuGate` whether it is this one.
    probe = 0;
    try {
      const n = devicesPerAdapter(); // raises on a malformed WEBTORCH_GPU_BUSES: no adapter, then
      probe = [first, current.get()].find((i) => i !== undefined && i < n) ?? 0;
      const c = clientOf(Device.of('gpu', probe));
      await c.start();
      limits = c.info!.limits;
      softwareAdapter = c.info!.cpuAdapter || c.info!.architecture === 'software';
      gpuCount = devicesPerAdapter();
    } catch (e) {
      discoveryError = (e as Error).message;
      clients.delete(Device.of('gpu', probe));
      gpuCount = 0;
    }
  })();
  return discovery;
}

/** Called with a device replaced after its loss (`gpuInit`): the allocator forgets it (ts/runtime/memory.ts). */
export const onDeviceReplaced: ((d: Device) => void)[] = [];

/**
 * `torch.gpu.init()`: discovers the GPUs (once), and brings back every GPU device that was lost
 * (ts/runtime/device-lost.ts), or whose worker could not start, with a fresh worker, GPUDevice
 * and allocator. Tensors made on a lost device before stay on it, and raise `DeviceLostError`
 * when used.
 */
export async function gpuInit(): Promise<void> {
  await init();
  // (a device named before discovery with an index that does not exist is not brought back: it never was)
  const lost = [...clients].filter(([d, c]) => d.type === 'gpu' && c.deviceLost && d.index < (gpuCount ?? 0));
  await Promise.all(lost.map(([d, c]) => replaceLost(d, c)));
}

/** Replaces a lost device's client: its old tensors raise; the other devices connect to the new worker afresh. */
async function replaceLost(d: Device, old: DeviceClient): Promise<void> {
  old.retire();
  clients.delete(d);
  for (const f of onDeviceReplaced) f(d);
  for (const c of clients.values()) c.peers.delete(old.name);
  const fresh = clientOf(d);
  const [closed, started] = await Promise.allSettled([old.close(), fresh.start()]);
  if (started.status === 'rejected') {
    clients.delete(d);
    throw new Error(`torch.gpu.init: ${d} was lost and could not be brought back: ${(started.reason as Error).message}`);
  }
  void closed;
}

/**
 * @internal Test-only (`torch.gpu._loseDevice(i)`): destroys gpu:i's GPUDevice in its worker, as
 * a browser losing the device would, and resolves once the worker has seen the loss. The next
 * sync point on the device raises `DeviceLostError`. `'crash'` kills the worker's thread instead
 * (Node), which raises the same way.
 */
export async function loseDevice(i: DeviceLike, how: 'destroy' | 'crash' = 'destroy'): Promise<void> {
  const d = device(i);
  if (d.type !== 'gpu') throw new TypeError(`_loseDevice: expected a gpu device, got ${d}`);
  if (how !== 'destroy' && how !== 'crash') throw new TypeError(`_loseDevice: how must be 'destroy' or 'crash', got ${String(how)}`);
  await clientOf(d).lose(how);
}

/**
 * @internal Test-only (`torch.gpu._gpuError(i)`): makes Dawn report a validation error in gpu:i's
 * worker, as a bad command would; the next sync point on the device raises it.
 */
export async function gpuError(i: DeviceLike): Promise<void> {
  const d = device(i);
  if (d.type !== 'gpu') throw new TypeError(`_gpuError: expected a gpu device, got ${d}`);
  await clientOf(d).gpuError();
}

/**
 * Whether a GPU is available: a hardware WebGPU adapter, or a software one when allowed
 * (`configure({allowSoftware})`). Answers at once once discovery has ended; before that it starts
 * discovery and returns a Promise of the answer (WebGPU offers no synchronous way to ask), so
 * `await torch.gpu.isAvailable()` is right either way, and `if (torch.gpu.isAvailable())` only
 * after an `await torch.gpu.init()` (or any earlier await of discovery).
 */
export function isAvailable(): boolean | Promise<boolean> {
  if (gpuCount !== null) return usableCount() > 0;
  return init().then(() => usableCount() > 0);
}

/** Number of GPU devices (0 on a software adapter unless allowed; `'gpu:N'` by name still works there). */
export async function deviceCount(): Promise<number> {
  await init();
  return usableCount();
}

/** The current GPU index (used by 'gpu' without an index). */
export const currentDevice = (): number => current.get();

/**
 * The factories' default device (`torch.set_default_device`; null: the cpu). It is not the current
 * GPU: that one (`setDevice`, PyTorch's `cuda.set_device`) only says which index a bare 'gpu'
 * means. A default of bare 'gpu' (or 'cuda') stays unindexed, as PyTorch's 'cuda' does, so each
 * factory call takes the current GPU of its time. What it covers is PyTorch's list of device
 * constructors (`tensor`, `zeros`, `ones`, `full`, `empty`, `arange`, `linspace`, `eye`, `rand`,
 * `randn`, `randint`, `randperm`; the layers' parameters through them): an explicit `device` wins,
 * and `*_like`, `new_*` and every op on tensors follow their tensors.
 */
let defaultSpec: Device | 'gpu' | null = null;

/** `torch.set_default_device(device)`: where factory functions create without a `device`; `null` resets it to the cpu. */
export function setDefaultDevice(...args: [device: DeviceLike | null]): void {
  const spec = bindArgs('set_default_device', ['device'], args, { device: REQUIRED as DeviceLike | null }).device;
  if (spec === null) {
    defaultSpec = null;
    return;
  }
  const d = device(spec); // validates, and raises as a factory's `device` would
  defaultSpec = typeof spec === 'string' && /^(gpu|cuda)$/.test(spec.trim()) ? 'gpu' : d;
}

/** `torch.get_default_device()`: the device factories create on without a `device` (a bare 'gpu' default as the current GPU now). */
export function getDefaultDevice(): Device {
  return defaultSpec === null ? CPU : defaultSpec === 'gpu' ? device('gpu') : defaultSpec;
}

/**
 * Sets the current GPU index (`torch.cuda.set_device`): for the rest of the innermost
 * `withDevice` callback when called inside one, else for the program.
 */
export function setDevice(...args: [device: DeviceLike] | [{ device: DeviceLike }]): void {
  current.set(gpuIndex(bindArgs('set_device', ['device'], args, { device: REQUIRED as DeviceLike }).device));
}

/** A GPU device argument's index; a cpu device raises, as PyTorch's `_get_device_index` does. */
function gpuIndex(i: DeviceLike): number {
  const d = device(typeof i === 'number' ? Device.of('gpu', i) : i);
  if (d.type !== 'gpu') throw new TypeError(`Expected a gpu device, but got: ${d}`);
  return d.index;
}

/**
 * Runs `fn` with `i` as the current GPU (like `with torch.cuda.device(i):`). An async `fn` keeps
 * `i` across its awaits, and tasks running beside it do not see it (ts/context.ts); where the
 * platform has no async context (a browser without `AsyncContext`), an async `fn` raises.
 * `withDevice({device: 1}, fn)` is PyTorch's `torch.cuda.device(device=1)`.
 */
export function withDevice<T>(i: DeviceLike | { device: DeviceLike }, fn: () => T): T {
  const d = isKeywords(i) ? bindArgs('device', ['device'], [i], { device: REQUIRED as DeviceLike }).device : i;
  if (typeof fn !== 'function') throw new TypeError(`withDevice(device, fn): fn must be a function, got ${typeof fn}`);
  return current.run(gpuIndex(d), fn);
}

/** Waits for all queued work on a device (all devices when none is given). */
export async function synchronize(...args: [device?: DeviceLike | null] | [{ device?: DeviceLike | null }]): Promise<void> {
  const d = bindArgs('synchronize', ['device'], args, { device: null as DeviceLike | null }).device ?? undefined;
  const targets = d === undefined ? [...clients.values()].filter((c) => c.inUse) : [clientOf(device(d))];
  await Promise.all(targets.map((c) => c.sync()));
}

/** `d2l.try_gpu(i)`: gpu:i if it exists (a software adapter only when allowed), else cpu. */
export async function tryGpu(i = 0): Promise<Device> {
  await init();
  return Number.isInteger(i) && i >= 0 && i < usableCount() ? Device.of('gpu', i) : CPU;
}

/** `d2l.try_all_gpus()`: every GPU device, or [cpu] when there is none (as `tryGpu` counts them). */
export async function tryAllGpus(): Promise<Device[]> {
  await init();
  const n = usableCount();
  return n > 0 ? Array.from({ length: n }, (_, i) => Device.of('gpu', i)) : [CPU];
}

/** @internal Why GPU discovery found no device (null when it found one, or has not run). */
export const gpuDiscoveryError = (): string | null => discoveryError;

/** @internal The GPU devices discovered so far, synchronously (0 before discovery; software adapters counted). */
export const knownGpuCount = (): number => gpuCount ?? 0;

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
  probe = null;
  gpuCount = null;
  softwareAdapter = false;
}
