/**
 * A transformer's backward without the copies and reductions that PyTorch does not make
 * (issue 29: a GPT step was ~580 commands on the small config of bench/models.mjs, 148 of them
 * copies). Counted on captured graphs (`counted`: the commands a capture records, unfused), on
 * cpu, gpu:0 and gpu:1, with each gradient checked against the same model computed another way.
 *
 * - `x @ W.T` with x [B, T, C] folds B·T into rows (ts/ops/matmul.ts `foldBatchIntoRows`, as
 *   PyTorch's matmul does): W's gradient is one product over all rows, laid out like W. Per batch
 *   it was a product per batch summed over the batch: a reduction, a copy to make the reduction's
 *   input contiguous and a copy to make the leaf's gradient row-major.
 * - `split` is one op (SplitBackward0): its gradient is one `cat` of the pieces' gradients. As
 *   narrow views, each piece gave the input a zero-filled gradient (a fill and a copy), and the
 *   engine summed them (an add per further piece).
 * - `contiguous()` passes its gradient through as it is (PyTorch's clone backward), not a copy.
 * - gelu's gradient is one `gelu_backward` kernel (an op-table row; PyTorch's gelu_backward), not
 *   eleven elementwise commands; under createGraph the rule still composes it, differentiably.
 * - a gradient a rule hands to two edges (add's, at each residual connection) goes to the second
 *   as an alias, not a copy (ts/autograd/engine.ts `shared`); a leaf's `.grad` and
 *   `autograd.grad`'s results are still their own memory.
 * - layer norm's weight gradient Σ g·x̂ takes x̂ from the layer norm kernel without weight and
 *   bias (ts/ops/nn.ts `layerNormRows`), not from the composed normalization (seven commands).
 *
 * MUTATION RECORD (each change undone alone, rebuilt, this file run):
 * - `foldBatchIntoRows` returning null: "cpu linear on [B, T, C], backward: expected 6 to be 3".
 * - split as narrow views again (`return pieces();`): "cpu split into 3, backward: expected 8 to be 3".
 * - cast's gradient always `castForward(g, t.dtype)`: "cpu contiguous of a transpose, backward:
 *   expected 3 to be 2".
 * - `geluBackward` always null (gelu's rule composing its gradient): "cpu gelu (none), backward:
 *   expected 12 to be 2".
 * - the engine giving the second edge `t.clone()` again (ts/autograd/engine.ts): "cpu residual
 *   add, backward: expected 9 to be 8".
 * - leaves and `autograd.grad` taking a shared gradient as it is (no `own(g)`): "cpu b.grad after
 *   a.grad.zero_(): expected [ +0, +0, +0 ] to deeply equal [ 1, 2, 3 ]" (the two leaves' .grad
 *   shared memory).
 * - the layer norm rule taking x̂ from `normalized(xs, dims, eps)[0]` again: "cpu layer norm,
 *   backward: expected 14 to be 8" (15 before this change: it also computed g·w for nothing).
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';
import { counted } from './graphs-helpers.js';

const devices = suiteDevices();
const vals = async (t: torch.Tensor) => [...((await t.values()) as number[])];
/** erf to 1e-7 (Abramowitz and Stegun 7.1.26 is too coarse for the check): its Taylor series, then the continued fraction's tail. */
function erf(x: number): number {
  const a = Math.abs(x);
  if (a > 6) return Math.sign(x);
  let term = x, sum = x;
  for (let n = 1; n < 200; n++) {
    term *= (-x * x) / n;
    sum += term / (2 * n + 1);
    if (Math.abs(term) < 1e-17) break;
  }
  return (2 / Math.sqrt(Math.PI)) * sum;
}

function expectClose(a: number[], b: number[], what: string): void {
  expect(a.length, what).toBe(b.length);
  const bad = a.findIndex((v, i) => !(Math.abs(v - b[i]) <= 1e-4 * (1 + Math.abs(b[i]))));
  expect(bad, `${what}: first mismatch at ${bad}: ${a[bad]} vs ${b[bad]}`).toBe(-1);
}

