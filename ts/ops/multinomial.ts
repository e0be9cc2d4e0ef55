/**
 * `torch.multinomial(input, numSamples, replacement = false, {generator})`, composed on the
 * device from one uniform draw (ts/ops/random.ts) and existing ops.
 *
 * Without replacement: the exponential-race trick PyTorch's CUDA kernel uses: with q ~ Exp(1)
 * per category, the categories in decreasing order of p / q are a draw without replacement, so
 * the samples are `topk(p / q, numSamples)`. With replacement: inverse CDF sampling; sample j is
 * the number of categories whose cumulative probability is ≤ u_j · total, counted through a
 * [rows, numSamples, categories] comparison (memory grows with numSamples × categories).
 * The uniform draws are the same bits on every device; the logarithm, division and cumulative sum
 * are each device's own, so a near-tie (within a few ulps) may resolve differently across devices.
 * Probabilities are not checked (negative, infinite or all-zero rows give meaningless samples
 * where PyTorch raises at its sync point).
 */
import { isFloating, scalarName } from '../dtype.js';
import type { Generator } from '../random.js';
import { alloc } from '../runtime/dispatch.js';
import { Tensor } from '../tensor.js';
import { ReduceOp } from '../../wgsl/reduce.js';
import { binaryOp, clamp, unaryOp } from './elementwise.js';
import { topk, cumsum } from './indexing.js';
import { bindArgs, type PyArgs } from './options.js';
import { Dist, drawInto, f32Bits, generatorFor } from './random.js';
import { reduce } from './reduce.js';
import { tidy } from './scoped.js';
import * as V from './views.js';

/** `torch.multinomial`: int64 indices of shape [numSamples] (1-D input) or [rows, numSamples]. */
export function multinomial(input: Tensor, numSamples: number,
  ...args: PyArgs<[replacement: boolean], { replacement?: boolean; generator?: Generator | null }>): Tensor {
  const { replacement, generator } = bindArgs('multinomial', ['replacement', 'generator'], args, { replacement: false, generator: null as Generator | null }, 2);
  if (!(input instanceof Tensor)) throw new TypeError(`multinomial(): argument 'input' must be Tensor, not ${input === null ? 'null' : typeof input}`);
  input._check('multinomial');
  if (input.ndim !== 1 && input.ndim !== 2) throw new RangeError(`prob_dist must be 1 or 2 dim (got shape [${input.shape.join(', ')}])`);
  if (!isFloating(input.dtype)) throw new TypeError(`multinomial only supports floating-point dtypes for input, got: ${scalarName(input.dtype)}`);
  if (!Number.isInteger(numSamples) || numSamples <= 0) throw new RangeError(`cannot sample n_sample <= 0 samples (got ${numSamples})`);
  const k = input.shape[input.ndim - 1];
  if (k === 0) throw new RangeError('multinomial(): the input has no categories (its last dim is 0)');
  if (!replacement && numSamples > k) throw new RangeError(`cannot sample n_sample > prob_dist.size(-1) samples without replacement (${numSamples} > ${k})`);
  const g = generatorFor('multinomial', input.device, generator);
  return tidy(() => {
    const p = input.ndim === 1 ? V.unsqueeze(input.detach(), 0) : input.detach();
    const rows = p.shape[0];
    let out: Tensor;
    if (!replacement) {
      // u in [2^-24, 1), so q = -ln u > 0
      const u = drawInto(alloc([rows, k], 'float32', p.device), Dist.Uniform, g, f32Bits(2 ** -24), f32Bits(1));
      const q = unaryOp('neg', unaryOp('log', u));
      out = topk(binaryOp('div', p, q), numSamples, -1).indices;
    } else {
      const cdf = cumsum(p, -1);
      const total = V.index(cdf, ':', `${k - 1}:`);
      const u = drawInto(alloc([rows, numSamples], 'float32', p.device), Dist.Uniform, g, f32Bits(0), f32Bits(1));
      const below = binaryOp('le', V.unsqueeze(cdf, 1), V.unsqueeze(binaryOp('mul', u, total), 2));
      out = clamp(reduce(ReduceOp.Sum, below, [2]), null, k - 1);
    }
    if (out.dtype !== 'int64') out = V.cast(out, 'int64');
    return input.ndim === 1 ? V.squeeze(out, 0) : out;
  });
}
