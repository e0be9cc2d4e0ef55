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
for (const c of cases) byOp.set(c.op, [...(byOp.get(c.op) ?? []), c]);
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
};

describe('an unknown option is an error at the call that names the op', () => {
  it.each(torch.OPS.filter((o) => o.options).map((o) => [o.name, o] as const))('%s', (name, op) => {
    const call = CALLS[name];
    expect(call, `a sample call of ${name} in this test`).toBeDefined();
    const valid = call({});
    if (valid instanceof torch.Tensor) valid.dispose();
    const pyName = name.replace(/^(floor|trunc)_divide$/, 'div').replace(/^gelu_tanh$/, 'gelu');
    expect(() => call({ bogusOption: 1 })).toThrow(new RegExp(`${pyName}\\(\\) got an unexpected keyword argument 'bogusOption'.*${op.options![0]}`));
  });
});

afterAll(async () => {
  await torch.shutdown();
});
