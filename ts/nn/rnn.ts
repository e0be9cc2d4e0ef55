/**
 * `nn.RNN`, `nn.LSTM` and `nn.GRU`, composed from linear and elementwise ops in a loop over time
 * steps (autograd derives the gradients through time). Parameters have PyTorch's names and order
 * (`weight_ih_l0`, `weight_hh_l0`, `bias_ih_l0`, `bias_hh_l0`, then `…_reverse` for the backward
 * direction, per layer) and its initialisation (uniform in ±1/√hiddenSize), so state dicts load
 * both ways. The input projections of a whole sequence are one `linear` per layer and direction;
 * each step adds the hidden projection and applies the cell.
 */
import { zeros } from '../ops/creation.js';
import { binaryOp, unaryOp } from '../ops/elementwise.js';
import { dropout, linear } from '../ops/nn.js';
import { bindArgs, type PyArgs } from '../args.js';
import { tidy } from '../ops/scoped.js';
import { cat, chunk, stack } from '../ops/shape.js';
import * as V from '../ops/views.js';
import { fmt } from '../shape.js';
import { Tensor } from '../tensor.js';
import { uniformParameter } from './layers.js';
import { Module, type FactoryOptions, type Parameter } from './module.js';

/** The recurrences: PyTorch's mode names. */
export type Mode = 'RNN_TANH' | 'RNN_RELU' | 'LSTM' | 'GRU';
/** Gates per mode: the weights have `gates × hiddenSize` rows. */
export const GATES: Record<Mode, number> = { RNN_TANH: 1, RNN_RELU: 1, LSTM: 4, GRU: 3 };

/** Options shared by the recurrent layers (after inputSize, hiddenSize). */
export interface RNNBaseOptions extends FactoryOptions {
  numLayers?: number; bias?: boolean; batchFirst?: boolean; dropout?: number; bidirectional?: boolean;
}
/** `nn.RNN`'s options. */
export interface RNNOptions extends RNNBaseOptions { nonlinearity?: 'tanh' | 'relu' }
/** `nn.LSTM`'s options. */
export interface LSTMOptions extends RNNBaseOptions { projSize?: number }

const add = (a: Tensor, b: Tensor) => binaryOp('add', a, b);
const mul = (a: Tensor, b: Tensor) => binaryOp('mul', a, b);
const sigmoid = (x: Tensor) => unaryOp('sigmoid', x);
const tanh = (x: Tensor) => unaryOp('tanh', x);

/**
 * One step of a cell from the input's projection `xw = x·W_ihᵀ + b_ih` and the state: the new
 * hidden state (and cell state, for LSTM). GRU applies the reset gate to the hidden projection
 * with its bias, as PyTorch's does.
 */
export function cellStep(mode: Mode, xw: Tensor, h: Tensor, c: Tensor | null, whh: Tensor, bhh: Tensor | null): [Tensor, Tensor | null] {
  const hw = linear(h, whh, bhh);
  switch (mode) {
    case 'RNN_TANH': return [tanh(add(xw, hw)), null];
    case 'RNN_RELU': return [unaryOp('relu', add(xw, hw)), null];
    case 'LSTM': {
      const [i, f, g, o] = chunk(add(xw, hw), 4, -1);
      const c2 = add(mul(sigmoid(f), c!), mul(sigmoid(i), tanh(g)));
      return [mul(sigmoid(o), tanh(c2)), c2];
    }
    case 'GRU': {
      const [xr, xz, xn] = chunk(xw, 3, -1), [hr, hz, hn] = chunk(hw, 3, -1);
      const r = sigmoid(add(xr, hr)), z = sigmoid(add(xz, hz));
      const n = tanh(add(xn, mul(r, hn)));
      return [add(n, mul(z, binaryOp('sub', h, n))), null];
    }
  }
}

/** The recurrent layers' shared parameters and loop. */
abstract class RNNBase extends Module {
  readonly numLayers: number;
  readonly bias: boolean;
  readonly batchFirst: boolean;
  readonly dropout: number;
  readonly bidirectional: boolean;

