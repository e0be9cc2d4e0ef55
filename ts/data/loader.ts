/**
 * `DataLoader`: batches, shuffling (from a seeded `Generator`), `dropLast`, and prefetching.
 *
 * Batches of a `TensorDataset` are gathered on the dataset's device, so the gather itself runs
 * in that device's worker thread while the caller trains on the previous batch. With
 * `numWorkers > 0` the loader keeps `numWorkers × prefetchFactor` batches in flight ahead of the
 * one it yields, as PyTorch's worker processes do. Other datasets are collated by stacking their
 * items on their device. With `pinMemory`, cpu batches are made in pinned memory (by the cpu
 * worker, which owns them), so that `batch.to(dev, {nonBlocking: true})` is read by the device's
 * worker directly (ts/runtime/pinned.ts).
 *
 * Any other dataset with `numWorkers > 0` runs its `getItem` in that many worker threads, in Node
 * (ts/data/workers.ts); in a browser it runs on the calling thread. Items may be tensors (stacked)
 * or plain data (numbers, arrays, typed arrays: made into tensors, as PyTorch's `default_collate`).
 */
import { CPU } from '../device.js';
import { bindArgs, type PyArgs } from '../args.js';
import { checkPinnable, pinMemory } from '../runtime/pinned.js';
import { defaultGenerator, type Generator } from '../random.js';
import { alloc, emit, place, ref, code } from '../runtime/dispatch.js';
import { Tensor } from '../tensor.js';
import { tensor } from '../ops/creation.js';
import { isNode } from '../platform.js';
import { LoaderWorkers } from './workers.js';
import { Dataset, TensorDataset } from './dataset.js';
import type { Sampler } from './sampler.js';

/** DataLoader options (PyTorch's names in camelCase). */
export interface DataLoaderOptions {
  batchSize?: number;
  shuffle?: boolean;
  dropLast?: boolean;
  numWorkers?: number;
  prefetchFactor?: number;
  pinMemory?: boolean;
  generator?: Generator;
  /** The order of the indices (a `DistributedSampler`, or any iterable of indices with a `length`); excludes `shuffle`. */
  sampler?: Sampler | null;
  /** Lists of indices, one per batch (a `BatchSampler`); excludes `batchSize`, `shuffle`, `sampler` and `dropLast`. */
  batchSampler?: (Iterable<number[]> & { readonly length: number }) | null;
  /** Accepted only as null/undefined: PyTorch's options that have no counterpart here yet. */
  collateFn?: null;
  timeout?: number;
  workerInitFn?: null;
  multiprocessingContext?: null;
  persistentWorkers?: boolean;
}

/** PyTorch's positional order of DataLoader's parameters after the dataset. */
const LOADER_PARAMS = ['batchSize', 'shuffle', 'sampler', 'batchSampler', 'numWorkers', 'collateFn', 'pinMemory', 'dropLast', 'timeout',
  'workerInitFn', 'multiprocessingContext', 'generator', 'prefetchFactor', 'persistentWorkers'] as const;
type LoaderPositional = [batchSize: number, shuffle: boolean, sampler: Sampler | null, batchSampler: DataLoaderOptions['batchSampler'], numWorkers: number, collateFn: null,
  pinMemory: boolean, dropLast: boolean, timeout: number, workerInitFn: null, multiprocessingContext: null, generator: Generator];

/** Stacks equally shaped tensors of one device into a new leading dim. */
function stack(items: Tensor[]): Tensor {
  const first = items[0];
  const out = alloc([items.length, ...first.shape], first.dtype, first.device);
  const rowElems = first.numel(), p = place(out);
  items.forEach((t, i) => {
    if (t.shape.join() !== first.shape.join() || t.device !== first.device || t.dtype !== first.dtype) {
      throw new RangeError(`DataLoader: stack expects each tensor to be equal size, but got [${first.shape.join(', ')}] at entry 0 and [${t.shape.join(', ')}] at entry ${i}`);
    }
    if (rowElems) {
      emit(out.device, {
        k: 'copyInto', src: ref(t), srcDt: code(t), dt: code(out), shape: t.shape.slice(),
        dst: { id: p.id, offset: p.offset + i * rowElems, strides: out._strides.slice(1) },
      });
    }
  });
  return out;
}

