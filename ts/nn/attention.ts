/**
 * Attention layers: `nn.MultiheadAttention`, `nn.TransformerEncoderLayer` and
 * `nn.TransformerEncoder`, composed from linear, matmul, softmax and layer norm, with PyTorch's
 * parameter names (`in_proj_weight`, `out_proj.weight`, `self_attn.…`, `layers.0.…`) so that
 * state dicts load both ways.
 *
 * MultiheadAttention follows `F.multi_head_attention_forward`: a bool `attnMask` or
 * `keyPaddingMask` is true where attention is *not* allowed (the opposite of
 * `F.scaledDotProductAttention`'s bool mask), a float one is added to the scores.
 */
import { defaultGenerator } from '../random.js';
import { CPU } from '../device.js';
import { fromHost, zeros } from '../ops/creation.js';
import { binaryOp, gelu, unaryOp, where } from '../ops/elementwise.js';
import { matmul } from '../ops/matmul.js';
import { dropout, linear, softmax } from '../ops/nn.js';
import { bindArgs, type PyArgs } from '../args.js';
import { reduce } from '../ops/reduce.js';
import { tidy } from '../ops/scoped.js';
import * as V from '../ops/views.js';
import { ReduceOp } from '../ir/ops.js';
import { fmt } from '../shape.js';
import { Tensor } from '../tensor.js';
import { Linear, ModuleList } from './layers.js';
import { Module, Parameter, type FactoryOptions } from './module.js';
import { Dropout, LayerNorm } from './spatial.js';

/** A parameter of `shape` drawn from Xavier's uniform distribution (`nn.init.xavier_uniform_`). */
function xavierUniform(shape: [number, number]): Parameter {
  const [fanOut, fanIn] = shape;
  const bound = Math.sqrt(6 / (fanIn + fanOut));
  const u = defaultGenerator.uniform(fanOut * fanIn);
  for (let i = 0; i < u.length; i++) u[i] = (u[i] * 2 - 1) * bound;
  const t = fromHost(u, shape, 'float32', CPU);
  const p = Parameter.of(t);
  t.dispose();
  return p;
}

const zerosParameter = (n: number): Parameter => {
  const t = zeros([n]);
  const p = Parameter.of(t);
  t.dispose();
  return p;
};

/** Options of `nn.MultiheadAttention` after (embedDim, numHeads). */
export interface MultiheadAttentionOptions extends FactoryOptions {
  dropout?: number; bias?: boolean; addBiasKv?: boolean; addZeroAttn?: boolean; kdim?: number | null; vdim?: number | null; batchFirst?: boolean;
}
type MhaPositional = [dropout: number, bias: boolean, addBiasKv: boolean, addZeroAttn: boolean, kdim: number | null, vdim: number | null,
  batchFirst: boolean, device: FactoryOptions['device'], dtype: FactoryOptions['dtype']];

/** Options of `MultiheadAttention.forward` after (query, key, value). */
export interface MhaForwardOptions {
  keyPaddingMask?: Tensor | null; needWeights?: boolean; attnMask?: Tensor | null; averageAttnWeights?: boolean; isCausal?: boolean;
}
type MhaForwardPositional = [keyPaddingMask: Tensor | null, needWeights: boolean, attnMask: Tensor | null, averageAttnWeights: boolean, isCausal: boolean];

/** A mask as an additive float bias: bool true becomes -inf (not allowed), a float mask stays as it is. */
function asBias(op: string, name: string, m: Tensor, dtype: Tensor['dtype']): Tensor {
  if (m.dtype === 'bool') return where(m, -Infinity, zeros([], { dtype, device: m.device }));
  if (m.dtype !== dtype) throw new TypeError(`${op}(): only bool and floating types of ${name} are supported, and a float ${name} must match the query's dtype (${dtype}), but got ${m.dtype}`);
  return m;
}

/**
 * `nn.MultiheadAttention(embedDim, numHeads, dropout = 0, bias = true, addBiasKv = false,
 * addZeroAttn = false, kdim = null, vdim = null, batchFirst = false)`. `forward(query, key, value,
 * {keyPaddingMask, needWeights, attnMask, averageAttnWeights})` returns `[output, weights]`, the
 * weights averaged over heads (`[N, L, S]`) unless `averageAttnWeights` is false (`[N, H, L, S]`),
 * null when `needWeights` is false.
 */
