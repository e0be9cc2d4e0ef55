/**
 * `OneCycleLR` (the 1cycle policy: the lr rises to `maxLr` and anneals far below its start, the
 * momentum moving the other way) and `ReduceLROnPlateau` (the lr drops by `factor` when a metric
 * stops improving), with PyTorch's arguments, phases and errors.
 */
import { bindArgs, REQUIRED, type PyArgs } from '../args.js';
import type { Optimizer, ParamGroup } from './optimizer.js';
import { checkFresh } from './scheduler-base.js';

/** Options of `OneCycleLR` after (optimizer, maxLr). */
export interface OneCycleLROptions {
  totalSteps?: number | null; epochs?: number | null; stepsPerEpoch?: number | null; pctStart?: number; annealStrategy?: 'cos' | 'linear';
  cycleMomentum?: boolean; baseMomentum?: number | number[]; maxMomentum?: number | number[]; divFactor?: number; finalDivFactor?: number;
  threePhase?: boolean; lastEpoch?: number;
}
type OneCyclePositional = [totalSteps: number | null, epochs: number | null, stepsPerEpoch: number | null, pctStart: number, annealStrategy: 'cos' | 'linear',
  cycleMomentum: boolean, baseMomentum: number | number[], maxMomentum: number | number[], divFactor: number, finalDivFactor: number, threePhase: boolean, lastEpoch: number];

interface Phase { end: number; lr: [Key, Key]; momentum: [Key, Key] }
type Key = 'initial' | 'max' | 'min' | 'maxM' | 'baseM';

const perGroup = (name: string, v: number | number[], n: number): number[] => {
  if (!Array.isArray(v)) return Array(n).fill(v);
  if (v.length !== n) throw new RangeError(`expected ${n} values for ${name}, got ${v.length}`);
  return v.slice();
};

/**
 * `OneCycleLR(optimizer, maxLr, totalSteps = null, epochs = null, stepsPerEpoch = null,
 * pctStart = 0.3, annealStrategy = 'cos', cycleMomentum = true, baseMomentum = 0.85,
 * maxMomentum = 0.95, divFactor = 25, finalDivFactor = 1e4, threePhase = false)`. Call `step()`
 * after every batch; the lr starts at `maxLr / divFactor` and ends at that over `finalDivFactor`.
 * With `cycleMomentum` the optimizer's `momentum` (or Adam's first beta) cycles between
 * `maxMomentum` and `baseMomentum`.
 */
export class OneCycleLR {
  lastEpoch = 0;
  readonly totalSteps: number;
  private readonly phases: Phase[];
  private readonly anneal: (start: number, end: number, pct: number) => number;
  private readonly values: Record<Key, number>[];
  private readonly cycleMomentum: boolean;
  private readonly useBeta1: boolean;