/** The commands `fn` (a backward) records, with its gradients discarded after: a captured backward computes nothing. */
async function backwardCommands(d: string, leaves: torch.Tensor[], fn: () => void): Promise<number> {
  const n = (await counted(d, fn)).commands;
  for (const l of leaves) {
    l.grad?.dispose();
    l.grad = null;
  }
  return n;
}

describe('a transformer\'s backward makes no copy or reduction PyTorch does not', () => {
  it('linear on [B, T, C]: the backward is the two products (and the seed), the weight\'s gradient row-major', async () => {
    for (const d of devices) {
      torch.manualSeed(1);
      const x = torch.randn([3, 5, 8], { device: d }).requiresGrad_(), w = torch.randn([6, 8], { device: d }).requiresGrad_();
      const seed = torch.randn([3, 5, 6], { device: d });
      const forward = () => torch.tidy(() => torch.nn.functional.linear(x, w));
      const y = forward();
      // the seed's copy, x's gradient (g·W) and W's (gᵀ·x, laid out like W)
      expect(await backwardCommands(d, [x, w], () => y.backward(seed)), `${d} linear on [B, T, C], backward`).toBe(3);
      const y1 = forward();
      y1.backward(seed);
      expect(w.grad!.isContiguous(), `${d} W's gradient is row-major`).toBe(true);
      // the same gradients from the 2-D product
      const x2 = torch.tidy(() => x.detach().reshape([15, 8])).requiresGrad_(), w2 = w.detach().requiresGrad_();
      const seed2 = seed.reshape([15, 6]);
      const y2 = torch.tidy(() => x2.matmul(w2.t()));
      y2.backward(seed2);
      expectClose(await vals(w.grad!), await vals(w2.grad!), `${d} W's gradient`);
      expectClose(await vals(x.grad!), await vals(x2.grad!), `${d} x's gradient`);
      for (const t of [x.grad, w.grad, x2.grad, w2.grad, x, w, seed, seed2, y, y1, x2, w2, y2]) t?.dispose();
    }
  });

  it('split into 3 (as attention splits q, k, v): the backward is one cat of the pieces\' gradients', async () => {
    for (const d of devices) {
      torch.manualSeed(2);
      const x = torch.randn([4, 12], { device: d }).requiresGrad_();
      const w = torch.randn([4, 4], { device: d });
      const model = (q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) => q.mul(w).add(k.mul(2)).sub(v.exp()).sum();
      const viaSplit = () => torch.tidy(() => model(...(x.split(4, 1) as [torch.Tensor, torch.Tensor, torch.Tensor])));
      const [q, k, v] = [0, 4, 8].map((at) => torch.tidy(() => x.narrow(1, at, 4).detach()).requiresGrad_());
      const viaLeaves = () => torch.tidy(() => model(q, k, v));
      // the model's own gradients are the same either way (the leaves take theirs as they are): the split adds its cat's 3 copies
      const l1 = viaSplit(), l2 = viaLeaves();
      const split = await backwardCommands(d, [x], () => l1.backward());
      const leaves = await backwardCommands(d, [q, k, v], () => l2.backward());
      expect(split - leaves, `${d} split into 3, backward`).toBe(3);
      const l3 = viaSplit(), l4 = viaLeaves();
      l3.backward();
      l4.backward();
      const expected = torch.cat([q.grad!, k.grad!, v.grad!], 1);
      expectClose(await vals(x.grad!), await vals(expected), `${d} x's gradient`);
      for (const t of [x.grad, q.grad, k.grad, v.grad, x, w, q, k, v, l1, l2, l3, l4, expected]) t?.dispose();
    }
  });

  it('a piece without a gradient gets zeros in the cat, as PyTorch\'s SplitBackward0', async () => {
    for (const d of devices) {
      const x = torch.arange(6, undefined, 1, { device: d, dtype: 'float32' }).requiresGrad_();
      const [a, b, c] = x.split([2, 1, 3]);
      const loss = torch.tidy(() => a.sum().add(c.mul(3).sum()));
      loss.backward();
      expect(await vals(x.grad!)).toEqual([1, 1, 0, 3, 3, 3]);
      for (const t of [x.grad, x, a, b, c, loss]) t?.dispose();
    }
  });

  it('layer norm with weight and bias on [B, T, C]: x̂ for the weight\'s gradient is one kernel, not the composed normalization', async () => {
    for (const d of devices) {
      torch.manualSeed(3);
      const ln = new torch.nn.LayerNorm(8).to(d);
      const x = torch.randn([3, 5, 8], { device: d }).requiresGrad_(), seed = torch.randn([3, 5, 8], { device: d });
      const y = torch.tidy(() => ln.call(x));
      // the seed's copy, x's gradient (1 row kernel), x̂ (1), g·x̂ (1), and the sums over the rows
      // for the weight and the bias (a copy to put the rows last and a reduction, each)
      expect(await backwardCommands(d, [x, ln.weight, ln.bias], () => y.backward(seed)), `${d} layer norm, backward`).toBe(8);
      const y1 = torch.tidy(() => ln.call(x));
      y1.backward(seed);
      // against the composed normalization, differentiated op by op
      const x2 = x.detach().requiresGrad_(), w2 = ln.weight.detach().requiresGrad_(), b2 = ln.bias.detach().requiresGrad_();
      const y2 = torch.tidy(() => {
        const xc = x2.sub(x2.mean(-1, true));
        return xc.mul(xc.square().mean(-1, true).add(1e-5).rsqrt()).mul(w2).add(b2);
      });
      y2.backward(seed);
      expectClose(await vals(x.grad!), await vals(x2.grad!), `${d} x's gradient`);
      expectClose(await vals(ln.weight.grad!), await vals(w2.grad!), `${d} the weight's gradient`);
      expectClose(await vals(ln.bias.grad!), await vals(b2.grad!), `${d} the bias's gradient`);
      for (const t of [x.grad, x2.grad, w2.grad, b2.grad, x, seed, y, y1, x2, w2, b2, y2]) t?.dispose();
      ln.zeroGrad();
      for (const p of ln.parameters()) p.dispose();
    }
  });

  it('gelu\'s backward is one kernel (PyTorch\'s gelu_backward), and under createGraph still differentiable', async () => {
    for (const d of devices) {
      for (const approximate of ['none', 'tanh'] as const) {
        const x = torch.tensor([-3, -1.5, -0.25, 0, 0.5, 2, 4], { device: d }).requiresGrad_();
        const seed = torch.tensor([1, -2, 0.5, 3, -1, 0.25, 2], { device: d });
        const forward = () => torch.tidy(() => torch.gelu(x, { approximate }));
        const y = forward();
        // the seed's copy and gelu_backward (composed, the gradient was 11 commands)
        expect(await backwardCommands(d, [x], () => y.backward(seed)), `${d} gelu (${approximate}), backward`).toBe(2);
        // the second derivative through createGraph: the rule composes the gradient then
        const y1 = forward();
        const [gx] = torch.autograd.grad(y1, [x], { gradOutputs: [seed], createGraph: true });
        const s = torch.tidy(() => gx.sum());
        s.backward();
        const xs = (await vals(x)) as number[], gs = (await vals(seed)) as number[];
        const pdf = (v: number) => Math.exp(-0.5 * v * v) / Math.sqrt(2 * Math.PI);
        const k = Math.sqrt(2 / Math.PI), c = 0.044715;
        const second = (v: number) => {
          if (approximate === 'none') return pdf(v) * (2 - v * v);
          // d²/dx² of 0.5·x·(1 + tanh(k(x + c x³)))
          const u = k * (v + c * v ** 3), du = k * (1 + 3 * c * v * v), d2u = k * 6 * c * v, t = Math.tanh(u), sech2 = 1 - t * t;
          return sech2 * du + 0.5 * v * (sech2 * d2u - 2 * t * sech2 * du * du);
        };
        expectClose(await vals(x.grad!), xs.map((v, i) => gs[i] * second(v)), `${d} gelu (${approximate}) second derivative`);
        const first = await vals(gx);
        y1.dispose();
        // gx against PyTorch's gelu_backward formula
        const cdf = (v: number) => 0.5 * (1 + erf(v / Math.SQRT2));
        const firstRef = xs.map((v, i) => gs[i] * (approximate === 'none' ? cdf(v) + v * pdf(v)
          : 0.5 * (1 + Math.tanh(k * (v + c * v ** 3))) + 0.5 * v * (1 - Math.tanh(k * (v + c * v ** 3)) ** 2) * k * (1 + 3 * c * v * v)));
        expectClose(first, firstRef, `${d} gelu (${approximate}) gradient`);
        for (const t of [x.grad, x, seed, y, gx, s]) t?.dispose();
      }
    }
  });

  it('a residual add hands its gradient to both branches without a copy; leaves still get gradients of their own', async () => {
    for (const d of devices) {
      const x = torch.randn([4, 6], { device: d }).requiresGrad_(), seed = torch.randn([4, 6], { device: d });
      // u = 3x (not a leaf); y = u + tanh(u): add passes its gradient to both of its inputs
      const forward = () => torch.tidy(() => {
        const u = x.mul(3);
        return u.add(u.tanh());
      });
      const y = forward();
      // 8: the seed's copy, tanh's and mul's gradients, and the sum of u's two; a copy handing
      // add's gradient to its second edge made it 9
      expect(await backwardCommands(d, [x], () => y.backward(seed)), `${d} residual add, backward`).toBe(8);
      const y1 = forward();
      y1.backward(seed);
      const t = torch.tidy(() => x.mul(3).tanh());
      const expected = torch.tidy(() => seed.mul(t.square().neg().add(2)).mul(3));
      expectClose(await vals(x.grad!), await vals(expected), `${d} x's gradient`);
      // two leaves given one tensor (add's g): each .grad its own memory, as PyTorch's AccumulateGrad copies a shared gradient
      const a = torch.zeros([3], { device: d }).requiresGrad_(), b = torch.zeros([3], { device: d }).requiresGrad_();
      const s = torch.tidy(() => a.add(b).mul(torch.tensor([1, 2, 3], { device: d })).sum());
      s.backward();
      a.grad!.zero_();
      expect(await vals(b.grad!), `${d} b.grad after a.grad.zero_()`).toEqual([1, 2, 3]);
      const s2 = torch.tidy(() => a.add(b).sum());
      const [ga, gb] = torch.autograd.grad(s2, [a, b]);
      ga!.zero_();
      expect(await vals(gb!), `${d} autograd.grad's second gradient after the first's zero_()`).toEqual([1, 1, 1]);
      for (const z of [x.grad, x, seed, y, y1, t, expected, a.grad, b.grad, a, b, s, s2, ga, gb]) z?.dispose();
    }
  });

  it('contiguous of a transpose: the backward is the seed\'s copy and the leaf\'s row-major copy', async () => {
    for (const d of devices) {
      const x = torch.randn([5, 7], { device: d }).requiresGrad_();
      const seed = torch.randn([7, 5], { device: d });
      const forward = () => torch.tidy(() => x.t().contiguous());
      const y = forward();
      expect(await backwardCommands(d, [x], () => y.backward(seed)), `${d} contiguous of a transpose, backward`).toBe(2);
      const y1 = forward();
      y1.backward(seed);
      expect(x.grad!.isContiguous()).toBe(true);
      const expected = torch.tidy(() => seed.t().contiguous());
      expectClose(await vals(x.grad!), await vals(expected), `${d} x's gradient`);
      for (const t of [x.grad, x, seed, y, y1, expected]) t?.dispose();
    }
  });
});
