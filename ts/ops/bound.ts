/**
 * The `torch.*` functions whose implementations take plain positional parameters, bound to
 * PyTorch's signatures so that they also take keywords as a trailing options object
 * (`torch.cat(ts, {dim: 1})`, `torch.topk(x, 3, {largest: false})`, `torch.clamp(x, {min: 0})`)
 * and refuse an unknown keyword or a stray argument. Each lists the implementation's parameters
 * in order, with PyTorch's names (camelCase) and defaults.
 */
import { flip as flipImpl, indexPut_ as indexPutImpl } from './advanced.js';
import { clamp as clampImpl } from './elementwise.js';
import * as I from './indexing.js';
import { bindArgs, REQUIRED } from '../args.js';
import * as S from './shape.js';
import * as St from './stats.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Fn = (...args: any[]) => any;

/** `impl` called with the bound values of `params` in order; the result keeps `impl`'s type and also takes an options object. */
function bind<F extends Fn>(op: string, params: readonly string[], defaults: Record<string, unknown>, impl: F): F & ((...args: unknown[]) => ReturnType<F>) {
  return function (...args: unknown[]) {
    const a = bindArgs(op, params, args, defaults) as Record<string, unknown>;
    return impl(...params.map((k) => a[k]));
  } as F & ((...args: unknown[]) => ReturnType<F>);
}

const R = REQUIRED;
export const cat = bind('cat', ['tensors', 'dim'], { tensors: R, dim: 0 }, S.cat);
export const stack = bind('stack', ['tensors', 'dim'], { tensors: R, dim: 0 }, S.stack);
export const split = bind('split', ['tensor', 'splitSizeOrSections', 'dim'], { tensor: R, splitSizeOrSections: R, dim: 0 }, S.split);
export const chunk = bind('chunk', ['input', 'chunks', 'dim'], { input: R, chunks: R, dim: 0 }, S.chunk);
export const roll = bind('roll', ['input', 'shifts', 'dims'], { input: R, shifts: R, dims: undefined }, S.roll);
export const tril = bind('tril', ['input', 'diagonal'], { input: R, diagonal: 0 }, S.tril);
export const triu = bind('triu', ['input', 'diagonal'], { input: R, diagonal: 0 }, S.triu);
export const flip = bind('flip', ['input', 'dims'], { input: R, dims: R }, flipImpl);
export const logsumexp = bind('logsumexp', ['input', 'dim', 'keepdim'], { input: R, dim: R, keepdim: false }, St.logsumexp);
export const norm = bind('norm', ['input', 'p', 'dim', 'keepdim'], { input: R, p: 'fro', dim: undefined, keepdim: false }, St.norm);
export const cumsum = bind('cumsum', ['input', 'dim'], { input: R, dim: R }, I.cumsum);
export const cumprod = bind('cumprod', ['input', 'dim'], { input: R, dim: R }, I.cumprod);
export const gather = bind('gather', ['input', 'dim', 'index'], { input: R, dim: R, index: R }, I.gather);
export const scatter = bind('scatter', ['input', 'dim', 'index', 'src'], { input: R, dim: R, index: R, src: R }, I.scatter);
export const scatterAdd = bind('scatter_add', ['input', 'dim', 'index', 'src'], { input: R, dim: R, index: R, src: R }, I.scatterAdd);
export const indexSelect = bind('index_select', ['input', 'dim', 'index'], { input: R, dim: R, index: R }, I.indexSelect);
export const take = bind('take', ['input', 'index'], { input: R, index: R }, I.take);
export const maskedFill = bind('masked_fill', ['input', 'mask', 'value'], { input: R, mask: R, value: R }, I.maskedFill);
/** `torch.sort(input, dim = -1, descending = false, {stable})`: webtorch's sort is always stable. */
export const sort = bind('sort', ['input', 'dim', 'descending', 'stable'], { input: R, dim: -1, descending: false, stable: false }, I.sort);
export const topk = bind('topk', ['input', 'k', 'dim', 'largest', 'sorted'], { input: R, k: R, dim: -1, largest: true, sorted: true }, I.topk);
export const clamp = bind('clamp', ['input', 'min', 'max'], { input: R, min: null, max: null }, clampImpl);
export const indexPut_ = bind('index_put_', ['input', 'indices', 'values', 'accumulate'], { input: R, indices: R, values: R, accumulate: false }, indexPutImpl);
