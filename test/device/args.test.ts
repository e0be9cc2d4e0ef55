/**
 * PyTorch's signatures: positional order, defaults, keywords as a trailing options object, and
 * Python's errors for an unexpected keyword, too many arguments or a value given twice. The
 * last suite walks every exported constructor and function of the namespaces a PyTorch user
 * calls with keywords, passes a misspelt option, and expects the unexpected-keyword error; a
 * new export without a recipe fails it, so none can slip through.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const { nn, optim, F } = torch;
const devices = suiteDevices();
const BAD = { bogusOption: 1 };
const UNEXPECTED = /got an unexpected keyword argument 'bogusOption'/;

/** Frees tensors, and modules' parameters and buffers (the suite's leak check runs after each test). */
function free(...things: (torch.Tensor | torch.nn.Module | null | undefined)[]): void {
  for (const x of things) {
    if (x instanceof torch.nn.Module) for (const p of [...x.parameters(), ...x.buffers()]) p.dispose();
    else x?.dispose();
  }
}

describe('constructors take positional arguments in PyTorch order', () => {
  it('Linear(3, 2, false) has no bias; Linear(3, 2, {bias: false}) neither; the default has one', () => {
    const [a, b, c] = [new nn.Linear(3, 2, false), new nn.Linear(3, 2, { bias: false }), new nn.Linear(3, 2)];
    expect(a.bias).toBeNull();
    expect(b.bias).toBeNull();
    expect(c.bias?.shape).toEqual([2]);
    expect([...a.namedParameters()].map(([k]) => k)).toEqual(['weight']);
    free(a, b, c);
    expect(() => new nn.Linear(3, 2, true, { bias: false })).toThrow(/got multiple values for argument 'bias'/);
    expect(() => new nn.Linear(3, 2, true, null, null, 4)).toThrow(/Linear\(\) takes from 2 to 5 positional arguments but 6 were given/);
  });

  it('Conv2d(1, 4, 3, 2, 1, 1, 1, false): stride 2, padding 1, no bias', async () => {
    const conv = new nn.Conv2d(1, 4, 3, 2, 1, 1, 1, false);
    expect(conv.bias).toBeNull();
    const x = torch.ones([1, 1, 8, 8]);
    const y = conv.forward(x);
    expect(y.shape).toEqual([1, 4, 4, 4]);
    free(x, y, conv);
  });

  it('Embedding(10, 3, paddingIdx) zeroes the padding row and gives it no gradient', async () => {
    const emb = new nn.Embedding(10, 3, 0);
    const w = await emb.weight.tolist() as number[][];
    expect(w[0]).toEqual([0, 0, 0]);
    const i = torch.tensor([0, 2, 0]);
    const out = emb.forward(i);
    torch.tidy(() => out.sum().backward());
    const g = await emb.weight.grad!.tolist() as number[][];
    expect(g[0]).toEqual([0, 0, 0]);
    expect(g[2]).toEqual([1, 1, 1]);
    free(i, out, emb.weight.grad, emb);
  });

  it('the loss modules bind PyTorch order, legacy reduce/sizeAverage included', async () => {
    const x = torch.tensor([[1, 2, 3], [3, 2, 1]], { dtype: 'float32' }), t = torch.tensor([0, 2]);
    const none = new nn.CrossEntropyLoss(null, null, -100, null, 'none').forward(x, t);
    expect(none.shape).toEqual([2]);
    const legacy = new nn.CrossEntropyLoss(null, false).forward(x, t);   // sizeAverage=False → sum
    const sum = new nn.CrossEntropyLoss({ reduction: 'sum' }).forward(x, t);
    expect(await legacy.item()).toBeCloseTo(await sum.item(), 6);
    const ignored = new nn.CrossEntropyLoss(null, null, 2).forward(x, t);   // ignoreIndex=2 drops the second target
    const [x0, t0] = [x.index('0:1'), t.index('0:1')];
    const first = F.crossEntropy(x0, t0);
    expect(await ignored.item()).toBeCloseTo(await first.item(), 6);
    free(x, t, x0, t0, none, legacy, sum, ignored, first);
  });
});