export class MultiheadAttention extends Module {
  readonly embedDim: number;
  readonly numHeads: number;
  readonly dropout: number;
  readonly batchFirst: boolean;
  readonly kdim: number;
  readonly vdim: number;
  readonly headDim: number;
  /** Whether key and value have embedDim features (one packed `in_proj_weight`). */
  readonly qkvSameEmbedDim: boolean;
  declare in_proj_weight: Parameter | null;
  declare q_proj_weight: Parameter | null;
  declare k_proj_weight: Parameter | null;
  declare v_proj_weight: Parameter | null;
  declare in_proj_bias: Parameter | null;
  declare out_proj: Linear;

  constructor(embedDim: number, numHeads: number, ...args: PyArgs<MhaPositional, MultiheadAttentionOptions>) {
    super();
    const o = bindArgs('MultiheadAttention', ['dropout', 'bias', 'addBiasKv', 'addZeroAttn', 'kdim', 'vdim', 'batchFirst', 'device', 'dtype'], args,
      { dropout: 0, bias: true, addBiasKv: false, addZeroAttn: false, kdim: null, vdim: null, batchFirst: false } as MultiheadAttentionOptions, 2);
    if (!Number.isInteger(embedDim) || embedDim <= 0 || !Number.isInteger(numHeads) || numHeads <= 0) {
      throw new RangeError(`embed_dim and num_heads must be greater than 0, got embed_dim=${embedDim} and num_heads=${numHeads}`);
    }
    if (embedDim % numHeads !== 0) throw new RangeError(`embed_dim must be divisible by num_heads (embed_dim=${embedDim}, num_heads=${numHeads})`);
    if (o.addBiasKv || o.addZeroAttn) throw new TypeError('MultiheadAttention: addBiasKv and addZeroAttn are not supported');
    this.embedDim = embedDim;
    this.numHeads = numHeads;
    this.dropout = o.dropout!;
    this.batchFirst = !!o.batchFirst;
    this.kdim = o.kdim ?? embedDim;
    this.vdim = o.vdim ?? embedDim;
    this.headDim = embedDim / numHeads;
    this.qkvSameEmbedDim = this.kdim === embedDim && this.vdim === embedDim;
    if (this.qkvSameEmbedDim) {
      this.registerParameter('in_proj_weight', xavierUniform([3 * embedDim, embedDim]));
      this.registerParameter('q_proj_weight', null);
      this.registerParameter('k_proj_weight', null);
      this.registerParameter('v_proj_weight', null);
    } else {
      this.registerParameter('in_proj_weight', null);
      this.registerParameter('q_proj_weight', xavierUniform([embedDim, embedDim]));
      this.registerParameter('k_proj_weight', xavierUniform([embedDim, this.kdim]));
      this.registerParameter('v_proj_weight', xavierUniform([embedDim, this.vdim]));
    }
    this.registerParameter('in_proj_bias', o.bias ? zerosParameter(3 * embedDim) : null);
    const out = new Linear(embedDim, embedDim, { bias: !!o.bias });
    if (out.bias) {
      out.bias.dispose();
      out.registerParameter('bias', zerosParameter(embedDim));
    }
    this.registerModule('out_proj', out);
    this.place(o);
  }

  /** The projections' weights and biases of q, k and v (views of the packed ones when packed). */
  private projections(): [Tensor, Tensor | null][] {
    const E = this.embedDim, b = this.in_proj_bias;
    const bias = (i: number) => (b ? V.narrow(b, 0, i * E, E) : null);
    if (this.in_proj_weight) return [0, 1, 2].map((i) => [V.narrow(this.in_proj_weight!, 0, i * E, E), bias(i)]);
    return [this.q_proj_weight!, this.k_proj_weight!, this.v_proj_weight!].map((w, i) => [w, bias(i)]);
  }

