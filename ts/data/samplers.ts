/**
 * The samplers of `torch.utils.data`: `SequentialSampler`, `RandomSampler`,
 * `SubsetRandomSampler`, `WeightedRandomSampler` (indices) and `BatchSampler` (lists of indices),
 * with PyTorch's arguments and errors. Random orders come from a webtorch `Generator` (the
 * default one unless given): seeded, they repeat, but they are not the orders PyTorch's CPU
 * generator (MT19937) makes.
 */
import { Tensor } from '../tensor.js';
import { bindArgs, REQUIRED, type PyArgs } from '../args.js';
import { defaultGenerator, type Generator } from '../random.js';
import type { Sampler } from './sampler.js';

/** A random permutation of 0..n-1 (Fisher–Yates over the generator's words). */
export function permutation(n: number, g: Generator): number[] {
  const idx = Array.from({ length: n }, (_, i) => i);
  if (n < 2) return idx;
  const r = g.words(n);
  for (let i = n - 1; i > 0; i--) {
    const j = r[i] % (i + 1);
    [idx[i], idx[j]] = [idx[j], idx[i]];
  }
  return idx;
}

/** What has a length: a dataset, an array. */
type Sized = { readonly length: number };

const checkPositive = (what: string, v: unknown): void => {
  if (!Number.isInteger(v) || (v as number) <= 0) throw new RangeError(`${what} should be a positive integer value, but got ${what}=${String(v)}`);
};
const checkBool = (what: string, v: unknown): void => {
  if (typeof v !== 'boolean') throw new TypeError(`${what} should be a boolean value, but got ${what}=${String(v)}`);
};

/** `SequentialSampler(dataSource)`: 0, 1, …, n-1. */
export class SequentialSampler implements Sampler {
  constructor(readonly dataSource: Sized) {}

  get length(): number {
    return this.dataSource.length;
  }

  *[Symbol.iterator](): Iterator<number> {
    for (let i = 0; i < this.dataSource.length; i++) yield i;
  }
}

/** Options of `RandomSampler`. */
export interface RandomSamplerOptions { replacement?: boolean; numSamples?: number | null; generator?: Generator | null }

/**
 * `RandomSampler(dataSource, replacement = false, numSamples = null, generator = null)`: a new
 * permutation each epoch (repeated whole permutations when `numSamples` exceeds the length), or
 * `numSamples` uniform draws with `replacement`.
 */
export class RandomSampler implements Sampler {
  readonly replacement: boolean;
  private readonly _numSamples: number | null;
  readonly generator: Generator | null;

  constructor(readonly dataSource: Sized, ...args: PyArgs<[replacement: boolean, numSamples: number | null, generator: Generator | null], RandomSamplerOptions>) {
    const o = bindArgs('RandomSampler', ['replacement', 'numSamples', 'generator'], args, { replacement: false, numSamples: null, generator: null } as RandomSamplerOptions, 1);
    checkBool('replacement', o.replacement);
    this.replacement = o.replacement!;
    this._numSamples = o.numSamples ?? null;
    this.generator = o.generator ?? null;
    checkPositive('num_samples', this.numSamples);
  }

  /** The number of indices per epoch (the dataset's length by default). */
  get numSamples(): number {
    return this._numSamples ?? this.dataSource.length;
  }

  get length(): number {
    return this.numSamples;
  }

  *[Symbol.iterator](): Iterator<number> {
    const n = this.dataSource.length, g = this.generator ?? defaultGenerator;
    if (this.replacement) {
      for (const u of g.uniform(this.numSamples)) yield Math.min(Math.floor(u * n), n - 1);
      return;
    }
    for (let left = this.numSamples; left > 0; left -= n) yield* permutation(n, g).slice(0, Math.min(left, n));
  }
}

/** `SubsetRandomSampler(indices, generator = null)`: the given indices in a new random order each epoch. */
export class SubsetRandomSampler implements Sampler {
  readonly indices: number[];
  readonly generator: Generator | null;

  constructor(indices: Iterable<number>, ...args: PyArgs<[generator: Generator | null], { generator?: Generator | null }>) {
    this.generator = bindArgs('SubsetRandomSampler', ['generator'], args, { generator: null as Generator | null }, 1).generator;
    this.indices = [...indices];
  }

