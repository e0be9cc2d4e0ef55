/**
 * Sampling composed on the device from one draw (ts/ops/random.ts) and existing ops: `randperm`,
 * `bernoulli` with a tensor of probabilities, `multinomial`. (A module of its own so that
 * creation.ts, which the elementwise and index families import, imports neither of them.)
 *
 * `randperm(n)` is the stable sort order of n random 32-bit words: equal words (rare) keep their
 * positions' order, and the sort is stable on every device, so every device gives the same
 * permutation.
 *
 * `multinomial(input, numSamples, replacement = false, {generator})`:
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
import { checkFits, isFloating, scalarName, toDType, type DType } from '../dtype.js';
import { device as toDevice, getDefaultDevice } from '../device.js';
import type { Generator } from '../random.js';
import { alloc } from '../runtime/dispatch.js';
import { Tensor } from '../tensor.js';
import { ReduceOp } from '../ir/ops.js';
import { binaryOp, clamp, unaryOp } from './elementwise.js';
import { made, RANDOM_KEYS, type RandomOptions } from './creation.js';
import { sort, topk, cumsum } from './indexing.js';
import { bindArgs, checkOptions, type PyArgs } from '../args.js';
import { checkP, Dist, drawInto, f32Bits, generatorFor } from './random.js';
import { reduce } from './reduce.js';
import { tidy } from './scoped.js';
import * as V from './views.js';

/** `torch.randperm(n, {generator, dtype = 'int64', device, requiresGrad})`: a random permutation of 0 … n-1, made on the device. */
export function randperm(n: number, options?: RandomOptions): Tensor {
  checkOptions('randperm', options, RANDOM_KEYS);
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`randperm(): n must be a non-negative integer, got ${n}`);
  const dtype: DType = options?.dtype == null ? 'int64' : toDType(options.dtype);
  if (n) checkFits(n - 1, dtype, 'randperm');
  const d = options?.device == null ? getDefaultDevice() : toDevice(options.device), g = generatorFor('randperm', d, options?.generator);
  if (!n) return made('randperm', alloc([0], dtype, d), options);
  const out = tidy(() => {
    const keys = drawInto(alloc([n], 'int32', d), Dist.Bits, g, 0, 0);
    const { indices } = sort(keys);
    return indices.dtype === dtype ? indices : V.cast(indices, dtype);
  });
  return made('randperm', out, options);
}

/**
 * `torch.bernoulli(input, {generator})`: 1 with probability `input[i]`, else 0, in input's
 * dtype; `torch.bernoulli(input, p, {generator})`: 1 with probability p, in input's shape.
 * (Probabilities outside [0, 1] in `input` are not checked.)
 */
export function bernoulli(input: Tensor, ...args: PyArgs<[p: number | null], { p?: number | null; generator?: Generator | null }>): Tensor {
  const { p, generator } = bindArgs('bernoulli', ['p', 'generator'], args, { p: null as number | null, generator: null as Generator | null }, 1);
  if (!(input instanceof Tensor)) throw new TypeError(`bernoulli(): argument 'input' must be Tensor, not ${input === null ? 'null' : typeof input}`);
  input._check('bernoulli');
  if (!isFloating(input.dtype)) throw new TypeError(`"bernoulli_tensor_cpu_p_" not implemented for '${scalarName(input.dtype)}'`);
  const g = generatorFor('bernoulli', input.device, generator);
  if (p != null) {
    const bits = f32Bits(checkP('bernoulli', p));
    return drawInto(alloc(input.shape, input.dtype, input.device), Dist.Bernoulli, g, bits, f32Bits(1));
  }
  return tidy(() => {
    const u = drawInto(alloc(input.shape, 'float32', input.device), Dist.Uniform, g, f32Bits(0), f32Bits(1));
    return V.cast(binaryOp('lt', u, input.detach()), input.dtype);
  });
}

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
