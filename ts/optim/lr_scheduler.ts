/**
 * Learning-rate schedulers: `StepLR` and `CosineAnnealingLR`, in their closed forms. Call
 * `scheduler.step()` once per epoch after `optimizer.step()`, as in PyTorch.
 */
import { bindArgs, REQUIRED, type PyArgs } from '../ops/options.js';
import type { Optimizer } from './optimizer.js';

/** `lastEpoch` other than -1 resumes a schedule, which needs state these schedulers do not keep: refused, not ignored. */
function checkFresh(name: string, lastEpoch: number): void {
  if (lastEpoch !== -1) throw new RangeError(`${name}: lastEpoch=${lastEpoch} is not supported (resume with loadStateDict)`);
}

/** The base: remembers each group's initial lr and sets `lr = lrAt(epoch, base)` on `step()`. */
export abstract class LRScheduler {
  lastEpoch = 0;
  readonly baseLrs: number[];

  constructor(readonly optimizer: Optimizer) {
    this.baseLrs = optimizer.paramGroups.map((g) => g.lr);
  }

  protected abstract lrAt(epoch: number, base: number): number;

  /** Advances one epoch and updates the groups' learning rates. */
  step(): void {
    this.lastEpoch++;
    this.optimizer.paramGroups.forEach((g, i) => (g.lr = this.lrAt(this.lastEpoch, this.baseLrs[i])));
  }

  /** The learning rates set by the last `step()`. */
  getLastLr(): number[] {
    return this.optimizer.paramGroups.map((g) => g.lr);
  }

  stateDict(): { lastEpoch: number; baseLrs: number[] } {
    return { lastEpoch: this.lastEpoch, baseLrs: [...this.baseLrs] };
  }

  loadStateDict(s: { lastEpoch: number; baseLrs: number[] }): void {
    this.lastEpoch = s.lastEpoch;
    this.baseLrs.splice(0, this.baseLrs.length, ...s.baseLrs);
  }
}

/** Multiplies the lr by `gamma` every `stepSize` epochs. */
export class StepLR extends LRScheduler {
  readonly stepSize: number;
  readonly gamma: number;

  constructor(optimizer: Optimizer, ...args: PyArgs<[stepSize: number, gamma: number, lastEpoch: number], { stepSize?: number; gamma?: number; lastEpoch?: number }>) {
    super(optimizer);
    const o = bindArgs('StepLR', ['stepSize', 'gamma', 'lastEpoch'], args, { stepSize: REQUIRED as number, gamma: 0.1, lastEpoch: -1 }, 1);
    checkFresh('StepLR', o.lastEpoch);
    const stepSize = (this.stepSize = o.stepSize);
    this.gamma = o.gamma;
    if (!Number.isInteger(stepSize) || stepSize <= 0) throw new RangeError(`StepLR: stepSize must be a positive integer, got ${stepSize}`);
  }

  protected lrAt(epoch: number, base: number): number {
    return base * this.gamma ** Math.floor(epoch / this.stepSize);
  }
}

/** Anneals the lr from its initial value to `etaMin` along a half cosine over `tMax` epochs. */
export class CosineAnnealingLR extends LRScheduler {
  readonly tMax: number;
  readonly etaMin: number;

  constructor(optimizer: Optimizer, ...args: PyArgs<[tMax: number, etaMin: number, lastEpoch: number], { tMax?: number; etaMin?: number; lastEpoch?: number }>) {
    super(optimizer);
    // PyTorch's T_max is `tMax` here
    const o = bindArgs('CosineAnnealingLR', ['tMax', 'etaMin', 'lastEpoch'], args, { tMax: REQUIRED as number, etaMin: 0, lastEpoch: -1 }, 1);
    checkFresh('CosineAnnealingLR', o.lastEpoch);
    const tMax = (this.tMax = o.tMax);
    this.etaMin = o.etaMin;
    if (!(tMax > 0)) throw new RangeError(`CosineAnnealingLR: tMax must be positive, got ${tMax}`);
  }

  protected lrAt(epoch: number, base: number): number {
    return this.etaMin + ((base - this.etaMin) * (1 + Math.cos((Math.PI * epoch) / this.tMax))) / 2;
  }
}
