/**
 * Statistical reductions: `var`, `std` (with `correction`), `logsumexp` and `norm`.
 *
 * Most compose from sum/mean and elementwise ops. The hard part is where the composition's
 * gradient differs from PyTorch's at a single point: `sqrt` at 0 has an infinite derivative,
 * so the composed gradient of `std` and of the 2-norm would be 0·∞ = NaN for a constant (or
 * zero) input, where PyTorch defines it as 0. Those two are recorded ops with written rules.
 */
import { isFloating, scalarName } from '../dtype.js';
import { op as recorded, withGradMode } from '../autograd/graph.js';
import { sameDevice } from '../runtime/dispatch.js';
import { fmt, normDim } from '../shape.js';
import { Tensor } from '../tensor.js';
import { ReduceOp } from '../ir/ops.js';
import { binaryOp, unaryOp, where } from './elementwise.js';
import { checkOptions } from '../args.js';
import { reduce, type Dims } from './reduce.js';
import { tidy } from './scoped.js';
import * as V from './views.js';
import { autocastCall, autocasting } from '../amp/autocast.js';

/** Options of `var` and `std`. */
export interface VarOptions {
  /** Divides by `N - correction` (default 1, Bessel's correction). */
  correction?: number;
  /** The legacy flag: `unbiased: false` is `correction: 0`. */
  unbiased?: boolean;
  keepdim?: boolean;
}

function dimList(x: Tensor, dims: Dims): number[] {
  // an empty list reduces over every dim, as in PyTorch 1.x
  if (dims === undefined || (Array.isArray(dims) && dims.length === 0)) return x.shape.map((_, i) => i);
  return (Array.isArray(dims) ? dims : [dims]).map((d) => normDim(d, x.ndim));
}

/** The input's shape with the reduced dims set to 1. */
const kept = (x: Tensor, dims: number[]) => x.shape.map((s, i) => (dims.includes(i) ? 1 : s));

function checkStat(op: string, x: Tensor): void {
  if (!(x instanceof Tensor)) throw new TypeError(`${op}(): expected input to be a Tensor, but got ${typeof x}`);
  sameDevice(op, [x]);
  if (!isFloating(x.dtype)) throw new TypeError(`std and var only support floating point and complex dtypes (${op} of ${x.dtype} tensor of shape ${fmt(x.shape)})`);
}

function divisor(op: string, x: Tensor, dims: number[], o: VarOptions): number {
  checkOptions(op, o, ['correction', 'unbiased', 'keepdim']);
  const correction = o.correction ?? (o.unbiased === false ? 0 : 1);
  const n = dims.reduce((a, d) => a * (x.shape[d] ?? 1), 1);
  return Math.max(0, n - correction);
}

/** Σ(x - mean)² over `dims`. */
const squaredDeviations = (x: Tensor, dims: number[], keepdim: boolean): Tensor =>
  reduce(ReduceOp.Sum, unaryOp('square', binaryOp('sub', x, reduce(ReduceOp.Mean, x, dims, true))), dims, keepdim);

/** `torch.var(x, dim?, {correction, keepdim})`: Σ(x - mean)² / (N - correction). */
export function variance(x: Tensor, dim?: Dims, o: VarOptions = {}): Tensor {
  checkStat('var', x);
  const dims = dimList(x, dim);
  return tidy(() => binaryOp('div', squaredDeviations(x, dims, !!o.keepdim), divisor('var', x, dims, o)));
}

