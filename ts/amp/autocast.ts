/**
 * `torch.autocast`: mixed precision regions, and the one place where ops' inputs are cast.
 *
 * Why it is built this way: PyTorch casts in a dispatcher layer that every op passes through;
 * webtorch's ops are plain functions. Each op that has an `autocast` field in its row of the op
 * table (ts/ops/registry.ts) starts with `if (autocasting()) return autocastCall(name, args, self)`:
 * `autocastCall` looks the op's policy up for the device type of its tensors, casts the eligible
 * tensor arguments (floating, on that device type) and calls the op again with autocast suspended,
 * so the ops it is built from are not cast a second time (PyTorch excludes its autocast key for
 * the inner call the same way). The casts are ordinary `cast`s on the tape, so gradients flow
 * back through them to the float32 parameters, in float32.
 *
 * Policies (PyTorch's lists, per device type): 'lower' casts to the region's dtype (matmul,
 * linear, conv); 'fp32' casts to float32 (softmax, losses, …); 'promote' casts to the widest
 * floating type among the inputs (cat, stack, …).
 *
 * The cast cache: the low-precision copy of a float32 leaf that requires grad (a weight) is made
 * once per outermost region (as PyTorch's cache), while grad mode is on, and freed when that
 * region ends. Other casts are freed as soon as the op returns (the tape keeps what backward needs).
 *
 * Regions are a `ContextVar` (ts/context.ts): an async callback's region is seen by the work it
 * starts and by no concurrent task. `openRegions` counts enabled regions anywhere, so ops outside
 * any region pay one integer test.
 */
import { ContextVar } from '../context.js';
import { isFloating, toDType, type DType } from '../dtype.js';
import { isCollectingInputs, isGradEnabled } from '../autograd/graph.js';
import { untrack } from '../scope.js';
import { checkOptions } from '../args.js';
import { opInfo, type AutocastPolicy } from '../ops/registry.js';
import { cast } from '../ops/cast.js';
import type { Tensor } from '../tensor.js';

/** The device types autocast knows: webtorch's `gpu` (`cuda` is accepted as its name) and `cpu`. */
export type AutocastDeviceType = 'gpu' | 'cpu';

/** What `torch.autocast` takes. */
export interface AutocastOptions {
  /** The low-precision dtype: 'float16' (the gpu default) or 'bfloat16' (the cpu default). */
  dtype?: 'float16' | 'bfloat16' | 'half';
  /** Whether autocasting is on in the region (default true); false turns it off inside an enabled region. */
  enabled?: boolean;
  /** Whether weight casts are cached within the region (default true). */
  cacheEnabled?: boolean;
}

interface DeviceState {
  enabled: boolean;
  dtype: DType;
}

interface AmpState {
  gpu: DeviceState;
  cpu: DeviceState;
  cacheEnabled: boolean;
  /** The outermost enabled region's cast cache (float32 leaf → its low-precision cast, per dtype). */
  cache: Map<Tensor, Map<DType, Tensor>> | null;
}

const amp = new ContextVar<AmpState>('autocast', {
  gpu: { enabled: false, dtype: 'float16' },
  cpu: { enabled: false, dtype: 'bfloat16' },
  cacheEnabled: true,
  cache: null,
});

let openRegions = 0;
let suspended = 0;

const isTensor = (v: unknown): v is Tensor =>
  typeof v === 'object' && v !== null && typeof (v as Tensor).dispose === 'function' && 'dtype' in v && 'device' in v;

/** A plain options object (`{bias}`, `{weight}`): its tensors are arguments too. */
const isOptions = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !isTensor(v) && Object.getPrototypeOf(v) === Object.prototype;

/** Binds a device type argument: 'gpu', 'cuda' (PyTorch's name for it) or 'cpu'; others raise PyTorch's error. */
export function autocastDeviceType(deviceType: unknown): AutocastDeviceType {
  if (deviceType === 'gpu' || deviceType === 'cuda') return 'gpu';
  if (deviceType === 'cpu') return 'cpu';
  throw new TypeError(`User specified an unsupported autocast device_type '${String(deviceType)}' (webtorch supports 'gpu', also spelled 'cuda', and 'cpu')`);
}

function lowDtype(deviceType: AutocastDeviceType, dtype: unknown): DType {
  if (dtype === undefined) return deviceType === 'gpu' ? 'float16' : 'bfloat16';
  let d: DType | null = null;
  try {
    d = toDType(dtype as string, 'autocast');
  } catch {
    d = null;
  }
  if (d === 'float16' || d === 'bfloat16') return d;
  const where = deviceType === 'gpu' ? 'CUDA' : 'CPU';
  throw new TypeError(`In ${where} autocast, but the target dtype is not supported (got dtype=${String(dtype)}). ` +
    `${where} Autocast only supports dtypes of torch.float16 and torch.bfloat16 currently.`);
}

/**
 * `torch.autocast(deviceType, {dtype, enabled, cacheEnabled}, fn)`: runs `fn` (sync or async) with
 * autocasting on for tensors of `deviceType`, and returns what it returns. Ops run in the dtype
 * their row of the op table names (see the file's note); weight casts are cached in the region.
 * Regions nest: an inner one may change the dtype or turn autocasting off (`enabled: false`).
 */