  forward(query: Tensor, key: Tensor, value: Tensor, ...args: PyArgs<MhaForwardPositional, MhaForwardOptions>): [Tensor, Tensor | null] {
    const op = 'MultiheadAttention.forward';
    const o = bindArgs(op, ['keyPaddingMask', 'needWeights', 'attnMask', 'averageAttnWeights', 'isCausal'], args,
      { keyPaddingMask: null, needWeights: true, attnMask: null, averageAttnWeights: true, isCausal: false } as MhaForwardOptions, 3);
    if (o.isCausal && !o.attnMask) throw new TypeError('Need attn_mask if specifying the is_causal hint. You may use the Transformer module method `generate_square_subsequent_mask` to create this mask.');
    for (const [name, t] of [['query', query], ['key', key], ['value', value]] as const) {
      if (!(t instanceof Tensor)) throw new TypeError(`${op}(): expected ${name} to be a Tensor, but got ${t === null ? 'null' : typeof t}`);
    }
    const batched = query.ndim === 3;
    if (!batched && query.ndim !== 2) throw new RangeError(`query should be unbatched 2D or batched 3D tensor but received ${query.ndim}-D query tensor`);
    if (key.ndim !== query.ndim || value.ndim !== query.ndim) {
      throw new RangeError(`For ${batched ? 'batched (3-D)' : 'unbatched (2-D)'} \`query\`, expected \`key\` and \`value\` to be ${query.ndim}-D but found ${key.ndim}-D and ${value.ndim}-D tensors respectively`);
    }
    return tidy(() => {
      // to [N, L, E]
      const toNLE = (t: Tensor) => (!batched ? V.unsqueeze(t, 0) : this.batchFirst ? t : V.transpose(t, 0, 1));
      const q0 = toNLE(query), k0 = toNLE(key), v0 = toNLE(value);
      const [N, L, E] = q0.shape, S = k0.shape[1];
      if (E !== this.embedDim) throw new RangeError(`was expecting embedding dimension of ${this.embedDim}, but got ${E} (query ${fmt(query.shape)})`);
      if (k0.shape[0] !== N || v0.shape[0] !== N || v0.shape[1] !== S) {
        throw new RangeError(`key shape ${fmt(key.shape)} does not match value shape ${fmt(value.shape)}, or their batch does not match query ${fmt(query.shape)}`);
      }
      if (k0.shape[2] !== this.kdim || v0.shape[2] !== this.vdim) {
        throw new RangeError(`MultiheadAttention: expected key with ${this.kdim} and value with ${this.vdim} features, but got key ${fmt(key.shape)} and value ${fmt(value.shape)}`);
      }
      const H = this.numHeads, hd = this.headDim;
      const [[wq, bq], [wk, bk], [wv, bv]] = this.projections();
      const heads = (t: Tensor, len: number) => V.transpose(V.reshape(t, [N, len, H, hd]), 1, 2); // [N, H, len, hd]
      const q = heads(binaryOp('mul', linear(q0, wq, bq), 1 / Math.sqrt(hd)), L);
      const k = heads(linear(k0, wk, bk), S), v = heads(linear(v0, wv, bv), S);
      let scores = matmul(q, V.transpose(k, -2, -1)); // [N, H, L, S]
      if (o.attnMask) {
        const m = o.attnMask;
        let bias = asBias(op, 'attn_mask', m, query.dtype);
        if (m.ndim === 2) {
          if (m.shape[0] !== L || m.shape[1] !== S) throw new RangeError(`The shape of the 2D attn_mask is ${fmt(m.shape)}, but should be ${fmt([L, S])}.`);
        } else if (m.ndim === 3) {
          if (m.shape[0] !== N * H || m.shape[1] !== L || m.shape[2] !== S) throw new RangeError(`The shape of the 3D attn_mask is ${fmt(m.shape)}, but should be ${fmt([N * H, L, S])}.`);
          bias = V.reshape(bias, [N, H, L, S]);
        } else throw new RangeError(`attn_mask's dimension ${m.ndim} is not supported`);
        scores = binaryOp('add', scores, bias);
      }
      if (o.keyPaddingMask) {
        const m = o.keyPaddingMask;
        const want = batched ? [N, S] : [S];
        if (m.shape.join() !== want.join()) throw new RangeError(`expecting key_padding_mask shape of ${fmt(want)}, but got ${fmt(m.shape)}`);
        scores = binaryOp('add', scores, V.reshape(asBias(op, 'key_padding_mask', m, query.dtype), [N, 1, 1, S]));
      }
      let w = softmax(scores, -1);
      if (this.training && this.dropout > 0) w = dropout(w, this.dropout, true);
      const ctx = V.reshape(V.transpose(matmul(w, v), 1, 2), [N, L, E]); // [N, L, E]
      const y = this.out_proj(ctx) as Tensor;
      const out = !batched ? V.squeeze(y, 0) : this.batchFirst ? y : V.transpose(y, 0, 1);
      if (!o.needWeights) return [out, null];
      let weights = o.averageAttnWeights ? reduce(ReduceOp.Mean, w, 1) : w;
      if (!batched) weights = V.squeeze(weights, 0);
      return [out, weights];
    });
  }
}