  constructor(readonly optimizer: Optimizer, maxLr: number | number[], ...args: PyArgs<OneCyclePositional, OneCycleLROptions>) {
    const o = bindArgs('OneCycleLR', ['totalSteps', 'epochs', 'stepsPerEpoch', 'pctStart', 'annealStrategy', 'cycleMomentum', 'baseMomentum', 'maxMomentum',
      'divFactor', 'finalDivFactor', 'threePhase', 'lastEpoch'], args, { totalSteps: null, epochs: null, stepsPerEpoch: null, pctStart: 0.3, annealStrategy: 'cos',
      cycleMomentum: true, baseMomentum: 0.85, maxMomentum: 0.95, divFactor: 25, finalDivFactor: 1e4, threePhase: false, lastEpoch: -1 } as Required<OneCycleLROptions>, 2);
    checkFresh('OneCycleLR', o.lastEpoch);
    const pos = (v: unknown) => Number.isInteger(v) && (v as number) > 0;
    if (o.totalSteps == null && (o.epochs == null || o.stepsPerEpoch == null)) throw new RangeError('You must define either total_steps OR (epochs AND steps_per_epoch)');
    if (o.totalSteps != null) {
      if (!pos(o.totalSteps)) throw new RangeError(`Expected positive integer total_steps, but got ${o.totalSteps}`);
      this.totalSteps = o.totalSteps;
    } else {
      if (!pos(o.epochs)) throw new RangeError(`Expected positive integer epochs, but got ${o.epochs}`);
      if (!pos(o.stepsPerEpoch)) throw new RangeError(`Expected positive integer steps_per_epoch, but got ${o.stepsPerEpoch}`);
      this.totalSteps = o.epochs! * o.stepsPerEpoch!;
    }
    const T = this.totalSteps, p = o.pctStart;
    if (!(p >= 0 && p <= 1) || typeof p !== 'number') throw new RangeError(`Expected float between 0 and 1 pct_start, but got ${p}`);
    this.phases = o.threePhase
      ? [{ end: p * T - 1, lr: ['initial', 'max'], momentum: ['maxM', 'baseM'] }, { end: 2 * p * T - 2, lr: ['max', 'initial'], momentum: ['baseM', 'maxM'] },
        { end: T - 1, lr: ['initial', 'min'], momentum: ['maxM', 'maxM'] }]
      : [{ end: p * T - 1, lr: ['initial', 'max'], momentum: ['maxM', 'baseM'] }, { end: T - 1, lr: ['max', 'min'], momentum: ['baseM', 'maxM'] }];
    if (o.annealStrategy === 'cos') this.anneal = (s, e, pct) => e + ((s - e) / 2) * (Math.cos(Math.PI * pct) + 1);
    else if (o.annealStrategy === 'linear') this.anneal = (s, e, pct) => (e - s) * pct + s;
    else throw new RangeError(`anneal_strategy must by one of 'cos' or 'linear', instead got ${String(o.annealStrategy)}`);
    const groups = optimizer.paramGroups, n = groups.length;
    const maxLrs = perGroup('max_lr', maxLr, n), baseM = perGroup('base_momentum', o.baseMomentum, n), maxM = perGroup('max_momentum', o.maxMomentum, n);
    this.values = groups.map((_, i) => {
      const initial = maxLrs[i] / o.divFactor;
      return { initial, max: maxLrs[i], min: initial / o.finalDivFactor, maxM: maxM[i], baseM: baseM[i] };
    });
    this.cycleMomentum = o.cycleMomentum;
    this.useBeta1 = 'betas' in optimizer.defaults;
    if (this.cycleMomentum && !('momentum' in optimizer.defaults) && !this.useBeta1) throw new TypeError('optimizer must support momentum or beta1 with `cycle_momentum` option enabled');
    this.apply();
  }

  private setMomentum(g: ParamGroup, m: number): void {
    if (this.useBeta1) g.betas = [m, (g.betas as [number, number])[1]];
    else g.momentum = m;
  }

  private apply(): void {
    const step = this.lastEpoch;
    if (step > this.totalSteps) throw new RangeError(`Tried to step ${step} times. The specified number of total steps is ${this.totalSteps}`);
    this.optimizer.paramGroups.forEach((g, i) => {
      const v = this.values[i];
      let start = 0;
      for (let k = 0; k < this.phases.length; k++) {
        const ph = this.phases[k];
        if (step <= ph.end || k === this.phases.length - 1) {
          const pct = (step - start) / (ph.end - start);
          g.lr = this.anneal(v[ph.lr[0]], v[ph.lr[1]], pct);
          if (this.cycleMomentum) this.setMomentum(g, this.anneal(v[ph.momentum[0]], v[ph.momentum[1]], pct));
          break;
        }
        start = ph.end;
      }
    });
  }

  /** Advances one batch. */
  step(): void {
    this.lastEpoch++;
    this.apply();
  }

  /** The learning rates set by the last `step()`. */
  getLastLr(): number[] {
    return this.optimizer.paramGroups.map((g) => g.lr);
  }

  stateDict(): { lastEpoch: number; totalSteps: number } {
    return { lastEpoch: this.lastEpoch, totalSteps: this.totalSteps };
  }

  loadStateDict(s: { lastEpoch: number }): void {
    this.lastEpoch = s.lastEpoch;
  }
}

/** Options of `ReduceLROnPlateau`. */
export interface ReduceLROnPlateauOptions {
  mode?: 'min' | 'max'; factor?: number; patience?: number; threshold?: number; thresholdMode?: 'rel' | 'abs'; cooldown?: number;
  minLr?: number | number[]; eps?: number; verbose?: boolean;
}
type PlateauPositional = [mode: 'min' | 'max', factor: number, patience: number, threshold: number, thresholdMode: 'rel' | 'abs', cooldown: number,
  minLr: number | number[], eps: number, verbose: boolean];

