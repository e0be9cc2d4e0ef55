/**
 * `torch.backends`: what this platform gives webtorch, in one place. In a browser, cross-origin
 * isolation (COOP `same-origin` + COEP `require-corp`) decides whether SharedArrayBuffer exists,
 * and with it pinned memory and the cpu device's helper threads; a page without it still runs
 * every device, with `cpu` on one thread. `summary()` says which of these the page has.
 */
import { CPU, clientOf, Device, gpuDiscoveryError, init, knownGpuCount } from './device.js';
import { canShareMemory, hardwareThreads, isNode } from './platform.js';
import { canPin } from './runtime/pinned.js';

/** Whether the page is cross-origin isolated (`globalThis.crossOriginIsolated`); Node: true, it has SharedArrayBuffer unconditionally. */
export function crossOriginIsolated(): boolean {
  return isNode || (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true;
}

/** The isolation facts `getDeviceProperties` reports beside the adapter's (see `BackendsSummary`). */
export interface IsolationInfo {
  /** The page is cross-origin isolated (always true in Node). */
  crossOriginIsolated: boolean;
  /** SharedArrayBuffer exists and a shared WebAssembly.Memory can be made. */
  sharedArrayBuffer: boolean;
  /** `t.pinMemory()` works: it needs SharedArrayBuffer (and, once the cpu device has started, its shared memory). */
  pinnedMemory: boolean;
  /** The cpu device can compute on helper threads: shared memory and more than one core. */
  cpuHelperThreads: boolean;
}

/** @internal The isolation facts (no worker started). */
export async function isolationInfo(): Promise<IsolationInfo> {
  const shared = canShareMemory();
  return {
    crossOriginIsolated: crossOriginIsolated(),
    sharedArrayBuffer: shared,
    pinnedMemory: canPin(),
    cpuHelperThreads: shared && (await hardwareThreads()) > 1,
  };
}

/** What `torch.backends.summary()` reports. */
export interface BackendsSummary extends IsolationInfo {
  /** `'node'` or `'browser'`. */
  platform: 'node' | 'browser';
  /** The threads the `cpu` device computes with (its worker and its helpers); 1 without shared memory. */
  cpuThreads: number;
  /** A WebGPU entry point exists (`navigator.gpu`, or Dawn in Node). */
  webgpu: boolean;
  /** GPU devices found (a software adapter counted: see `gpus[i].isSoftware`). */
  gpuCount: number;
  /** Each GPU device's adapter. */
  gpus: { device: string; vendor: string; architecture: string; description: string; isSoftware: boolean }[];
  /** Why no GPU was found, when none was. */
  gpuError?: string;
}

/**
 * Starts the `cpu` device and discovers the GPUs (as `torch.gpu.init()` does), then reports
 * what this platform gives: isolation, SharedArrayBuffer, pinned memory, the cpu device's
 * threads and the GPU adapters.
 */
export async function summary(): Promise<BackendsSummary> {
  const cpu = clientOf(CPU);
  await Promise.all([init(), cpu.start()]);
  const iso = await isolationInfo();
  const n = knownGpuCount();
  const gpus = [];
  for (let i = 0; i < n; i++) {
    const c = clientOf(Device.of('gpu', i));
    await c.start();
    const info = c.info!;
    gpus.push({ device: info.device || '', vendor: info.vendor, architecture: info.architecture, description: info.description, isSoftware: info.cpuAdapter || info.architecture === 'software' });
  }
  const webgpu = isNode || !!(globalThis.navigator as Navigator | undefined)?.gpu;
  const cpuThreads = cpu.info!.limits.threads ?? 1;
  return {
    platform: isNode ? 'node' : 'browser',
    ...iso,
    cpuHelperThreads: cpuThreads > 1,
    cpuThreads,
    webgpu,
    gpuCount: n,
    gpus,
    ...(n === 0 ? { gpuError: gpuDiscoveryError() ?? 'no WebGPU adapter' } : {}),
  };
}

// ---- TF32: PyTorch's flags, accepted and kept; WebGPU has no TF32 (ts/capabilities.ts) ----

/** A flag object whose keys are fixed: assigning an unknown key raises, a non-boolean value too. */
function flags<K extends string>(what: string, defaults: Record<K, boolean>): Record<K, boolean> {
  const values = { ...defaults };
  const o = {} as Record<K, boolean>;
  for (const k of Object.keys(defaults) as K[]) {
    Object.defineProperty(o, k, {
      enumerable: true,
      get: () => values[k],
      set: (v: unknown) => {
        if (typeof v !== 'boolean') throw new TypeError(`${what}.${k} must be a boolean, got ${typeof v}`);
        values[k] = v;
      },
    });
  }
  return Object.seal(o);
}

/**
 * `torch.backends.cuda`: `matmul.allowTf32` (default false) and `matmul.allowFp16ReducedPrecisionReduction`
 * (default true), PyTorch's flags, settable and readable. WebGPU has no TF32 arithmetic and
 * webtorch's matmuls accumulate in float32, so float32 matmuls are full float32 either way
 * (`torch.gpu.isTf32Supported()` is false). An unknown key raises (the object is sealed).
 */
export const cuda = Object.freeze({
  matmul: flags('torch.backends.cuda.matmul', { allowTf32: false, allowFp16ReducedPrecisionReduction: true, allowBf16ReducedPrecisionReduction: true }),
});

/**
 * `torch.backends.cudnn`: `allowTf32` (default true, as PyTorch's), `enabled`, `benchmark` and
 * `deterministic`, settable and readable. There is no cuDNN: convolutions are webtorch's own
 * kernels, full float32 whatever `allowTf32` says, and deterministic either way.
 */
export const cudnn = flags('torch.backends.cudnn', { allowTf32: true, enabled: true, benchmark: false, deterministic: false });

