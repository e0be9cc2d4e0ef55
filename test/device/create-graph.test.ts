/**
 * Gradients taken with `createGraph` through ops whose gradient rules call other ops: matmul (its
 * gradient summed over a broadcast batch), where, broadcasting binary ops, a contiguous copy, flip,
 * scatter and scatter_add. Their gradients must be differentiable in the upstream gradient g, as
 * PyTorch's are: the test takes d/dg of a weighted sum of them and compares it, and the gradients,
 * with PyTorch's (test/fixtures/make_goldens_create_graph.py), on cpu, gpu:0 and gpu:1, and checks
 * that nothing stays alive afterwards (the suite's leak check).
 *
 * Not covered, a known gap: webtorch saves a rule's inputs detached, so a gradient is not yet
 * differentiable through the inputs a rule saved (d²(x·x)/dx² is missing), only through g.
 *
 * MUTATION RECORD: with the rules calling the unrecorded kernels (matmulForward, whereForward,
 * castForward, flipForward, scatter/gatherForward and the unrecorded sum of sumTo, as before),
 * every case failed on cpu first: "cpu: gradient 0 requires grad: expected false to be true"
 * (gradient 1 for the broadcast and scatter cases).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';
import { num, type TensorJson } from '../golden.js';

const devices = suiteDevices();

interface Case { name: string; inputs: TensorJson[]; g: TensorJson; grads: TensorJson[]; gg: TensorJson }
const G = JSON.parse(readFileSync(new URL('../fixtures/create-graph-goldens.json', import.meta.url), 'utf8')) as { cases: Case[] };

const build = (t: TensorJson, d: string): torch.Tensor =>
  torch.tidy(() => torch.tensor(t.data.map(num) as number[], { dtype: 'float32', device: d }).reshape(t.shape)).requiresGrad_();

/** The generator's weights: 1 + (k mod 5)/8 at flat index k. */
const weights = (shape: readonly number[], d: string): torch.Tensor =>
  torch.tidy(() => torch.arange(shape.reduce((a, b) => a * b, 1), { device: d }).remainder(5).div(8).add(1).reshape(shape.slice()));

const IDX = [[0, 2, 1, 3], [3, 1, 0, 2], [1, 0, 3, 2]];
const MASK = [[1, 0, 1, 1], [0, 0, 1, 0], [1, 1, 1, 0]];

/** The cases' forwards, as the generator writes them. */
const FORWARD: Record<string, (d: string, ...x: torch.Tensor[]) => torch.Tensor> = {
  'matmul, a batch against a matrix (its gradient summed over the batch)': (_d, x, w) => x.matmul(w),
  'where with a bool mask': (d, x, y) => torch.where(torch.tensor(MASK, { device: d }).bool(), x, y),
  'a broadcast multiply and add': (_d, x, b, c) => x.mul(b).add(c),
  'a contiguous copy of a transpose': (_d, x) => x.t().contiguous().mul(2),
  flip: (_d, x) => torch.flip(x, [0, 2]),
  'scatter and scatter_add with a source': (d, x, s) => {
    const idx = torch.tensor(IDX, { dtype: 'int64', device: d });
    return torch.scatter(x, 1, idx, s).add(torch.scatterAdd(x, 1, idx, s.mul(3)));
  },
};

async function expectClose(got: torch.Tensor, want: TensorJson, what: string): Promise<void> {
  expect(got.shape, `${what}: shape`).toEqual(want.shape);
  const g = (await got.data()) as Float32Array, w = want.data.map(num) as number[];
  const bad = w.findIndex((v, i) => !(Math.abs(g[i] - v) <= 1e-5 * (1 + Math.abs(v))));
  expect(bad < 0 ? 'ok' : `[${bad}]: ${g[bad]} where PyTorch gives ${w[bad]}`, what).toBe('ok');
}

describe('createGraph: gradients differentiable in the upstream gradient, against PyTorch', () => {
  it.each(G.cases.map((c) => [c.name, c] as const))('%s', async (_n, c) => {
    for (const d of devices) {
      const ins = c.inputs.map((t) => build(t, d)), g = build(c.g, d);
      const y = torch.tidy(() => FORWARD[c.name](d, ...ins));
      const grads = torch.autograd.grad([y], ins, [g], { createGraph: true });
      for (const [i, gr] of grads.entries()) {
        expect(gr!.requiresGrad, `${d}: gradient ${i} requires grad`).toBe(true);
        await expectClose(gr!, c.grads[i], `${d}: gradient ${i}`);
      }
      const s = torch.tidy(() => grads.map((gr) => gr!.mul(weights(gr!.shape, d)).sum()).reduce((a, b) => a.add(b)));
      const [gg] = torch.autograd.grad([s], [g]);
      await expectClose(gg!, c.gg, `${d}: d/dg of the weighted gradients`);
      for (const t of [...ins, g, y, ...grads, s, gg]) t!.dispose();
    }
  });
});
