/**
 * `torch.amp.GradScaler` (also `torch.gpu.amp.GradScaler`): dynamic loss scaling, PyTorch's
 * state machine and error messages, camelCase.
 *
 * What is different from PyTorch, and why:
 * - The scale and growth tracker live on the device of the first scaled output, and `update`
 *   moves them there with tensor ops (no read), as PyTorch's `_amp_update_scale_` kernel does.
 * - `unscale_` runs PyTorch's `_amp_foreach_non_finite_check_and_unscale_` once per device
 *   (ts/amp/unscale.ts): ONE fused command that multiplies every gradient of the device by
 *   1/scale in place and sets the device's found-inf flag where a value was inf or NaN (one WGSL
 *   dispatch on `gpu:N`, more only past the binding limits; one AssemblyScript loop on `cpu`).
 *   `step` reads each device's flag once
 *   (so it is async: `await scaler.step(opt)`, the sync point PyTorch's `found_inf.item()` is), and
 *   skips `optimizer.step()` when any is set.
 * - `getScale`, `getGrowthTracker` and `stateDict` read the device, so they return promises.
 * - The scaler owns two small tensors: `dispose()` frees them (webtorch's memory model).
 */
import { device as toDevice } from '../device.js';
import { withGradMode } from '../autograd/graph.js';
import { untrack } from '../scope.js';
import { binaryOp, unaryOp, where } from '../ops/elementwise.js';
import { full } from '../ops/creation.js';
import { tidy } from '../ops/scoped.js';
import { checkOptions } from '../args.js';
import { ampForeachNonFiniteCheckAndUnscale_ } from './unscale.js';
import type { Optimizer } from '../optim/optimizer.js';
import { Tensor } from '../tensor.js';

/** What `new GradScaler(device, options)` takes (PyTorch's keyword arguments, camelCase). */
export interface GradScalerOptions {
  initScale?: number;
  growthFactor?: number;
  backoffFactor?: number;
  growthInterval?: number;
  enabled?: boolean;
}

/** `scaler.stateDict()`: PyTorch's keys. */
export interface GradScalerState {
  scale: number;
  growth_factor: number;
  backoff_factor: number;
  growth_interval: number;
  _growth_tracker: number;
}

const enum Stage { Ready, Unscaled, Stepped }

interface OptimizerState {
  stage: Stage;
  /** One flag per device (device name → a float32 scalar, 1 where a gradient was not finite). */
  foundInf: Map<string, Tensor>;
}

type Scalable = Tensor | Scalable[];

/** Dynamic loss scaling for mixed precision training (see the file's note). */
export class GradScaler {
  private scaleT: Tensor | null = null;
  private tracker: Tensor | null = null;
  private initScale: number;
  private growthFactor: number;
  private backoffFactor: number;
  private growthInterval: number;
  private initTracker = 0;
  private readonly enabled: boolean;
  private readonly states = new Map<Optimizer, OptimizerState>();
  readonly device: string;

  /** `new GradScaler(device = 'gpu', {initScale, growthFactor, backoffFactor, growthInterval, enabled})`; `device` may be left out. */
  constructor(...args: [device?: string, options?: GradScalerOptions] | [options?: GradScalerOptions]) {
    const [dev, o] = typeof args[0] === 'string' || args[0] === undefined && args.length > 1 ? [args[0] as string | undefined, args[1] as GradScalerOptions | undefined] : [undefined, args[0] as GradScalerOptions | undefined];
    const options = o ?? {};
    checkOptions('GradScaler', options, ['initScale', 'growthFactor', 'backoffFactor', 'growthInterval', 'enabled']);
    this.device = dev === undefined || dev === 'cuda' ? 'gpu' : dev;
    if (this.device !== 'gpu' && this.device !== 'cpu') throw new TypeError(`GradScaler: unsupported device type '${this.device}' (expected 'gpu', also spelled 'cuda', or 'cpu')`);
    this.enabled = options.enabled ?? true;
    this.initScale = options.initScale ?? 2 ** 16;
    this.growthFactor = options.growthFactor ?? 2.0;
    this.backoffFactor = options.backoffFactor ?? 0.5;
    this.growthInterval = options.growthInterval ?? 2000;
    if (this.enabled) {
      if (!(this.growthFactor > 1.0)) throw new RangeError('The growth factor must be > 1.0.');
      if (!(this.backoffFactor < 1.0)) throw new RangeError('The backoff factor must be < 1.0.');
      if (!(Number.isInteger(this.growthInterval) && this.growthInterval > 0)) throw new RangeError('growth_interval must be a positive integer.');
    }
  }

