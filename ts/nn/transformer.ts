/**
 * `nn.TransformerDecoderLayer`, `nn.TransformerDecoder` and `nn.Transformer`, composed from
 * `MultiheadAttention`, `Linear` and `LayerNorm` (ts/nn/attention.ts), with PyTorch's submodule
 * names (`self_attn`, `multihead_attn`, `norm3`, `encoder.layers.0.…`, `decoder.norm`) so that
 * state dicts load both ways.
 */
import { full } from '../ops/creation.js';
import { binaryOp } from '../ops/elementwise.js';
import { bindArgs, checkOptions, type PyArgs } from '../args.js';
import { tidy } from '../ops/scoped.js';
import { triu } from '../ops/shape.js';
import * as V from '../ops/views.js';
import type { DeviceLike } from '../device.js';
import type { DType } from '../dtype.js';
import { fmt } from '../shape.js';
import { Tensor } from '../tensor.js';
import {
  activationFn, layerOptions, MultiheadAttention, TransformerEncoder, TransformerEncoderLayer,
  type EncoderLayerPositional, type TransformerEncoderLayerOptions,
} from './attention.js';
import { xavierUniform_ } from './init.js';
import { Linear, ModuleList } from './layers.js';
import { Module } from './module.js';
import { Dropout, LayerNorm } from './spatial.js';

/** Options of the decoder layers' `forward` after (tgt, memory). */
export interface DecoderForwardOptions {
  tgtMask?: Tensor | null; memoryMask?: Tensor | null; tgtKeyPaddingMask?: Tensor | null; memoryKeyPaddingMask?: Tensor | null;
  tgtIsCausal?: boolean; memoryIsCausal?: boolean;
}
type DecoderForwardPositional = [tgtMask: Tensor | null, memoryMask: Tensor | null, tgtKeyPaddingMask: Tensor | null, memoryKeyPaddingMask: Tensor | null,
  tgtIsCausal: boolean, memoryIsCausal: boolean];
const DECODER_FORWARD = ['tgtMask', 'memoryMask', 'tgtKeyPaddingMask', 'memoryKeyPaddingMask', 'tgtIsCausal', 'memoryIsCausal'] as const;

/**
 * `nn.TransformerDecoderLayer(dModel, nhead, dimFeedforward = 2048, dropout = 0.1, activation = 'relu',
 * layerNormEps = 1e-5, batchFirst = false, normFirst = false, bias = true)`: self-attention,
 * attention over the encoder's output (`memory`) and a feed-forward block, each with a residual
 * connection and layer norm.
 */
export class TransformerDecoderLayer extends Module {
  /** The constructor's arguments, so that `TransformerDecoder` can build copies. */
  readonly args: [number, number, TransformerEncoderLayerOptions];
  readonly normFirst: boolean;
  private readonly activation: (x: Tensor) => Tensor;
  declare self_attn: MultiheadAttention;
  declare multihead_attn: MultiheadAttention;
  declare linear1: Linear;
  declare dropout: Dropout;
  declare linear2: Linear;
  declare norm1: LayerNorm;
  declare norm2: LayerNorm;
  declare norm3: LayerNorm;
  declare dropout1: Dropout;
  declare dropout2: Dropout;
  declare dropout3: Dropout;

  constructor(dModel: number, nhead: number, ...args: PyArgs<EncoderLayerPositional, TransformerEncoderLayerOptions>) {
    super();
    const o = layerOptions('TransformerDecoderLayer', args);
    this.args = [dModel, nhead, o];
    this.activation = activationFn(o.activation);
    this.normFirst = !!o.normFirst;
    const bias = o.bias !== false, p = o.dropout!;
    this.registerModule('self_attn', new MultiheadAttention(dModel, nhead, { dropout: p, bias, batchFirst: o.batchFirst }));
    this.registerModule('multihead_attn', new MultiheadAttention(dModel, nhead, { dropout: p, bias, batchFirst: o.batchFirst }));
    this.registerModule('linear1', new Linear(dModel, o.dimFeedforward!, { bias }));
    this.registerModule('dropout', new Dropout(p));
    this.registerModule('linear2', new Linear(o.dimFeedforward!, dModel, { bias }));
    for (const n of ['norm1', 'norm2', 'norm3']) this.registerModule(n, new LayerNorm(dModel, { eps: o.layerNormEps, bias }));
    for (const n of ['dropout1', 'dropout2', 'dropout3']) this.registerModule(n, new Dropout(p));
    this.place(o);
  }

