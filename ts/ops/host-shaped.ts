/**
 * The ops whose result's size is device data: `unique`, `bincount`, and `repeatInterleave` with
 * a tensor of repeats. Each reads what decides the size (a sync point, so each returns a
 * Promise, like `nonzero`), then computes on the input's device where it can.
 */
import { isFloating, scalarName } from '../dtype.js';
import { Tensor } from '../tensor.js';
import { normDim } from '../shape.js';
import { fromHost, full } from './creation.js';
import { indexSelect, scatterAdd } from './indexing.js';
import { bindArgs, type PyArgs } from '../args.js';
import { tidy } from './scoped.js';
import { repeatInterleaveBy } from './surface.js';
import * as V from './views.js';

type Value = number | boolean | bigint;
const integral = (t: Tensor) => t.dtype === 'int32' || t.dtype === 'int64' || t.dtype === 'uint8';
/** Ascending order with NaN last (PyTorch's sort order); works across numbers, BigInts and booleans. */
const ascending = (a: Value, b: Value): number => {
  const na = typeof a === 'number' && Number.isNaN(a), nb = typeof b === 'number' && Number.isNaN(b);
  if (na || nb) return na === nb ? 0 : na ? 1 : -1;
  return a < b ? -1 : a > b ? 1 : 0;
};

/** Keywords of `torch.unique`. */
export interface UniqueOptions { sorted?: boolean; returnInverse?: boolean; returnCounts?: boolean; dim?: number | null }

/**
 * `torch.unique(input, sorted = true, returnInverse = false, returnCounts = false, dim = null)`:
 * the distinct elements (of the flattened input), or with `dim` the distinct slices along it, in
 * ascending (lexicographic) order (`sorted: false` gives them ascending too, one of the orders
 * PyTorch allows); with `returnInverse` and/or `returnCounts`, an array `[output, inverse?,
 * counts?]` (Python's tuple), both int64.
 */
export async function unique(input: Tensor, ...args: PyArgs<[sorted: boolean, returnInverse: boolean, returnCounts: boolean, dim: number | null], UniqueOptions>): Promise<Tensor | Tensor[]> {
  const o = bindArgs('unique', ['sorted', 'returnInverse', 'returnCounts', 'dim'], args, { sorted: true, returnInverse: false, returnCounts: false, dim: null as number | null }, 1);
  if (!(input instanceof Tensor)) throw new TypeError(`unique(): argument 'input' must be Tensor, not ${typeof input}`);
  const extras = (inverse: number[], inverseShape: number[], groups: number) => {
    const r: Tensor[] = [];
    if (o.returnInverse) r.push(fromHost(inverse, inverseShape, 'int64', input.device));
    if (o.returnCounts) {
      const counts = Array(groups).fill(0) as number[];
      inverse.forEach((i) => counts[i]++);
      r.push(fromHost(counts, [groups], 'int64', input.device));
    }
    return r;
  };
  if (o.dim !== null) {
    const [out, inverse, groups] = await uniqueSlices(input, o.dim);
    return o.returnInverse || o.returnCounts ? [out, ...extras(inverse, [inverse.length], groups)] : out;
  }
  const values = await input.values();
  const distinct = [...new Set(values.map((v) => (typeof v === 'number' && Object.is(v, -0) ? 0 : v)))].sort(ascending);
  const out = fromHost(distinct, [distinct.length], input.dtype, input.device);
  if (!o.returnInverse && !o.returnCounts) return out;
  const at = new Map(distinct.map((v, i) => [v, i]));
  const inverse = values.map((v) => at.get(typeof v === 'number' && Object.is(v, -0) ? 0 : v) ?? distinct.length - 1);
  return [out, ...extras(inverse, input.shape.slice(), distinct.length)];
}

/** The distinct slices along `dim` in lexicographic order (picked on the device: exact values), each slice's group, the group count. */
async function uniqueSlices(input: Tensor, dim: number): Promise<[Tensor, number[], number]> {
  if (input.ndim === 0) throw new RangeError('unique(): dim is given but the input is a 0-dim tensor');
  const d = normDim(dim, input.ndim), n = input.shape[d];
  const front = tidy(() => V.contiguous(V.permute(input, [d, ...input.shape.map((_, i) => i).filter((i) => i !== d)])));
  let flat: Value[];
  try {
    flat = await front.values();
  } finally {
    front.dispose();
  }
  const size = n ? flat.length / n : 0;
  const slice = (i: number) => flat.slice(i * size, (i + 1) * size);
  const lex = (a: number, b: number) => {
    const x = slice(a), y = slice(b);
    for (let k = 0; k < size; k++) {
      const c = ascending(x[k], y[k]);
      if (c) return c;
    }
    return 0;
  };
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => lex(a, b) || a - b);
  const firsts: number[] = [], inverse = Array(n).fill(0) as number[];
  order.forEach((i, k) => {
    if (k === 0 || lex(order[k - 1], i) !== 0) firsts.push(i);
    inverse[i] = firsts.length - 1;
  });
  const out = tidy(() => indexSelect(input, d, fromHost(firsts, [firsts.length], 'int64', input.device)));
  return [out, inverse, firsts.length];
}