/** One field of a batch of plain items (numbers, arrays, typed arrays) as a tensor of `[batch, …]`. */
function collateValues(values: unknown[]): Tensor {
  const first = values[0];
  if (ArrayBuffer.isView(first)) {
    const rows = values as unknown as ArrayLike<number>[];
    const flat = new (first.constructor as { new (n: number): Float32Array })(rows.length * rows[0].length);
    rows.forEach((r, i) => {
      if (r.length !== rows[0].length) throw new RangeError(`DataLoader: stack expects each tensor to be equal size, but got [${rows[0].length}] at entry 0 and [${r.length}] at entry ${i}`);
      flat.set(r as Float32Array, i * rows[0].length);
    });
    const t = tensor(flat);
    const out = t.reshape([rows.length, rows[0].length]);
    t.dispose();
    return out;
  }
  if (typeof first === 'number' || typeof first === 'boolean' || Array.isArray(first)) return tensor(values as number[]);
  throw new TypeError(`DataLoader: default_collate: batch must contain tensors, numbers, arrays or typed arrays; found ${first === null ? 'null' : typeof first}`);
}

/** Iterates a dataset in batches: `for (const [X, y] of loader) …`. */
export class DataLoader<T = Tensor[]> implements Iterable<Tensor[]> {
  readonly batchSize: number | null;
  readonly shuffle: boolean;
  readonly dropLast: boolean;
  readonly numWorkers: number;
  readonly prefetchFactor: number;
  readonly pinMemory: boolean;
  private readonly generator: Generator;
  /** Where the indices come from, when not from the dataset's order. */
  readonly sampler: Sampler | null;
  /** Where the batches' indices come from, when given (then `batchSize` is null, as PyTorch's). */
  readonly batchSampler: (Iterable<number[]> & { readonly length: number }) | null;

  constructor(readonly dataset: Dataset<T>, ...args: PyArgs<LoaderPositional, DataLoaderOptions>) {
    const o = bindArgs('DataLoader', LOADER_PARAMS, args, {} as DataLoaderOptions, 1);
    for (const k of ['collateFn', 'workerInitFn', 'multiprocessingContext'] as const) {
      if (o[k] != null) throw new TypeError(`DataLoader: ${k} is not supported yet (it would be ignored)`);
    }
    if (o.timeout) throw new TypeError('DataLoader: timeout is not supported');
    if (o.persistentWorkers) throw new TypeError('DataLoader: persistentWorkers is not supported (the worker threads live for one epoch)');
    this.batchSampler = o.batchSampler ?? null;
    if (this.batchSampler) {
      if ((o.batchSize ?? 1) !== 1 || o.shuffle || o.sampler != null || o.dropLast) throw new RangeError('batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last');
      const b = this.batchSampler as Partial<Iterable<number[]> & { length: number }>;
      if (typeof b[Symbol.iterator] !== 'function' || !Number.isInteger(b.length)) throw new TypeError('DataLoader: batchSampler must be an iterable of index lists with a length (such as a BatchSampler)');
    }
    const batchSize = o.batchSize ?? 1;
    this.batchSize = this.batchSampler ? null : batchSize;
    this.shuffle = o.shuffle ?? false;
    if (o.sampler != null) {
      if (this.shuffle) throw new RangeError('DataLoader: sampler option is mutually exclusive with shuffle');
      const s = o.sampler as Partial<Sampler>;
      if (typeof s[Symbol.iterator] !== 'function' || !Number.isInteger(s.length)) throw new TypeError('DataLoader: sampler must be an iterable of indices with a length (such as a DistributedSampler)');
    }
    this.sampler = o.sampler ?? null;
    this.dropLast = o.dropLast ?? false;
    this.numWorkers = o.numWorkers ?? 0;
    this.prefetchFactor = o.prefetchFactor ?? 2;
    this.pinMemory = o.pinMemory ?? false;
    if (this.pinMemory) checkPinnable();
    this.generator = o.generator ?? defaultGenerator;
    if (!Number.isInteger(batchSize) || batchSize <= 0) {
      throw new RangeError(`batch_size should be a positive integer value, but got batch_size=${o.batchSize}`);
    }
    if (!Number.isInteger(this.numWorkers) || this.numWorkers < 0) {
      throw new RangeError(`num_workers option should be non-negative; use numWorkers=0 to disable multiprocessing (got ${o.numWorkers})`);
    }
  }

