/**
 * `torch.distributions.bernoulli`: `Bernoulli(probs?, logits?)`, 1 with probability `probs`.
 * Samples are `torch.bernoulli` of the probabilities expanded to the sample's shape, in their
 * dtype; the log-probability and entropy are PyTorch's, through `binaryCrossEntropyWithLogits`.
 */
import { Tensor } from '../tensor.js';
import { bindArgs, type PyArgs } from '../args.js';
import { bernoulli } from '../ops/sampling.js';
import { binaryCrossEntropyWithLogits } from '../ops/nn.js';
import { tidy } from '../ops/scoped.js';
import { Distribution, type SampleArgs, type ValidateOptions } from './distribution.js';
import { boolean, real, unitInterval, type Constraint } from './constraints.js';
import { broadcastAll, logitsToProbs, probsToLogits } from './utils.js';

/** Bernoulli's keywords. */
export interface BernoulliOptions extends ValidateOptions {
  probs?: Tensor | number | null;
  logits?: Tensor | number | null;
}

/** `Bernoulli(probs?, logits?, validateArgs?)`: exactly one of probs (in [0, 1]) and logits (log-odds), a number or a tensor. */
export class Bernoulli extends Distribution {
  readonly _kind = 'Bernoulli';
  private _probs?: Tensor;
  private _logits?: Tensor;

  constructor(...args: PyArgs<[probs: Tensor | number | null, logits: Tensor | number | null, validateArgs: boolean | null], BernoulliOptions>) {
    super();
    const o = bindArgs('Bernoulli', ['probs', 'logits', 'validateArgs'], args, { probs: null as Tensor | number | null, logits: null as Tensor | number | null, validateArgs: null as boolean | null });
    if ((o.probs == null) === (o.logits == null)) throw new Error('ValueError: Either `probs` or `logits` must be specified, but not both.');
    const name = o.probs != null ? 'probs' : 'logits';
    const given = (o.probs ?? o.logits) as Tensor | number;
    const { tensors: [p], made } = broadcastAll([given]);
    if (made[0]) this._own(p);
    if (name === 'probs') this._probs = p;
    else this._logits = p;
    if (typeof given === 'number') this._numbers[name] = given;
    this._init(typeof given === 'number' ? [] : p.shape.slice(), [], o.validateArgs);
  }

  get argConstraints(): Record<string, Constraint> {
    return { probs: unitInterval, logits: real };
  }
  get support(): Constraint {
    return boolean;
  }
  override get hasEnumerateSupport(): boolean {
    return true;
  }
  /** @internal */
  _param(name: string): Tensor | undefined {
    return name === 'probs' ? this._probs : name === 'logits' ? this._logits : undefined;
  }

  /** The probability of 1 (held; derived from logits on first use). */
  get probs(): Tensor {
    this._check('probs');
    return (this._probs ??= this._own(logitsToProbs(this._logits!, true), true));
  }
  /** The log-odds of 1 (held; derived from probs on first use). */
  get logits(): Tensor {
    this._check('logits');
    return (this._logits ??= this._own(probsToLogits(this._probs!, true), true));
  }
  /** The shape of the given parameter. */
  get paramShape(): number[] {
    return (this._probs ?? this._logits)!.shape.slice();
  }

  override get mean(): Tensor {
    const p = this.probs;
    return p.expand(p.shape.slice());
  }
  override get variance(): Tensor {
    return tidy(() => this.probs.mul(this.probs.neg().add(1)));
  }

  override sample(...args: SampleArgs): Tensor {
    this._check('sample');
    const shape = this._extendedShape(this._sampleShape('sample', args));
    return tidy(() => bernoulli(this.probs.detach().expand(shape)));
  }

  override logProb(value: Tensor): Tensor {
    this._check('logProb');
    if (this._validateArgs) this._validateSample(value);
    return tidy(() => {
      const { tensors: [l, v] } = broadcastAll([this.logits, value]);
      return binaryCrossEntropyWithLogits(l, v, { reduction: 'none' }).neg();
    });
  }

  override entropy(): Tensor {
    this._check('entropy');
    return binaryCrossEntropyWithLogits(this.logits, this.probs, { reduction: 'none' });
  }

  override expand(batchShape: number[]): Bernoulli {
    const d = new Bernoulli(this._probs ? { probs: this._probs.expand(batchShape), validateArgs: false } : { logits: this._logits!.expand(batchShape), validateArgs: false });
    d._own((d._probs ?? d._logits)!);
    d._validateArgs = this._validateArgs;
    return d;
  }
}
