/**
 * Mapping `gpu:N` to distinct physical GPUs on a machine with several identical ones (Node only).
 *
 * Why this is needed and how it works: Dawn lists every adapter but `requestAdapter()` returns
 * the first, and its `adapter=NAME` toggle matches by name, so identical GPUs cannot be told
 * apart from WebGPU. Mesa's device-select Vulkan layer can: it puts the GPU on the PCI bus named
 * by `DRI_PRIME=pci-DDDD_BB_DD_F` first, reading the variable when a Vulkan instance is created.
 * A worker's own `process.env` is a copy that never reaches native code, so the main thread sets
 * `DRI_PRIME` in its own environment just before a GPU worker starts, and the GPU workers start
 * one after another, each once the previous one has its adapter (../shared/gpu/README.md).
 *
 * Note [DRI_PRIME where native code reads it]: the facade may itself run in a worker thread (a
 * rank of `webtorch-run --threads`), whose `process.env` is a copy too: setting it there chose
 * nothing, and every rank landed on the first GPU. There the launcher's main thread, which owns
 * the process's environment, sets the variable for the rank (its port `workerData.webtorch.env`,
 * Note [a rank thread's DRI_PRIME] in bin/webtorch-run.mjs), one rank at a time across the
 * process, and answers with the value its environment then holds; each start records that value
 * (`processEnv`), read back from the environment native code reads, never from the copy. A worker
 * thread with no such port cannot choose its GPU, and a mapped GPU start there raises rather than
 * run on whichever GPU Dawn lists first.
 *
 * It applies when the layer is installed (its manifest in a Vulkan implicit-layer folder) and the
 * PCI bus lists at least two display controllers of the same vendor and device. Then gpu:i is the
 * i-th of them (bus order; more devices than GPUs wrap around), and `getDeviceProperties` gives
 * its bus. `WEBTORCH_GPU_BUSES=0000:00:07.0,0000:00:08.0` names the GPUs by hand (any machine, any
 * order); `WEBTORCH_PHYSICAL_GPUS=0` turns the mapping off. Elsewhere (one GPU, browsers), every
 * `gpu:N` is a logical device on the one adapter, as before.
 */
import { env, isNode } from '../platform.js';

const LAYER_DIRS = ['/usr/share/vulkan/implicit_layer.d', '/etc/vulkan/implicit_layer.d', '/usr/local/share/vulkan/implicit_layer.d'];

let buses: string[] | null | undefined;

/** The part of Node's `fs` this file uses (declared here, so that the package's types do not need @types/node). */
interface Fs {
  readdirSync(path: string): string[];
  readFileSync(path: string, encoding: 'utf8'): string;
}
const fsModule = (): Fs | undefined => (isNode ? (process.getBuiltinModule?.('node:fs') as Fs | undefined) : undefined);

/** Whether Mesa's device-select layer is installed (its manifest in an implicit-layer folder). */
function hasDeviceSelectLayer(fs: Fs): boolean {
  const dirs = [
    ...LAYER_DIRS,
    ...(env('XDG_DATA_DIRS') ?? '').split(':').filter(Boolean).map((d) => `${d}/vulkan/implicit_layer.d`),
    // The Vulkan loader's own overrides of the implicit-layer search path.
    ...['VK_IMPLICIT_LAYER_PATH', 'VK_ADD_IMPLICIT_LAYER_PATH'].flatMap((v) => (env(v) ?? '').split(':').filter(Boolean)),
  ];
  return dirs.some((d) => {
    try {
      return fs.readdirSync(d).some((f) => /device_select/i.test(f));
    } catch {
      return false;
    }
  });
}

/** @internal The PCI bus ids of identical display controllers (at least two), from sysfs; [] otherwise. */
export function identicalGpus(fs: Fs, root = '/sys/bus/pci/devices'): string[] {
  let ids: string[];
  try {
    ids = fs.readdirSync(root).sort();
  } catch {
    return [];
  }
  const byModel = new Map<string, string[]>();
  for (const id of ids) {
    try {
      const cls = fs.readFileSync(`${root}/${id}/class`, 'utf8').trim();
      // 0x0300xx: VGA controller, 0x0302xx: 3D controller (data-centre GPUs).
      if (!/^0x030[02]/.test(cls)) continue;
      const model = `${fs.readFileSync(`${root}/${id}/vendor`, 'utf8').trim()}:${fs.readFileSync(`${root}/${id}/device`, 'utf8').trim()}`;
      byModel.set(model, [...(byModel.get(model) ?? []), id]);
    } catch {
      // A device without these files is not a GPU we can map.
    }
  }
  const best = [...byModel.values()].sort((a, b) => b.length - a.length)[0] ?? [];
  return best.length >= 2 ? best : [];
}

