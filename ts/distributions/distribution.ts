/**
 * `torch.distributions.Distribution`: the base class. A distribution holds its parameters as
 * tensors on one device, and samples there with webtorch's own random ops (so it follows
 * `torch.manualSeed` and reads nothing back to the host).
 *
 * Ownership. The parameters (`loc`, `scale`, `probs`, `logits`, `low`, `high`) are the
 * distribution's: the tensors you passed in (when already of the broadcast shape) and the ones it
 * made (numbers made tensors, broadcast views, normalized or lazily derived probs/logits).
 * `dispose()` frees the ones it made and never yours. Every other tensor a property or method
 * returns (`mean`, `variance`, `stddev`, `sample()`, `logProb()`, `entropy()`, …) is new, and
 * yours to dispose. A distribution made inside `torch.tidy` is freed with it unless returned.
 *
 * Note [Validation on the device]. PyTorch's `validate_args` (on by default) checks each parameter
 * against its constraint in the constructor, and each value against the support in `log_prob`,
 * `cdf`: `if not constraint.check(value).all(): raise ValueError(...)`, a sync point. webtorch
 * has no synchronous read, so a parameter that came as a number is checked here at once (the error
 * is thrown by the constructor, with PyTorch's message and value), and a tensor is checked on its
 * device by a device-side assert: the next sync point on that device (`await t.data()`,
 * `synchronize()`) raises the same message, as CUDA's device-side asserts do. Shapes are checked
 * at once. `validateArgs: false`, or `Distribution.setDefaultValidateArgs(false)`, turns it off.
 */
import { Tensor } from '../tensor.js';
import { bindArgs, type PyArgs } from '../args.js';
import { scopedGradMode } from '../autograd/graph.js';
import { currentScope, giveToScope } from '../scope.js';
import { checkIndexRange } from '../ops/indexing.js';
import { tidy } from '../ops/scoped.js';
import type { Constraint } from './constraints.js';
import { pyFloat, pySize, pyTuple } from './format.js';

/** The trailing arguments of `sample`/`rsample`: `(sampleShape = [])` or `({sampleShape})`. */
export type SampleArgs = PyArgs<[sampleShape: number[]], { sampleShape?: number[] }>;
/** The `validateArgs` keyword every distribution takes. */
export interface ValidateOptions {
  validateArgs?: boolean | null;
}

/** Raises `message` at the next sync point of the device unless every element of `ok()` is true (a device-side assert; `ok` runs inside its `tidy`). */
function deviceAssert(ok: () => Tensor, message: string): void {
  scopedGradMode(false, () => tidy(() => {
    checkIndexRange('distributions', ok().logicalNot().reshape([-1]).long(), 1, message);
  }));
}

/** The base class of the distributions (PyTorch's `torch.distributions.Distribution`). */
export abstract class Distribution {
  private static _defaultValidate = true;

  /**
   * `Distribution.setDefaultValidateArgs(value)`: whether distributions made later validate
   * their arguments when not told (`validateArgs`); on by default, as in PyTorch.
   */
  static setDefaultValidateArgs(value: boolean): void {
    if (value !== true && value !== false) throw new Error('ValueError');
    Distribution._defaultValidate = value;
  }

  /** The current default of `validateArgs`. */
  static get defaultValidateArgs(): boolean {
    return Distribution._defaultValidate;
  }

  /** The shape over which the parameters are batched. */
  batchShape: number[] = [];
  /** The shape of one sample. */
  eventShape: number[] = [];
  /** @internal Whether arguments and values are validated. */
  _validateArgs = Distribution._defaultValidate;
  /** @internal The tensors this distribution made and frees in `dispose()`. */
  private _owned: Tensor[] = [];
  /** @internal The `tidy` scope it was made in (where lazily made tensors go). */
  private _scope = currentScope();
  /** @internal Parameters that came as numbers, by name (checked on the host, printed by value). */
  _numbers: Record<string, number> = {};
  private _disposed = false;

