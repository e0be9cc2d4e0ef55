/**
 * `torch.distributions.uniform`: `Uniform(low, high)` on [low, high). `rsample` is
 * `low + u · (high − low)` with `u = rand(...)` on the parameters' device.
 */
import { Tensor } from '../tensor.js';
import { bindArgs, REQUIRED, type PyArgs } from '../args.js';
import { rand } from '../ops/creation.js';
import { tidy } from '../ops/scoped.js';
import { Distribution, type SampleArgs, type ValidateOptions } from './distribution.js';
import { Constraint } from './constraints.js';
import { pyFloat, pySize } from './format.js';
import { broadcastAll } from './utils.js';

/** Uniform's support, [low, high] (PyTorch's `constraints.interval(low, high)` of tensors). */
class UniformSupport extends Constraint {
  constructor(private readonly d: Uniform) {
    super();
  }
  check(value: Tensor): Tensor {
    return tidy(() => this.d.low.le(value).logicalAnd(value.le(this.d.high)));
  }
  toString(): string {
    const show = (name: 'low' | 'high') => (this.d._numbers[name] !== undefined ? pyFloat(this.d._numbers[name]) : pySize(this.d[name].shape));
    return `Interval(lower_bound=${show('low')}, upper_bound=${show('high')})`;
  }
}

/** `Uniform(low, high, validateArgs?)`: numbers or tensors, broadcast together; requires low < high. */
export class Uniform extends Distribution {
  readonly _kind = 'Uniform';
  /** The lower bound (inclusive, broadcast). */
  readonly low: Tensor;
  /** The upper bound (exclusive, broadcast). */
  readonly high: Tensor;

  constructor(low: Tensor | number, high: Tensor | number, ...args: PyArgs<[validateArgs: boolean | null], ValidateOptions>) {
    super();
    const o = bindArgs('Uniform', ['low', 'high', 'validateArgs'], [low, high, ...args], { low: REQUIRED as Tensor | number, high: REQUIRED as Tensor | number, validateArgs: null as boolean | null });
    const { tensors: [l, h], made } = broadcastAll([o.low, o.high]);
    this.low = made[0] ? this._own(l) : l;
    this.high = made[1] ? this._own(h) : h;
    if (typeof o.low === 'number') this._numbers.low = o.low;
    if (typeof o.high === 'number') this._numbers.high = o.high;
    const scalar = typeof o.low === 'number' && typeof o.high === 'number';
    this._init(scalar ? [] : this.low.shape.slice(), [], o.validateArgs);
    if (this._validateArgs) {
      const message = 'ValueError: Uniform is not defined when low>= high';
      if (scalar) {
        if (!((o.low as number) < (o.high as number))) {
          this.dispose();
          throw new Error(message);
        }
      } else {
        this._assert(() => this.low.lt(this.high), message);
      }
    }
  }

  get argConstraints(): Record<string, Constraint | null> {
    return { low: null, high: null };
  }
  get support(): Constraint {
    return new UniformSupport(this);
  }
  override get hasRsample(): boolean {
    return true;
  }
  /** @internal */
  _param(name: string): Tensor | undefined {
    return name === 'low' ? this.low : name === 'high' ? this.high : undefined;
  }

  override get mean(): Tensor {
    return tidy(() => this.high.add(this.low).div(2));
  }
  override get stddev(): Tensor {
    return tidy(() => this.high.sub(this.low).div(12 ** 0.5));
  }
  override get variance(): Tensor {
    return tidy(() => this.high.sub(this.low).pow(2).div(12));
  }

  override rsample(...args: SampleArgs): Tensor {
    this._check('rsample');
    const shape = this._extendedShape(this._sampleShape('rsample', args));
    return tidy(() => this.low.add(rand(shape, { dtype: this.low.dtype, device: this.low.device }).mul(this.high.sub(this.low))));
  }

  override logProb(value: Tensor): Tensor {
    this._check('logProb');
    if (this._validateArgs) this._validateSample(value);
    return tidy(() => {
      const lb = this.low.le(value).to(this.low.dtype), ub = this.high.gt(value).to(this.low.dtype);
      return lb.mul(ub).log().sub(this.high.sub(this.low).log());
    });
  }

  override cdf(value: Tensor): Tensor {
    this._check('cdf');
    if (this._validateArgs) this._validateSample(value);
    return tidy(() => value.sub(this.low).div(this.high.sub(this.low)).clamp(0, 1));
  }

  override icdf(value: Tensor): Tensor {
    this._check('icdf');
    return tidy(() => value.mul(this.high.sub(this.low)).add(this.low));
  }

  override entropy(): Tensor {
    this._check('entropy');
    return tidy(() => this.high.sub(this.low).log());
  }

  override expand(batchShape: number[]): Uniform {
    const d = new Uniform(this.low.expand(batchShape), this.high.expand(batchShape), { validateArgs: false });
    d._own(d.low);
    d._own(d.high);
    d._validateArgs = this._validateArgs;
    return d;
  }
}
