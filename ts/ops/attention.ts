/**
 * `F.scaledDotProductAttention`: `softmax(q·kᵀ·scale + bias)·v`, where the bias comes from the
 * mask (a bool mask says which positions *take part*: the others get -inf; a float mask is added)
 * or, with `isCausal`, from the lower triangle.
 *
 * Float32 attention without dropout runs fused (the `attention` command, forward, and
 * `attentionGrad`, its gradient rule beside it here): tiled with the online softmax, it keeps
 * only the output and each row's logsumexp for the backward, never the [L, S] scores (Note
 * [fused attention] in ts/worker/gpu/attention.ts; the cpu's kernel is
 * assembly/kernels/attention.ts). Every other case is composed from matmul, where, softmax and
 * dropout, whose gradients autograd derives: 16-bit inputs, dropout, batch dims that differ
 * between q, k and v, head dims over 128, a float mask that requires grad, autocast.
 */
import { isFloating } from '../dtype.js';
import { needsGrad, op as recorded } from '../autograd/graph.js';
import { autocasting } from '../amp/autocast.js';
import type { AttentionGeom } from '../ir/commands.js';
import { alloc, emit, place, ref, sameDevice } from '../runtime/dispatch.js';
import { fmt, numel } from '../shape.js';
import { Tensor, view } from '../tensor.js';
import { arange } from './creation.js';
import { binaryOp, where } from './elementwise.js';
import { reduce } from './reduce.js';
import { ReduceOp } from '../ir/ops.js';
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
  if (fusable(query, key, value, mask, p)) return tidy(() => fusedAttention(query, key, value, mask, !!o.isCausal, scale));
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

/** Head dims the fused kernels take (their accumulators live in registers). */
const MAX_HEAD_DIM = 128;
/** Lead dims the fused kernels' mask addressing takes. */
const MAX_LEAD_DIMS = 8;

/**
 * Whether the fused kernels take this call: float32, no dropout, q, k and v with the same batch
 * dims, head dims 1..128, no empty dim, a mask (bool or float) that does not require grad, and
 * no autocast (whose matmuls would run in 16 bits, as the composed path does).
 */
function fusable(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | null, p: number): boolean {
  if (q.dtype !== 'float32' || p > 0 || autocasting()) return false;
  if (q.ndim !== k.ndim || q.ndim !== v.ndim || q.ndim - 2 > MAX_LEAD_DIMS) return false;
  for (let d = 0; d < q.ndim - 2; d++) if (q.shape[d] !== k.shape[d] || q.shape[d] !== v.shape[d]) return false;
  const E = q.shape[q.ndim - 1], Ev = v.shape[v.ndim - 1];
  if (E > MAX_HEAD_DIM || Ev > MAX_HEAD_DIM || q.numel() === 0 || k.numel() === 0 || v.numel() === 0) return false;
  return !mask || !needsGrad(mask);
}

/**
 * `t` as the kernels read it: any strides over its lead dims and rows, its last dim contiguous
 * (else a contiguous copy). So q, k and v split from one projection and transposed to
 * [B, H, T, D] are read in place.
 */
const readable = (t: Tensor): Tensor => (t.shape[t.ndim - 1] === 1 || t._strides[t.ndim - 1] === 1 ? t : V.contiguous(t));

/**
 * A fresh f32 tensor of `shape` laid out in memory as `like` is (its dims in the order of their
 * strides, the last innermost) over a dense block of its own, as PyTorch's flash attention lays
 * out its output like q and its gradients like q, k and v: for q a transposed view of
 * [B, T, H, D] memory, a [B, T, H, D] block seen as [B, H, T, D], so the gradient goes back
 * through the transpose, view and split that made q without a copy.
 */
function allocLike(like: Tensor, shape: readonly number[]): Tensor {
  const n = shape.length;
  const order = [...Array(n - 1).keys()].sort((a, b) => like._strides[b] - like._strides[a] || a - b);
  order.push(n - 1);
  const strides = new Array<number>(n);
  let size = 1;
  for (let k = n - 1; k >= 0; k--) {
    strides[order[k]] = size;
    size *= shape[order[k]];
  }
  const block = alloc(shape, 'float32', like.device);
  const out = view(block, shape, strides);
  block.dispose();
  return out;
}