  /** @internal The class's name, as PyTorch's `repr` and errors print it. */
  abstract readonly _kind: string;

  /** Whether `rsample` is implemented (reparameterized, differentiable samples). */
  get hasRsample(): boolean {
    return false;
  }
  /** Whether `enumerateSupport` is implemented. */
  get hasEnumerateSupport(): boolean {
    return false;
  }
  /** Each parameter's constraint (`null`: depends on other parameters, not checked). */
  abstract get argConstraints(): Record<string, Constraint | null>;
  /** The constraint samples satisfy. */
  abstract get support(): Constraint;
  /** @internal A parameter by name, if it is present (lazily derived ones are absent until first used). */
  abstract _param(name: string): Tensor | undefined;

  /** @internal Sets the shapes and validates the parameters (a subclass's constructor ends with this). */
  protected _init(batchShape: number[], eventShape: number[], validateArgs: boolean | null | undefined): void {
    this.batchShape = batchShape;
    this.eventShape = eventShape;
    if (validateArgs != null) this._validateArgs = validateArgs;
    if (!this._validateArgs) return;
    try {
      for (const [name, constraint] of Object.entries(this.argConstraints)) {
        const value = this._param(name);
        if (!constraint || !value) continue;
        const head = `ValueError: Expected parameter ${name} (Tensor of shape ${pyTuple(value.shape)}) of distribution ${this} to satisfy the constraint ${constraint}, but found invalid values`;
        const n = this._numbers[name];
        if (n !== undefined && constraint.eventDim === 0) {
          if (!constraint.checkNumber(n)) throw new Error(`${head}:\n${pyFloat(n)}`);
        } else {
          deviceAssert(() => constraint.check(value), `${head} (checked on ${value.device}: the values were not read back)`);
        }
      }
    } catch (e) {
      this.dispose(); // a constructor that throws leaves nothing behind
      throw e;
    }
  }

  /** @internal Takes `t` as made by this distribution: `dispose()` frees it; it lives in the scope the distribution was made in. */
  protected _own<T extends Tensor>(t: T, lazy = false): T {
    this._owned.push(t);
    if (lazy) giveToScope(t, this._scope);
    return t;
  }

  /** @internal Device-side assert for a subclass's own checks (Uniform's low < high). */
  protected _assert(ok: () => Tensor, message: string): void {
    deviceAssert(ok, message);
  }

  /** `sampleShape + batchShape + eventShape`. */
  protected _extendedShape(sampleShape: readonly number[] = []): number[] {
    return [...sampleShape, ...this.batchShape, ...this.eventShape];
  }

  /** @internal Binds `sample`/`rsample`'s arguments. */
  protected _sampleShape(op: string, args: readonly unknown[]): number[] {
    const { sampleShape } = bindArgs(op, ['sampleShape'], args, { sampleShape: [] as number[] });
    if (!Array.isArray(sampleShape) || !sampleShape.every((s) => Number.isInteger(s) && s >= 0)) {
      throw new TypeError(`${op}(): sampleShape must be a list of non-negative integers (torch.Size), got ${JSON.stringify(sampleShape)}`);
    }
    return sampleShape.slice();
  }

  /** The mean (a new tensor of `batchShape + eventShape`). */
  get mean(): Tensor {
    throw new Error(`NotImplementedError: ${this._kind}.mean`);
  }
  /** The mode. */
  get mode(): Tensor {
    throw new Error(`NotImplementedError: ${this._kind} does not implement mode`);
  }
  /** The variance. */
  get variance(): Tensor {
    throw new Error(`NotImplementedError: ${this._kind}.variance`);
  }
  /** The standard deviation: `variance.sqrt()`. */
  get stddev(): Tensor {
    const v = this.variance;
    const s = v.sqrt();
    v.dispose();
    return s;
  }

  /** `sample(sampleShape = [])`: a sample of shape `sampleShape + batchShape + eventShape`, off the autograd tape. */
  sample(...args: SampleArgs): Tensor {
    const shape = this._sampleShape('sample', args);
    return scopedGradMode(false, () => this.rsample(shape));
  }

