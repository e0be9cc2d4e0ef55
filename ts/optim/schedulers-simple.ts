/**
 * `LambdaLR`, `MultiStepLR`, `LinearLR`, `SequentialLR`, `ExponentialLR`, `ConstantLR`, `PolynomialLR`
 * and `CosineAnnealingWarmRestarts`, with PyTorch's arguments and errors.
 * Each schedule is in closed form over the group's initial lr; the constructors take PyTorch's
 * initial step (`lastEpoch` 0), so `LinearLR` starts at `base·startFactor` at once.
 */
import { bindArgs, REQUIRED, type PyArgs } from '../args.js';
import type { Optimizer } from './optimizer.js';
import { checkFresh, initialLr, LRScheduler } from './scheduler-base.js';

/** `lrLambda(epoch)`: the factor of the initial lr. */
export type LrLambda = (epoch: number) => number;

/** `LambdaLR(optimizer, lrLambda, lastEpoch = -1)`: `lr = initialLr · lrLambda(epoch)` (one function, or one per group). */
export class LambdaLR extends LRScheduler {
  readonly lrLambdas: LrLambda[];

  constructor(optimizer: Optimizer, ...args: PyArgs<[lrLambda: LrLambda | LrLambda[], lastEpoch: number], { lrLambda?: LrLambda | LrLambda[]; lastEpoch?: number }>) {
    super(optimizer);
    const o = bindArgs('LambdaLR', ['lrLambda', 'lastEpoch'], args, { lrLambda: REQUIRED as LrLambda | LrLambda[], lastEpoch: -1 }, 1);
    checkFresh('LambdaLR', o.lastEpoch);
    const n = optimizer.paramGroups.length;
    if (Array.isArray(o.lrLambda)) {
      if (o.lrLambda.length !== n) throw new RangeError(`Expected ${n} lr_lambdas, but got ${o.lrLambda.length}`);
      this.lrLambdas = o.lrLambda.slice();
    } else this.lrLambdas = Array(n).fill(o.lrLambda);
    if (this.lrLambdas.some((f) => typeof f !== 'function')) throw new TypeError('LambdaLR: lrLambda must be a function (or one per parameter group)');
    this.apply();
  }

  protected lrAt(epoch: number, base: number, i: number): number {
    return base * this.lrLambdas[i](epoch);
  }
}

/** The number of entries of sorted `a` that are <= x (Python's `bisect_right`). */
const bisectRight = (a: readonly number[], x: number): number => {
  let n = 0;
  while (n < a.length && a[n] <= x) n++;
  return n;
};

/** `MultiStepLR(optimizer, milestones, gamma = 0.1, lastEpoch = -1)`: multiplies the lr by `gamma` at each milestone (a repeated one counts each time). */
export class MultiStepLR extends LRScheduler {
  readonly milestones: number[];
  readonly gamma: number;

  constructor(optimizer: Optimizer, ...args: PyArgs<[milestones: number[], gamma: number, lastEpoch: number], { milestones?: number[]; gamma?: number; lastEpoch?: number }>) {
    super(optimizer);
    const o = bindArgs('MultiStepLR', ['milestones', 'gamma', 'lastEpoch'], args, { milestones: REQUIRED as number[], gamma: 0.1, lastEpoch: -1 }, 1);
    checkFresh('MultiStepLR', o.lastEpoch);
    if (!Array.isArray(o.milestones) || o.milestones.some((m) => !Number.isInteger(m))) throw new TypeError('MultiStepLR: milestones must be a list of integers');
    this.milestones = o.milestones.slice().sort((a, b) => a - b);
    this.gamma = o.gamma;
    this.apply();
  }

  protected lrAt(epoch: number, base: number): number {
    return base * this.gamma ** bisectRight(this.milestones, epoch);
  }
}

/** Options of `LinearLR`. */
export interface LinearLROptions { startFactor?: number; endFactor?: number; totalIters?: number; lastEpoch?: number }

/** `LinearLR(optimizer, startFactor = 1/3, endFactor = 1, totalIters = 5, lastEpoch = -1)`: the factor goes linearly from start to end over `totalIters` epochs. */
export class LinearLR extends LRScheduler {
  readonly startFactor: number;
  readonly endFactor: number;
  readonly totalIters: number;

  constructor(optimizer: Optimizer, ...args: PyArgs<[startFactor: number, endFactor: number, totalIters: number, lastEpoch: number], LinearLROptions>) {
    super(optimizer);
    const o = bindArgs('LinearLR', ['startFactor', 'endFactor', 'totalIters', 'lastEpoch'], args, { startFactor: 1 / 3, endFactor: 1, totalIters: 5, lastEpoch: -1 }, 1);
    checkFresh('LinearLR', o.lastEpoch);
    if (!(o.startFactor > 0 && o.startFactor <= 1)) throw new RangeError('Starting multiplicative factor expected to be greater than 0 and less or equal to 1.');
    if (!(o.endFactor >= 0 && o.endFactor <= 1)) throw new RangeError('Ending multiplicative factor expected to be between 0 and 1.');
    ({ startFactor: this.startFactor, endFactor: this.endFactor, totalIters: this.totalIters } = o);
    this.apply();
  }

