/**
 * `torch.distributions.constraints`: the regions a distribution's parameters and samples must lie
 * in. `check(value)` is a bool tensor over `value`'s shape less `eventDim` dims (made on the
 * value's device, read nowhere); `checkNumber(x)` is the same test of a plain number on the host.
 * `toString()` is PyTorch's `repr` (`GreaterThan(lower_bound=0.0)`), which the errors quote.
 */
import type { Tensor } from '../tensor.js';
import { pyFloat } from './format.js';

/** A constraint (PyTorch's `constraints.Constraint`). */
export abstract class Constraint {
  /** Whether the constrained space is discrete. */
  get isDiscrete(): boolean {
    return false;
  }
  /** How many rightmost dims make one event (`check` reduces over them). */
  get eventDim(): number {
    return 0;
  }
  /** A bool tensor: whether each event of `value` satisfies the constraint. */
  abstract check(value: Tensor): Tensor;
  /** The same test of a number (univariate constraints only). */
  checkNumber(x: number): boolean {
    throw new Error(`${this} cannot check a number`);
  }
  /** PyTorch's `repr`. */
  abstract toString(): string;
}

/** `constraints.real`: not NaN (the extended real line). */
export class Real extends Constraint {
  check(value: Tensor): Tensor {
    return value.eq(value);
  }
  override checkNumber(x: number): boolean {
    return x === x;
  }
  toString(): string {
    return 'Real()';
  }
}

/** `constraints.greaterThan(lowerBound)`: (lowerBound, ∞]. */
export class GreaterThan extends Constraint {
  constructor(readonly lowerBound: number) {
    super();
  }
  check(value: Tensor): Tensor {
    return value.gt(this.lowerBound);
  }
  override checkNumber(x: number): boolean {
    return this.lowerBound < x;
  }
  toString(): string {
    return `GreaterThan(lower_bound=${pyFloat(this.lowerBound)})`;
  }
}

/** `constraints.interval(lowerBound, upperBound)`: [lowerBound, upperBound]. */
export class Interval extends Constraint {
  constructor(readonly lowerBound: number, readonly upperBound: number) {
    super();
  }
  check(value: Tensor): Tensor {
    return value.ge(this.lowerBound).logicalAnd(value.le(this.upperBound));
  }
  override checkNumber(x: number): boolean {
    return this.lowerBound <= x && x <= this.upperBound;
  }
  toString(): string {
    return `Interval(lower_bound=${pyFloat(this.lowerBound)}, upper_bound=${pyFloat(this.upperBound)})`;
  }
}

/** `constraints.boolean`: 0 or 1. */
export class BooleanConstraint extends Constraint {
  override get isDiscrete(): boolean {
    return true;
  }
  check(value: Tensor): Tensor {
    return value.eq(0).logicalOr(value.eq(1));
  }
  override checkNumber(x: number): boolean {
    return x === 0 || x === 1;
  }
  toString(): string {
    return 'Boolean()';
  }
}

/** `constraints.integerInterval(lowerBound, upperBound)`: the integers in [lowerBound, upperBound]. */
export class IntegerInterval extends Constraint {
  override get isDiscrete(): boolean {
    return true;
  }
  constructor(readonly lowerBound: number, readonly upperBound: number) {
    super();
  }
  check(value: Tensor): Tensor {
    return value.remainder(1).eq(0).logicalAnd(value.ge(this.lowerBound)).logicalAnd(value.le(this.upperBound));
  }
  override checkNumber(x: number): boolean {
    return Number.isInteger(x) && this.lowerBound <= x && x <= this.upperBound;
  }
  toString(): string {
    return `IntegerInterval(lower_bound=${this.lowerBound}, upper_bound=${this.upperBound})`;
  }
}

/** `constraints.independent(base, n)`: `base` on every element of the last `n` dims together. */
export class IndependentConstraint extends Constraint {
  constructor(readonly baseConstraint: Constraint, readonly reinterpretedBatchNdims: number) {
    super();
  }
  override get eventDim(): number {
    return this.baseConstraint.eventDim + this.reinterpretedBatchNdims;
  }
  check(value: Tensor): Tensor {
    const r = this.baseConstraint.check(value), n = this.reinterpretedBatchNdims;
    if (r.ndim < n) throw new Error(`ValueError: Expected value.dim() >= ${this.eventDim} but got ${value.ndim}`);
    return n ? r.reshape([...r.shape.slice(0, r.ndim - n), -1]).all(-1) : r;
  }
  toString(): string {
    return `IndependentConstraint(${this.baseConstraint}, ${this.reinterpretedBatchNdims})`;
  }
}

/** `constraints.simplex`: non-negative along the last dim, summing to 1 (within 1e-6). */
export class Simplex extends Constraint {
  override get eventDim(): number {
    return 1;
  }
  check(value: Tensor): Tensor {
    return value.ge(0).all(-1).logicalAnd(value.sum(-1).sub(1).abs().lt(1e-6));
  }
  toString(): string {
    return 'Simplex()';
  }
}

/** `constraints.multinomial(upperBound)`: non-negative counts summing to at most `upperBound` (PyTorch's weaker check). */
export class MultinomialConstraint extends Constraint {
  override get isDiscrete(): boolean {
    return true;
  }
  override get eventDim(): number {
    return 1;
  }
  constructor(readonly upperBound: number) {
    super();
  }
  check(value: Tensor): Tensor {
    return value.ge(0).all(-1).logicalAnd(value.sum(-1).le(this.upperBound));
  }
  toString(): string {
    return 'Multinomial()';
  }
}

/** `constraints.real`. */
export const real = new Real();
/** `constraints.realVector`: `independent(real, 1)`. */
export const realVector = new IndependentConstraint(real, 1);
/** `constraints.positive`: `greaterThan(0)`. */
export const positive = new GreaterThan(0);
/** `constraints.unitInterval`: `interval(0, 1)`. */
export const unitInterval = new Interval(0, 1);
/** `constraints.simplex`. */
export const simplex = new Simplex();
/** `constraints.boolean`. */
export const boolean = new BooleanConstraint();
/** `constraints.greaterThan(lowerBound)`. */
export const greaterThan = (lowerBound: number) => new GreaterThan(lowerBound);
/** `constraints.interval(lowerBound, upperBound)`. */
export const interval = (lowerBound: number, upperBound: number) => new Interval(lowerBound, upperBound);
/** `constraints.integerInterval(lowerBound, upperBound)`. */
export const integerInterval = (lowerBound: number, upperBound: number) => new IntegerInterval(lowerBound, upperBound);
/** `constraints.independent(base, reinterpretedBatchNdims)`. */
export const independent = (base: Constraint, n: number) => new IndependentConstraint(base, n);
/** `constraints.multinomial(upperBound)`. */
export const multinomial = (upperBound: number) => new MultinomialConstraint(upperBound);
