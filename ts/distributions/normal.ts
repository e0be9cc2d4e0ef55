/**
 * `torch.distributions.normal`: `Normal(loc, scale)`, the Gaussian. `rsample` is
 * `loc + eps · scale` with `eps = randn(...)` on the parameters' device (differentiable in loc
 * and scale); `icdf` uses an erfinv composed on the device (ts/distributions/utils.ts).
 */
import { Tensor } from '../tensor.js';
import { bindArgs, REQUIRED, type PyArgs } from '../args.js';
import { randn } from '../ops/creation.js';
import { tidy } from '../ops/scoped.js';
import { Distribution, type SampleArgs, type ValidateOptions } from './distribution.js';
import { positive, real, type Constraint } from './constraints.js';
import { broadcastAll, erfinv } from './utils.js';

const LOG_SQRT_2PI = Math.log(Math.sqrt(2 * Math.PI));

/** `Normal(loc, scale, validateArgs?)`: numbers or tensors, broadcast together. */
export class Normal extends Distribution {
  readonly _kind = 'Normal';
  /** The mean (broadcast). */
  readonly loc: Tensor;
  /** The standard deviation (broadcast). */
  readonly scale: Tensor;

  constructor(loc: Tensor | number, scale: Tensor | number, ...args: PyArgs<[validateArgs: boolean | null], ValidateOptions>) {
    super();
    const o = bindArgs('Normal', ['loc', 'scale', 'validateArgs'], [loc, scale, ...args], { loc: REQUIRED as Tensor | number, scale: REQUIRED as Tensor | number, validateArgs: null as boolean | null });
    const { tensors: [l, s], made } = broadcastAll([o.loc, o.scale]);
    this.loc = made[0] ? this._own(l) : l;
    this.scale = made[1] ? this._own(s) : s;
    if (typeof o.loc === 'number') this._numbers.loc = o.loc;
    if (typeof o.scale === 'number') this._numbers.scale = o.scale;
    const scalar = typeof o.loc === 'number' && typeof o.scale === 'number';
    this._init(scalar ? [] : this.loc.shape.slice(), [], o.validateArgs);
  }

  get argConstraints(): Record<string, Constraint> {
    return { loc: real, scale: positive };
  }
  get support(): Constraint {
    return real;
  }
  override get hasRsample(): boolean {
    return true;
  }
  /** @internal */
  _param(name: string): Tensor | undefined {
    return name === 'loc' ? this.loc : name === 'scale' ? this.scale : undefined;
  }

  override get mean(): Tensor {
    return this.loc.expand(this.loc.shape.slice());
  }
  override get mode(): Tensor {
    return this.mean;
  }
  override get stddev(): Tensor {
    return this.scale.expand(this.scale.shape.slice());
  }
  override get variance(): Tensor {
    return this.scale.pow(2);
  }

  override rsample(...args: SampleArgs): Tensor {
    this._check('rsample');
    const shape = this._extendedShape(this._sampleShape('rsample', args));
    return tidy(() => this.loc.add(randn(shape, { dtype: this.loc.dtype, device: this.loc.device }).mul(this.scale)));
  }

  override logProb(value: Tensor): Tensor {
    this._check('logProb');
    if (this._validateArgs) this._validateSample(value);
    return tidy(() => value.sub(this.loc).pow(2).neg().div(this.scale.pow(2).mul(2)).sub(this.scale.log()).sub(LOG_SQRT_2PI));
  }

  override cdf(value: Tensor): Tensor {
    this._check('cdf');
    if (this._validateArgs) this._validateSample(value);
    return tidy(() => value.sub(this.loc).mul(this.scale.reciprocal()).div(Math.SQRT2).erf().add(1).mul(0.5));
  }

  override icdf(value: Tensor): Tensor {
    this._check('icdf');
    return tidy(() => this.loc.add(this.scale.mul(erfinv(value.mul(2).sub(1))).mul(Math.SQRT2)));
  }

  override entropy(): Tensor {
    this._check('entropy');
    return tidy(() => this.scale.log().add(0.5 + 0.5 * Math.log(2 * Math.PI)));
  }

  override expand(batchShape: number[]): Normal {
    const d = new Normal(this.loc.expand(batchShape), this.scale.expand(batchShape), { validateArgs: false });
    d._own(d.loc);
    d._own(d.scale);
    d._validateArgs = this._validateArgs;
    return d;
  }
}