  protected lrAt(epoch: number, base: number): number {
    return base * (this.startFactor + ((this.endFactor - this.startFactor) * Math.min(this.totalIters, epoch)) / this.totalIters);
  }
}

/**
 * `SequentialLR(optimizer, schedulers, milestones, lastEpoch = -1)`: runs `schedulers[i]` between
 * milestones i-1 and i; at a milestone the next scheduler starts from its epoch 0 (PyTorch's
 * `step(0)`).
 */
export class SequentialLR {
  lastEpoch = 0;
  readonly schedulers: LRScheduler[];
  readonly milestones: number[];

  constructor(readonly optimizer: Optimizer, ...args: PyArgs<[schedulers: LRScheduler[], milestones: number[], lastEpoch: number], { schedulers?: LRScheduler[]; milestones?: number[]; lastEpoch?: number }>) {
    const o = bindArgs('SequentialLR', ['schedulers', 'milestones', 'lastEpoch'], args, { schedulers: REQUIRED as LRScheduler[], milestones: REQUIRED as number[], lastEpoch: -1 }, 1);
    checkFresh('SequentialLR', o.lastEpoch);
    const { schedulers, milestones } = o;
    if (!Array.isArray(schedulers) || schedulers.length < 1) throw new RangeError(`SequentialLR expects at least one scheduler, but got no scheduler.`);
    schedulers.forEach((s, i) => {
      if (!(s instanceof LRScheduler)) throw new TypeError(`SequentialLR: schedulers[${i}] is not a learning-rate scheduler`);
      if (s.optimizer !== optimizer) {
        throw new RangeError(`Sequential Schedulers expects all schedulers to belong to the same optimizer, but got schedulers at index ${i} to be different than the optimizer passed in.`);
      }
    });
    if (!Array.isArray(milestones) || milestones.length !== schedulers.length - 1) {
      throw new RangeError(`Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone points, but got number of schedulers ${schedulers.length} and the number of milestones to be equal to ${Array.isArray(milestones) ? milestones.length : 'none'}`);
    }
    this.schedulers = schedulers;
    this.milestones = milestones.slice();
    // back to the initial lrs; undo the schedulers' initial steps and take the first one's again
    optimizer.paramGroups.forEach((g) => (g.lr = initialLr(g)));
    for (const s of schedulers) s.lastEpoch -= 1;
    schedulers[0].step();
  }

  /** Advances one epoch: the current scheduler steps (from its epoch 0 at a milestone). */
  step(): void {
    this.lastEpoch++;
    const idx = bisectRight(this.milestones, this.lastEpoch);
    const s = this.schedulers[idx];
    if (idx > 0 && this.milestones[idx - 1] === this.lastEpoch) s.step(0);
    else s.step();
  }

  /** The learning rates set by the last `step()`. */
  getLastLr(): number[] {
    return this.optimizer.paramGroups.map((g) => g.lr);
  }

  stateDict(): { lastEpoch: number; schedulers: ReturnType<LRScheduler['stateDict']>[] } {
    return { lastEpoch: this.lastEpoch, schedulers: this.schedulers.map((s) => s.stateDict()) };
  }

  loadStateDict(s: { lastEpoch: number; schedulers: ReturnType<LRScheduler['stateDict']>[] }): void {
    this.lastEpoch = s.lastEpoch;
    s.schedulers.forEach((st, i) => this.schedulers[i].loadStateDict(st));
  }
}

/** `ExponentialLR(optimizer, gamma, lastEpoch = -1)`: `lr = initialLr · gamma^epoch`. */
export class ExponentialLR extends LRScheduler {
  readonly gamma: number;

  constructor(optimizer: Optimizer, ...args: PyArgs<[gamma: number, lastEpoch: number], { gamma?: number; lastEpoch?: number }>) {
    super(optimizer);
    const o = bindArgs('ExponentialLR', ['gamma', 'lastEpoch'], args, { gamma: REQUIRED as number, lastEpoch: -1 }, 1);
    checkFresh('ExponentialLR', o.lastEpoch);
    this.gamma = o.gamma;
    this.apply();
  }

  protected lrAt(epoch: number, base: number): number {
    return base * this.gamma ** epoch;
  }
}

/** `ConstantLR(optimizer, factor = 1/3, totalIters = 5, lastEpoch = -1)`: `initialLr · factor` for the first `totalIters` epochs, then `initialLr`. */
export class ConstantLR extends LRScheduler {
  readonly factor: number;
  readonly totalIters: number;

