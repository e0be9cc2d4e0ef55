/**
 * DataParallel's building blocks, as `torch.nn.parallel`: `scatter`, `replicate`, `parallelApply`
 * and `gather`.
 *
 * Why this works without threads: an op only queues work in its device's worker and returns a
 * handle, so calling each replica's `forward` one after another from the main thread issues every
 * device's work before anything waits; the devices run at once. The only waits are the copies
 * of scatter (from the input's device) and gather (to the output device), which are ordinary
 * worker-to-worker `to()` copies in stream order.
 *
 * A replica is a shallow copy of each module (same class, same fields) whose parameters are
 * `p.to(device)` of the original's: non-leaf tensors, so `backward()` carries each replica's
 * gradient back through the differentiable copy and sums it into the original parameter on
 * `deviceIds[0]`, PyTorch's Broadcast. The replica on `deviceIds[0]` is the module itself (its
 * in-place buffer updates are kept, as PyTorch documents).
 */
import { Device, device as toDevice, type DeviceLike } from '../device.js';
import { withGradMode } from '../autograd/graph.js';
import { Tensor } from '../tensor.js';
import { cat, chunk } from '../ops/shape.js';
import { unsqueeze } from '../ops/views.js';
import { tidy } from '../ops/scoped.js';
import { Module } from './module.js';

/** The private maps of a module, reached for replication only. */
interface ModuleMaps {
  _params: Map<string, Tensor | null>;
  _buffers: Map<string, Tensor | null>;
  _persistent: Set<string>;
  _modules: Map<string, Module | null>;
}

const isPlainObject = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && (Object.getPrototypeOf(x) === Object.prototype || Object.getPrototypeOf(x) === null);

/**
 * `torch.nn.parallel.scatter(inputs, devices, dim)`: splits every tensor in `inputs` (arrays and
 * plain objects are walked) into `torch.chunk` pieces along `dim`, one per device, each copied to
 * its device. Other values are shared by every piece. The result has one entry per chunk, so a
 * batch smaller than the number of devices gives fewer entries (PyTorch's behaviour).
 */
export function scatter(inputs: unknown, devices: DeviceLike[], dim = 0): unknown[] {
  const devs = devices.map((d) => toDevice(d));
  const walk = (obj: unknown): unknown[] => {
    if (obj instanceof Tensor) {
      if (obj.ndim === 0) throw new RangeError(`DataParallel: cannot scatter a 0-dim tensor along dimension ${dim} (expected a batch dimension)`);
      return chunk(obj, devs.length, dim).map((c, i) => {
        const moved = c.to(devs[i]);
        if (moved !== c) c.dispose();
        return moved;
      });
    }
    if (Array.isArray(obj)) {
      if (obj.length === 0) return devs.map(() => []);
      const parts = obj.map(walk);
      const n = Math.min(...parts.map((p) => p.length));
      return Array.from({ length: n }, (_, i) => parts.map((p) => p[i]));
    }
    if (isPlainObject(obj)) {
      const keys = Object.keys(obj);
      if (keys.length === 0) return devs.map(() => ({}));
      const parts = keys.map((k) => walk(obj[k]));
      const n = Math.min(...parts.map((p) => p.length));
      return Array.from({ length: n }, (_, i) => Object.fromEntries(keys.map((k, j) => [k, parts[j][i]])));
    }
    return devs.map(() => obj);
  };
  return walk(inputs);
}

/** A shallow copy of a module object: callable, same prototype and fields, fresh registration maps. */
function shallowCopy(m: Module): Module {
  const fn = (...args: unknown[]): unknown => (fn as unknown as Module).forward(...args);
  delete (fn as { name?: string }).name;
  delete (fn as { length?: number }).length;
  Object.setPrototypeOf(fn, Object.getPrototypeOf(m));
  Object.defineProperties(fn, Object.getOwnPropertyDescriptors(m));
  const src = m as unknown as ModuleMaps, dst = fn as unknown as ModuleMaps;
  dst._params = new Map(src._params);
  dst._buffers = new Map(src._buffers);
  dst._persistent = new Set(src._persistent);
  dst._modules = new Map(src._modules);
  return fn as unknown as Module;
}

/**
 * `torch.nn.parallel.replicate(module, devices)`: one replica of `module` per device. The first
 * device must hold every parameter and buffer; its replica is `module` itself. The others' are
 * differentiable copies (see the file note); buffers are copied without gradient.
 */
