/**
 * Learning-rate schedulers (`torch.optim.lr_scheduler`): `StepLR` and `CosineAnnealingLR` here, in
 * their closed forms, and the others re-exported from ts/optim/schedulers-*.ts. Call
 * `scheduler.step()` once per epoch after `optimizer.step()`, as in PyTorch.
 */
import { bindArgs, REQUIRED, type PyArgs } from '../args.js';
import type { Optimizer } from './optimizer.js';
import { checkFresh, LRScheduler } from './scheduler-base.js';

export { LRScheduler };
export { LambdaLR, MultiStepLR, LinearLR, SequentialLR, ExponentialLR, ConstantLR, PolynomialLR, CosineAnnealingWarmRestarts } from './schedulers-simple.js';
export { OneCycleLR, ReduceLROnPlateau } from './schedulers-cycle.js';
export type { OneCycleLROptions, ReduceLROnPlateauOptions } from './schedulers-cycle.js';

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