describe('optimizers use the learning rate they are given', () => {
  // One step on loss = sum(p): the gradient is 1 everywhere, so the updates have closed forms.
  const step = async (make: (p: torch.Tensor[]) => torch.optim.Optimizer, steps = 1) => {
    const p = torch.zeros([2], { requiresGrad: true });
    const opt = make([p]);
    for (let i = 0; i < steps; i++) {
      opt.zeroGrad();
      torch.tidy(() => p.sum().backward());
      opt.step();
    }
    const v = (await p.tolist()) as number[];
    opt.zeroGrad();
    p.dispose();
    for (const s of opt.state.values()) for (const t of Object.values(s)) if (t instanceof torch.Tensor) t.dispose();
    return v[0];
  };

  it('Adam(params, 1e-2): the first step moves each parameter by lr', async () => {
    expect(await step((p) => new optim.Adam(p, 1e-2))).toBeCloseTo(-1e-2, 6);
    expect(await step((p) => new optim.Adam(p, { lr: 0.5 }))).toBeCloseTo(-0.5, 6);
    expect(await step((p) => new optim.Adam(p))).toBeCloseTo(-1e-3, 6);
  });

  it('Adam rejects a misspelt learning rate instead of training with the default', () => {
    const p = torch.zeros([2], { requiresGrad: true });
    expect(() => new optim.Adam([p], { learningRate: 1 } as never)).toThrow(/Adam\(\) got an unexpected keyword argument 'learningRate'/);
    expect(() => new optim.Adam([p], 1e-2, [0.9, 0.999], 1e-8, 0, false, 7 as never)).toThrow(/takes from 1 to 6 positional arguments but 7 were given/);
    expect(() => new optim.SGD([{ params: [p], learningRate: 1 }])).toThrow(/parameter group got an unexpected keyword argument 'learningRate'/);
    p.dispose();
  });

  it('SGD(params, 0.1, 0.9) uses the momentum: two steps move by 0.1 then 0.19', async () => {
    expect(await step((p) => new optim.SGD(p, 0.1, 0.9), 2)).toBeCloseTo(-0.29, 6);
    expect(await step((p) => new optim.SGD(p, 0.1), 2)).toBeCloseTo(-0.2, 6);
  });

  it('RMSprop(params, 0.01, 0.9) and AdamW(params, 0.1, betas, eps, 0) take positional hyper-parameters', async () => {
    // RMSprop: v = (1-α)·1 → step = lr/√v
    expect(await step((p) => new optim.RMSprop(p, 0.01, 0.9))).toBeCloseTo(-0.01 / Math.sqrt(0.1), 4);
    expect(await step((p) => new optim.AdamW(p, 0.1, [0.9, 0.999], 1e-8, 0))).toBeCloseTo(-0.1, 5);
  });

  it('StepLR(opt, 1, 0.5) halves the lr each epoch', () => {
    const p = torch.zeros([1], { requiresGrad: true });
    const opt = new optim.SGD([p], 1);
    const sched = new optim.lrScheduler.StepLR(opt, 1, 0.5);
    sched.step();
    sched.step();
    expect(sched.getLastLr()).toEqual([0.25]);
    // the keyword forms PyTorch code uses: StepLR(opt, step_size=…), CosineAnnealingLR(opt, T_max=…)
    expect(new optim.lrScheduler.StepLR(opt, { stepSize: 3 }).stepSize).toBe(3);
    expect(new optim.lrScheduler.CosineAnnealingLR(opt, { tMax: 10, etaMin: 0.1 }).tMax).toBe(10);
    expect(() => new optim.lrScheduler.CosineAnnealingLR(opt, { etaMin: 0.1 })).toThrow(/missing 1 required argument: 'tMax'/);
    p.dispose();
  });
});

