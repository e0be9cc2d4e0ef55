/**
 * `torch.distributions.utils`: `broadcastAll`, `probsToLogits`, `logitsToProbs`, `clampProbs`,
 * and the two special functions the distributions need that webtorch has no op for, composed from
 * elementwise ops on the device: `erfinv` (Normal's icdf) and `lgamma` of positive arguments
 * (Multinomial's log-probability).
 */
import { Tensor } from '../tensor.js';
import { tensor } from '../ops/creation.js';
import { where } from '../ops/elementwise.js';
import { broadcastShapes } from '../shape.js';
import { tidy } from '../ops/scoped.js';

/** float32's machine epsilon (`torch.finfo(torch.float32).eps`). */
export const FLOAT32_EPS = 1.1920928955078125e-7;
/** float32's most negative finite value (`torch.finfo(torch.float32).min`). */
export const FLOAT32_MIN = -3.4028234663852886e38;

/**
 * PyTorch's `broadcast_all(*values)`: tensors broadcast together; numbers become tensors of the
 * first tensor's dtype and device (float32 on the default device, `torch.setDefaultDevice`'s, when all are numbers). A tensor already of
 * the broadcast shape is returned as it is (not a new handle), so the caller knows which results
 * it made (`made[i]`) and must dispose.
 */
export function broadcastAll(values: readonly (Tensor | number)[]): { tensors: Tensor[]; made: boolean[] } {
  if (!values.every((v) => v instanceof Tensor || typeof v === 'number')) {
    throw new Error('ValueError: Input arguments must all be instances of numbers.Number, torch.Tensor or objects implementing __torch_function__.');
  }
  const first = values.find((v): v is Tensor => v instanceof Tensor);
  const shape = broadcastShapes(...values.map((v) => (v instanceof Tensor ? v.shape : [])));
  const opts = { dtype: first?.dtype ?? 'float32', device: first?.device ?? null } as const;
  const made: boolean[] = [];
  const tensors = values.map((v) => {
    if (v instanceof Tensor && v.shape.length === shape.length && v.shape.every((s, i) => s === shape[i])) {
      made.push(false);
      return v;
    }
    made.push(true);
    const t = v instanceof Tensor ? v : tensor(v, opts);
    if (!(v instanceof Tensor) && !shape.length) return t;
    const e = t.expand(shape);
    if (t !== v) t.dispose();
    return e;
  });
  return { tensors, made };
}

/** PyTorch's `clamp_probs`: probabilities clamped to [eps, 1 − eps]. */
export const clampProbs = (probs: Tensor): Tensor => probs.clamp(FLOAT32_EPS, 1 - FLOAT32_EPS);

/** PyTorch's `logits_to_probs`: sigmoid (binary) or softmax over the last dim. */
export const logitsToProbs = (logits: Tensor, isBinary = false): Tensor => (isBinary ? logits.sigmoid() : logits.softmax(-1));

/** PyTorch's `probs_to_logits`: log-odds (binary) or logs of the clamped probabilities. */
export function probsToLogits(probs: Tensor, isBinary = false): Tensor {
  return tidy(() => {
    const p = clampProbs(probs);
    return isBinary ? p.log().sub(p.neg().log1p()) : p.log();
  });
}

/** Horner's rule with number coefficients (highest degree first). */
const horner = (w: Tensor, coefs: readonly number[]): Tensor => coefs.slice(1).reduce((p, c) => p.mul(w).add(c), w.mul(0).add(coefs[0]));

/**
 * The inverse error function, elementwise: Giles' single-precision approximation ("Approximating
 * the erfinv function", GPU Computing Gems, 2010; the one CUDA's `erfinvf` descends from), two
 * polynomials in w = −log((1 − x)(1 + x)) chosen by w < 5; ±1 give ±∞, |x| > 1 gives NaN.
 */
export function erfinv(x: Tensor): Tensor {
  return tidy(() => {
    const w = x.neg().add(1).mul(x.add(1)).log().neg();
    const central = horner(w.sub(2.5), [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941]);
    const tail = horner(w.sqrt().sub(3), [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682]);
    const p = where(w.lt(5), central, tail).mul(x);
    return where(x.abs().eq(1), x.mul(Infinity), p);
  });
}

/**
 * log Γ(x) for x > 0, elementwise: Stirling's series at z = x + 8 (error below 1e-9 there),
 * less log(x (x+1) … (x+7)) taken as a sum of logs (a product would overflow float32 for large x).
 */
export function lgamma(x: Tensor): Tensor {
  return tidy(() => {
    const z = x.add(8);
    const zi = z.reciprocal(), zi2 = zi.mul(zi);
    const series = zi.mul(horner(zi2, [1 / 1260, -1 / 360, 1 / 12]));
    let out = z.sub(0.5).mul(z.log()).sub(z).add(0.5 * Math.log(2 * Math.PI)).add(series);
    for (let i = 0; i < 8; i++) out = out.sub(i ? x.add(i).log() : x.log());
    return out;
  });
}
