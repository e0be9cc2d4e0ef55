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
import { bindArgs, type PyArgs } from '../args.js';
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
  /** The scatter/gather dimension. */
  readonly dim: number;
  private readonly _ids: Device[] | null;
  private readonly _out: DeviceLike | null;
  private _all: Device[] | null = null;

  /**
   * The devices used, in order. Without `deviceIds`, every GPU device, counted when first needed
   * (after GPU discovery: `await torch.gpu.init()` or any GPU use); empty when there is no GPU,
   * and forward then calls the module, as PyTorch's does without CUDA.
   */
  get deviceIds(): Device[] {
    if (this._ids) return this._ids;
    if (this._all) return this._all;
    const n = knownGpuCount();
    if (n === 0) return [];
    return (this._all = Array.from({ length: n }, (_, i) => toDevice(i)));
  }

  /** Where outputs are gathered (`deviceIds[0]` unless given; null when there is no GPU). */
  get outputDevice(): Device | null {
    const ids = this.deviceIds;
    if (ids.length === 0) return null;
    return this._out == null ? ids[0] : this._out === -1 ? toDevice('cpu') : toDevice(this._out);
  }

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
    this._ids = o.deviceIds == null ? null : o.deviceIds.map((d) => {
      const dev = toDevice(d);
      if (dev.type !== 'gpu') throw new RangeError(`DataParallel(): deviceIds must be GPU devices, got ${dev}`);
      return dev;
    });
    const ids = this._ids ?? [];
    const dup = ids.find((d, i) => ids.indexOf(d) !== i);
    if (dup) throw new RangeError(`DataParallel(): deviceIds lists ${dup} more than once`);
    if (this._ids && this._ids.length === 0) throw new RangeError('DataParallel(): deviceIds is empty');
    if (o.outputDevice != null && o.outputDevice !== -1) toDevice(o.outputDevice); // a bad name raises here
    this._out = o.outputDevice;
  }

  /** Scatters the inputs, applies the replicas, gathers the outputs (see the file note). */
  forward(...inputs: unknown[]): any {
    const ids = this.deviceIds;
    if (ids.length === 0) return this.module.forward(...inputs);
    checkOnDevice(this.module, ids[0], 'deviceIds[0]');
    return tidy(() => {
      let chunks = scatter(inputs, ids, this.dim) as unknown[][];
      if (chunks.length === 0) chunks = [[]];
      if (ids.length === 1) return this.module.forward(...chunks[0]);
      const replicas = replicate(this.module, ids.slice(0, chunks.length));
      const outputs = parallelApply(replicas, chunks);
      return gather(outputs, this.outputDevice!, this.dim);
    });
  }

  /** `dp.module`'s repr inside `DataParallel(...)`. */
  override toString(): string {
    return `DataParallel(\n  (module): ${String(this.module).replace(/\n/g, '\n  ')}\n)`;
  }
}
