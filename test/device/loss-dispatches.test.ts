/**
 * The class-index losses are a handful of kernels (ts/ops/nll.ts): `F.nllLoss` is one command
 * forward (its target check and reduction inside) and one backward, `F.crossEntropy` adds the
 * one log-softmax row kernel each way (test/device/row-dispatches.test.ts). Composed, the NLL
 * was about 15 commands each way, 28 of the benchmark MLP step's 61 GPU dispatches. Counted on captured graphs (`g.info()`: the commands
 * captured, the dispatches a replay makes), unfused so that a count is each op's own, on cpu,
 * gpu:0 and gpu:1; and a replayed loss still checks its targets.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';
import { capture, counted, newGraph } from './graphs-helpers.js';

const { F, nn, optim } = torch;
const devices = suiteDevices();

const VARIANTS: [string, { weight?: boolean; ignoreIndex?: number; reduction?: 'mean' | 'sum' | 'none'; labelSmoothing?: number }][] = [
  ['mean', {}], ['sum', { reduction: 'sum' }], ['none', { reduction: 'none' }],
  ['weighted mean, ignoreIndex 2', { weight: true, ignoreIndex: 2 }], ['label smoothing 0.1', { labelSmoothing: 0.1 }],
];

describe('the class-index losses are one kernel each way, with PyTorch\'s gradients', () => {
  it.each(VARIANTS)('%s: nllLoss is 1 command forward and 1 backward; crossEntropy 2 forward', async (_, v) => {
    for (const d of devices) {
      // 7 rows: not a multiple of any vector width
      const x = torch.randn([7, 5], { device: d }), t = torch.tensor([0, 4, 2, 2, 1, 3, 0], { device: d });
      const weight = v.weight ? torch.rand([5], { device: d }) : null;
      const o = { weight, ignoreIndex: v.ignoreIndex, reduction: v.reduction };
      const lsm = F.logSoftmax(x, 1);
      let out: torch.Tensor | null = null;
      if (!v.labelSmoothing) {
        expect(await counted(d, () => (out = F.nllLoss(lsm, t, o))), `${d} nll_loss`).toEqual({ commands: 1, dispatches: 1 });
        out!.dispose();
      }
      expect(await counted(d, () => (out = F.crossEntropy(x, t, { ...o, labelSmoothing: v.labelSmoothing }))), `${d} cross_entropy`)
        .toEqual({ commands: 2, dispatches: 2 });
      out!.dispose();
      // backward: the NLL's gradient is one command (the seed's fill before it; the leaf takes it as it is)
      const leaf = lsm.detach().requiresGrad_();
      const loss = torch.tidy(() => F.crossEntropy(leaf, t, { ...o, labelSmoothing: v.labelSmoothing }));
      const seed = v.reduction === 'none' ? torch.ones(loss.shape, { device: d }) : undefined;
      const back = await counted(d, () => loss.backward(seed));
      // the seed (a fill of ones, or a copy of the one given), the NLL's gradient (1) and log-softmax's (1: row-dispatches.test.ts)
      expect(back.commands, `${d} backward`).toBe(1 + 1 + 1);
      for (const z of [x, t, weight, lsm, leaf, leaf.grad, loss, seed]) z?.dispose();
    }
  });

  it('an MLP training step with nn.CrossEntropyLoss and SGD is 27 commands on every device (a GPU\'s was 30 with log-softmax\'s gradient composed, 54 with the NLL too)', async () => {
    for (const d of devices) {
      torch.manualSeed(0);
      const m = new nn.Sequential(new nn.Linear(8, 16), new nn.ReLU(), new nn.Linear(16, 10)).to(d);
      const o = new optim.SGD(m.parameters(), { lr: 0.1 });
      const X = torch.randn([37, 8], { device: d }), Y = torch.randint(0, 10, [37], { device: d });
      const lossFn = new nn.CrossEntropyLoss();
      const info = await counted(d, () => {
        const l = torch.tidy(() => lossFn.call(m.call(X), Y));
        l.backward();
        o.step();
        l.dispose();
      });
      // at most: an op elsewhere that gets cheaper may lower it; the loss must not raise it again
      expect(info.commands, d).toBeLessThanOrEqual(27);
      for (const p of m.parameters()) {
        p.grad?.dispose();
        p.dispose();
      }
      X.dispose();
      Y.dispose();
    }
  });

  it('a replayed loss checks the targets it reads then: a bad one raises at the sync point, and the device goes on', async () => {
    for (const d of devices) {
      const x = torch.randn([4, 3], { device: d }), t = torch.tensor([0, 1, 2, 1], { device: d });
      const g = newGraph(d);
      let loss: torch.Tensor | null = null;
      await capture(d, g, () => (loss = F.crossEntropy(x, t, { reduction: 'sum' })));
      g.replay();
      const first = await loss!.item();
      const bad = torch.tensor([0, 1, 7, 1], { device: d }), good = torch.tensor([0, 1, 2, 1], { device: d });
      t.copy_(bad);
      g.replay();
      await expect(loss!.item(), d).rejects.toThrow(/cross_entropy\(\): Target 7 is out of bounds\./);
      t.copy_(good);
      g.replay();
      expect(await loss!.item(), d).toBeCloseTo(first, 5);
      g.reset();
      for (const z of [x, t, loss, bad, good]) z?.dispose();
    }
  });

  it('with createGraph the gradient is differentiable in the upstream gradient: d/dv Σ ∂(v·nll)/∂x is -w[target] per row (0 where ignored), -1 for the mean', async () => {
    for (const d of devices) {
      const x = torch.randn([5, 4], { device: d, requiresGrad: true }), t = torch.tensor([1, -100, 3, 0, 3], { device: d });
      const w = torch.tensor([0.5, 2, 1.5, 3], { device: d });
      for (const reduction of ['none', 'mean'] as const) {
        const loss = F.nllLoss(x, t, { weight: w, reduction });
        const v = torch.rand(loss.shape, { device: d, requiresGrad: true });
        const [gx] = torch.autograd.grad(loss, x, v, { createGraph: true });
        const z = gx!.sum();
        z.backward();
        // mean: Σ over the rows of -w[t]·v/Σ w[t] is -v
        const want = reduction === 'none' ? [-2, 0, -3, -0.5, -3] : -1;
        const got = await v.grad!.tolist();
        if (typeof want === 'number') expect(got as number, `${d} ${reduction}`).toBeCloseTo(want, 5);
        else (got as number[]).forEach((g, i) => expect(g, `${d} ${reduction} row ${i}`).toBeCloseTo(want[i], 5));
        for (const z2 of [loss, v, v.grad, gx, z]) z2?.dispose();
      }
      for (const z2 of [x, t, w, x.grad]) z2?.dispose();
    }
  });

  it('the mean keeps its Σ weight apart from the loss: loss.div_(2) before backward halves the gradient, as in PyTorch (gradient accumulation)', async () => {
    for (const d of devices) {
      const x = torch.randn([6, 3], { device: d, requiresGrad: true }), t = torch.tensor([0, 2, 1, -100, 2, 2], { device: d });
      const w = torch.tensor([1, 2, 0.5], { device: d });
      const grads: number[][] = [];
      for (const k of [1, 2]) {
        const loss = F.crossEntropy(x, t, { weight: w });
        if (k !== 1) loss.div_(k);
        loss.backward();
        grads.push((await x.grad!.tolist() as number[][]).flat());
        x.grad!.dispose();
        x.grad = null;
        loss.dispose();
      }
      grads[1].forEach((g, i) => expect(g, `${d} element ${i}`).toBeCloseTo(grads[0][i] / 2, 6));
      for (const z of [x, t, w]) z.dispose();
    }
  });
});