/**
 * `torch.bincount(input, weights = null, minlength = 0)`: how often each value of a 1-D
 * non-negative integer tensor occurs (int64), or the sums of `weights` at each value (float32:
 * PyTorch gives float64 for integer weights, which WebGPU has not). A sync point: the length is
 * `max(input) + 1`.
 */
export async function bincount(input: Tensor, ...args: PyArgs<[weights: Tensor | null, minlength: number], { weights?: Tensor | null; minlength?: number }>): Promise<Tensor> {
  const o = bindArgs('bincount', ['weights', 'minlength'], args, { weights: null as Tensor | null, minlength: 0 }, 1);
  if (!(input instanceof Tensor)) throw new TypeError(`bincount(): argument 'input' must be Tensor, not ${typeof input}`);
  if (!integral(input)) throw new TypeError(`"bincount_cpu" not implemented for '${scalarName(input.dtype)}' (bincount takes an integer tensor)`);
  if (input.ndim !== 1) throw new RangeError('bincount only supports 1-d non-negative integral inputs.');
  if (!Number.isInteger(o.minlength) || o.minlength < 0) throw new RangeError('bincount: minlength should be >= 0');
  const w = o.weights;
  if (w !== null && (!(w instanceof Tensor) || w.ndim !== 1 || w.shape[0] !== input.shape[0])) {
    throw new RangeError('bincount: weights should be 1-d and have the same length as input');
  }
  const values = (await input.values()).map(Number);
  if (values.some((v) => v < 0)) throw new RangeError('bincount only supports 1-d non-negative integral inputs.');
  const n = Math.max(o.minlength, values.length ? Math.max(...values) + 1 : 0);
  return tidy(() => {
    const dtype = w === null ? 'int64' : w.dtype === 'float16' || w.dtype === 'bfloat16' || w.dtype === 'float32' ? w.dtype : 'float32';
    const src = w === null ? full([input.shape[0]], 1, { dtype: 'int64', device: input.device }) : w.dtype === dtype ? w : V.cast(w, dtype);
    const index = input.dtype === 'int64' ? input : V.cast(input, 'int64');
    return scatterAdd(full([n], 0, { dtype, device: input.device }), 0, index, src);
  });
}

/** The arguments of `torch.repeat_interleave` after `input`. */
export type RepeatArgs<R> = [repeats: R, ...rest: PyArgs<[dim: number | null], { dim?: number | null; outputSize?: number | null }>];

/**
 * `torch.repeat_interleave(input, repeats, dim = null, {outputSize})`: each element (along
 * `dim`, or of the flattened input) repeated; `repeats` a number (a Tensor at once) or a 0-D/1-D
 * integer tensor, one count per element (a Promise: the output's size is the counts' sum).
 */
export function repeatInterleave(input: Tensor, ...args: RepeatArgs<number>): Tensor;
export function repeatInterleave(input: Tensor, ...args: RepeatArgs<Tensor>): Promise<Tensor>;
export function repeatInterleave(input: Tensor, ...args: RepeatArgs<number | Tensor>): Tensor | Promise<Tensor> {
  const o = bindArgs('repeat_interleave', ['repeats', 'dim', 'outputSize'], args, { repeats: undefined as unknown as number | Tensor, dim: null as number | null, outputSize: null as number | null }, 1, 2);
  if (!(input instanceof Tensor)) throw new TypeError(`repeat_interleave(): argument 'input' must be Tensor, not ${typeof input}`);
  if (o.repeats === undefined) throw new TypeError("repeat_interleave() missing 1 required argument: 'repeats'");
  if (!(o.repeats instanceof Tensor)) {
    const r = repeatInterleaveBy(input, o.repeats, o.dim);
    if (o.outputSize !== null && r.shape[o.dim === null ? 0 : normDim(o.dim, r.ndim)] !== o.outputSize) {
      r.dispose();
      throw new RangeError('repeat_interleave: allocated size does not match required size');
    }
    return r;
  }
  return byTensor(input, o.repeats, o.dim, o.outputSize);
}

async function byTensor(input: Tensor, repeats: Tensor, dim: number | null, outputSize: number | null): Promise<Tensor> {
  if (repeats.ndim > 1) throw new RangeError('repeat_interleave: repeats must be 0-dim or 1-dim tensor');
  if (!integral(repeats) || isFloating(repeats.dtype)) throw new TypeError(`repeat_interleave: repeats has to be Long or Int tensor (got ${scalarName(repeats.dtype)})`);
  const counts = (await repeats.values()).map(Number);
  const x = dim === null ? V.reshape(input, [-1]) : input;
  try {
    const d = dim === null ? 0 : normDim(dim, Math.max(1, x.ndim));
    const size = x.ndim ? x.shape[d] : 1;
    const per = counts.length === 1 ? Array(size).fill(counts[0]) : counts;
    if (per.length !== size) throw new RangeError('repeat_interleave: repeats must have the same size as input along dim');
    if (per.some((c) => c < 0)) throw new RangeError('repeat_interleave: repeats can not be negative');
    const index = per.flatMap((c, i) => Array(c).fill(i));
    if (outputSize !== null && outputSize !== index.length) throw new RangeError('repeat_interleave: allocated size does not match required size');
    return tidy(() => indexSelect(x.ndim ? x : V.reshape(x, [1]), d, fromHost(index, [index.length], 'int64', input.device)));
  } finally {
    if (x !== input) x.dispose();
  }
}