/** `torch.std(x, dim?, {correction, keepdim})`: the square root of `var`; its gradient is 0 where std is 0. */
export function std(x: Tensor, dim?: Dims, o: VarOptions = {}): Tensor {
  checkStat('std', x);
  const dims = dimList(x, dim), n = divisor('std', x, dims, o);
  return recorded('std', [x], () => tidy(() => unaryOp('sqrt', variance(x, dim, o))), (ctx, out) => {
    const sx = ctx.save(x), so = ctx.save(out);
    return ([g]) => {
      const s = V.reshape(so, kept(x, dims)), gk = V.reshape(g!, kept(x, dims));
      const gvar = where(binaryOp('eq', s, 0), 0, binaryOp('div', gk, binaryOp('mul', s, 2 * n)));
      const xc = binaryOp('sub', sx, reduce(ReduceOp.Mean, sx, dims, true));
      return [binaryOp('mul', binaryOp('mul', xc, 2), gvar)];
    };
  });
}

/** `torch.logsumexp(x, dim, keepdim)`: `log(Σ exp(x))`, computed around the max (infinite maxima taken as 0). */
export function logsumexp(x: Tensor, dim: Dims, keepdim = false): Tensor {
  if (autocasting()) return autocastCall('logsumexp', [x, dim, keepdim], logsumexp);
  if (!(x instanceof Tensor)) throw new TypeError(`logsumexp(): expected input to be a Tensor, but got ${typeof x}`);
  if (dim === undefined) throw new TypeError('logsumexp(): the dim argument is required');
  sameDevice('logsumexp', [x]);
  const dims = dimList(x, dim);
  return tidy(() => {
    const src = isFloating(x.dtype) ? x : V.cast(x, 'float32');
    const m = withGradMode(false, () => tidy(() => {
      const raw = reduce(ReduceOp.Max, src, dims, true);
      return where(binaryOp('eq', unaryOp('abs', raw), Infinity), 0, raw);
    }));
    const s = reduce(ReduceOp.Sum, unaryOp('exp', binaryOp('sub', src, m)), dims, keepdim);
    const mk = keepdim ? m : V.reshape(m, x.shape.filter((_, i) => !dims.includes(i)));
    return binaryOp('add', unaryOp('log', s), mk);
  });
}

/** Which norms `norm` computes. */
export type NormOrd = 'fro' | 1 | 2 | number;

/**
 * `torch.norm(x, p, dim?, keepdim)`: the vector norm over `dim` (all elements by default):
 * `p = 2` or `'fro'` (its gradient is 0 where the norm is 0), `p = 1`, and `p = Infinity`.
 */
export function norm(x: Tensor, p: NormOrd = 'fro', dim?: Dims, keepdim = false): Tensor {
  if (autocasting()) return autocastCall('norm', [x, p, dim, keepdim], norm);
  if (!(x instanceof Tensor)) throw new TypeError(`norm(): expected input to be a Tensor, but got ${typeof x}`);
  sameDevice('norm', [x]);
  if (!isFloating(x.dtype)) throw new TypeError(`linalg.vector_norm: Expected a floating point or complex tensor as input. Got ${scalarName(x.dtype)}`);
  if (p !== 'fro' && p !== 1 && p !== 2 && p !== Infinity) {
    throw new RangeError(`norm(): p=${String(p)} is not supported; supported: 'fro', 1, 2, Infinity`);
  }
  const dims = dimList(x, dim);
  if (p === 'fro' && dim !== undefined && dims.length > 2) throw new RangeError(`norm(): 'fro' expects at most 2 dims, but got dim=${fmt(dims)}`);
  if (p === 1) return tidy(() => reduce(ReduceOp.Sum, unaryOp('abs', x), dims, keepdim));
  if (p === Infinity) return tidy(() => reduce(ReduceOp.Max, unaryOp('abs', x), dims, keepdim));
  return recorded('norm', [x], () => tidy(() => unaryOp('sqrt', reduce(ReduceOp.SumSq, x, dims, keepdim))), (ctx, out) => {
    const sx = ctx.save(x), so = ctx.save(out);
    return ([g]) => {
      const n = V.reshape(so, kept(x, dims)), gk = V.reshape(g!, kept(x, dims));
      return [binaryOp('mul', sx, where(binaryOp('eq', n, 0), 0, binaryOp('div', gk, n)))];
    };
  });
}