describe('creation takes PyTorch trailing options on every device', () => {
  it('arange(end | start, end | start, end, step) with {device, dtype}', async () => {
    for (const d of devices) {
      const a = torch.arange(5, { device: d, dtype: 'float32' });
      expect([a.device.toString(), a.dtype, await a.tolist()]).toEqual([d, 'float32', [0, 1, 2, 3, 4]]);
      const b = torch.arange(1, 4, { device: d });
      expect([b.dtype, await b.tolist()]).toEqual(['int64', [1, 2, 3]]);
      const c = torch.arange(0, 1, 0.25, { device: d, dtype: 'float32' });
      expect(await c.tolist()).toEqual([0, 0.25, 0.5, 0.75]);
      for (const t of [a, b, c]) t.dispose();
    }
    expect(() => torch.arange(5, { dtpye: 'float32' } as never)).toThrow(/arange\(\) got an unexpected keyword argument 'dtpye'/);
  });

  it('zeros(2, 3), ones([2, 3], {device}), rand(2, 2, {device}) and requiresGrad', async () => {
    for (const d of devices) {
      const z = torch.zeros(2, 3, { device: d });
      const o = torch.ones([2, 3], { device: d, requiresGrad: true });
      const r = torch.randn(2, 2, { device: d });
      expect([z.shape, o.shape, r.shape, o.requiresGrad, z.requiresGrad]).toEqual([[2, 3], [2, 3], [2, 2], true, false]);
      for (const t of [z, o, r]) t.dispose();
    }
  });

  it('tensor(data, {requiresGrad: true}) records gradients; integer data cannot require them', async () => {
    const x = torch.tensor([1, 2, 3], { dtype: 'float32', requiresGrad: true });
    expect(x.requiresGrad).toBe(true);
    torch.tidy(() => x.mul(x).sum().backward());
    expect(await x.grad!.tolist()).toEqual([2, 4, 6]);
    free(x.grad, x);
    expect(() => torch.tensor([1, 2], { requiresGrad: true })).toThrow(/Only Tensors of floating point and complex dtype can require gradients/);
  });

  it('x.t(), x.T and x.mT transpose as PyTorch\'s, with its errors', async () => {
    const base = torch.arange(6, { dtype: 'float32' }), x = base.reshape(2, 3), b = torch.zeros([2, 3, 4]), v = torch.ones([3]);
    const [t, T, mT, bm, vt] = [x.t(), x.T, x.mT, b.mT, v.t()];
    expect(await t.tolist()).toEqual([[0, 3], [1, 4], [2, 5]]);
    expect(await T.tolist()).toEqual(await t.tolist());
    expect(await mT.tolist()).toEqual(await t.tolist());
    expect([bm.shape, vt.shape]).toEqual([[2, 4, 3], [3]]);
    expect(() => b.t()).toThrow('t() expects a tensor with <= 2 dimensions, but self is 3D');
    expect(() => v.mT).toThrow('tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.');
    free(t, T, mT, bm, vt, x, base, b, v);
  });

  it('backward(gradient, retainGraph, createGraph) binds positionally and by keyword; a misspelt keyword raises', async () => {
    const x = torch.tensor([1, 2, 3], { dtype: 'float32', requiresGrad: true });
    const y = x.mul(x), s = y.sum();
    s.backward({ retainGraph: true }); // loss.backward(retain_graph=True)
    s.backward(null, true); // positional, as PyTorch's
    expect(await x.grad!.tolist()).toEqual([4, 8, 12]);
    expect(() => s.backward({ retainGrpah: true } as never)).toThrow("backward() got an unexpected keyword argument 'retainGrpah'");
    expect(() => s.backward(null, true, false, true as never)).toThrow('backward() takes from 0 to 3 positional arguments but 4 were given');
    s.backward(); // the last: frees the graph
    expect(() => s.backward()).toThrow(/backward through the graph a second time/);
    const g = torch.tensor([1, 0, 2], { dtype: 'float32' });
    const y2 = x.mul(2);
    x.grad!.dispose();
    x.grad = null;
    y2.backward(g);
    expect(await x.grad!.tolist()).toEqual([2, 0, 4]);
    free(x.grad, y2, g, y, s, x);
  });

  it('randint(high, size) and randint(low, high, size): int64 in range, reproducible under manualSeed', async () => {
    for (const d of devices) {
      torch.manualSeed(7);
      const a = torch.randint(3, 9, [1000], { device: d });
      torch.manualSeed(7);
      const b = torch.randint(3, 9, [1000], { device: d });
      const v = (await a.tolist()) as number[];
      expect(a.dtype).toBe('int64');
      expect(Math.min(...v)).toBe(3);
      expect(Math.max(...v)).toBe(8);
      expect(await b.tolist()).toEqual(v);
      const c = torch.randint(4, [2, 3], { device: d, dtype: 'int32' });
      expect([c.shape, c.dtype]).toEqual([[2, 3], 'int32']);
      expect(((await c.tolist()) as number[][]).flat().every((x) => x >= 0 && x < 4)).toBe(true);
      for (const t of [a, b, c]) t.dispose();
    }
    expect(() => torch.randint(5, 5, [2])).toThrow(/from=5 >= to=5/);
  });

  it('randperm(n) is a permutation of 0 … n-1, reproducible under manualSeed', async () => {
    for (const d of devices) {
      torch.manualSeed(3);
      const p = torch.randperm(50, { device: d });
      torch.manualSeed(3);
      const q = torch.randperm(50, { device: d });
      const v = (await p.tolist()) as number[];
      expect([...v].sort((x, y) => x - y)).toEqual([...Array(50).keys()]);
      expect(v).not.toEqual([...Array(50).keys()]);
      expect(await q.tolist()).toEqual(v);
      p.dispose();
      q.dispose();
    }
  });
});