  constructor(readonly mode: Mode, readonly inputSize: number, readonly hiddenSize: number, o: RNNBaseOptions & { projSize?: number }) {
    super();
    const name = new.target.name;
    this.numLayers = o.numLayers ?? 1;
    this.bias = o.bias ?? true;
    this.batchFirst = o.batchFirst ?? false;
    this.dropout = o.dropout ?? 0;
    this.bidirectional = o.bidirectional ?? false;
    if (o.projSize) throw new TypeError(`${name}: projSize is not supported`);
    if (!Number.isInteger(hiddenSize) || hiddenSize <= 0) throw new RangeError('hidden_size must be greater than zero');
    if (!Number.isInteger(this.numLayers) || this.numLayers <= 0) throw new RangeError('num_layers must be greater than zero');
    if (!(this.dropout >= 0 && this.dropout <= 1)) throw new RangeError('dropout should be a number in range [0, 1] representing the probability of an element being zeroed');
    const gate = GATES[mode] * hiddenSize, bound = 1 / Math.sqrt(hiddenSize), D = this.bidirectional ? 2 : 1;
    for (let l = 0; l < this.numLayers; l++) {
      for (let d = 0; d < D; d++) {
        const s = `_l${l}${d ? '_reverse' : ''}`, inF = l === 0 ? inputSize : hiddenSize * D;
        this.registerParameter(`weight_ih${s}`, uniformParameter([gate, inF], bound));
        this.registerParameter(`weight_hh${s}`, uniformParameter([gate, hiddenSize], bound));
        if (this.bias) {
          this.registerParameter(`bias_ih${s}`, uniformParameter([gate], bound));
          this.registerParameter(`bias_hh${s}`, uniformParameter([gate], bound));
        }
      }
    }
    this.place(o);
  }

  private weights(l: number, d: number): [Parameter, Parameter, Parameter | null, Parameter | null] {
    const s = `_l${l}${d ? '_reverse' : ''}`, f = this as unknown as Record<string, Parameter | null>;
    return [f[`weight_ih${s}`]!, f[`weight_hh${s}`]!, this.bias ? f[`bias_ih${s}`] : null, this.bias ? f[`bias_hh${s}`] : null];
  }

  /** PyTorch's `flatten_parameters()`: a no-op here (the weights are separate tensors in any case). */
  flattenParameters(): void {}

  /** Runs the layers over `x` `[L, N, F]` from `h0` (and `c0`) `[layers·D, N, H]`. */
  protected run(input: Tensor, hx: Tensor | null, cx: Tensor | null): [Tensor, Tensor, Tensor | null] {
    const name = this.constructor.name;
    if (!(input instanceof Tensor)) throw new TypeError(`${name}: expected input to be a Tensor, but got ${typeof input}`);
    if (input.ndim !== 2 && input.ndim !== 3) throw new RangeError(`${name}: Expected input to be 2-D or 3-D but received ${input.ndim}-D tensor`);
    const batched = input.ndim === 3, D = this.bidirectional ? 2 : 1, H = this.hiddenSize;
    if (input.shape[input.ndim - 1] !== this.inputSize) throw new RangeError(`input.size(-1) must be equal to input_size. Expected ${this.inputSize}, got ${input.shape[input.ndim - 1]}`);
    for (const [what, t] of [['hx', hx], ['cx', cx]] as const) {
      if (t && t.ndim !== (batched ? 3 : 2)) {
        throw new RangeError(`For ${batched ? 'batched 3-D' : 'unbatched 2-D'} input, ${what} should also be ${batched ? 3 : 2}-D but got ${t.ndim}-D tensor`);
      }
    }
    return tidy(() => {
      let x = !batched ? V.unsqueeze(input, 1) : this.batchFirst ? V.transpose(input, 0, 1) : input; // [L, N, F]
      const [L, N] = x.shape;
      const hidden = (t: Tensor | null, what: string) => {
        const want = [this.numLayers * D, N, H];
        const b = t && !batched ? V.unsqueeze(t, 1) : t;
        if (b && b.shape.join() !== want.join()) throw new RangeError(`Expected ${what} size ${fmt(want)}, got ${fmt(b.shape)}`);
        return b ?? zeros(want, { dtype: input.dtype, device: input.device });
      };
      const h0 = hidden(hx, 'hidden'), c0 = this.mode === 'LSTM' ? hidden(cx, 'hidden') : null;
      const hn: Tensor[] = [], cn: Tensor[] = [];
      for (let l = 0; l < this.numLayers; l++) {
        if (l > 0 && this.dropout > 0 && this.training) x = dropout(x, this.dropout, true);
        const outs: Tensor[] = [];
        for (let d = 0; d < D; d++) {
          const [wih, whh, bih, bhh] = this.weights(l, d);
          const xw = linear(x, wih, bih);
          let h = V.select(h0, 0, l * D + d), c = c0 && V.select(c0, 0, l * D + d);
          const steps: Tensor[] = new Array(L);
          for (let s = 0; s < L; s++) {
            const t = d ? L - 1 - s : s;
            [h, c] = cellStep(this.mode, V.select(xw, 0, t), h, c, whh, bhh);
            steps[t] = h;
          }
          outs.push(L ? stack(steps, 0) : zeros([0, N, H], { dtype: input.dtype, device: input.device }));
          hn.push(h);
          if (c) cn.push(c);
        }
        x = D === 1 ? outs[0] : cat(outs, 2);
      }
      const out = !batched ? V.squeeze(x, 1) : this.batchFirst ? V.transpose(x, 0, 1) : x;
      const fin = (ts: Tensor[]) => (batched ? stack(ts, 0) : stack(ts, 0).squeeze(1));
      return [out, fin(hn), c0 ? fin(cn) : null];
    });
  }
}