  forward(tgt: Tensor, memory: Tensor, ...args: PyArgs<DecoderForwardPositional, DecoderForwardOptions>): Tensor {
    const o = bindArgs('TransformerDecoderLayer.forward', [...DECODER_FORWARD], args, {} as DecoderForwardOptions, 2);
    if (!(tgt instanceof Tensor) || !(memory instanceof Tensor)) throw new TypeError('TransformerDecoderLayer.forward(): expected tgt and memory to be Tensors');
    return tidy(() => {
      const add = (a: Tensor, b: Tensor) => binaryOp('add', a, b);
      const sa = (x: Tensor) => this.dropout1(this.self_attn(x, x, x, { attnMask: o.tgtMask ?? null, keyPaddingMask: o.tgtKeyPaddingMask ?? null, needWeights: false })[0]) as Tensor;
      const mha = (x: Tensor) => this.dropout2(this.multihead_attn(x, memory, memory, { attnMask: o.memoryMask ?? null, keyPaddingMask: o.memoryKeyPaddingMask ?? null, needWeights: false })[0]) as Tensor;
      const ff = (x: Tensor) => this.dropout3(this.linear2(this.dropout(this.activation(this.linear1(x) as Tensor)))) as Tensor;
      if (this.normFirst) {
        let x = add(tgt, sa(this.norm1(tgt) as Tensor));
        x = add(x, mha(this.norm2(x) as Tensor));
        return add(x, ff(this.norm3(x) as Tensor));
      }
      let x = this.norm1(add(tgt, sa(tgt))) as Tensor;
      x = this.norm2(add(x, mha(x))) as Tensor;
      return this.norm3(add(x, ff(x))) as Tensor;
    });
  }
}

/** `nn.TransformerDecoder(decoderLayer, numLayers, norm = null)`: `numLayers` copies of the layer (same arguments and weights), then the optional norm. */
export class TransformerDecoder extends Module {
  readonly numLayers: number;
  declare layers: ModuleList;
  declare norm: Module | null;

  constructor(decoderLayer: TransformerDecoderLayer, numLayers: number, ...args: PyArgs<[norm: Module | null], { norm?: Module | null }>) {
    super();
    const o = bindArgs('TransformerDecoder', ['norm'], args, { norm: null as Module | null }, 2);
    if (!(decoderLayer instanceof TransformerDecoderLayer)) throw new TypeError('TransformerDecoder: decoderLayer must be a TransformerDecoderLayer');
    if (!Number.isInteger(numLayers) || numLayers < 0) throw new RangeError(`TransformerDecoder: numLayers must be a non-negative integer, got ${numLayers}`);
    this.numLayers = numLayers;
    const state = decoderLayer.stateDict(), device = Object.values(state)[0]?.device;
    const copies = Array.from({ length: numLayers }, () => {
      const [d, h, opts] = decoderLayer.args;
      const c = new TransformerDecoderLayer(d, h, { ...opts, device: device ?? opts.device });
      c.loadStateDict(state);
      c.train(decoderLayer.training);
      return c;
    });
    this.registerModule('layers', new ModuleList(copies));
    this.registerModule('norm', o.norm);
  }

  forward(tgt: Tensor, memory: Tensor, ...args: PyArgs<DecoderForwardPositional, DecoderForwardOptions>): Tensor {
    const o = bindArgs('TransformerDecoder.forward', [...DECODER_FORWARD], args, {} as DecoderForwardOptions, 2);
    return tidy(() => {
      let x = tgt;
      for (const layer of this.layers.children()) x = layer(x, memory, o);
      return this.norm ? (this.norm(x) as Tensor) : x === tgt ? V.index(tgt) : x;
    });
  }
}

/** Options of `nn.Transformer`. */
export interface TransformerOptions extends TransformerEncoderLayerOptions {
  dModel?: number; nhead?: number; numEncoderLayers?: number; numDecoderLayers?: number;
  customEncoder?: Module | null; customDecoder?: Module | null;
}
const TRANSFORMER_PARAMS = ['dModel', 'nhead', 'numEncoderLayers', 'numDecoderLayers', 'dimFeedforward', 'dropout', 'activation', 'customEncoder', 'customDecoder',
  'layerNormEps', 'batchFirst', 'normFirst', 'bias', 'device', 'dtype'] as const;

/** Options of `Transformer.forward` after (src, tgt). */
export interface TransformerForwardOptions extends DecoderForwardOptions { srcMask?: Tensor | null; srcKeyPaddingMask?: Tensor | null; srcIsCausal?: boolean | null }

/**
 * `nn.Transformer(dModel = 512, nhead = 8, numEncoderLayers = 6, numDecoderLayers = 6,
 * dimFeedforward = 2048, dropout = 0.1, activation = 'relu', customEncoder = null, customDecoder = null,
 * layerNormEps = 1e-5, batchFirst = false, normFirst = false, bias = true)`: an encoder and a
 * decoder, each ending in a layer norm; the weights of 2 dims or more are Xavier-uniform, as PyTorch's.
 */