describe('functions take positional arguments and keywords alike', () => {
  it('F.embedding(input, weight) is PyTorch order; torch.embedding(weight, input) is aten order', async () => {
    const w = torch.tensor([[1, 2], [3, 4], [5, 6]], { dtype: 'float32' }), i = torch.tensor([2, 0]);
    const a = F.embedding(i, w), b = torch.embedding(w, i);
    expect(await a.tolist()).toEqual([[5, 6], [1, 2]]);
    expect(await b.tolist()).toEqual([[5, 6], [1, 2]]);
    for (const t of [w, i, a, b]) t.dispose();
  });

  it('x.sum(1, {keepdim: true}), x.sum({dim: 1}) and torch.max(x, {dim: 0}) bind dim and keepdim', async () => {
    const x = torch.tensor([[1, 2], [3, 4]], { dtype: 'float32' });
    const a = x.sum(1, { keepdim: true }), b = x.sum({ dim: 1 }), c = x.sum(1, { keepdim: false });
    expect([a.shape, b.shape, c.shape]).toEqual([[2, 1], [2], [2]]);
    const m = torch.max(x, { dim: 0 });
    expect(await m.values.tolist()).toEqual([3, 4]);
    // keepdims is NumPy's spelling, which PyTorch's parser takes too (d2l writes it); keepDim is a misspelling
    const d = x.sum(1, { keepdims: true });
    expect(d.shape).toEqual([2, 1]);
    d.dispose();
    expect(() => x.sum(1, { keepDim: true } as never)).toThrow(/sum\(\) got an unexpected keyword argument 'keepDim'/);
    expect(() => x.add(x, { alpah: 2 } as never)).toThrow(/add\(\) got an unexpected keyword argument 'alpah'/);
    const [c1, s1, k1, cat] = [x.clamp({ min: 2 }), x.sort(0, { descending: true }), torch.topk(x, 1, { dim: 0, largest: false }), torch.cat([x, x], { dim: 1 })];
    expect(await c1.tolist()).toEqual([[2, 2], [3, 4]]);
    expect(await s1.values.tolist()).toEqual([[3, 4], [1, 2]]);
    expect(await k1.values.tolist()).toEqual([[1, 2]]);
    expect(cat.shape).toEqual([2, 4]);
    for (const z of [c1, s1.values, s1.indices, k1.values, k1.indices, cat]) z.dispose();
    for (const t of [x, a, b, c, m.values, m.indices]) t.dispose();
  });

  it('F.conv2d(x, w, b, stride, padding), F.dropout(x, {p}), F.layerNorm(x, shape, {eps}) and memorySummary({device})', async () => {
    const x = torch.ones([1, 1, 4, 4]), w = torch.ones([1, 1, 3, 3]);
    const y = F.conv2d(x, w, null, 1, 1);
    expect(y.shape).toEqual([1, 1, 4, 4]);
    const z = F.dropout(x, { p: 0, training: true });
    const s = z.sum();
    expect(await s.item()).toBe(16);
    s.dispose();
    const n = F.layerNorm(x, [4], { eps: 1e-3 });
    expect(n.shape).toEqual([1, 1, 4, 4]);
    expect(torch.gpu.memorySummary({ device: 'cpu' })).toBe(torch.gpu.memorySummary('cpu'));
    expect(torch.gpu.memoryAllocated({ device: 'cpu' })).toBe(torch.gpu.memoryAllocated('cpu'));
    expect(() => torch.gpu.memorySummary({ devcie: 0 } as never)).toThrow(/memory_summary\(\) got an unexpected keyword argument 'devcie'/);
    for (const t of [x, w, y, z, n]) t.dispose();
  });
});

/**
 * Every export of these namespaces that is a function or class, with a call that is valid apart
 * from `BAD`. `null` marks an export that takes no options object at all (a plain value or a
 * helper), listed so that a new export must be classified here.
 */
type Recipe = ((bad: object) => unknown) | null;

const t = () => torch.ones([2, 3]);
const logits = () => torch.ones([2, 3]);
const img = () => torch.ones([1, 1, 4, 4]);
const params = () => [torch.zeros([2], { requiresGrad: true })];
const sgd = () => new optim.SGD(params(), 0.1);