/** The physical GPUs' bus ids when the mapping applies, else null (computed once). */
export function physicalGpus(): string[] | null {
  if (buses !== undefined) return buses;
  const fs = fsModule();
  if (!fs || /^(0|false|no|off)$/i.test(env('WEBTORCH_PHYSICAL_GPUS')?.trim() ?? '')) return (buses = null);
  const given = env('WEBTORCH_GPU_BUSES')?.split(',').map((s) => s.trim()).filter(Boolean);
  if (given?.length) {
    const bad = given.find((b) => !/^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$/i.test(b));
    // nothing is cached before this: every later call raises too, none quietly maps no GPU
    if (bad) throw new RangeError(`WEBTORCH_GPU_BUSES: '${bad}' is not a PCI bus id such as 0000:00:07.0 (nvidia-smi --query-gpu=pci.bus_id, without its leading 0000)`);
    return (buses = given);
  }
  const found = identicalGpus(fs);
  return (buses = found.length && hasDeviceSelectLayer(fs) ? found : null);
}

/** The PCI bus id of gpu:`index` (null where gpu:N are logical devices on one adapter). */
export function busOf(index: number): string | null {
  const b = physicalGpus();
  return b ? b[index % b.length] : null;
}

/** `0000:00:07.0` → `pci-0000_00_07_0`, the device-select layer's form. */
export const driPrime = (bus: string): string => `pci-${bus.replace(/[:.]/g, '_')}`;

let chain: Promise<unknown> = Promise.resolve();

/** One mapped worker start, as the tests read it. */
export interface PhysicalStart {
  /** The GPU index (gpu:`index`). */
  index: number;
  /** The value set for it. */
  driPrime: string;
  /** `DRI_PRIME` as the process's own environment (the one native code reads) held it while the worker started. */
  processEnv: string | null;
  /** Who set it: this thread (the main thread) or the launcher's main thread for this rank thread. */
  via: 'main thread' | 'launcher';
  t0: number;
  t1: number;
}
/** What each mapped worker start saw (for the tests). */
const starts: PhysicalStart[] = [];

/** @internal The mapped worker starts so far. */
export const physicalStarts = (): PhysicalStart[] => starts.slice();

/** The part of Node's `worker_threads` MessagePort the environment's port uses. */
interface EnvPort {
  once(event: 'message', listener: (m: { held?: Record<string, string | null> }) => void): unknown;
  postMessage(value: unknown): void;
  ref(): void;
  unref(): void;
}
/** The part of Node's `worker_threads` module this file reads. */
interface WorkerThreads {
  isMainThread: boolean;
  workerData: unknown;
}

/** A hold on the process's `DRI_PRIME`: the value it has while held, and how to give it back. */
interface Held {
  processEnv: string | null;
  via: PhysicalStart['via'];
  release(): void;
}

/**
 * Sets `DRI_PRIME` to `value` where native code reads it (Note [DRI_PRIME where native code reads
 * it]): in this thread's environment on the main thread, through the launcher in a rank thread.
 */
async function holdDriPrime(value: string, index: number, bus: string): Promise<Held> {
  const wt = process.getBuiltinModule?.('node:worker_threads') as WorkerThreads | undefined;
  if (!wt || wt.isMainThread) {
    const before = process.env.DRI_PRIME;
    process.env.DRI_PRIME = value;
    return {
      processEnv: process.env.DRI_PRIME ?? null, via: 'main thread',
      release: () => {
        if (before === undefined) delete process.env.DRI_PRIME;
        else process.env.DRI_PRIME = before;
      },
    };
  }
  const port = (wt.workerData as { webtorch?: { env?: EnvPort | null } } | null)?.webtorch?.env;
  if (!port) {
    throw new Error(`webtorch: gpu:${index} should run on the GPU at PCI bus ${bus}, but this is a worker thread, whose process.env is a copy that `
      + 'Dawn never reads, so DRI_PRIME cannot choose its GPU here. Start the ranks with webtorch-run --threads (its main thread sets the variable for '
      + 'each rank) or as processes, or set WEBTORCH_PHYSICAL_GPUS=0 to run every gpu:N on the adapter Dawn lists first.');
  }
  port.ref();
  const held = await new Promise<Record<string, string | null>>((resolve) => {
    port.once('message', (m) => resolve(m.held ?? {}));
    port.postMessage({ hold: { DRI_PRIME: value } });
  });
  port.unref();
  return { processEnv: held.DRI_PRIME ?? null, via: 'launcher', release: () => port.postMessage({ release: true }) };
}

/**
 * Starts GPU worker `index` through `start` (which resolves once the worker has its adapter) with
 * `DRI_PRIME` naming its physical GPU in the process's environment, one worker at a time; where
 * there is no mapping, just calls `start`.
 */
export function startOnPhysicalGpu<T>(kind: 'cpu' | 'gpu', index: number, start: () => Promise<T>): Promise<T> {
  const bus = kind === 'gpu' ? busOf(index) : null;
  if (!bus) return start();
  const run = chain.then(async () => {
    const value = driPrime(bus);
    const held = await holdDriPrime(value, index, bus);
    const t0 = performance.now();
    try {
      return await start();
    } finally {
      starts.push({ index, driPrime: value, processEnv: held.processEnv, via: held.via, t0, t1: performance.now() });
      held.release();
    }
  });
  chain = run.catch(() => {});
  return run;
}

/** @internal For tests: forget the cached mapping. */
export function resetPhysicalGpus(): void {
  buses = undefined;
}