/** The state `ReduceLROnPlateau.stateDict()` returns. */
export interface PlateauState { best: number; numBadEpochs: number; cooldownCounter: number; lastEpoch: number }

/**
 * `ReduceLROnPlateau(optimizer, mode = 'min', factor = 0.1, patience = 10, threshold = 1e-4,
 * thresholdMode = 'rel', cooldown = 0, minLr = 0, eps = 1e-8)`: `step(metric)` after each
 * evaluation; after more than `patience` epochs without improvement the lr is multiplied by
 * `factor` (not below `minLr`), then `cooldown` epochs pass before counting again.
 */
export class ReduceLROnPlateau {
  readonly mode: 'min' | 'max';
  readonly factor: number;
  readonly patience: number;
  readonly threshold: number;
  readonly thresholdMode: 'rel' | 'abs';
  readonly cooldown: number;
  readonly minLrs: number[];
  readonly eps: number;
  best: number;
  numBadEpochs = 0;
  cooldownCounter = 0;
  lastEpoch = 0;

  constructor(readonly optimizer: Optimizer, ...args: PyArgs<PlateauPositional, ReduceLROnPlateauOptions>) {
    const o = bindArgs('ReduceLROnPlateau', ['mode', 'factor', 'patience', 'threshold', 'thresholdMode', 'cooldown', 'minLr', 'eps', 'verbose'], args,
      { mode: 'min', factor: 0.1, patience: 10, threshold: 1e-4, thresholdMode: 'rel', cooldown: 0, minLr: 0, eps: 1e-8, verbose: false } as Required<ReduceLROnPlateauOptions>, 1);
    if (!(o.factor < 1)) throw new RangeError('Factor should be < 1.0.');
    if (o.mode !== 'min' && o.mode !== 'max') throw new RangeError(`mode ${String(o.mode)} is unknown!`);
    if (o.thresholdMode !== 'rel' && o.thresholdMode !== 'abs') throw new RangeError(`threshold mode ${String(o.thresholdMode)} is unknown!`);
    const n = optimizer.paramGroups.length;
    if (Array.isArray(o.minLr) && o.minLr.length !== n) throw new RangeError(`expected ${n} min_lrs, got ${o.minLr.length}`);
    this.minLrs = perGroup('min_lr', o.minLr, n);
    ({ mode: this.mode, factor: this.factor, patience: this.patience, threshold: this.threshold, thresholdMode: this.thresholdMode, cooldown: this.cooldown, eps: this.eps } = o);
    this.best = this.mode === 'min' ? Infinity : -Infinity;
  }

  private isBetter(a: number): boolean {
    const { best, threshold: t } = this;
    if (this.mode === 'min') return this.thresholdMode === 'rel' ? a < best * (1 - t) : a < best - t;
    return this.thresholdMode === 'rel' ? a > best * (t + 1) : a > best + t;
  }

  /** Records one epoch's metric (a number; `await t.item()` for a tensor) and reduces the lr on a plateau. */
  step(metrics: number): void {
    const current = Number(metrics);
    if (typeof metrics !== 'number') throw new TypeError(`ReduceLROnPlateau.step(): metrics must be a number (await tensor.item() first), got ${typeof metrics}`);
    this.lastEpoch++;
    if (this.isBetter(current)) {
      this.best = current;
      this.numBadEpochs = 0;
    } else this.numBadEpochs++;
    if (this.cooldownCounter > 0) {
      this.cooldownCounter--;
      this.numBadEpochs = 0;
    }
    if (this.numBadEpochs > this.patience) {
      this.optimizer.paramGroups.forEach((g, i) => {
        const next = Math.max(g.lr * this.factor, this.minLrs[i]);
        if (g.lr - next > this.eps) g.lr = next;
      });
      this.cooldownCounter = this.cooldown;
      this.numBadEpochs = 0;
    }
  }

  /** The groups' current learning rates. */
  getLastLr(): number[] {
    return this.optimizer.paramGroups.map((g) => g.lr);
  }

  stateDict(): PlateauState {
    return { best: this.best, numBadEpochs: this.numBadEpochs, cooldownCounter: this.cooldownCounter, lastEpoch: this.lastEpoch };
  }

  loadStateDict(s: PlateauState): void {
    ({ best: this.best, numBadEpochs: this.numBadEpochs, cooldownCounter: this.cooldownCounter, lastEpoch: this.lastEpoch } = s);
  }
}
