/**
 * Per-device default generators and PyTorch's RNG state API: `torch.manualSeed`, `seed`,
 * `initialSeed`, `getRngState`/`setRngState` (the cpu's), `torch.gpu.manualSeed` (the current
 * GPU), `manualSeedAll`, `getRngState(device)`/`setRngState(state, device)`, and
 * `torch.random.forkRng`.
 *
 * Each device has its own default generator, as in PyTorch: `cpu`'s is `defaultGenerator`, a
 * GPU's is made on first use. Like PyTorch's lazily initialised CUDA generators, a GPU generator
 * made after `torch.manualSeed(s)` or `manualSeedAll(s)` starts from that seed. A state is a
 * `Uint8Array` of 16 bytes (PyTorch's ByteTensor; see `Generator.getState`).
 */
import { Device, currentDevice, device as toDevice, knownGpuCount, type DeviceLike } from './device.js';
import { DEFAULT_SEED, Generator, defaultGenerator } from './random.js';
import { bindArgs, checkOptions, isKeywords } from './args.js';

const gpuGenerators = new Map<number, Generator>();
/** The seed of the last `manualSeed`/`manualSeedAll`, which GPU generators made later start from. */
let allSeed: number | bigint = DEFAULT_SEED;

/** The default generator of a device (`torch.cuda.default_generators[i]`). */
export function defaultGeneratorOf(d: Device): Generator {
  if (d.type === 'cpu') return defaultGenerator;
  let g = gpuGenerators.get(d.index);
  if (!g) gpuGenerators.set(d.index, (g = new Generator(d).manualSeed(allSeed)));
  return g;
}

/** A GPU argument (index, `'gpu:1'`, `'cuda'`; default: the current GPU) as a device. */
function gpuDevice(op: string, d: DeviceLike | null | undefined): Device {
  const dev = d == null ? toDevice(Device.of('gpu', currentDevice())) : toDevice(d);
  if (dev.type !== 'gpu') throw new TypeError(`${op}: expected a gpu device, but got ${dev}`);
  return dev;
}

const allGpus = (): Device[] => Array.from({ length: knownGpuCount() }, (_, i) => Device.of('gpu', i));

// ---- torch.* (the cpu generator, and every device for the seeds) ----

/** `torch.manualSeed(seed)`: seeds every device's default generator; returns the cpu's. */
export function manualSeed(seed: number | bigint): Generator {
  defaultGenerator.manualSeed(seed);
  manualSeedAll(seed);
  return defaultGenerator;
}

/** `torch.seed()`: seeds every device from a non-deterministic source; returns the seed. */
export function seed(): number {
  const s = defaultGenerator.seed();
  manualSeedAll(s);
  return s;
}

/** `torch.initialSeed()`: the cpu generator's seed. */
export const initialSeed = (): number | bigint => defaultGenerator.initialSeed();

/** `torch.getRngState()`: the cpu generator's state (16 bytes). */
export const getRngState = (): Uint8Array => defaultGenerator.getState();

/** `torch.setRngState(state)`: restores the cpu generator's state. */
export function setRngState(state: Uint8Array): void {
  defaultGenerator.setState(state);
}

// ---- torch.gpu.* ----

/**
 * The current GPU for the seeding functions, which PyTorch lets run before CUDA starts (and
 * ignores where there is none): before discovery, or without GPUs, its index is not checked.
 */
const seedTarget = (op: string): Device => (knownGpuCount() === 0 ? Device.of('gpu', currentDevice()) : gpuDevice(op, null));

/** `torch.gpu.manualSeed(seed)`: seeds the current GPU's generator (also before `torch.gpu.init()`). */
export function gpuManualSeed(seed: number | bigint): void {
  defaultGeneratorOf(seedTarget('manual_seed')).manualSeed(seed);
}

/** `torch.gpu.seed()`: seeds the current GPU's generator non-deterministically; returns the seed. */
export function gpuSeed(): number {
  return defaultGeneratorOf(seedTarget('seed')).seed();
}

/** `torch.gpu.seedAll()`: one non-deterministic seed for every GPU; returns it. */
export function gpuSeedAll(): number {
  const s = new Generator().seed();
  manualSeedAll(s);
  return s;
}

