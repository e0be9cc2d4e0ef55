/**
 * `torch.distributions.categorical`: `Categorical(probs?, logits?)` over {0, …, K−1}, K the last
 * dim. As PyTorch: probs are normalized to sum to 1 along the last dim (`probs / probs.sum(-1)`),
 * logits to log-probabilities (`logits − logsumexp(logits)`), and the held `probs`/`logits` are
 * those normalized values. Samples are `torch.multinomial(probs2d, n, true)` (inverse-CDF draws
 * on the device), int64.
 */
import { Tensor } from '../tensor.js';
import { bindArgs, type PyArgs } from '../args.js';
import { full } from '../ops/creation.js';
import { multinomial } from '../ops/sampling.js';
import { tidy } from '../ops/scoped.js';
import { broadcastShapes } from '../shape.js';
import { Distribution, type SampleArgs, type ValidateOptions } from './distribution.js';
import { integerInterval, realVector, simplex, type Constraint } from './constraints.js';
import { FLOAT32_MIN, logitsToProbs, probsToLogits } from './utils.js';

/** Categorical's (and Multinomial's) keywords. */
export interface CategoricalOptions extends ValidateOptions {
  probs?: Tensor | null;
  logits?: Tensor | null;
}

/** `Categorical(probs?, logits?, validateArgs?)`: exactly one of probs (non-negative, any positive sum) and logits, at least 1-D. */
export class Categorical extends Distribution {
  readonly _kind: string = 'Categorical';
  private _probs?: Tensor;
  private _logits?: Tensor;
  /** @internal K, the number of categories. */
  readonly _numEvents: number;

  constructor(...args: PyArgs<[probs: Tensor | null, logits: Tensor | null, validateArgs: boolean | null], CategoricalOptions>) {
    super();
    const o = bindArgs('Categorical', ['probs', 'logits', 'validateArgs'], args, { probs: null as Tensor | null, logits: null as Tensor | null, validateArgs: null as boolean | null });
    if ((o.probs == null) === (o.logits == null)) throw new Error('ValueError: Either `probs` or `logits` must be specified, but not both.');
    const name = o.probs != null ? 'probs' : 'logits';
    const given = (o.probs ?? o.logits)!;
    if (!(given instanceof Tensor)) throw new TypeError(`Categorical(): ${name} must be a Tensor, not ${typeof given}`);
    if (given.ndim < 1) throw new Error(`ValueError: \`${name}\` parameter must be at least one-dimensional.`);
    if (name === 'probs') this._probs = this._own(tidy(() => given.div(given.sum(-1, true))));
    else this._logits = this._own(tidy(() => given.sub(given.logsumexp(-1, true))));
    this._numEvents = given.shape[given.ndim - 1];
    this._init(given.shape.slice(0, -1), [], o.validateArgs);
  }

  get argConstraints(): Record<string, Constraint> {
    return { probs: simplex, logits: realVector };
  }
  get support(): Constraint {
    return integerInterval(0, this._numEvents - 1);
  }
  override get hasEnumerateSupport(): boolean {
    return true;
  }
  /** @internal */
  _param(name: string): Tensor | undefined {
    return name === 'probs' ? this._probs : name === 'logits' ? this._logits : undefined;
  }

  /** The normalized probabilities (held; from the logits by softmax on first use). */
  get probs(): Tensor {
    this._check('probs');
    return (this._probs ??= this._own(logitsToProbs(this._logits!), true));
  }
  /** The normalized log-probabilities (held; the logs of the clamped probs on first use). */
  get logits(): Tensor {
    this._check('logits');
    return (this._logits ??= this._own(probsToLogits(this._probs!), true));
  }
  /** The shape of the given parameter (`batchShape + [K]`). */
  get paramShape(): number[] {
    return (this._probs ?? this._logits)!.shape.slice();
  }

  /** NaN, of the sample's shape (PyTorch's: a categorical has no mean). */
  override get mean(): Tensor {
    return full(this._extendedShape(), NaN, { dtype: this.paramDtype, device: this.paramDevice });
  }
  /** NaN, as `mean`. */
  override get variance(): Tensor {
    return full(this._extendedShape(), NaN, { dtype: this.paramDtype, device: this.paramDevice });
  }
  /** The most probable category. */
  override get mode(): Tensor {
    return this.probs.argmax(-1);
  }
  private get paramDtype() {
    return (this._probs ?? this._logits)!.dtype;
  }
  private get paramDevice() {
    return (this._probs ?? this._logits)!.device;
  }

  override sample(...args: SampleArgs): Tensor {
    this._check('sample');
    const sampleShape = this._sampleShape('sample', args);
    const n = sampleShape.reduce((a, b) => a * b, 1);
    return tidy(() => {
      const probs2d = this.probs.detach().reshape([-1, this._numEvents]);
      return multinomial(probs2d, n, true).t().reshape(this._extendedShape(sampleShape));
    });
  }

  override logProb(value: Tensor): Tensor {
    this._check('logProb');
    if (this._validateArgs) this._validateSample(value);
    return tidy(() => {
      const logits = this.logits;
      const shape = broadcastShapes([...value.shape, 1], logits.shape);
      const v = value.long().unsqueeze(-1).expand([...shape.slice(0, -1), 1]);
      return logits.expand(shape).gather(-1, v).squeeze(-1);
    });
  }

  override entropy(): Tensor {
    this._check('entropy');
    return tidy(() => this.logits.clamp(FLOAT32_MIN).mul(this.probs).sum(-1).neg());
  }

  /** As PyTorch's, though the expanded parameter is normalized again (a new tensor, not a view). */
  override expand(batchShape: number[]): Categorical {
    const view = (this._probs ?? this._logits)!.expand([...batchShape, this._numEvents]);
    const d = new Categorical(this._probs ? { probs: view, validateArgs: false } : { logits: view, validateArgs: false });
    view.dispose();
    d._validateArgs = this._validateArgs;
    return d;
  }
}
