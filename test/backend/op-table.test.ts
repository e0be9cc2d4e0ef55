/**
 * The op table (ts/ops/registry.ts) against the API and the goldens: every op the issue lists is
 * a row; every row's API exists; for every row and every dtype PyTorch's goldens hold either an
 * output (the row accepts the dtype) or PyTorch's error (it does not), so the table's dtypes are
 * PyTorch's; every row has a non-contiguous case, every binary row a broadcasting one; and every
 * option-taking op names itself when given an unknown option. The goldens themselves run on
 * every device in ops/nn/indexing/advanced-indexing.test.ts.
 */
import { readdirSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { loadGoldens, type Case, type TensorJson } from '../golden.js';

const ISSUE_OPS = `abs neg exp expm1 log log1p sqrt rsqrt sin cos tanh sigmoid relu gelu gelu_tanh silu softplus erf floor ceil
  round sign reciprocal clamp nan_to_num add sub mul div floor_divide trunc_divide pow maximum minimum remainder atan2 eq ne lt
  le gt ge logical_and logical_or logical_xor logical_not sum mean var std max min argmax logsumexp norm all any cumsum softmax
  log_softmax layer_norm batch_norm conv1d conv2d max_pool2d avg_pool2d adaptive_avg_pool2d embedding dropout linear
  cross_entropy nll_loss mse_loss l1_loss binary_cross_entropy_with_logits index_select gather scatter scatter_add
  masked_fill where cat stack split chunk flip roll repeat tril triu one_hot topk sort matmul`.split(/\s+/).filter(Boolean);

const files = readdirSync(new URL('../fixtures/', import.meta.url)).filter((f) => /^goldens.*\.json$/.test(f) && f !== 'goldens-optim.json');
const cases: Case[] = files.flatMap((f) => loadGoldens(f).cases);
const byOp = new Map<string, Case[]>();
/** Golden op names that differ from the table's. */
const ALIASES: Record<string, string> = { bce_with_logits: 'binary_cross_entropy_with_logits' };
for (const c of cases) {
  const op = ALIASES[c.op] ?? c.op;
  byOp.set(op, [...(byOp.get(op) ?? []), c]);
}
const tensorArgs = (c: Case) => c.args.filter((a): a is TensorJson => 'shape' in a);

describe('the op table', () => {
  it('has a row for every op of the issue', () => {
    const names = new Set(torch.OPS.map((o) => o.name));
    expect(ISSUE_OPS.filter((n) => !names.has(n))).toEqual([]);
  });

  it.each(torch.OPS.map((o) => [o.name, o] as const))("%s: the API it names exists", (_n, op) => {
    for (const path of op.api) {
      const [ns, name] = path.split('.');
      const home = ns === 'torch' ? torch : ns === 'F' ? torch.F : torch.Tensor.prototype;
      expect(typeof (home as unknown as Record<string, unknown>)[name], path).toBe('function');
    }
  });

  it.each(torch.OPS.map((o) => [o.name, o] as const))('%s: its dtypes are PyTorch\'s, each with a golden', (_n, op) => {
    const mine = byOp.get(op.name) ?? [];
    expect(mine.length, `goldens for ${op.name}`).toBeGreaterThan(0);
    const outcome = (dt: string) => {
      const seen = mine.filter((c) => (c.args[op.dtypeArg ?? 0] as TensorJson | undefined)?.dtype === dt);
      return { out: seen.some((c) => !c.error), error: seen.some((c) => c.error) };
    };
    for (const dt of torch.DTYPES) {
      const o = outcome(dt);
      if (op.dtypes.includes(dt)) expect(o.out, `${op.name} accepts ${dt}: a golden output in ${dt}`).toBe(true);
      else expect(o.error, `${op.name} refuses ${dt}: PyTorch's error as a golden`).toBe(true);
    }
  });

  it.each(torch.OPS.map((o) => [o.name, o] as const))('%s: has a non-contiguous case', (_n, op) => {
    const mine = byOp.get(op.name) ?? [];
    expect(mine.some((c) => !c.error && tensorArgs(c).some((a) => a.permute)), `a golden of ${op.name} with a permuted argument`).toBe(true);
  });

  it.each(torch.OPS.filter((o) => o.family === 'binary').map((o) => [o.name] as const))('%s: has a broadcasting case', (name) => {
    const mine = byOp.get(name) ?? [];
    const broadcasts = (c: Case) => new Set(tensorArgs(c).map((a) => a.shape.join('x'))).size > 1 || c.args.some((a) => 'scalar' in a);
    expect(mine.some((c) => !c.error && broadcasts(c)), `a golden of ${name} with differently shaped arguments`).toBe(true);
  });
});

/** A call of each option-taking op with valid arguments and the options `o`. */
const x4 = () => torch.randn([2, 3, 4, 4]);
const CALLS: Record<string, (o: object) => unknown> = {
  add: (o) => torch.add(torch.ones([2]), 1, o),
  sub: (o) => torch.sub(torch.ones([2]), 1, o),
  div: (o) => torch.div(torch.ones([2]), 2, o),
  floor_divide: (o) => torch.div(torch.ones([2]), 2, o),
  trunc_divide: (o) => torch.div(torch.ones([2]), 2, o),
  gelu: (o) => torch.gelu(torch.ones([2]), o),
  gelu_tanh: (o) => torch.gelu(torch.ones([2]), o),
  softplus: (o) => torch.softplus(torch.ones([2]), o),
  nan_to_num: (o) => torch.nanToNum(torch.ones([2]), o),
  var: (o) => torch.var(torch.ones([3]), 0, o),
  std: (o) => torch.std(torch.ones([3]), 0, o),
  softmax: (o) => torch.softmax(torch.ones([3]), 0, o),
  log_softmax: (o) => torch.F.logSoftmax(torch.ones([3]), 0, o),
  conv1d: (o) => torch.F.conv1d(torch.ones([1, 2, 5]), torch.ones([3, 2, 2]), null, o),
  conv2d: (o) => torch.F.conv2d(x4(), torch.ones([2, 3, 2, 2]), null, o),
  max_pool2d: (o) => torch.F.maxPool2d(x4(), 2, o),
  avg_pool2d: (o) => torch.F.avgPool2d(x4(), 2, o),
  unfold: (o) => torch.F.unfold(x4(), 2, o),
  cross_entropy: (o) => torch.F.crossEntropy(torch.ones([2, 3]), torch.tensor([0, 1]), o),
  nll_loss: (o) => torch.F.nllLoss(torch.ones([2, 3]), torch.tensor([0, 1]), o),
  mse_loss: (o) => torch.F.mseLoss(torch.ones([2]), torch.ones([2]), o),
  l1_loss: (o) => torch.F.l1Loss(torch.ones([2]), torch.ones([2]), o),
  binary_cross_entropy_with_logits: (o) => torch.F.binaryCrossEntropyWithLogits(torch.ones([2]), torch.ones([2]), o),
  gelu_backward: (o) => torch._geluBackward(torch.ones([3]), torch.ones([3]), o),
  gelu_tanh_backward: (o) => torch._geluBackward(torch.ones([3]), torch.ones([3]), { approximate: 'tanh', ...o }),
};

describe('an unknown option is an error at the call that names the op', () => {
  it.each(torch.OPS.filter((o) => o.options).map((o) => [o.name, o] as const))('%s', (name, op) => {
    const call = CALLS[name];
    expect(call, `a sample call of ${name} in this test`).toBeDefined();
    const valid = call({});
    if (valid instanceof torch.Tensor) valid.dispose();
    const pyName = name.replace(/^(floor|trunc)_divide$/, 'div').replace(/^gelu_tanh$/, 'gelu').replace(/^gelu_tanh_backward$/, 'gelu_backward');
    expect(() => call({ bogusOption: 1 })).toThrow(new RegExp(`${pyName}\\(\\) got an unexpected keyword argument 'bogusOption'.*${op.options![0]}`));
  });
});

afterAll(async () => {
  await torch.shutdown();
});

/** Bad input: each is an error at the call (or, for values on the device, at the next sync) naming the op and what was wrong. */
const f = (shape: number[]) => torch.randn(shape);
const i64 = (v: number[]) => torch.tensor(v, { dtype: 'int64' });
const BAD: [string, () => unknown, RegExp][] = [
  ...torch.OPS.filter((o) => o.family === 'binary' && o.name !== 'where').map((o): [string, () => unknown, RegExp] => [
    `${o.name}: mismatched shapes`,
    () => (torch as unknown as Record<string, (a: torch.Tensor, b: torch.Tensor, kw?: object) => torch.Tensor>)[o.api[0].split('.')[1]](f([2, 3]), f([4]), ...(o.name === 'gelu_tanh_backward' ? [{ approximate: 'tanh' }] : [])),
    new RegExp(`size of tensor a \\(3\\) must match the size of tensor b \\(4\\).*${o.api[0] === 'torch.div' ? 'div|divide' : o.name}.*\\[2, 3\\].*\\[4\\].*float32`),
  ]),
  ['where: mismatched shapes', () => torch.where(f([2]).gt(0), f([3]), f([2])), /where.*\[2\].*\[3\]/],
  ['matmul: mismatched shapes', () => torch.matmul(f([2, 3]), f([4, 5])), /matmul.*2x3.*4x5|mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)/],
  ['linear: mismatched shapes', () => torch.F.linear(f([2, 3]), f([5, 4])), /linear|2x3 and 4x5/],
  ['cat: mismatched shapes', () => torch.cat([f([2, 3]), f([2, 4])]), /Sizes of tensors must match except in dimension 0.*cat.*\[2, 3\].*\[2, 4\]/],
  ['stack: mismatched shapes', () => torch.stack([f([2, 3]), f([2, 4])]), /stack.*\[2, 3\].*\[2, 4\]/],
  ['mse_loss: mismatched shapes', () => torch.F.mseLoss(f([2, 3]), f([3, 2])), /mse_loss.*\[2, 3\].*\[3, 2\]/],
  ['cross_entropy: target shape', () => torch.F.crossEntropy(f([2, 3]), i64([0, 1, 2])), /batch_size \(2\) to match target batch_size \(3\).*cross_entropy.*\[2, 3\].*\[3\]/],
  ['conv2d: channels', () => torch.F.conv2d(f([1, 3, 5, 5]), f([2, 4, 3, 3])), /conv2d.*\[1, 3, 5, 5\].*\[2, 4, 3, 3\]|expected input.*to have 4 channels/],
  ['index_select: float index', () => torch.indexSelect(f([3]), 0, f([2])), /index_select.*(float32|'?Float'?)/],
  ['gather: float index', () => torch.gather(f([3]), 0, f([2])), /gather.*(float32|'?Float'?)/],
  ['scatter: float index', () => torch.scatter(f([3]), 0, f([2]), 1), /scatter.*(float32|'?Float'?)/],
  ['scatter_add: float index', () => torch.scatterAdd(f([3]), 0, f([2]), f([2])), /scatter_add.*(float32|'?Float'?)/],
  ['take: float index', () => torch.take(f([3]), f([2])), /take.*(float32|'?Float'?)/],
  ['embedding: float index', () => torch.embedding(f([3, 2]), f([2])), /embedding.*(float32|'?Float'?)/],
  ['one_hot: float index', () => torch.F.oneHot(f([2]), 3), /one_hot.*(float32|'?Float'?)/],
  ['masked_fill: float mask', () => torch.maskedFill(f([3]), f([3]), 0), /masked_fill.*(float32|'?Float'?)/],
];
const OUT_OF_RANGE: [string, () => torch.Tensor, RegExp][] = [
  ['index_select', () => torch.indexSelect(f([3]), 0, i64([3])), /index_select.*3.*out of range|out of bounds/],
  ['gather', () => torch.gather(f([3]), 0, i64([5])), /gather.*5.*out of (range|bounds)/],
  ['scatter', () => torch.scatter(f([3]), 0, i64([-4]), 1), /scatter.*-4.*out of (range|bounds)/],
  ['scatter_add', () => torch.scatterAdd(f([3]), 0, i64([7]), f([1])), /scatter_add.*7.*out of (range|bounds)/],
  ['take', () => torch.take(f([3]), i64([9])), /take.*out of range.*index 9/],
  ['embedding', () => torch.embedding(f([3, 2]), i64([3])), /embedding.*3.*out of (range|bounds)/],
  ['one_hot', () => torch.F.oneHot(i64([4]), 3), /one_hot|Class values must be smaller than num_classes/],
];

describe('bad input names the op, the shapes and the dtypes', () => {
  it.each(BAD)('%s', (_what, call, message) => {
    expect(call).toThrow(message);
  });
  it.each(OUT_OF_RANGE)('%s: an index out of range (at the next sync)', async (_op, call, message) => {
    let out: torch.Tensor | undefined;
    await expect((async () => {
      out = call();
      await out.values();
    })()).rejects.toThrow(message);
    out?.dispose();
  });
});