export class Transformer extends Module {
  readonly dModel: number;
  readonly nhead: number;
  readonly batchFirst: boolean;
  declare encoder: Module;
  declare decoder: Module;

  constructor(...args: PyArgs<[dModel: number, nhead: number, numEncoderLayers: number, numDecoderLayers: number, dimFeedforward: number, dropout: number,
    activation: TransformerEncoderLayerOptions['activation'], customEncoder: Module | null, customDecoder: Module | null, layerNormEps: number,
    batchFirst: boolean, normFirst: boolean, bias: boolean], TransformerOptions>) {
    super();
    const o = bindArgs('Transformer', [...TRANSFORMER_PARAMS], args, { dModel: 512, nhead: 8, numEncoderLayers: 6, numDecoderLayers: 6, dimFeedforward: 2048,
      dropout: 0.1, activation: 'relu', customEncoder: null, customDecoder: null, layerNormEps: 1e-5, batchFirst: false, normFirst: false, bias: true } as TransformerOptions);
    const { dModel, nhead, numEncoderLayers, numDecoderLayers, customEncoder, customDecoder, device, dtype, ...layer } = o;
    this.dModel = dModel!;
    this.nhead = nhead!;
    this.batchFirst = !!o.batchFirst;
    const norm = () => new LayerNorm(dModel!, { eps: o.layerNormEps, bias: o.bias });
    // the prototype layers are copied by the encoder and decoder, then freed
    const stack = <L extends Module>(proto: L, build: (l: L) => Module) => {
      const m = build(proto);
      proto.parameters().forEach((p) => p.dispose());
      return m;
    };
    this.registerModule('encoder', customEncoder ?? stack(new TransformerEncoderLayer(dModel!, nhead!, layer), (l) => new TransformerEncoder(l, numEncoderLayers!, norm())));
    this.registerModule('decoder', customDecoder ?? stack(new TransformerDecoderLayer(dModel!, nhead!, layer), (l) => new TransformerDecoder(l, numDecoderLayers!, norm())));
    for (const p of this.parameters()) if (p.ndim > 1) xavierUniform_(p);
    this.place({ device, dtype });
  }

  forward(src: Tensor, tgt: Tensor, ...args: PyArgs<[srcMask: Tensor | null, tgtMask: Tensor | null, memoryMask: Tensor | null, srcKeyPaddingMask: Tensor | null,
    tgtKeyPaddingMask: Tensor | null, memoryKeyPaddingMask: Tensor | null], TransformerForwardOptions>): Tensor {
    const o = bindArgs('Transformer.forward', ['srcMask', 'tgtMask', 'memoryMask', 'srcKeyPaddingMask', 'tgtKeyPaddingMask', 'memoryKeyPaddingMask',
      'srcIsCausal', 'tgtIsCausal', 'memoryIsCausal'], args, {} as TransformerForwardOptions, 2, 6);
    const batched = src.ndim === 3, b = this.batchFirst ? 0 : 1;
    if (batched && src.shape[b] !== tgt.shape[b]) throw new RangeError(`the batch number of src and tgt must be equal (src ${fmt(src.shape)}, tgt ${fmt(tgt.shape)})`);
    if (src.shape[src.ndim - 1] !== this.dModel || tgt.shape[tgt.ndim - 1] !== this.dModel) {
      throw new RangeError(`the feature number of src and tgt must be equal to d_model (${this.dModel}; src ${fmt(src.shape)}, tgt ${fmt(tgt.shape)})`);
    }
    return tidy(() => {
      const memory = this.encoder(src, { mask: o.srcMask ?? null, srcKeyPaddingMask: o.srcKeyPaddingMask ?? null }) as Tensor;
      return this.decoder(tgt, memory, { tgtMask: o.tgtMask ?? null, memoryMask: o.memoryMask ?? null, tgtKeyPaddingMask: o.tgtKeyPaddingMask ?? null,
        memoryKeyPaddingMask: o.memoryKeyPaddingMask ?? null }) as Tensor;
    });
  }

  /** `Transformer.generateSquareSubsequentMask(sz, {device, dtype})`: `[sz, sz]` with -inf above the diagonal and 0 elsewhere. */
  static generateSquareSubsequentMask(sz: number, options: { device?: DeviceLike; dtype?: DType } = {}): Tensor {
    checkOptions('generate_square_subsequent_mask', options, ['device', 'dtype']);
    return tidy(() => triu(full([sz, sz], -Infinity, { dtype: options.dtype ?? 'float32', device: options.device }), 1));
  }
}