/**
 * The fused forward (one `attention` command) recorded with its gradient rule (one
 * `attentionGrad` command; composed when the gradient is itself differentiated). Call inside a
 * tidy: the copies of inputs whose last dim is not contiguous and the mask's bias are intermediates.
 */
function fusedAttention(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | null, causal: boolean, scale: number): Tensor {
  const lead = query.shape.slice(0, -2);
  const [L, E] = query.shape.slice(-2), S = key.shape[key.ndim - 2], Ev = value.shape[value.ndim - 1];
  const q = readable(query), k = readable(key), v = readable(value);
  // the mask as an f32 bias read in place through broadcast strides (a bool mask: 0 where it takes part, -inf elsewhere)
  const bias = mask ? (mask.dtype === 'bool' ? where(mask, 0, -Infinity) : mask) : null;
  const device = query.device;
  const geom = (q: Tensor, k: Tensor, v: Tensor, bias: Tensor | null): AttentionGeom => ({
    q: ref(q), key: ref(k), v: ref(v), lead, bh: numel(lead), L, S, E, Ev, scale, causal,
    mask: bias && { at: ref(V.expand(bias, [...lead, L, S])), bool: mask!.dtype === 'bool' },
  });
  const grad = needsGrad(q, k, v);
  let lse: Tensor | null = null;
  return recorded('scaled_dot_product_attention', [q, k, v], () => {
    const out = allocLike(q, [...lead, L, Ev]);
    if (grad) lse = alloc([...lead, L], 'float32', device);
    emit(device, { k: 'attention', out: ref(out), lse: lse && place(lse), ...geom(q, k, v, bias) });
    return out;
  }, (ctx, out) => {
    const qs = ctx.save(q), ks = ctx.save(k), vs = ctx.save(v), os = ctx.save(out), ls = ctx.save(lse!), bs = bias && ctx.save(bias);
    return ([g]) => {
      if (needsGrad(g)) return composedGrad(qs, ks, vs, bs, mask?.dtype === 'bool', causal, scale, g!);
      const gc = tidy(() => readable(g!));
      const dq = allocLike(qs, qs.shape), dk = allocLike(ks, ks.shape), dv = allocLike(vs, vs.shape);
      emit(device, { k: 'attentionGrad', o: ref(os), g: ref(gc), lse: place(ls), dq: ref(dq), dk: ref(dk), dv: ref(dv), ...geom(qs, ks, vs, bs) });
      if (gc !== g) gc.dispose();
      return [dq, dk, dv];
    };
  });
}

/**
 * The fused gradient from differentiable ops (for `createGraph`), the probabilities recomputed:
 * dV = Pᵀ·g, dS = P·(dP − Σ dP·P) with dP = g·vᵀ (none where a bool or causal mask hides the
 * score, as `where` gives), dQ = scale·dS·k, dK = scale·dSᵀ·q.
 */
function composedGrad(q: Tensor, k: Tensor, v: Tensor, bias: Tensor | null, bool: boolean, causal: boolean, scale: number, g: Tensor): Tensor[] {
  return tidy(() => {
    const L = q.shape[q.ndim - 2], S = k.shape[k.ndim - 2];
    let s = binaryOp('mul', matmul(q, V.transpose(k, -2, -1)), scale);
    const keep = causal ? causalMask(L, S, q.device) : bias && bool ? binaryOp('eq', bias, 0) : null;
    if (keep) s = where(keep, s, -Infinity);
    else if (bias) s = binaryOp('add', s, bias);
    const w = softmax(s, -1);
    const dv = matmul(V.transpose(w, -2, -1), g);
    const dp = matmul(g, V.transpose(v, -2, -1));
    let ds = binaryOp('mul', w, binaryOp('sub', dp, reduce(ReduceOp.Sum, binaryOp('mul', dp, w), -1, true)));
    if (keep) ds = where(keep, ds, 0);
    return [binaryOp('mul', matmul(ds, k), scale), binaryOp('mul', matmul(V.transpose(ds, -2, -1), q), scale), dv];
  });
}