const nnRecipes: Record<string, Recipe> = {
  Module: null, Parameter: null, Sequential: null, ModuleList: null, ModuleDict: null, functional: null, parallel: null,
  DataParallel: (bad) => new nn.DataParallel(new nn.ReLU(), bad as never),
  Linear: (bad) => new nn.Linear(3, 2, bad),
  LazyLinear: (bad) => new nn.LazyLinear(2, bad),
  LazyConv1d: (bad) => new nn.LazyConv1d(1, 3, bad), LazyConv2d: (bad) => new nn.LazyConv2d(1, 3, bad),
  LazyBatchNorm1d: (bad) => new nn.LazyBatchNorm1d(bad), LazyBatchNorm2d: (bad) => new nn.LazyBatchNorm2d(bad),
  ReLU: (bad) => new nn.ReLU(bad), GELU: (bad) => new nn.GELU(bad), SiLU: (bad) => new nn.SiLU(bad),
  Tanh: (bad) => new nn.Tanh(bad as never), Sigmoid: (bad) => new nn.Sigmoid(bad as never),
  Flatten: (bad) => new nn.Flatten(bad),
  Conv1d: (bad) => new nn.Conv1d(1, 1, 3, bad), Conv2d: (bad) => new nn.Conv2d(1, 1, 3, bad),
  BatchNorm1d: (bad) => new nn.BatchNorm1d(3, bad), BatchNorm2d: (bad) => new nn.BatchNorm2d(3, bad), BatchNorm3d: (bad) => new nn.BatchNorm3d(3, bad),
  SyncBatchNorm: (bad) => new nn.SyncBatchNorm(3, bad),
  LayerNorm: (bad) => new nn.LayerNorm(3, bad), Embedding: (bad) => new nn.Embedding(4, 2, bad),
  Dropout: (bad) => new nn.Dropout(bad), Softmax: (bad) => new nn.Softmax(1, bad), LogSoftmax: (bad) => new nn.LogSoftmax(1, bad),
  MaxPool2d: (bad) => new nn.MaxPool2d(2, bad), AvgPool2d: (bad) => new nn.AvgPool2d(2, bad),
  AdaptiveAvgPool2d: (bad) => new nn.AdaptiveAvgPool2d(1, bad as never),
  CrossEntropyLoss: (bad) => new nn.CrossEntropyLoss(bad), NLLLoss: (bad) => new nn.NLLLoss(bad), MSELoss: (bad) => new nn.MSELoss(bad),
  L1Loss: (bad) => new nn.L1Loss(bad), BCEWithLogitsLoss: (bad) => new nn.BCEWithLogitsLoss(bad),
  // issue 31 (nn.Identity takes and ignores any arguments, as PyTorch's)
  Identity: null, RemovableHandle: null, utils: null, init: null,
  MultiheadAttention: (bad) => new nn.MultiheadAttention(4, 2, bad),
  TransformerEncoderLayer: (bad) => new nn.TransformerEncoderLayer(4, 2, bad),
  TransformerDecoderLayer: (bad) => new nn.TransformerDecoderLayer(4, 2, bad),
  TransformerDecoder: (bad) => new nn.TransformerDecoder(new nn.TransformerDecoderLayer(4, 2, { dimFeedforward: 8 }), 1, bad as never),
  Transformer: (bad) => new nn.Transformer(bad as never),
  TransformerEncoder: (bad) => new nn.TransformerEncoder(new nn.TransformerEncoderLayer(4, 2, { dimFeedforward: 8 }), 1, bad as never),
  RNNCell: (bad) => new nn.RNNCell(3, 4, bad), LSTMCell: (bad) => new nn.LSTMCell(3, 4, bad), GRUCell: (bad) => new nn.GRUCell(3, 4, bad),
  RNN: (bad) => new nn.RNN(3, 4, bad), LSTM: (bad) => new nn.LSTM(3, 4, bad), GRU: (bad) => new nn.GRU(3, 4, bad),
  LeakyReLU: (bad) => new nn.LeakyReLU(bad), GroupNorm: (bad) => new nn.GroupNorm(1, 3, bad), RMSNorm: (bad) => new nn.RMSNorm(3, bad),
  Upsample: (bad) => new nn.Upsample(bad),
  ConvTranspose1d: (bad) => new nn.ConvTranspose1d(1, 1, 3, bad), ConvTranspose2d: (bad) => new nn.ConvTranspose2d(1, 1, 3, bad),
};

const initRecipes: Record<string, Recipe> = {
  calculateGain: null, ones_: null, zeros_: null,
  uniform_: (bad) => nn.init.uniform_(t(), bad), normal_: (bad) => nn.init.normal_(t(), bad), constant_: (bad) => nn.init.constant_(t(), 1, bad),
  xavierUniform_: (bad) => nn.init.xavierUniform_(t(), bad), xavierNormal_: (bad) => nn.init.xavierNormal_(t(), bad),
  kaimingUniform_: (bad) => nn.init.kaimingUniform_(t(), bad), kaimingNormal_: (bad) => nn.init.kaimingNormal_(t(), bad),
  truncNormal_: (bad) => nn.init.truncNormal_(t(), bad),
};