export function replicate<M extends Module>(module: M, devices: DeviceLike[]): M[] {
  const devs = devices.map((d) => toDevice(d));
  if (devs.length === 0) return [];
  checkOnDevice(module, devs[0], 'devices[0]');
  const copyTo = (m: Module, dev: Device, memo: Map<Module, Module>): Module => {
    const seen = memo.get(m);
    if (seen) return seen;
    m.parameters(); // registers directly assigned fields before their maps are copied
    const r = shallowCopy(m);
    memo.set(m, r);
    const maps = m as unknown as ModuleMaps, rec = r as unknown as Record<string, unknown>;
    const own = m as unknown as Record<string, unknown>;
    for (const k of maps._params.keys()) {
      const p = own[k];
      if (p instanceof Tensor) rec[k] = p.to(dev);
    }
    withGradMode(false, () => {
      for (const k of maps._buffers.keys()) {
        const b = own[k];
        if (b instanceof Tensor) rec[k] = b.to(dev);
      }
    });
    for (const [k, child] of m.namedChildren()) rec[k] = copyTo(child, dev, memo);
    return r;
  };
  return devs.map((dev, i) => (i === 0 ? module : copyTo(module, dev, new Map()) as M));
}

/**
 * `torch.nn.parallel.parallelApply(modules, inputs)`: calls `modules[i](...inputs[i])` for every
 * i. Each call only queues its device's work, so every device is busy before any result is read.
 * An input that is not an array is passed as the single argument.
 */
export function parallelApply(modules: Module[], inputs: unknown[]): unknown[] {
  if (modules.length !== inputs.length) {
    throw new RangeError(`parallelApply: ${modules.length} modules but ${inputs.length} inputs (expected one input per module)`);
  }
  return modules.map((m, i) => {
    const out = Array.isArray(inputs[i]) ? m.forward(...(inputs[i] as unknown[])) : m.forward(inputs[i]);
    if (out && typeof (out as { then?: unknown }).then === 'function') {
      throw new TypeError('parallelApply: the module\'s forward returned a Promise; DataParallel needs a synchronous forward (ops are queued, so forward need not await)');
    }
    return out;
  });
}

let warnedScalars = false;

/**
 * `torch.nn.parallel.gather(outputs, targetDevice, dim)`: joins the replicas' outputs on
 * `targetDevice` with `torch.cat` along `dim` (arrays and plain objects are walked). 0-dim
 * tensors (a loss per device) are unsqueezed into a vector, with PyTorch's warning.
 */
export function gather(outputs: unknown[], targetDevice: DeviceLike, dim = 0): unknown {
  const dev = toDevice(targetDevice);
  const walk = (outs: unknown[]): unknown => {
    const first = outs[0];
    if (first instanceof Tensor) {
      const ts = outs as Tensor[];
      if (ts.some((t) => !(t instanceof Tensor))) throw new TypeError('DataParallel: gather expected every replica to return a Tensor in the same place');
      let parts = ts.map((t) => t.to(dev));
      if (ts.every((t) => t.ndim === 0)) {
        if (!warnedScalars) {
          warnedScalars = true;
          console.warn(`Was asked to gather along dimension ${dim}, but all input tensors were scalars; will instead unsqueeze and return a vector.`);
        }
        parts = parts.map((t) => unsqueeze(t, 0));
        return cat(parts, 0);
      }
      return cat(parts, dim);
    }
    if (first === null || first === undefined) return first;
    if (Array.isArray(first)) return first.map((_, j) => walk(outs.map((o) => (o as unknown[])[j])));
    if (isPlainObject(first)) {
      return Object.fromEntries(Object.keys(first).map((k) => [k, walk(outs.map((o) => (o as Record<string, unknown>)[k]))]));
    }
    throw new TypeError(`DataParallel: cannot gather outputs of type ${typeof first === 'object' ? first.constructor?.name : typeof first} (expected tensors, arrays or plain objects of them)`);
  };
  return tidy(() => walk(outputs));
}

/** Raises PyTorch's error when a parameter or buffer of `module` is not on `dev`. */
export function checkOnDevice(module: Module, dev: Device, what: string): void {
  for (const t of [...module.parameters(), ...module.buffers()]) {
    if (t.device !== dev) {
      throw new Error(`module must have its parameters and buffers on device ${dev} (${what}) but found one of them on device: ${t.device}`);
    }
  }
}