  /** Number of batches per epoch. */
  get length(): number {
    if (this.batchSampler) return this.batchSampler.length;
    const n = this.sampler ? this.sampler.length : this.dataset.length, b = this.batchSize!;
    return this.dropLast ? Math.floor(n / b) : Math.ceil(n / b);
  }

  /** The sample order of one epoch (a Fisher–Yates shuffle from the generator when `shuffle`). */
  private order(): number[] {
    if (this.sampler) return [...this.sampler];
    const idx = Array.from({ length: this.dataset.length }, (_, i) => i);
    if (this.shuffle) {
      const r = this.generator.words(idx.length);
      for (let i = idx.length - 1; i > 0; i--) {
        const j = r[i] % (i + 1);
        [idx[i], idx[j]] = [idx[j], idx[i]];
      }
    }
    return idx;
  }

  private batch(indices: number[]): Tensor[] {
    return this.finish(this.collate(indices));
  }

  /** A collated batch, in pinned memory when `pinMemory`. */
  private finish(b: Tensor[]): Tensor[] {
    if (!this.pinMemory) return b;
    return b.map((t) => {
      if (t.device !== CPU) return t;
      const p = pinMemory(t);
      if (p !== t) t.dispose();
      return p;
    });
  }

  private collate(indices: number[], made?: unknown[]): Tensor[] {
    if (this.dataset instanceof TensorDataset) return this.dataset.getBatch(indices);
    const items = made ?? indices.map((i) => this.dataset.getItem(i));
    if (!Array.isArray(items[0]) || !(items[0][0] instanceof Tensor)) {
      // plain data: an array item is a tuple of fields (PyTorch's default_collate zips sequences); else one field
      if (!Array.isArray(items[0])) return [collateValues(items)];
      return (items[0] as unknown[]).map((_, k) => collateValues(items.map((it) => (it as unknown[])[k])));
    }
    const fields = items[0] as unknown as Tensor[];
    return fields.map((_, k) => stack(items.map((it) => (it as unknown as Tensor[])[k])));
  }

  *[Symbol.iterator](): Iterator<Tensor[]> {
    const ahead = this.numWorkers > 0 ? this.numWorkers * this.prefetchFactor : 0;
    let indicesOf: (b: number) => number[];
    if (this.batchSampler) {
      const lists = [...this.batchSampler];
      indicesOf = (b) => lists[b];
    } else {
      const order = this.order(), size = this.batchSize!;
      indicesOf = (b) => order.slice(b * size, (b + 1) * size);
    }
    const workers = this.numWorkers > 0 && isNode && !(this.dataset instanceof TensorDataset) ? new LoaderWorkers(this.dataset, this.numWorkers) : null;
    const queue: Tensor[][] = [];
    let next = 0, asked = 0;
    const fill = () => {
      if (workers) {
        // the threads work `ahead` batches in front of the one taken next
        for (; asked < this.length && asked <= next + ahead; asked++) workers.request(asked, indicesOf(asked));
        if (next < this.length) {
          const items = workers.take(next);
          queue.push(this.finish(this.collate(indicesOf(next), items)));
          next++;
        }
        return;
      }
      while (queue.length <= ahead && next < this.length) {
        queue.push(this.batch(indicesOf(next)));
        next++;
      }
    };
    try {
      for (fill(); queue.length; fill()) yield queue.shift()!;
    } finally {
      workers?.close();
      queue.forEach((b) => b.forEach((t) => t.dispose()));
    }
  }
}
