/**
 * `Subset` and `randomSplit`: a dataset seen through a list of indices, and a dataset split into
 * non-overlapping random subsets (by lengths, or by fractions that sum to 1, as PyTorch's).
 */
import { bindArgs, type PyArgs } from '../args.js';
import { defaultGenerator, type Generator } from '../random.js';
import { Dataset } from './dataset.js';
import { permutation } from './samplers.js';

/** `Subset(dataset, indices)`: item i is `dataset.getItem(indices[i])`. */
export class Subset<T = unknown> extends Dataset<T> {
  readonly indices: number[];

  constructor(readonly dataset: Dataset<T>, indices: Iterable<number>) {
    super();
    this.indices = [...indices];
  }

  get length(): number {
    return this.indices.length;
  }

  getItem(index: number): T {
    if (!Number.isInteger(index) || index < -this.indices.length || index >= this.indices.length) {
      throw new RangeError(`index ${index} is out of range for a Subset of length ${this.indices.length}`);
    }
    return this.dataset.getItem(this.indices[index < 0 ? index + this.indices.length : index]);
  }
}

/**
 * `randomSplit(dataset, lengths, generator = defaultGenerator)`: `Subset`s of the given lengths
 * over one random permutation. Fractions summing to 1 become lengths `floor(n·f)`, the remainder
 * handed out one at a time from the first subset, as PyTorch does.
 */
export function randomSplit<T>(dataset: Dataset<T>, lengths: number[], ...args: PyArgs<[generator: Generator], { generator?: Generator }>): Subset<T>[] {
  const { generator } = bindArgs('random_split', ['generator'], args, { generator: defaultGenerator }, 2);
  const n = dataset.length;
  let sizes = lengths.slice();
  const sum = sizes.reduce((a, b) => a + b, 0);
  if (Math.abs(sum - 1) < 1e-9 && sum <= 1 && sizes.some((s) => !Number.isInteger(s))) {
    sizes.forEach((f, i) => {
      if (!(f >= 0 && f <= 1)) throw new RangeError(`Fraction at index ${i} is not between 0 and 1`);
    });
    sizes = lengths.map((f) => Math.floor(n * f));
    const rest = n - sizes.reduce((a, b) => a + b, 0);
    for (let i = 0; i < rest; i++) sizes[i % sizes.length] += 1;
  }
  if (sizes.some((s) => !Number.isInteger(s) || s < 0)) throw new RangeError(`random_split: lengths must be non-negative integers or fractions summing to 1, got [${lengths.join(', ')}]`);
  if (sizes.reduce((a, b) => a + b, 0) !== n) throw new RangeError('Sum of input lengths does not equal the length of the input dataset!');
  const perm = permutation(n, generator);
  let offset = 0;
  return sizes.map((s) => new Subset(dataset, perm.slice(offset, (offset += s))));
}
