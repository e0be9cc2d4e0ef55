/**
 * Issue 31's recurrent layers against PyTorch's goldens (make_goldens_surface_nn.py): `nn.RNN`,
 * `nn.LSTM`, `nn.GRU` and the cells `nn.RNNCell`, `nn.LSTMCell`, `nn.GRUCell`, with PyTorch's weights (state dict names and order checked), outputs, final
 * states and the gradients of inputs, initial states and every parameter, on cpu, gpu:0 and gpu:1.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';
import { checkCase, GOLDENS } from './surface-goldens.js';

const { nn } = torch;
logicalGpuSuite(2, 'surface-rnn');

const cases = GOLDENS.cases.filter((c) => c.kind === 'rnn');
const ON_GPU1 = new Set(['lstm', 'gru', 'lstmcell']);

describe.each(['cpu', 'gpu:0', 'gpu:1'])('goldens on %s', (device) => {
  const mine = device === 'gpu:1' ? cases.filter((c) => ON_GPU1.has(c.id)) : cases;
  it.each(mine.map((c) => [c.id, c] as const))('%s', async (_id, c) => {
    await checkCase(c, device);
  });
});

describe('refusals', () => {
  it('wrong input size, hidden size and options', () => {
    const m = new nn.LSTM(3, 4, { numLayers: 2 });
    const x = torch.randn([5, 2, 6]), ok = torch.randn([5, 2, 3]), h = torch.zeros([1, 2, 4]);
    expect(() => m(x)).toThrow('input.size(-1) must be equal to input_size. Expected 3, got 6');
    expect(() => m(ok, [h, h])).toThrow('Expected hidden size [2, 2, 4], got [1, 2, 4]');
    expect(() => new nn.GRU(3, 4, { batch_first: true } as never)).toThrow("unexpected keyword argument 'batch_first'");
    expect(() => new nn.RNN(3, 4, { nonlinearity: 'sigmoid' as never })).toThrow("Unknown nonlinearity 'sigmoid'");
    const cell = new nn.GRUCell(3, 4);
    expect(() => cell(x)).toThrow(/Expected input to be 1D or 2D, got 3D instead/);
    const x2 = torch.randn([2, 5]);
    expect(() => cell(x2)).toThrow('input has inconsistent input_size: got 5 expected 3');
    expect(() => new nn.LSTMCell(3, 4, { nonlinearity: 'tanh' } as never)).toThrow("unexpected keyword argument 'nonlinearity'");
    m.flattenParameters();
    [x, ok, h, x2, ...m.parameters(), ...cell.parameters()].forEach((t) => t.dispose());
  });
});