/** Options of `nn.TransformerEncoderLayer` after (dModel, nhead). */
export interface TransformerEncoderLayerOptions extends FactoryOptions {
  dimFeedforward?: number; dropout?: number; activation?: 'relu' | 'gelu' | ((x: Tensor) => Tensor);
  layerNormEps?: number; batchFirst?: boolean; normFirst?: boolean; bias?: boolean;
}
/** The layers' positional parameters after (dModel, nhead) (the decoder layer's too). */
export type EncoderLayerPositional = [dimFeedforward: number, dropout: number, activation: 'relu' | 'gelu' | ((x: Tensor) => Tensor),
  layerNormEps: number, batchFirst: boolean, normFirst: boolean, bias: boolean, device: FactoryOptions['device'], dtype: FactoryOptions['dtype']];
/** Their names. */
export const ENCODER_LAYER_PARAMS = ['dimFeedforward', 'dropout', 'activation', 'layerNormEps', 'batchFirst', 'normFirst', 'bias', 'device', 'dtype'] as const;

/** Binds a transformer layer's arguments after (dModel, nhead), with PyTorch's defaults (the encoder's and the decoder's are the same). */
export function layerOptions(name: string, args: readonly unknown[]): TransformerEncoderLayerOptions {
  return bindArgs(name, [...ENCODER_LAYER_PARAMS], args,
    { dimFeedforward: 2048, dropout: 0.1, activation: 'relu', layerNormEps: 1e-5, batchFirst: false, normFirst: false, bias: true } as TransformerEncoderLayerOptions, 2);
}

/** Options of the encoders' `forward` after `src`. */
export interface EncoderForwardOptions { srcMask?: Tensor | null; srcKeyPaddingMask?: Tensor | null; isCausal?: boolean | null }
type EncoderForwardPositional = [srcMask: Tensor | null, srcKeyPaddingMask: Tensor | null, isCausal: boolean | null];

/** The feed-forward activation of a transformer layer: 'relu', 'gelu' or a function. */
export function activationFn(act: TransformerEncoderLayerOptions['activation']): (x: Tensor) => Tensor {
  if (act === 'relu') return (x) => unaryOp('relu', x);
  if (act === 'gelu') return (x) => gelu(x);
  if (typeof act === 'function') return act;
  throw new RangeError(`activation should be relu/gelu, not ${String(act)}`);
}

/**
 * `nn.TransformerEncoderLayer(dModel, nhead, dimFeedforward = 2048, dropout = 0.1,
 * activation = 'relu', layerNormEps = 1e-5, batchFirst = false, normFirst = false, bias = true)`:
 * self-attention and a feed-forward block, each with a residual connection and layer norm
 * (after it, or before it with `normFirst`).
 */
export class TransformerEncoderLayer extends Module {
  /** The constructor's arguments, so that `TransformerEncoder` can build copies. */
  readonly args: [number, number, TransformerEncoderLayerOptions];
  readonly normFirst: boolean;
  private readonly activation: (x: Tensor) => Tensor;
  declare self_attn: MultiheadAttention;
  declare linear1: Linear;
  declare dropout: Dropout;
  declare linear2: Linear;
  declare norm1: LayerNorm;
  declare norm2: LayerNorm;
  declare dropout1: Dropout;
  declare dropout2: Dropout;

  constructor(dModel: number, nhead: number, ...args: PyArgs<EncoderLayerPositional, TransformerEncoderLayerOptions>) {
    super();
    const o = layerOptions('TransformerEncoderLayer', args);
    this.args = [dModel, nhead, o];
    this.activation = activationFn(o.activation);
    this.normFirst = !!o.normFirst;
    const bias = o.bias !== false;
    this.registerModule('self_attn', new MultiheadAttention(dModel, nhead, { dropout: o.dropout, bias, batchFirst: o.batchFirst }));
    this.registerModule('linear1', new Linear(dModel, o.dimFeedforward!, { bias }));
    this.registerModule('dropout', new Dropout(o.dropout!));
    this.registerModule('linear2', new Linear(o.dimFeedforward!, dModel, { bias }));
    this.registerModule('norm1', new LayerNorm(dModel, { eps: o.layerNormEps, bias }));
    this.registerModule('norm2', new LayerNorm(dModel, { eps: o.layerNormEps, bias }));
    this.registerModule('dropout1', new Dropout(o.dropout!));
    this.registerModule('dropout2', new Dropout(o.dropout!));
    this.place(o);
  }