  private lazyInit(dev: Tensor['device']): void {
    if (this.scaleT) return;
    this.scaleT = full([1], this.initScale, { dtype: 'float32', device: dev });
    this.tracker = full([1], this.initTracker, { dtype: 'float32', device: dev });
    untrack(this.scaleT);
    untrack(this.tracker);
  }

  private checkScale(fn: string): Tensor {
    if (!this.scaleT) {
      throw new Error(`Attempted ${fn} but _scale is None.  This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration.`);
    }
    return this.scaleT;
  }

  private state(opt: Optimizer): OptimizerState {
    let s = this.states.get(opt);
    if (!s) this.states.set(opt, (s = { stage: Stage.Ready, foundInf: new Map() }));
    return s;
  }

  /** `scale(outputs)`: the outputs (a tensor, or nested arrays of them) times the scale; as given when disabled. */
  scale<T extends Scalable>(outputs: T): T {
    if (!this.enabled) return outputs;
    const one = (t: Scalable): Scalable => {
      if (Array.isArray(t)) return t.map(one);
      if (!(t instanceof Tensor)) throw new TypeError('outputs must be a Tensor or an iterable of Tensors');
      this.lazyInit(t.device);
      const s = this.scaleT!;
      if (s.device === t.device) return binaryOp('mul', t, s);
      return tidy(() => binaryOp('mul', t, s.to(t.device)));
    };
    return one(outputs) as T;
  }

  /**
   * `unscale_(optimizer)`: divides the optimizer's gradients by the scale, in place, and records
   * whether any is inf or NaN (one flag per device). At most once per optimizer between updates.
   * Per device: a zeroed flag, 1/scale, and ONE fused check-and-unscale command over all the
   * device's gradients (`_ampForeachNonFiniteCheckAndUnscale_`, ts/amp/unscale.ts).
   */
  unscale_(optimizer: Optimizer): void {
    if (!this.enabled) return;
    const scale = this.checkScale('unscale_');
    const st = this.state(optimizer);
    if (st.stage === Stage.Unscaled) throw new Error('unscale_() has already been called on this optimizer since the last update().');
    if (st.stage === Stage.Stepped) throw new Error('unscale_() is being called after step().');
    const byDevice = new Map<string, Tensor[]>();
    for (const g of optimizer.paramGroups) {
      for (const p of g.params) {
        if (!p.grad) continue;
        if (p.grad.dtype === 'float16') throw new TypeError('Attempting to unscale FP16 gradients.');
        const key = String(p.grad.device);
        if (!byDevice.has(key)) byDevice.set(key, []);
        byDevice.get(key)!.push(p.grad);
      }
    }
    withGradMode(false, () => {
      for (const [key, grads] of byDevice) {
        const dev = toDevice(key);
        // PyTorch: found_inf = torch.full((), 0.0), inv_scale = 1 / scale, then the one fused check.
        const flag = full([1], 0, { dtype: 'float32', device: dev });
        untrack(flag);
        try {
          tidy(() => {
            const inv = binaryOp('div', 1, scale);
            ampForeachNonFiniteCheckAndUnscale_(grads, flag, inv.device === dev ? inv : inv.to(dev));
          });
        } catch (e) {
          flag.dispose();
          throw e;
        }
        st.foundInf.get(key)?.dispose();
        st.foundInf.set(key, flag);
      }
    });
    st.stage = Stage.Unscaled;
  }

  /**
   * `await step(optimizer)`: unscales (unless `unscale_` was called) and runs `optimizer.step()`
   * unless a gradient held inf or NaN. Resolves with what `optimizer.step()` returned (undefined if skipped).
   */
  async step(optimizer: Optimizer, ...args: unknown[]): Promise<unknown> {
    if (!this.enabled) return (optimizer.step as (...a: unknown[]) => unknown)(...args);
    const kw = args[args.length - 1];
    if (typeof kw === 'object' && kw !== null && 'closure' in kw) throw new Error('Closure use is not currently supported if GradScaler is enabled.');
    this.checkScale('step');
    const st = this.state(optimizer);
    if (st.stage === Stage.Stepped) throw new Error('step() has already been called since the last update().');
    if (st.stage === Stage.Ready) this.unscale_(optimizer);
    if (st.foundInf.size === 0) throw new Error('No inf checks were recorded for this optimizer.');
    st.stage = Stage.Stepped;
    let found = 0;
    for (const f of st.foundInf.values()) found += Number(await f.item());
    if (found) return undefined;
    return (optimizer.step as (...a: unknown[]) => unknown)(...args);
  }