const utilsRecipes: Record<string, Recipe> = {
  clipGradNorm_: (bad) => nn.utils.clipGradNorm_(params(), 1, bad), clipGradValue_: (bad) => nn.utils.clipGradValue_(params(), 1, bad as never),
};

const fRecipes: Record<string, Recipe> = {
  softmax: (bad) => F.softmax(t(), 1, bad), logSoftmax: (bad) => F.logSoftmax(t(), 1, bad),
  nllLoss: (bad) => F.nllLoss(logits(), torch.tensor([0, 1]), bad), crossEntropy: (bad) => F.crossEntropy(logits(), torch.tensor([0, 1]), bad),
  linear: (bad) => F.linear(t(), torch.ones([2, 3]), bad), mseLoss: (bad) => F.mseLoss(t(), t(), bad), l1Loss: (bad) => F.l1Loss(t(), t(), bad),
  binaryCrossEntropyWithLogits: (bad) => F.binaryCrossEntropyWithLogits(t(), t(), bad),
  dropout: (bad) => F.dropout(t(), bad), layerNorm: (bad) => F.layerNorm(t(), [3], bad),
  batchNorm: (bad) => F.batchNorm(t(), torch.zeros([3]), torch.ones([3]), bad),
  pad: (bad) => F.pad(t(), [1, 1], bad), unfold: (bad) => F.unfold(img(), 2, bad),
  conv1d: (bad) => F.conv1d(torch.ones([1, 1, 4]), torch.ones([1, 1, 2]), bad), conv2d: (bad) => F.conv2d(img(), torch.ones([1, 1, 2, 2]), bad),
  maxPool2d: (bad) => F.maxPool2d(img(), 2, bad), avgPool2d: (bad) => F.avgPool2d(img(), 2, bad),
  adaptiveAvgPool2d: (bad) => F.adaptiveAvgPool2d(img(), 1, bad as never),
  gelu: (bad) => F.gelu(t(), bad), softplus: (bad) => F.softplus(t(), bad),
  oneHot: (bad) => F.oneHot(torch.tensor([0, 1]), 2 as never, bad as never), embedding: (bad) => F.embedding(torch.tensor([0]), t(), bad),
  scaledDotProductAttention: (bad) => F.scaledDotProductAttention(t(), t(), t(), bad), groupNorm: (bad) => F.groupNorm(t(), 1, bad),
  rmsNorm: (bad) => F.rmsNorm(t(), [3], bad), interpolate: (bad) => F.interpolate(torch.ones([1, 1, 2]), bad), leakyRelu: (bad) => F.leakyRelu(t(), bad),
  convTranspose1d: (bad) => F.convTranspose1d(torch.ones([1, 1, 4]), torch.ones([1, 1, 2]), bad),
  convTranspose2d: (bad) => F.convTranspose2d(img(), torch.ones([1, 1, 2, 2]), bad),
  relu: (bad) => F.relu(t(), bad), silu: (bad) => F.silu(t(), bad), sigmoid: (bad) => F.sigmoid(t(), bad as never), tanh: (bad) => F.tanh(t(), bad as never),
};

const optimRecipes: Record<string, Recipe> = {
  Optimizer: null, lrScheduler: null,
  SGD: (bad) => new optim.SGD(params(), 0.1, bad), Adam: (bad) => new optim.Adam(params(), bad), AdamW: (bad) => new optim.AdamW(params(), bad),
  RMSprop: (bad) => new optim.RMSprop(params(), bad), Adagrad: (bad) => new optim.Adagrad(params(), bad),
  Adadelta: (bad) => new optim.Adadelta(params(), bad),
};

const schedulerRecipes: Record<string, Recipe> = {
  LRScheduler: null,
  StepLR: (bad) => new optim.lrScheduler.StepLR(sgd(), 1, bad), CosineAnnealingLR: (bad) => new optim.lrScheduler.CosineAnnealingLR(sgd(), 5, bad),
  LambdaLR: (bad) => new optim.lrScheduler.LambdaLR(sgd(), () => 1, bad), MultiStepLR: (bad) => new optim.lrScheduler.MultiStepLR(sgd(), [1], bad),
  LinearLR: (bad) => new optim.lrScheduler.LinearLR(sgd(), bad), OneCycleLR: (bad) => new optim.lrScheduler.OneCycleLR(sgd(), 1, bad),
  ReduceLROnPlateau: (bad) => new optim.lrScheduler.ReduceLROnPlateau(sgd(), bad),
  ExponentialLR: (bad) => new optim.lrScheduler.ExponentialLR(sgd(), 0.9, bad), ConstantLR: (bad) => new optim.lrScheduler.ConstantLR(sgd(), bad),
  PolynomialLR: (bad) => new optim.lrScheduler.PolynomialLR(sgd(), bad),
  CosineAnnealingWarmRestarts: (bad) => new optim.lrScheduler.CosineAnnealingWarmRestarts(sgd(), 3, bad),
  SequentialLR: (bad) => {
    const o = sgd();
    return new optim.lrScheduler.SequentialLR(o, [new optim.lrScheduler.LinearLR(o)], [], bad);
  },
};