  /** `rsample(sampleShape = [])`: a reparameterized sample, differentiable in the parameters (where `hasRsample`). */
  rsample(...args: SampleArgs): Tensor {
    this._sampleShape('rsample', args);
    throw new Error(`NotImplementedError: ${this._kind} has no rsample`);
  }

  /** The log of the probability density/mass at `value`. */
  logProb(value: Tensor): Tensor {
    throw new Error(`NotImplementedError: ${this._kind}.logProb (${value})`);
  }
  /** The cumulative distribution function at `value`. */
  cdf(value: Tensor): Tensor {
    throw new Error(`NotImplementedError: ${this._kind}.cdf (${value})`);
  }
  /** The inverse cumulative distribution function at `value`. */
  icdf(value: Tensor): Tensor {
    throw new Error(`NotImplementedError: ${this._kind}.icdf (${value})`);
  }
  /** The entropy, of shape `batchShape`. */
  entropy(): Tensor {
    throw new Error(`NotImplementedError: ${this._kind}.entropy`);
  }
  /** `exp(entropy())`. */
  perplexity(): Tensor {
    const h = this.entropy();
    const p = h.exp();
    h.dispose();
    return p;
  }

  /** A distribution of the same kind with its batch dims expanded to `batchShape` (views of the parameters; not validated again). */
  expand(batchShape: number[]): Distribution {
    throw new Error(`NotImplementedError: ${this._kind}.expand (${batchShape})`);
  }

  /**
   * PyTorch's `_validate_sample`: `value` is a tensor whose rightmost dims match `eventShape` and
   * broadcast with `batchShape + eventShape` (checked at once), within the support (on the device).
   */
  protected _validateSample(value: unknown): asserts value is Tensor {
    if (!(value instanceof Tensor)) throw new Error('ValueError: The value argument to log_prob must be a Tensor');
    const ev = this.eventShape, start = value.ndim - ev.length;
    const right = value.shape.slice(Math.max(start, 0));
    if (start < 0 || right.some((s, i) => s !== ev[i])) {
      throw new Error(`ValueError: The right-most size of value must match event_shape: ${pySize(value.shape)} vs ${pySize(ev)}.`);
    }
    const expected = [...this.batchShape, ...ev];
    for (let i = 1; i <= Math.min(value.ndim, expected.length); i++) {
      const a = value.shape[value.ndim - i], b = expected[expected.length - i];
      if (a !== 1 && b !== 1 && a !== b) throw new Error(`ValueError: Value is not broadcastable with batch_shape+event_shape: ${pySize(value.shape)} vs ${pySize(expected)}.`);
    }
    const support = this.support;
    deviceAssert(() => support.check(value), `ValueError: Expected value argument (Tensor of shape ${pyTuple(value.shape)}) to be within the support (${support}) of the distribution ${this}, but found invalid values (checked on ${value.device}: the values were not read back)`);
  }

  /** Frees the tensors this distribution made (not the ones passed in); idempotent. */
  dispose(): void {
    if (this._disposed) return;
    this._disposed = true;
    for (const t of this._owned) t.dispose();
    this._owned.length = 0;
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /** @internal Throws if disposed. */
  protected _check(op: string): void {
    if (this._disposed) throw new Error(`${this._kind}.${op}: the distribution was disposed`);
  }

  /**
   * PyTorch's `repr`: `Normal(loc: 0.0, scale: 1.0)`; a parameter that came as a tensor prints
   * its size (PyTorch prints the value of a one-element tensor, which webtorch would have to read).
   */
  toString(): string {
    const parts = Object.keys(this.argConstraints).flatMap((name) => {
      const t = this._param(name);
      if (!t) return [];
      const n = this._numbers[name];
      return [`${name}: ${n !== undefined ? pyFloat(n) : pySize(t.shape)}`];
    });
    return `${this._kind}(${parts.join(', ')})`;
  }
}