  get length(): number {
    return this.indices.length;
  }

  *[Symbol.iterator](): Iterator<number> {
    for (const i of permutation(this.indices.length, this.generator ?? defaultGenerator)) yield this.indices[i];
  }
}

/** Options of `WeightedRandomSampler`. */
export interface WeightedRandomSamplerOptions { weights?: ArrayLike<number>; numSamples?: number; replacement?: boolean; generator?: Generator | null }

/**
 * `WeightedRandomSampler(weights, numSamples, replacement = true, generator = null)`: indices
 * 0..len(weights)-1 drawn with probabilities proportional to `weights` (a 1-D array or a cpu tensor's
 * values: pass `await t.tolist()`), each at most once without replacement.
 */
export class WeightedRandomSampler implements Sampler {
  readonly weights: number[];
  readonly numSamples: number;
  readonly replacement: boolean;
  readonly generator: Generator | null;

  constructor(weights: ArrayLike<number>, ...args: PyArgs<[numSamples: number, replacement: boolean, generator: Generator | null], Omit<WeightedRandomSamplerOptions, 'weights'>>) {
    const o = bindArgs('WeightedRandomSampler', ['numSamples', 'replacement', 'generator'], args,
      { numSamples: REQUIRED as number, replacement: true, generator: null } as Required<Omit<WeightedRandomSamplerOptions, 'weights'>>, 1);
    checkPositive('num_samples', o.numSamples);
    checkBool('replacement', o.replacement);
    if (weights instanceof Tensor) throw new TypeError('WeightedRandomSampler: pass the weights as numbers (await weights.tolist()): a sampler runs on the host');
    const w = Array.from(weights as ArrayLike<number>, Number);
    if (w.some((v) => Array.isArray(v))) throw new RangeError(`weights should be a 1d sequence but given weights have shape [${weights.length}, ...]`);
    if (w.some((v) => !(v >= 0) || !Number.isFinite(v)) || !w.some((v) => v > 0)) throw new RangeError('invalid multinomial distribution (sum of probabilities <= 0, or a negative, infinite or NaN weight)');
    if (!o.replacement && o.numSamples > w.filter((v) => v > 0).length) throw new RangeError('cannot sample n_sample > prob_dist.size(-1) samples without replacement');
    this.weights = w;
    this.numSamples = o.numSamples;
    this.replacement = o.replacement;
    this.generator = o.generator;
  }

  get length(): number {
    return this.numSamples;
  }

  *[Symbol.iterator](): Iterator<number> {
    const w = this.weights.slice(), u = (this.generator ?? defaultGenerator).uniform(this.numSamples);
    for (let k = 0; k < this.numSamples; k++) {
      const total = w.reduce((a, b) => a + b, 0);
      let x = u[k] * total, i = 0;
      while (i < w.length - 1 && (x >= w[i] || w[i] === 0)) x -= w[i++];
      while (w[i] === 0) i--; // rounding at the end lands on the last positive weight
      yield i;
      if (!this.replacement) w[i] = 0;
    }
  }
}

/** `BatchSampler(sampler, batchSize, dropLast)`: the sampler's indices in lists of `batchSize` (the last one shorter unless dropped). */
export class BatchSampler implements Iterable<number[]> {
  readonly batchSize: number;
  readonly dropLast: boolean;

  constructor(readonly sampler: Iterable<number> & Sized, ...args: PyArgs<[batchSize: number, dropLast: boolean], { batchSize?: number; dropLast?: boolean }>) {
    const o = bindArgs('BatchSampler', ['batchSize', 'dropLast'], args, { batchSize: REQUIRED as number, dropLast: REQUIRED as boolean }, 1);
    checkPositive('batch_size', o.batchSize);
    checkBool('drop_last', o.dropLast);
    this.batchSize = o.batchSize;
    this.dropLast = o.dropLast;
  }

  get length(): number {
    const n = this.sampler.length;
    return this.dropLast ? Math.floor(n / this.batchSize) : Math.ceil(n / this.batchSize);
  }

  *[Symbol.iterator](): Iterator<number[]> {
    let batch: number[] = [];
    for (const i of this.sampler) {
      batch.push(i);
      if (batch.length === this.batchSize) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length && !this.dropLast) yield batch;
  }
}