const creationRecipes: Record<string, Recipe> = {
  tensor: (bad) => torch.tensor([1], bad), zeros: (bad) => torch.zeros([2], bad), ones: (bad) => torch.ones([2], bad),
  full: (bad) => torch.full([2], 1, bad), empty: (bad) => torch.empty([2], bad), arange: (bad) => torch.arange(3, bad),
  linspace: (bad) => torch.linspace(0, 1, 3, bad), rand: (bad) => torch.rand([2], bad), randn: (bad) => torch.randn([2], bad),
  randint: (bad) => torch.randint(3, [2], bad), randperm: (bad) => torch.randperm(3, bad), eye: (bad) => torch.eye(2, bad),
  bernoulli: (bad) => torch.bernoulli(t(), bad as never), multinomial: (bad) => torch.multinomial(t(), 1, bad as never), Generator: (bad) => new torch.Generator(bad as never),
  zerosLike: (bad) => torch.zerosLike(t(), bad), onesLike: (bad) => torch.onesLike(t(), bad), fullLike: (bad) => torch.fullLike(t(), 1, bad),
  emptyLike: (bad) => torch.emptyLike(t(), bad), randLike: (bad) => torch.randLike(t(), bad), randnLike: (bad) => torch.randnLike(t(), bad),
  DataLoader: (bad) => new torch.DataLoader(new torch.TensorDataset(t()), bad),
  add: (bad) => torch.add(t(), t(), bad), sub: (bad) => torch.sub(t(), t(), bad),
  sum: (bad) => torch.sum(t(), 0, bad), mean: (bad) => torch.mean(t(), 0, bad), prod: (bad) => torch.prod(t(), 0, bad),
  max: (bad) => torch.max(t(), 0, bad), min: (bad) => torch.min(t(), 0, bad), argmax: (bad) => torch.argmax(t(), 0, bad), argmin: (bad) => torch.argmin(t(), 0, bad),
  exp: (bad) => torch.exp(t(), bad as never), mul: (bad) => torch.mul(t(), t(), bad as never),
  bitwiseNot: (bad) => torch.bitwiseNot(t().int(), bad as never), bitwiseAnd: (bad) => torch.bitwiseAnd(t().int(), 1, bad as never),
  setDefaultDevice: (bad) => torch.setDefaultDevice('cpu', bad as never),
  cat: (bad) => torch.cat([t(), t()], bad), stack: (bad) => torch.stack([t(), t()], bad), split: (bad) => torch.split(t(), 1, bad),
  chunk: (bad) => torch.chunk(t(), 2, bad), roll: (bad) => torch.roll(t(), 1, bad), tril: (bad) => torch.tril(t(), bad), triu: (bad) => torch.triu(t(), bad),
  flip: (bad) => torch.flip(t(), [0], bad), logsumexp: (bad) => torch.logsumexp(t(), 1, bad), norm: (bad) => torch.norm(t(), bad),
  cumsum: (bad) => torch.cumsum(t(), 0, bad), cumprod: (bad) => torch.cumprod(t(), 0, bad),
  gather: (bad) => torch.gather(t(), 0, torch.zeros([1, 3], { dtype: 'int64' }), bad),
  scatter: (bad) => torch.scatter(t(), 0, torch.zeros([1, 3], { dtype: 'int64' }), 1, bad),
  scatterAdd: (bad) => torch.scatterAdd(t(), 0, torch.zeros([1, 3], { dtype: 'int64' }), t(), bad),
  indexSelect: (bad) => torch.indexSelect(t(), 0, torch.tensor([0]), bad), take: (bad) => torch.take(t(), torch.tensor([0]), bad),
  maskedFill: (bad) => torch.maskedFill(t(), torch.ones([2, 3], { dtype: 'bool' }), 0, bad),
  sort: (bad) => torch.sort(t(), bad), topk: (bad) => torch.topk(t(), 1, bad), clamp: (bad) => torch.clamp(t(), bad),
  indexPut_: (bad) => torch.indexPut_(t(), [torch.tensor([0])], 1, bad),
};

