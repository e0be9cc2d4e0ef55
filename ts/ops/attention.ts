/**
 * `F.scaledDotProductAttention`, composed: `softmax(q·kᵀ·scale + bias)·v`, where the bias comes
 * from the mask (a bool mask says which positions *take part*: the others get -inf; a float mask
 * is added) or, with `isCausal`, from the lower triangle. Autograd derives the gradient from the
 * composed ops (matmul, where, softmax, dropout).
 */
import { isFloating } from '../dtype.js';
import { sameDevice } from '../runtime/dispatch.js';
import { fmt } from '../shape.js';
import { Tensor } from '../tensor.js';
import { arange } from './creation.js';
import { binaryOp, where } from './elementwise.js';
import { matmul } from './matmul.js';
import { dropout, softmax } from './nn.js';
import { bindArgs, type PyArgs } from '../args.js';
import { tidy } from './scoped.js';
import * as V from './views.js';

/** Options of `F.scaledDotProductAttention` after (query, key, value). */
export interface SdpaOptions {
  attnMask?: Tensor | null;
  dropoutP?: number;
  isCausal?: boolean;
  scale?: number | null;
}
/** The positional parameters; `scale` is keyword-only, as in PyTorch. */
type SdpaPositional = [attnMask: Tensor | null, dropoutP: number, isCausal: boolean];

/** Whether shape `a` broadcasts to exactly `to` (trailing-aligned, each dim 1 or equal, no more dims). */
export const broadcastsTo = (a: readonly number[], to: readonly number[]): boolean =>
  a.length <= to.length && a.every((s, i) => s === 1 || s === to[to.length - a.length + i]);

/** The bool mask `[L, S]` of the causal (lower-triangular) attention on `device`. */
export function causalMask(L: number, S: number, device: Tensor['device']): Tensor {
  return tidy(() => {
    const opts = { device, dtype: 'int64' as const };
    return binaryOp('le', arange(S, opts), V.reshape(arange(L, opts), [L, 1]));
  });
}

/**
 * `F.scaled_dot_product_attention(query, key, value, attnMask = null, dropoutP = 0, isCausal = false, {scale})`:
 * query `[..., L, E]`, key `[..., S, E]`, value `[..., S, Ev]` give `[..., L, Ev]`. A bool
 * `attnMask` is true where a query may attend to a key; a float one is added to the scores; either
 * broadcasts to `[..., L, S]`. `scale` defaults to `1/√E`. Dropout applies whenever `dropoutP > 0`,
 * as PyTorch's (pass `training ? p : 0`).
 */
export function scaledDotProductAttention(query: Tensor, key: Tensor, value: Tensor, ...args: PyArgs<SdpaPositional, SdpaOptions>): Tensor {
  const op = 'scaled_dot_product_attention';
  const o = bindArgs(op, ['attnMask', 'dropoutP', 'isCausal', 'scale'], args, { attnMask: null, dropoutP: 0, isCausal: false, scale: null } as SdpaOptions, 3, 3);
  for (const [name, t] of [['query', query], ['key', key], ['value', value]] as const) {
    if (!(t instanceof Tensor)) throw new TypeError(`${op}(): expected ${name} to be a Tensor, but got ${t === null ? 'null' : typeof t}`);
    if (t.ndim < 2) throw new RangeError(`${op}(): expected ${name} to have at least 2 dims, but got shape ${fmt(t.shape)}`);
  }
  if (query.dtype !== key.dtype || query.dtype !== value.dtype) {
    throw new TypeError(`Expected query, key, and value to have the same dtype, but got query.dtype: ${query.dtype} key.dtype: ${key.dtype} and value.dtype: ${value.dtype} instead. (${op})`);
  }
  if (!isFloating(query.dtype)) throw new TypeError(`${op}(): expected query, key and value of a floating point dtype, but got ${query.dtype}`);
  const mask = o.attnMask ?? null;
  sameDevice(op, mask ? [query, key, value, mask] : [query, key, value]);
  const E = query.shape[query.ndim - 1], L = query.shape[query.ndim - 2], S = key.shape[key.ndim - 2];
  if (key.shape[key.ndim - 1] !== E || value.shape[value.ndim - 2] !== S) {
    throw new RangeError(`${op}(): expected key [..., S, E] and value [..., S, Ev] to match query [..., L, E], but got query ${fmt(query.shape)}, key ${fmt(key.shape)}, value ${fmt(value.shape)}`);
  }
  if (o.isCausal && mask) throw new TypeError(`${op}(): Explicit attn_mask should not be set when is_causal=True`);
  const p = o.dropoutP ?? 0;
  if (!(p >= 0 && p <= 1)) throw new RangeError(`dropout probability has to be between 0 and 1, but got ${p} (${op})`);
  if (mask) {
    if (!(mask instanceof Tensor)) throw new TypeError(`${op}(): expected attn_mask to be a Tensor, but got ${typeof mask}`);
    if (mask.dtype !== 'bool' && mask.dtype !== query.dtype) {
      throw new TypeError(`${op}(): Expected attn_mask dtype to be bool or to match query dtype, but got attn_mask.dtype: ${mask.dtype} and query.dtype: ${query.dtype} instead.`);
    }
    const lead = query.shape.slice(0, -2);
    const scores = [...lead, L, S];
    if (!broadcastsTo(mask.shape, scores)) {
      throw new RangeError(`${op}(): attn_mask of shape ${fmt(mask.shape)} cannot be broadcast to the attention weights' shape ${fmt(scores)} (query ${fmt(query.shape)}, key ${fmt(key.shape)})`);
    }
  }
  const scale = o.scale ?? 1 / Math.sqrt(E);
  return tidy(() => {
    let s = binaryOp('mul', matmul(query, V.transpose(key, -2, -1)), scale);
    const keep = o.isCausal ? causalMask(L, S, query.device) : mask && mask.dtype === 'bool' ? mask : null;
    if (keep) s = where(keep, s, -Infinity);
    else if (mask) s = binaryOp('add', s, mask);
    let w = softmax(s, -1);
    if (p > 0) w = dropout(w, p, true);
    return matmul(w, value);
  });
}