  constructor(optimizer: Optimizer, ...args: PyArgs<[factor: number, totalIters: number, lastEpoch: number], { factor?: number; totalIters?: number; lastEpoch?: number }>) {
    super(optimizer);
    const o = bindArgs('ConstantLR', ['factor', 'totalIters', 'lastEpoch'], args, { factor: 1 / 3, totalIters: 5, lastEpoch: -1 }, 1);
    checkFresh('ConstantLR', o.lastEpoch);
    if (!(o.factor >= 0 && o.factor <= 1)) throw new RangeError('Constant multiplicative factor expected to be between 0 and 1.');
    ({ factor: this.factor, totalIters: this.totalIters } = o);
    this.apply();
  }

  protected lrAt(epoch: number, base: number): number {
    return base * (epoch >= this.totalIters ? 1 : this.factor);
  }
}

/** `PolynomialLR(optimizer, totalIters = 5, power = 1, lastEpoch = -1)`: `initialLr · (1 - min(epoch, totalIters)/totalIters)^power`. */
export class PolynomialLR extends LRScheduler {
  readonly totalIters: number;
  readonly power: number;

  constructor(optimizer: Optimizer, ...args: PyArgs<[totalIters: number, power: number, lastEpoch: number], { totalIters?: number; power?: number; lastEpoch?: number }>) {
    super(optimizer);
    const o = bindArgs('PolynomialLR', ['totalIters', 'power', 'lastEpoch'], args, { totalIters: 5, power: 1, lastEpoch: -1 }, 1);
    checkFresh('PolynomialLR', o.lastEpoch);
    ({ totalIters: this.totalIters, power: this.power } = o);
    this.apply();
  }

  protected lrAt(epoch: number, base: number): number {
    return base * (1 - Math.min(this.totalIters, epoch) / this.totalIters) ** this.power;
  }
}

/**
 * `CosineAnnealingWarmRestarts(optimizer, T0, TMult = 1, etaMin = 0, lastEpoch = -1)` (PyTorch's
 * `T_0`, `T_mult`, `eta_min`): cosine annealing over `T0` epochs, restarting from the initial lr,
 * each period `TMult` times the last.
 */
export class CosineAnnealingWarmRestarts extends LRScheduler {
  readonly T0: number;
  readonly TMult: number;
  readonly etaMin: number;
  /** The current period and the epochs into it. */
  Ti: number;
  Tcur = 0;

  constructor(optimizer: Optimizer, ...args: PyArgs<[T0: number, TMult: number, etaMin: number, lastEpoch: number], { T0?: number; TMult?: number; etaMin?: number; lastEpoch?: number }>) {
    super(optimizer);
    const o = bindArgs('CosineAnnealingWarmRestarts', ['T0', 'TMult', 'etaMin', 'lastEpoch'], args, { T0: REQUIRED as number, TMult: 1, etaMin: 0, lastEpoch: -1 }, 1);
    checkFresh('CosineAnnealingWarmRestarts', o.lastEpoch);
    if (!Number.isInteger(o.T0) || o.T0 <= 0) throw new RangeError(`Expected positive integer T_0, but got ${o.T0}`);
    if (!Number.isInteger(o.TMult) || o.TMult < 1) throw new RangeError(`Expected integer T_mult >= 1, but got ${o.TMult}`);
    ({ T0: this.T0, TMult: this.TMult, etaMin: this.etaMin } = o);
    this.Ti = o.T0;
    this.apply();
  }

  protected lrAt(_epoch: number, base: number): number {
    return this.etaMin + ((base - this.etaMin) * (1 + Math.cos((Math.PI * this.Tcur) / this.Ti))) / 2;
  }

  /** Advances one epoch (restarting at the period's end), or goes to `epoch` (fractional epochs allowed, as PyTorch's). */
  override step(epoch?: number): void {
    if (epoch === undefined) {
      this.lastEpoch++;
      this.Tcur++;
      if (this.Tcur >= this.Ti) {
        this.Tcur -= this.Ti;
        this.Ti *= this.TMult;
      }
    } else {
      if (epoch < 0) throw new RangeError(`Expected non-negative epoch, but got ${epoch}`);
      if (epoch >= this.T0) {
        if (this.TMult === 1) this.Tcur = epoch % this.T0;
        else {
          const n = Math.floor(Math.log(epoch / this.T0 * (this.TMult - 1) + 1) / Math.log(this.TMult));
          this.Tcur = epoch - (this.T0 * (this.TMult ** n - 1)) / (this.TMult - 1);
          this.Ti = this.T0 * this.TMult ** n;
        }
      } else {
        this.Ti = this.T0;
        this.Tcur = epoch;
      }
      this.lastEpoch = Math.floor(epoch);
    }
    this.apply();
  }
}