  forward(src: Tensor, ...args: PyArgs<EncoderForwardPositional, EncoderForwardOptions>): Tensor {
    const o = bindArgs('TransformerEncoderLayer.forward', ['srcMask', 'srcKeyPaddingMask', 'isCausal'], args, { srcMask: null, srcKeyPaddingMask: null, isCausal: false } as EncoderForwardOptions, 1);
    if (!(src instanceof Tensor)) throw new TypeError(`TransformerEncoderLayer.forward(): expected src to be a Tensor, but got ${typeof src}`);
    return tidy(() => {
      const sa = (x: Tensor) => this.dropout1(this.self_attn(x, x, x, { attnMask: o.srcMask, keyPaddingMask: o.srcKeyPaddingMask, needWeights: false })[0]) as Tensor;
      const ff = (x: Tensor) => this.dropout2(this.linear2(this.dropout(this.activation(this.linear1(x) as Tensor)))) as Tensor;
      const add = (a: Tensor, b: Tensor) => binaryOp('add', a, b);
      if (this.normFirst) {
        const x = add(src, sa(this.norm1(src) as Tensor));
        return add(x, ff(this.norm2(x) as Tensor));
      }
      const x = this.norm1(add(src, sa(src))) as Tensor;
      return this.norm2(add(x, ff(x))) as Tensor;
    });
  }
}

/**
 * `nn.TransformerEncoder(encoderLayer, numLayers, norm = null)`: `numLayers` copies of the layer
 * (same constructor arguments and weights, as PyTorch's deep copies), then the optional norm.
 */
export class TransformerEncoder extends Module {
  readonly numLayers: number;
  declare layers: ModuleList;
  declare norm: Module | null;

  constructor(encoderLayer: TransformerEncoderLayer, numLayers: number, ...args: PyArgs<[norm: Module | null, enableNestedTensor: boolean, maskCheck: boolean],
    { norm?: Module | null; enableNestedTensor?: boolean; maskCheck?: boolean }>) {
    super();
    const o = bindArgs('TransformerEncoder', ['norm', 'enableNestedTensor', 'maskCheck'], args, { norm: null as Module | null, enableNestedTensor: true, maskCheck: true }, 2);
    if (!(encoderLayer instanceof TransformerEncoderLayer)) throw new TypeError('TransformerEncoder: encoderLayer must be a TransformerEncoderLayer');
    if (!Number.isInteger(numLayers) || numLayers < 0) throw new RangeError(`TransformerEncoder: numLayers must be a non-negative integer, got ${numLayers}`);
    this.numLayers = numLayers;
    const state = encoderLayer.stateDict();
    const device = Object.values(state)[0]?.device;
    const copies = Array.from({ length: numLayers }, () => {
      const [d, h, opts] = encoderLayer.args;
      const c = new TransformerEncoderLayer(d, h, { ...opts, device: device ?? opts.device });
      c.loadStateDict(state);
      c.train(encoderLayer.training);
      return c;
    });
    this.registerModule('layers', new ModuleList(copies));
    this.registerModule('norm', o.norm);
  }

  forward(src: Tensor, ...args: PyArgs<[mask: Tensor | null, srcKeyPaddingMask: Tensor | null, isCausal: boolean | null],
    { mask?: Tensor | null; srcKeyPaddingMask?: Tensor | null; isCausal?: boolean | null }>): Tensor {
    const o = bindArgs('TransformerEncoder.forward', ['mask', 'srcKeyPaddingMask', 'isCausal'], args, { mask: null as Tensor | null, srcKeyPaddingMask: null as Tensor | null, isCausal: null as boolean | null }, 1);
    return tidy(() => {
      let x = src;
      for (const layer of this.layers.children()) x = layer(x, { srcMask: o.mask, srcKeyPaddingMask: o.srcKeyPaddingMask });
      return this.norm ? (this.norm(x) as Tensor) : x === src ? V.index(src) : x;
    });
  }
}