const BASE_PARAMS = ['numLayers', 'bias', 'batchFirst', 'dropout', 'bidirectional', 'device', 'dtype'] as const;
type BasePositional = [numLayers: number, bias: boolean, batchFirst: boolean, dropout: number, bidirectional: boolean];

/**
 * `nn.RNN(inputSize, hiddenSize, numLayers = 1, nonlinearity = 'tanh', bias = true, batchFirst = false,
 * dropout = 0, bidirectional = false)`: `forward(input, hx = null)` returns `[output, hN]`.
 */
export class RNN extends RNNBase {
  readonly nonlinearity: 'tanh' | 'relu';

  constructor(inputSize: number, hiddenSize: number, ...args: PyArgs<[numLayers: number, nonlinearity: 'tanh' | 'relu', bias: boolean, batchFirst: boolean,
    dropout: number, bidirectional: boolean], RNNOptions>) {
    const o = bindArgs('RNN', ['numLayers', 'nonlinearity', 'bias', 'batchFirst', 'dropout', 'bidirectional', 'device', 'dtype'], args, { nonlinearity: 'tanh' } as RNNOptions, 2);
    if (o.nonlinearity !== 'tanh' && o.nonlinearity !== 'relu') throw new RangeError(`Unknown nonlinearity '${String(o.nonlinearity)}'. Select from 'tanh' or 'relu'.`);
    super(o.nonlinearity === 'tanh' ? 'RNN_TANH' : 'RNN_RELU', inputSize, hiddenSize, o);
    this.nonlinearity = o.nonlinearity;
  }

  forward(input: Tensor, hx: Tensor | null = null): [Tensor, Tensor] {
    const [out, h] = this.run(input, hx, null);
    return [out, h];
  }
}

/**
 * `nn.LSTM(inputSize, hiddenSize, numLayers = 1, bias = true, batchFirst = false, dropout = 0,
 * bidirectional = false)`: `forward(input, [h0, c0] = null)` returns `[output, [hN, cN]]`.
 */
export class LSTM extends RNNBase {
  constructor(inputSize: number, hiddenSize: number, ...args: PyArgs<[...BasePositional, projSize: number], LSTMOptions>) {
    super('LSTM', inputSize, hiddenSize, bindArgs('LSTM', [...BASE_PARAMS.slice(0, 5), 'projSize', 'device', 'dtype'], args, {} as LSTMOptions, 2));
  }

  forward(input: Tensor, hx: [Tensor, Tensor] | null = null): [Tensor, [Tensor, Tensor]] {
    if (hx !== null && (!Array.isArray(hx) || hx.length !== 2)) throw new TypeError('LSTM: hx must be a pair [h0, c0] (or null)');
    const [out, h, c] = this.run(input, hx?.[0] ?? null, hx?.[1] ?? null);
    return [out, [h, c!]];
  }
}

/**
 * `nn.GRU(inputSize, hiddenSize, numLayers = 1, bias = true, batchFirst = false, dropout = 0,
 * bidirectional = false)`: `forward(input, hx = null)` returns `[output, hN]`.
 */
export class GRU extends RNNBase {
  constructor(inputSize: number, hiddenSize: number, ...args: PyArgs<BasePositional, RNNBaseOptions>) {
    super('GRU', inputSize, hiddenSize, bindArgs('GRU', [...BASE_PARAMS], args, {} as RNNBaseOptions, 2));
  }

  forward(input: Tensor, hx: Tensor | null = null): [Tensor, Tensor] {
    const [out, h] = this.run(input, hx, null);
    return [out, h];
  }
}