const parallelRecipes: Record<string, Recipe> = {
  scatter: null, replicate: null, parallelApply: null, gather: null,
  DataParallel: (bad) => new nn.parallel.DataParallel(new nn.ReLU(), bad as never),
  DistributedDataParallel: (bad) => new nn.parallel.DistributedDataParallel(new nn.ReLU(), bad as never),
  Pipe: (bad) => new nn.parallel.Pipe(new nn.Sequential(new nn.ReLU()), bad as never),
};

const distributionsRecipes: Record<string, Recipe> = {
  Distribution: null, constraints: null, utils: null, distribution: null,
  bernoulli: null, categorical: null, multinomial: null, normal: null, uniform: null,
  Normal: (bad) => new torch.distributions.Normal(0, 1, bad), Uniform: (bad) => new torch.distributions.Uniform(0, 1, bad),
  Bernoulli: (bad) => new torch.distributions.Bernoulli(0.5, bad), Categorical: (bad) => new torch.distributions.Categorical(t(), bad),
  Multinomial: (bad) => new torch.distributions.Multinomial(2, t(), bad),
};
// PyTorch's submodule paths hold the same classes
const submoduleRecipes = (name: string): Record<string, Recipe> => ({ [name]: distributionsRecipes[name] });

const autogradRecipes: Record<string, Recipe> = {
  Function: null, FunctionCtx: null, gradcheck: null,
  grad: (bad) => {
    const x = torch.ones([2]).requiresGrad_();
    try {
      return torch.autograd.grad(torch.tidy(() => x.mul(2).sum()), [x], bad as never);
    } finally {
      x.dispose();
    }
  },
};

const memoryRecipes: Record<string, Recipe> = Object.fromEntries(
  ['memoryAllocated', 'maxMemoryAllocated', 'memoryReserved', 'maxMemoryReserved', 'memoryStats', 'memorySummary', 'memorySnapshot',
    'emptyCache', 'resetPeakMemoryStats', 'resetAccumulatedMemoryStats'].map((k) => [k, (bad: object) => (torch.gpu as unknown as Record<string, (o: object) => unknown>)[k]({ device: 'cpu', ...bad })]),
);
memoryRecipes.setPerProcessMemoryFraction = (bad) => torch.gpu.setPerProcessMemoryFraction(1, { device: 'cpu', ...bad } as never);

describe('every exported constructor and function refuses a misspelt option', () => {
  const walk = (label: string, ns: Record<string, unknown>, recipes: Record<string, Recipe>, all = true) => {
    it(`${label}: every export has a recipe, and each raises the unexpected-keyword error`, () => {
      if (all) {
        const exported = Object.keys(ns).filter((k) => typeof ns[k] === 'function' || (typeof ns[k] === 'object' && ns[k] !== null));
        expect(exported.filter((k) => !(k in recipes)), `exports of ${label} with no recipe`).toEqual([]);
      }
      for (const [name, recipe] of Object.entries(recipes)) {
        expect(name in ns, `${label}.${name} is exported`).toBe(true);
        if (!recipe) continue;
        // tidy frees the arguments the recipe made
        torch.tidy(() => {
          expect(() => recipe(BAD), `${label}.${name} with a misspelt option`).toThrow(UNEXPECTED);
        });
      }
    });
  };
  walk('torch.nn', nn as unknown as Record<string, unknown>, nnRecipes);
  walk('torch.nn.init', nn.init as unknown as Record<string, unknown>, initRecipes);
  walk('torch.nn.utils', nn.utils as unknown as Record<string, unknown>, utilsRecipes);
  walk('torch.nn.parallel', nn.parallel as unknown as Record<string, unknown>, parallelRecipes);
  walk('torch.F', F as unknown as Record<string, unknown>, fRecipes);
  walk('torch.optim', optim as unknown as Record<string, unknown>, optimRecipes);
  walk('torch.optim.lrScheduler', optim.lrScheduler as unknown as Record<string, unknown>, schedulerRecipes);
  walk('torch (creation, loading, arithmetic and reductions)', torch as unknown as Record<string, unknown>, creationRecipes, false);
  walk('torch.distributions', torch.distributions as unknown as Record<string, unknown>, distributionsRecipes);
  for (const [sub, cls] of [['normal', 'Normal'], ['uniform', 'Uniform'], ['bernoulli', 'Bernoulli'], ['categorical', 'Categorical'], ['multinomial', 'Multinomial']]) {
    walk(`torch.distributions.${sub}`, (torch.distributions as unknown as Record<string, Record<string, unknown>>)[sub], submoduleRecipes(cls));
  }
  walk('torch.gpu memory', torch.gpu as unknown as Record<string, unknown>, memoryRecipes, false);
  walk('torch.autograd', torch.autograd as unknown as Record<string, unknown>, autogradRecipes);
});