  /**
   * `update(newScale?)`: sets the scale for the next iteration: `newScale` if given, else backed
   * off where a step was skipped, or grown after `growthInterval` clean steps. On the device, no read.
   */
  update(newScale?: number | Tensor): void {
    if (!this.enabled) return;
    const scale = this.checkScale('update');
    const tracker = this.tracker!;
    if (newScale !== undefined) {
      if (newScale instanceof Tensor) {
        if (newScale.numel() !== 1 || newScale.requiresGrad) throw new TypeError('new_scale should be a float or a 1-element torch.cuda.FloatTensor with requires_grad=False.');
        withGradMode(false, () => tidy(() => scale.copy_(newScale.to({ device: scale.device, dtype: 'float32' }).reshape([1]))));
      } else {
        withGradMode(false, () => tidy(() => scale.copy_(full([1], newScale, { dtype: 'float32', device: scale.device }))));
      }
    } else {
      const flags = [...this.states.values()].flatMap((s) => [...s.foundInf.values()]);
      if (!flags.length) throw new Error('No inf checks were recorded prior to update.');
      withGradMode(false, () => {
        const [s, t] = tidy(() => {
          const dev = scale.device;
          let found: Tensor = flags[0].to(dev);
          for (const f of flags.slice(1)) found = binaryOp('add', found, f.to(dev));
          const skipped = binaryOp('gt', found, 0);
          const counted = binaryOp('add', tracker, 1);
          const due = binaryOp('ge', counted, this.growthInterval);
          const grown = binaryOp('mul', scale, this.growthFactor);
          const canGrow = binaryOp('logical_and', due, binaryOp('lt', unaryOp('abs', grown), Infinity));
          const next = where(skipped, binaryOp('mul', scale, this.backoffFactor), where(canGrow, grown, scale));
          const nextTracker = where(binaryOp('logical_or', skipped, due), 0, counted);
          return [next, nextTracker];
        });
        scale._setData(s);
        tracker._setData(t);
        s.dispose();
        t.dispose();
      });
    }
    for (const st of this.states.values()) for (const f of st.foundInf.values()) f.dispose();
    this.states.clear();
  }

  /** `await getScale()`: the current scale (the initial one before the first `scale`; 1 when disabled). */
  async getScale(): Promise<number> {
    if (!this.enabled) return 1.0;
    return this.scaleT ? Number(await this.scaleT.item()) : this.initScale;
  }

  /** `await getGrowthTracker()`: clean steps since the scale last changed. */
  async getGrowthTracker(): Promise<number> {
    return this.tracker ? Number(await this.tracker.item()) : this.initTracker;
  }

  getGrowthFactor(): number {
    return this.growthFactor;
  }

  setGrowthFactor(v: number): void {
    this.growthFactor = v;
  }

  getBackoffFactor(): number {
    return this.backoffFactor;
  }

  setBackoffFactor(v: number): void {
    this.backoffFactor = v;
  }

  getGrowthInterval(): number {
    return this.growthInterval;
  }

  setGrowthInterval(v: number): void {
    this.growthInterval = v;
  }

  isEnabled(): boolean {
    return this.enabled;
  }

  /** `await stateDict()`: PyTorch's keys (`scale`, `growth_factor`, …, `_growth_tracker`); `{}` when disabled. */
  async stateDict(): Promise<GradScalerState | Record<string, never>> {
    if (!this.enabled) return {};
    return {
      scale: await this.getScale(), growth_factor: this.growthFactor, backoff_factor: this.backoffFactor,
      growth_interval: this.growthInterval, _growth_tracker: await this.getGrowthTracker(),
    };
  }

  /** `loadStateDict(state)`: restores what `stateDict` returned. */
  loadStateDict(state: GradScalerState | Record<string, never>): void {
    if (!this.enabled) return;
    if (Object.keys(state).length === 0) {
      throw new Error('The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.');
    }
    const s = state as GradScalerState;
    this.initScale = s.scale;
    this.growthFactor = s.growth_factor;
    this.backoffFactor = s.backoff_factor;
    this.growthInterval = s.growth_interval;
    this.initTracker = s._growth_tracker;
    if (this.scaleT && this.tracker) {
      const dev = this.scaleT.device;
      withGradMode(false, () => tidy(() => {
        this.scaleT!.copy_(full([1], s.scale, { dtype: 'float32', device: dev }));
        this.tracker!.copy_(full([1], s._growth_tracker, { dtype: 'float32', device: dev }));
      }));
    }
  }

  /** Frees the scale, the growth tracker and any recorded flags (webtorch: the scaler's own tensors). */
  dispose(): void {
    for (const st of this.states.values()) for (const f of st.foundInf.values()) f.dispose();
    this.states.clear();
    this.scaleT?.dispose();
    this.tracker?.dispose();
    this.scaleT = this.tracker = null;
  }
}
