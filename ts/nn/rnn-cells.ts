/**
 * `nn.RNNCell`, `nn.LSTMCell` and `nn.GRUCell`: one time step of the recurrent layers
 * (ts/nn/rnn.ts's `cellStep`), with PyTorch's parameter names (`weight_ih`, `weight_hh`,
 * `bias_ih`, `bias_hh`) and initialisation (uniform in ±1/√hiddenSize).
 */
import { zeros } from '../ops/creation.js';
import { linear } from '../ops/nn.js';
import { bindArgs, type PyArgs } from '../args.js';
import { tidy } from '../ops/scoped.js';
import * as V from '../ops/views.js';
import { fmt } from '../shape.js';
import { Tensor } from '../tensor.js';
import { uniformParameter } from './layers.js';
import { Module, type FactoryOptions, type Parameter } from './module.js';
import { cellStep, GATES, type Mode } from './rnn.js';

/** Options of the cells after (inputSize, hiddenSize). */
export interface RNNCellOptions extends FactoryOptions { bias?: boolean; nonlinearity?: 'tanh' | 'relu' }

abstract class RNNCellBase extends Module {
  declare weight_ih: Parameter;
  declare weight_hh: Parameter;
  declare bias_ih: Parameter | null;
  declare bias_hh: Parameter | null;

  constructor(readonly mode: Mode, readonly inputSize: number, readonly hiddenSize: number, readonly bias: boolean, o: FactoryOptions) {
    super();
    if (!Number.isInteger(hiddenSize) || hiddenSize <= 0) throw new RangeError('hidden_size must be greater than zero');
    const gate = GATES[mode] * hiddenSize, bound = 1 / Math.sqrt(hiddenSize);
    this.registerParameter('weight_ih', uniformParameter([gate, inputSize], bound));
    this.registerParameter('weight_hh', uniformParameter([gate, hiddenSize], bound));
    this.registerParameter('bias_ih', bias ? uniformParameter([gate], bound) : null);
    this.registerParameter('bias_hh', bias ? uniformParameter([gate], bound) : null);
    this.place(o);
  }

  /** One step from `input` `[N, inputSize]` (or `[inputSize]`) and the states `[N, hiddenSize]` (zeros when null). */
  protected step(input: Tensor, hx: Tensor | null, cx: Tensor | null): [Tensor, Tensor | null] {
    const name = this.constructor.name;
    if (!(input instanceof Tensor)) throw new TypeError(`${name}: expected input to be a Tensor, but got ${typeof input}`);
    if (input.ndim !== 1 && input.ndim !== 2) throw new RangeError(`${name}: Expected input to be 1D or 2D, got ${input.ndim}D instead`);
    if (input.shape[input.ndim - 1] !== this.inputSize) throw new RangeError(`input has inconsistent input_size: got ${input.shape[input.ndim - 1]} expected ${this.inputSize}`);
    const batched = input.ndim === 2;
    return tidy(() => {
      const x = batched ? input : V.unsqueeze(input, 0), N = x.shape[0];
      const state = (t: Tensor | null) => {
        if (!t) return zeros([N, this.hiddenSize], { dtype: input.dtype, device: input.device });
        const b = batched ? t : V.unsqueeze(t, 0);
        if (b.shape.join() !== [N, this.hiddenSize].join()) throw new RangeError(`${name}: expected hidden state of shape ${fmt(batched ? [N, this.hiddenSize] : [this.hiddenSize])}, but got ${fmt(t.shape)}`);
        return b;
      };
      const [h, c] = cellStep(this.mode, linear(x, this.weight_ih, this.bias_ih), state(hx), this.mode === 'LSTM' ? state(cx) : null, this.weight_hh, this.bias_hh);
      return [batched ? h : V.squeeze(h, 0), c && (batched ? c : V.squeeze(c, 0))];
    });
  }
}

/** `nn.RNNCell(inputSize, hiddenSize, bias = true, nonlinearity = 'tanh')`: `forward(input, hx = null)` returns h'. */
export class RNNCell extends RNNCellBase {
  readonly nonlinearity: 'tanh' | 'relu';

  constructor(inputSize: number, hiddenSize: number, ...args: PyArgs<[bias: boolean, nonlinearity: 'tanh' | 'relu'], RNNCellOptions>) {
    const o = bindArgs('RNNCell', ['bias', 'nonlinearity', 'device', 'dtype'], args, { bias: true, nonlinearity: 'tanh' } as RNNCellOptions, 2);
    if (o.nonlinearity !== 'tanh' && o.nonlinearity !== 'relu') throw new RangeError(`Unknown nonlinearity: ${String(o.nonlinearity)}`);
    super(o.nonlinearity === 'tanh' ? 'RNN_TANH' : 'RNN_RELU', inputSize, hiddenSize, o.bias!, o);
    this.nonlinearity = o.nonlinearity;
  }

  forward(input: Tensor, hx: Tensor | null = null): Tensor {
    return this.step(input, hx, null)[0];
  }
}

/** `nn.LSTMCell(inputSize, hiddenSize, bias = true)`: `forward(input, [h, c] = null)` returns `[h', c']`. */
export class LSTMCell extends RNNCellBase {
  constructor(inputSize: number, hiddenSize: number, ...args: PyArgs<[bias: boolean], Omit<RNNCellOptions, 'nonlinearity'>>) {
    const o = bindArgs('LSTMCell', ['bias', 'device', 'dtype'], args, { bias: true } as RNNCellOptions, 2);
    super('LSTM', inputSize, hiddenSize, o.bias!, o);
  }

  forward(input: Tensor, hx: [Tensor, Tensor] | null = null): [Tensor, Tensor] {
    if (hx !== null && (!Array.isArray(hx) || hx.length !== 2)) throw new TypeError('LSTMCell: hx must be a pair [h, c] (or null)');
    const [h, c] = this.step(input, hx?.[0] ?? null, hx?.[1] ?? null);
    return [h, c!];
  }
}

/** `nn.GRUCell(inputSize, hiddenSize, bias = true)`: `forward(input, hx = null)` returns h'. */
export class GRUCell extends RNNCellBase {
  constructor(inputSize: number, hiddenSize: number, ...args: PyArgs<[bias: boolean], Omit<RNNCellOptions, 'nonlinearity'>>) {
    const o = bindArgs('GRUCell', ['bias', 'device', 'dtype'], args, { bias: true } as RNNCellOptions, 2);
    super('GRU', inputSize, hiddenSize, o.bias!, o);
  }

  forward(input: Tensor, hx: Tensor | null = null): Tensor {
    return this.step(input, hx, null)[0];
  }
}
