/**
 * `torch.distributions.multinomial`: `Multinomial(totalCount = 1, probs?, logits?)`, the counts
 * per category of `totalCount` categorical draws. As PyTorch: `sample` draws
 * `totalCount × sampleShape` categories from the inner `Categorical` (on the device) and counts
 * them per category with a scatter-add, in the probabilities' dtype; `logProb` is
 * `lgamma(n + 1) − Σ lgamma(xᵢ + 1) + Σ xᵢ·logitsᵢ` (lgamma composed on the device); `entropy` is
 * PyTorch's sum over each category's Binomial(n, pᵢ) marginal (an [n, …batch, K] tensor).
 */
import { Tensor } from '../tensor.js';
import { bindArgs, type PyArgs } from '../args.js';
import { arange, onesLike, zeros } from '../ops/creation.js';
import { where } from '../ops/elementwise.js';
import { scatterAdd } from '../ops/indexing.js';
import { tidy } from '../ops/scoped.js';
import { Distribution, type SampleArgs } from './distribution.js';
import { Categorical, type CategoricalOptions } from './categorical.js';
import { multinomial as multinomialConstraint, realVector, simplex, type Constraint } from './constraints.js';
import { broadcastAll, lgamma, probsToLogits } from './utils.js';

/** Multinomial's keywords. */
export interface MultinomialOptions extends CategoricalOptions {
  totalCount?: number;
}

/** `Multinomial(totalCount = 1, probs?, logits?, validateArgs?)`: `totalCount` a non-negative integer (shared by every batch entry). */
export class Multinomial extends Distribution {
  readonly _kind = 'Multinomial';
  /** The number of trials. */
  readonly totalCount: number;
  /** @internal The categorical each trial draws from (holds the normalized probs/logits). */
  readonly _categorical: Categorical;

  constructor(...args: PyArgs<[totalCount: number, probs: Tensor | null, logits: Tensor | null, validateArgs: boolean | null], MultinomialOptions>) {
    super();
    const o = bindArgs('Multinomial', ['totalCount', 'probs', 'logits', 'validateArgs'], args, { totalCount: 1, probs: null as Tensor | null, logits: null as Tensor | null, validateArgs: null as boolean | null });
    if (!Number.isInteger(o.totalCount)) throw new Error('NotImplementedError: inhomogeneous total_count is not supported');
    this.totalCount = o.totalCount;
    // As PyTorch: the inner Categorical validates the probabilities with the default setting (its
    // error names Categorical); checking them again here would add nothing.
    this._categorical = new Categorical({ probs: o.probs, logits: o.logits });
    this._init(this._categorical.batchShape, this._categorical.paramShape.slice(-1), false);
    this._validateArgs = o.validateArgs ?? Distribution.defaultValidateArgs;
  }

  get argConstraints(): Record<string, Constraint> {
    return { probs: simplex, logits: realVector };
  }
  get support(): Constraint {
    return multinomialConstraint(this.totalCount);
  }
  /** @internal */
  _param(name: string): Tensor | undefined {
    return this._categorical._param(name);
  }

  /** The normalized probabilities (the inner Categorical's). */
  get probs(): Tensor {
    return this._categorical.probs;
  }
  /** The normalized log-probabilities (the inner Categorical's). */
  get logits(): Tensor {
    return this._categorical.logits;
  }
  /** `batchShape + [K]`. */
  get paramShape(): number[] {
    return this._categorical.paramShape;
  }

  /** `totalCount · probs`. */
  override get mean(): Tensor {
    return this.probs.mul(this.totalCount);
  }
  /** `totalCount · probs · (1 − probs)`. */
  override get variance(): Tensor {
    return tidy(() => this.probs.mul(this.probs.neg().add(1)).mul(this.totalCount));
  }

  override sample(...args: SampleArgs): Tensor {
    this._check('sample');
    const sampleShape = this._sampleShape('sample', args);
    return tidy(() => {
      const probs = this.probs;
      const draws = this._categorical.sample([this.totalCount, ...sampleShape]);
      const order = [...Array.from({ length: draws.ndim - 1 }, (_, i) => i + 1), 0];
      const samples = draws.permute(order).contiguous();
      const counts = zeros(this._extendedShape(sampleShape), { dtype: probs.dtype, device: probs.device });
      return scatterAdd(counts, -1, samples, onesLike(samples, { dtype: probs.dtype }));
    });
  }

  override logProb(value: Tensor): Tensor {
    this._check('logProb');
    if (this._validateArgs) this._validateSample(value);
    return tidy(() => {
      const { tensors: [l, v] } = broadcastAll([this.logits, value]);
      const logits = where(v.eq(0).logicalAnd(l.eq(-Infinity)), 0, l);
      const logFactorialN = lgamma(v.sum(-1).add(1));
      const logFactorialXs = lgamma(v.add(1)).sum(-1);
      return logFactorialN.sub(logFactorialXs).add(logits.mul(v).sum(-1));
    });
  }

  /**
   * PyTorch's: `n·H(categorical) − lgamma(n + 1) + Σₖ₌₁..ₙ Σᵢ Binomial(n, pᵢ).pmf(k) · lgamma(k + 1)`.
   * Note [Multinomial entropy in float32]: the three terms are thousands and cancel to tens
   * (n = 1000, six categories: −5912 + 1792 + 4139 ≈ 19), so each binomial pmf must be accurate to
   * a few parts in 10⁵. Its log, `k·logit − lgamma(k+1) − lgamma(n−k+1)` plus a per-category
   * constant, is thousands too; so the constant is not computed but removed by normalizing over
   * k = 0 … n (a logsumexp), which leaves only the k-dependent rounding; and the expected
   * lgamma(k+1) is summed as deviations from lgamma(n·p + 1) (see below). PyTorch's own float32
   * value is 0.03 off the exact one at n = 1000; the test compares with float64.
   */
  override entropy(): Tensor {
    this._check('entropy');
    const n = this.totalCount;
    let logFactorialN = 0;
    for (let i = 2; i <= n; i++) logFactorialN += Math.log(i);
    return tidy(() => {
      const term1 = this._categorical.entropy().mul(n).sub(logFactorialN);
      if (n === 0) return term1;
      const probs = this.probs;
      const logits = probsToLogits(probs, true);
      const k = arange(0, n + 1, { dtype: probs.dtype, device: probs.device }).reshape([n + 1, ...probs.shape.map(() => 1)]);
      const logFactorialK = lgamma(k.add(1));
      const unnormalized = k.mul(logits).sub(logFactorialK).sub(lgamma(k.neg().add(n + 1)));
      const pmf = unnormalized.sub(unnormalized.logsumexp(0, true)).exp();
      // Σₖ pmf·lgamma(k+1) = c + Σₖ pmf·(lgamma(k+1) − c) as Σₖ pmf = 1: with c = lgamma(n·p + 1)
      // the summands are small, so a float32 sum of n + 1 of them keeps its digits
      const c = lgamma(probs.mul(n).add(1));
      return term1.add(c.sum(-1)).add(pmf.mul(logFactorialK.sub(c)).sum(0).sum(-1));
    });
  }

  override expand(batchShape: number[]): Multinomial {
    const cat = this._categorical;
    const view = (cat._param('probs') ?? cat._param('logits'))!.expand([...batchShape, cat._numEvents]);
    const d = new Multinomial(this.totalCount, cat._param('probs') ? { probs: view, validateArgs: false } : { logits: view, validateArgs: false });
    view.dispose();
    d._validateArgs = this._validateArgs;
    return d;
  }

  override dispose(): void {
    this._categorical.dispose();
    super.dispose();
  }
}
