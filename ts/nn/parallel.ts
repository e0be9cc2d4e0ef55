/**
 * `nn.DataParallel`: PyTorch's single-process data parallelism over webtorch's GPU devices.
 *
 * Each forward runs PyTorch's four steps (ts/nn/parallel-apply.ts): scatter the batch along
 * `dim`, replicate the module from `deviceIds[0]` onto the devices in use (parameters copied
 * every forward, differentiably), apply the replicas (every device's work is queued before any
 * wait), gather the outputs on `outputDevice`. `backward()` sums each replica's gradient into
 * the original parameters on `deviceIds[0]`, so an optimizer over `dp.parameters()` (or
 * `dp.module.parameters()`) trains as on one device.
 *
 * The loss computed on each device (the notes' advice, to spread the work off the output
 * device): let the wrapped module's forward return the loss as a 0-dim tensor; gather makes a
 * vector of the per-device losses on `outputDevice`, and `loss.mean().backward()` trains. (With
 * chunks of unequal size a weighted mean matches one device exactly; see README.)
 */
import { Device, device as toDevice, knownGpuCount, type DeviceLike } from '../device.js';
import { bindArgs, type PyArgs } from '../ops/options.js';
import { tidy } from '../ops/scoped.js';
import { Module } from './module.js';
import { checkOnDevice, gather, parallelApply, replicate, scatter } from './parallel-apply.js';

/** `nn.DataParallel`'s keywords. */
export interface DataParallelOptions {
  /** The GPU devices to use (indices, `'gpu:i'`/`'cuda:i'` or devices); all GPU devices when omitted. */
  deviceIds?: DeviceLike[] | null;
  /** Where outputs are gathered (default `deviceIds[0]`; `'cpu'` or -1 for the cpu). */
  outputDevice?: DeviceLike | null;
  /** The batch dimension that inputs are scattered along and outputs gathered along (default 0). */
  dim?: number;
}

type DPArgs = PyArgs<[deviceIds: DeviceLike[] | null, outputDevice: DeviceLike | null, dim: number], DataParallelOptions>;

/**
 * `nn.DataParallel(module, deviceIds?, outputDevice?, dim?)` (or `{deviceIds, outputDevice, dim}`):
 * runs `module` on chunks of the batch on several GPU devices at once. The module must be on
 * `deviceIds[0]` when called. `dp.module` is the wrapped module; `stateDict()` keys carry the
 * `module.` prefix, as in PyTorch.
 */
export class DataParallel<M extends Module = Module> extends Module {
  /** The wrapped module (its parameters are the ones trained). */
  module!: M;
  /** The devices used, in order (empty when there is no GPU: forward then calls the module). */
  readonly deviceIds: Device[];
  /** Where outputs are gathered. */
  readonly outputDevice: Device | null;
  /** The scatter/gather dimension. */
  readonly dim: number;

  constructor(module: M, ...args: DPArgs) {
    super();
    const o = bindArgs<{ deviceIds: DeviceLike[] | null; outputDevice: DeviceLike | null; dim: number }>(
      'DataParallel', ['deviceIds', 'outputDevice', 'dim'], args, { deviceIds: null, outputDevice: null, dim: 0 }, 1);
    if (!(module instanceof Module)) throw new TypeError(`DataParallel(): expected module to be an nn.Module, but got ${typeof module}`);
    if (!Number.isInteger(o.dim)) throw new TypeError(`DataParallel(): dim must be an integer, got ${String(o.dim)}`);
    this.registerModule('module', module);
    this.dim = o.dim;
    if (o.deviceIds != null && !Array.isArray(o.deviceIds)) {
      throw new TypeError(`DataParallel(): deviceIds must be a list of devices, got ${typeof o.deviceIds}`);
    }
    const ids = o.deviceIds ?? Array.from({ length: knownGpuCount() }, (_, i) => i);
    this.deviceIds = ids.map((d) => {
      const dev = toDevice(d);
      if (dev.type !== 'gpu') throw new RangeError(`DataParallel(): deviceIds must be GPU devices, got ${dev}`);
      return dev;
    });
    const dup = this.deviceIds.find((d, i) => this.deviceIds.indexOf(d) !== i);
    if (dup) throw new RangeError(`DataParallel(): deviceIds lists ${dup} more than once`);
    if (o.deviceIds != null && this.deviceIds.length === 0) throw new RangeError('DataParallel(): deviceIds is empty');
    this.outputDevice = this.deviceIds.length === 0 ? null
      : o.outputDevice == null ? this.deviceIds[0] : o.outputDevice === -1 ? toDevice('cpu') : toDevice(o.outputDevice);
  }

  /** Scatters the inputs, applies the replicas, gathers the outputs (see the file note). */
  forward(...inputs: unknown[]): any {
    if (this.deviceIds.length === 0) return this.module.forward(...inputs);
    const src = this.deviceIds[0];
    checkOnDevice(this.module, src, 'deviceIds[0]');
    return tidy(() => {
      let chunks = scatter(inputs, this.deviceIds, this.dim) as unknown[][];
      if (chunks.length === 0) chunks = [[]];
      if (this.deviceIds.length === 1) return this.module.forward(...chunks[0]);
      const replicas = replicate(this.module, this.deviceIds.slice(0, chunks.length));
      const outputs = parallelApply(replicas, chunks);
      return gather(outputs, this.outputDevice!, this.dim);
    });
  }

  /** `dp.module`'s repr inside `DataParallel(...)`. */
  override toString(): string {
    return `DataParallel(\n  (module): ${String(this.module).replace(/\n/g, '\n  ')}\n)`;
  }
}
