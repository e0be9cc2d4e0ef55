/**
 * Samplers: the order in which a `DataLoader` visits a dataset (`sampler` option), and
 * `DistributedSampler`, which gives each rank of a process group its own share of it.
 *
 * `DistributedSampler` is PyTorch's split to the index: the (shuffled) order is padded by
 * repeating its start until it divides by the number of replicas (or cut to a multiple with
 * `dropLast`), and rank r takes every `numReplicas`-th index from r. The shuffle is a Fisher–Yates
 * permutation from webtorch's generator seeded with `seed + epoch`: the same on every rank (so the
 * shares do not overlap) and across runs, but not the permutation PyTorch's CPU generator makes.
 */
import { getRank, getWorldSize, isInitialized } from '../distributed/group.js';
import { checkOptions } from '../args.js';
import { Generator } from '../random.js';

/** What a `DataLoader` accepts as `sampler`: an iterable of indices with a length. */
export interface Sampler extends Iterable<number> {
  readonly length: number;
}

/** `DistributedSampler`'s options (PyTorch's keywords, camelCase). */
export interface DistributedSamplerOptions {
  /** The dataset (anything with a `length`). */
  dataset: { readonly length: number };
  /** The number of ranks (default: the process group's world size). */
  numReplicas?: number | null;
  /** This rank (default: the process group's rank). */
  rank?: number | null;
  /** Shuffle the indices each epoch (default true). */
  shuffle?: boolean;
  /** The shuffle's seed; must be the same on every rank (default 0). */
  seed?: number;
  /** Drop the tail that does not divide by `numReplicas` instead of padding (default false). */
  dropLast?: boolean;
}

/**
 * `torch.utils.data.DistributedSampler({dataset, numReplicas, rank, shuffle, seed, dropLast})`:
 * this rank's indices of the dataset. Call `setEpoch(epoch)` before each epoch so that the
 * shuffle differs between epochs.
 */
export class DistributedSampler implements Sampler {
  readonly dataset: { readonly length: number };
  readonly numReplicas: number;
  readonly rank: number;
  readonly shuffle: boolean;
  readonly seed: number;
  readonly dropLast: boolean;
  /** The epoch the next iteration shuffles for. */
  epoch = 0;
  /** The indices per rank. */
  readonly numSamples: number;
  /** `numSamples × numReplicas`. */
  readonly totalSize: number;

  constructor(options: DistributedSamplerOptions) {
    if (options === null || typeof options !== 'object' || !('dataset' in options)) throw new TypeError('DistributedSampler: expected an options object with a dataset ({dataset, numReplicas, rank, shuffle, seed, dropLast})');
    checkOptions('DistributedSampler', options, ['dataset', 'numReplicas', 'rank', 'shuffle', 'seed', 'dropLast']);
    const { dataset, shuffle = true, seed = 0, dropLast = false } = options;
    if (!dataset || !Number.isInteger(dataset.length) || dataset.length < 0) throw new TypeError('DistributedSampler: dataset must have an integer length');
    let { numReplicas, rank } = options;
    if (numReplicas == null || rank == null) {
      if (!isInitialized()) throw new Error('Default process group has not been initialized, please make sure to call initProcessGroup (or pass numReplicas and rank to DistributedSampler).');
      numReplicas ??= getWorldSize();
      rank ??= getRank();
    }
    if (!Number.isInteger(numReplicas) || numReplicas < 1) throw new RangeError(`DistributedSampler: numReplicas must be a positive integer, got ${String(numReplicas)}`);
    if (!Number.isInteger(rank) || rank < 0 || rank >= numReplicas) throw new RangeError(`Invalid rank ${rank}, rank should be in the interval [0, ${numReplicas - 1}]`);
    if (!Number.isSafeInteger(seed)) throw new TypeError(`DistributedSampler: seed must be an integer, got ${String(seed)}`);
    this.dataset = dataset;
    this.numReplicas = numReplicas;
    this.rank = rank;
    this.shuffle = shuffle;
    this.seed = seed;
    this.dropLast = dropLast;
    const n = dataset.length;
    this.numSamples = (dropLast && n % numReplicas !== 0 ? Math.ceil((n - numReplicas) / numReplicas) : Math.ceil(n / numReplicas)) || 0;
    this.totalSize = this.numSamples * numReplicas;
  }

  /** The number of indices this rank gets per epoch. */
  get length(): number {
    return this.numSamples;
  }

  /** Sets the epoch that the shuffle is seeded with (`seed + epoch`). */
  setEpoch(epoch: number): void {
    if (!Number.isInteger(epoch)) throw new TypeError(`DistributedSampler.setEpoch: epoch must be an integer, got ${String(epoch)}`);
    this.epoch = epoch;
  }

  /** This rank's indices for the current epoch. */
  indices(): number[] {
    const n = this.dataset.length;
    let idx = Array.from({ length: n }, (_, i) => i);
    if (this.shuffle && n > 1) {
      const r = new Generator().manualSeed(this.seed + this.epoch).words(n);
      for (let i = n - 1; i > 0; i--) {
        const j = r[i] % (i + 1);
        [idx[i], idx[j]] = [idx[j], idx[i]];
      }
    }
    if (!this.dropLast) {
      const pad = this.totalSize - idx.length;
      if (pad > 0 && idx.length) {
        const base = idx.slice();
        while (idx.length < this.totalSize) idx.push(...base.slice(0, this.totalSize - idx.length));
      }
    } else idx = idx.slice(0, this.totalSize);
    const mine: number[] = [];
    for (let i = this.rank; i < this.totalSize; i += this.numReplicas) mine.push(idx[i]);
    return mine;
  }

  [Symbol.iterator](): Iterator<number> {
    return this.indices()[Symbol.iterator]();
  }
}