export function autocast<R>(deviceType: string, ...args: [fn: () => R] | [options: AutocastOptions | undefined, fn: () => R]): R {
  const [options, fn] = args.length === 1 ? [{}, args[0]] : [args[0] ?? {}, args[1]];
  const type = autocastDeviceType(deviceType);
  checkOptions('autocast', options, ['dtype', 'enabled', 'cacheEnabled']);
  if (typeof fn !== 'function') throw new TypeError(`autocast(): expected a callback to run in the region, got ${typeof fn}`);
  const enabled = options.enabled ?? true;
  if (typeof enabled !== 'boolean') throw new TypeError(`autocast(): enabled must be a boolean, got ${typeof enabled}`);
  const dtype = lowDtype(type, options.dtype);
  const outer = amp.get();
  const ownsCache = enabled && outer.cache === null;
  const state: AmpState = {
    ...outer,
    [type]: { enabled, dtype },
    cacheEnabled: options.cacheEnabled ?? outer.cacheEnabled,
    cache: ownsCache ? new Map() : outer.cache,
  };
  if (enabled) openRegions++;
  const end = () => {
    if (enabled) openRegions--;
    if (ownsCache) {
      for (const byDtype of state.cache!.values()) for (const t of byDtype.values()) t.dispose();
      state.cache!.clear();
    }
  };
  let result: R;
  try {
    result = amp.run(state, fn);
  } catch (e) {
    end();
    throw e;
  }
  if (typeof (result as PromiseLike<unknown>)?.then === 'function') {
    return Promise.resolve(result).finally(end) as R;
  }
  end();
  return result;
}

/** `torch.isAutocastEnabled(deviceType = 'gpu')`: whether autocasting is on for that device type here. */
export function isAutocastEnabled(deviceType: string = 'gpu'): boolean {
  return amp.get()[autocastDeviceType(deviceType)].enabled;
}

/** `torch.getAutocastDtype(deviceType)`: the low-precision dtype of the current region for that device type. */
export function getAutocastDtype(deviceType: string = 'gpu'): DType {
  return amp.get()[autocastDeviceType(deviceType)].dtype;
}

/** Whether an op must consult `autocastCall`: some region is open and no autocast op is in progress. */
export const autocasting = (): boolean => openRegions > 0 && suspended === 0;

/** Calls the op itself, with autocast suspended so that the ops it is made of are not cast again. */
function suspendedCall<A extends unknown[], R>(fn: (...args: A) => R, args: A): R {
  suspended++;
  try {
    return fn(...args);
  } finally {
    suspended--;
  }
}

/** The dtype an op's eligible inputs are cast to, or null to leave them. */
function target(policy: AutocastPolicy, low: DType, eligible: Tensor[]): DType | null {
  if (policy === 'lower') return low;
  if (policy === 'fp32') return 'float32';
  // Mixed floating dtypes promote to float32 (float16 with bfloat16 too, as promoteTypes says).
  return new Set(eligible.map((t) => t.dtype)).size > 1 ? 'float32' : null;
}

/**
 * Calls `fn(...args)` with the op's tensor arguments (top level, in an array such as `cat`'s, or
 * in an options object such as `{bias}`) cast as the current region's policy for `name` says, and
 * with autocast suspended inside (see the file's note). `autocastable: false` (a call PyTorch does
 * not autocast, e.g. one with an explicit `dtype`) only suspends it.
 */
export function autocastCall<A extends unknown[], R>(name: string, args: A, fn: (...args: A) => R, autocastable = true): R {
  if (!autocastable) return suspendedCall(fn, args);
  const tensors = args.flatMap((a) => (isTensor(a) ? [a] : Array.isArray(a) ? a.filter(isTensor) : isOptions(a) ? Object.values(a).filter(isTensor) : []));
  if (!tensors.length) return suspendedCall(fn, args);
  const state = amp.get();
  const type = tensors[0].device.type as AutocastDeviceType;
  const dev = state[type];
  const policy = opInfo(name).autocast?.[type];
  if (!dev?.enabled || !policy) return suspendedCall(fn, args);
  const eligible = tensors.filter((t) => t.device.type === type && isFloating(t.dtype) && !t.isDisposed);
  const to = target(policy, dev.dtype, eligible);
  if (!to) return suspendedCall(fn, args);
  const temps: Tensor[] = [];
  const castOne = (v: unknown): unknown => {
    if (!isTensor(v) || !eligible.includes(v) || v.dtype === to) return v;
    // PyTorch's cache: a float32 leaf that requires grad, cast to the region's low dtype.
    const cacheable = policy === 'lower' && state.cacheEnabled && state.cache && v.dtype === 'float32' && v.requiresGrad && v.isLeaf && isGradEnabled()
      && !isCollectingInputs(); // a checkpointed forward's casts record nothing: not for reuse outside it
    if (cacheable) {
      let byDtype = state.cache!.get(v);
      if (!byDtype) state.cache!.set(v, (byDtype = new Map()));
      let c = byDtype.get(to);
      if (!c) {
        byDtype.set(to, (c = cast(v, to)));
        untrack(c); // the region owns it, not an enclosing tidy
      }
      return c;
    }
    const c = cast(v, to);
    temps.push(c);
    return c;
  };
  const castArgs = args.map((a) => (isTensor(a) ? castOne(a)
    : Array.isArray(a) && a.some(isTensor) ? a.map(castOne)
      : isOptions(a) && Object.values(a).some(isTensor) ? Object.fromEntries(Object.entries(a).map(([k, v]) => [k, castOne(v)])) : a)) as A;
  let out: R;
  try {
    out = suspendedCall(fn, castArgs);
  } finally {
    // The tape keeps what backward needs; an op that returned one of its inputs keeps it.
    const kept = new Set<unknown>(Array.isArray(out!) ? out : [out!]);
    for (const t of temps) if (!kept.has(t)) t.dispose();
  }
  return out;
}