/** `torch.gpu.initialSeed()`: the current GPU generator's seed. */
export function gpuInitialSeed(): number | bigint {
  return defaultGeneratorOf(gpuDevice('initial_seed', null)).initialSeed();
}

/** `torch.gpu.getRngState(device = current)`: a GPU generator's state (16 bytes). */
export function gpuGetRngState(...args: [device?: DeviceLike | null] | [{ device?: DeviceLike | null }]): Uint8Array {
  const { device } = bindArgs('get_rng_state', ['device'], args, { device: null as DeviceLike | null });
  return defaultGeneratorOf(gpuDevice('get_rng_state', device)).getState();
}

/** `torch.gpu.setRngState(state, device = current)`. */
export function gpuSetRngState(state: Uint8Array, ...args: [device?: DeviceLike | null] | [{ device?: DeviceLike | null }]): void {
  const { device } = bindArgs('set_rng_state', ['device'], args, { device: null as DeviceLike | null }, 1);
  defaultGeneratorOf(gpuDevice('set_rng_state', device)).setState(state);
}

/** `torch.gpu.getRngStateAll()`: every GPU's state, by index. */
export function gpuGetRngStateAll(): Uint8Array[] {
  return allGpus().map((d) => defaultGeneratorOf(d).getState());
}

/** `torch.gpu.setRngStateAll(states)`: one state per GPU, by index. */
export function gpuSetRngStateAll(states: Uint8Array[]): void {
  if (!Array.isArray(states)) throw new TypeError('set_rng_state_all: expected an array of states (one Uint8Array per GPU)');
  const gpus = allGpus();
  if (states.length > gpus.length) throw new RangeError(`set_rng_state_all: ${states.length} states for ${gpus.length} GPU devices`);
  states.forEach((s, i) => defaultGeneratorOf(gpus[i]).setState(s));
}

/** `torch.gpu.manualSeedAll(seed)`: seeds every GPU's generator (and those made later). */
export function manualSeedAll(seed: number | bigint): void {
  new Generator().manualSeed(seed); // validates before anything changes
  allSeed = seed;
  for (const g of gpuGenerators.values()) g.manualSeed(seed);
}

// ---- torch.random.forkRng ----

/** `forkRng`'s options (PyTorch's `fork_rng` arguments). */
export interface ForkRngOptions {
  /** The GPUs whose generators are saved and restored (default: every GPU device). */
  devices?: DeviceLike[] | null;
  /** False runs `fn` without forking. */
  enabled?: boolean;
}

/**
 * `torch.random.forkRng({devices, enabled}, fn)` (PyTorch's `with torch.random.fork_rng(...)`):
 * runs `fn` and then restores the cpu generator and the listed GPUs' generators to their states
 * before it, when `fn` returns, throws, or (an async `fn`) settles. Returns what `fn` returns.
 * The generators are global, as in PyTorch: draws that other tasks make while an async `fn` runs
 * are rewound too.
 */
export function forkRng<T>(...args: [fn: () => T] | [options: ForkRngOptions | null | undefined, fn: () => T]): T {
  const fn = args[args.length - 1] as () => T;
  const options = args.length > 1 ? (args[0] as ForkRngOptions | null | undefined) : undefined;
  if (typeof fn !== 'function') throw new TypeError(`fork_rng: the last argument must be a function, got ${typeof fn}`);
  if (options != null && !isKeywords(options)) throw new TypeError('fork_rng: expected an options object {devices, enabled} before the function');
  checkOptions('fork_rng', options, ['devices', 'enabled']);
  if (options?.enabled === false) return fn();
  if (options?.devices != null && !Array.isArray(options.devices)) throw new TypeError('fork_rng: devices must be an array of GPU devices');
  const gens = [defaultGenerator, ...(options?.devices ?? allGpus()).map((d) => defaultGeneratorOf(gpuDevice('fork_rng', d)))];
  const saved = gens.map((g) => g.getState());
  const restore = () => gens.forEach((g, i) => g.setState(saved[i]));
  let out: T;
  try {
    out = fn();
  } catch (e) {
    restore();
    throw e;
  }
  if (typeof (out as PromiseLike<unknown> | null)?.then === 'function') return Promise.resolve(out).finally(restore) as T;
  restore();
  return out;
}

