/**
 * The batch norm layers' running statistics against PyTorch (test/fixtures/make_goldens_batchnorm.py,
 * torch 1.13): BatchNorm1d over [N, C] and [N, C, L], BatchNorm2d and BatchNorm3d, 3 training
 * steps with `momentum: null` (PyTorch's cumulative moving average, factor 1 / num_batches_tracked)
 * and `momentum: 0.1`, on cpu, gpu:0 and gpu:1: the output, running_mean, running_var and
 * num_batches_tracked after each step, then one evaluation step on the running statistics. The
 * null factor is computed on the device: the 3 steps take no answer from the device (no sync point).
 *
 * Mutation tried (built, then this file run): `forward` of BatchNormNd (ts/nn/spatial.ts) back to
 * `this.options.momentum ?? 0.1` (null taken as 0.1, today's bug): the 4 `momentum null` cases
 * fail, e.g. "BatchNorm1d [6,3] momentum null on cpu, after 3 steps: running_mean: first mismatch
 * at 0: 0.3748… vs 1.2250…", while the `momentum 0.1` cases and the last test pass. (On the code
 * before this change the BatchNorm3d cases fail sooner: there was no `nn.BatchNorm3d`.)
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

const { nn } = torch;
const devices = logicalGpuSuite(2, 'batch norm momentum tests');
const goldens = JSON.parse(readFileSync(new URL('../fixtures/batchnorm-goldens.json', import.meta.url), 'utf8'));

type T = { shape: number[]; data: number[] };
type After = { out: T; running_mean: T; running_var: T; num_batches_tracked: number };
type Case = { layer: 'BatchNorm1d' | 'BatchNorm2d' | 'BatchNorm3d'; shape: number[]; momentum: number | null; steps: T[]; after: After[]; evalInput: T; evalOut: T };

const vals = async (t: torch.Tensor) => (await t.values()) as number[];
const input = (t: T, d: string) => torch.tidy(() => torch.tensor(t.data).reshape(t.shape).to(d));

function closeTo(a: number[], b: number[], tol: number, what: string): void {
  expect(a.length, what).toBe(b.length);
  const bad = a.findIndex((v, i) => !(Math.abs(v - b[i]) <= tol * (1 + Math.abs(b[i]))));
  expect(bad, `${what}: first mismatch at ${bad}: ${a[bad]} vs ${b[bad]}`).toBe(-1);
}

/** Every answer the device has given so far (through the slot, by message, or read directly). */
function answers(d: string): number {
  const c = torch._replyCounts(d);
  return c.slot + c.message + c.direct.read + c.direct.sync;
}

describe('BatchNorm1d/2d/3d running statistics (PyTorch goldens)', () => {
  it('the goldens hold both momenta for every layer, and momentum null moves the statistics differently', () => {
    const cases = goldens.cases as Case[];
    expect(cases.map((c) => `${c.layer} ${c.momentum}`)).toEqual(['BatchNorm1d', 'BatchNorm1d', 'BatchNorm2d', 'BatchNorm3d'].flatMap((l) => [`${l} null`, `${l} 0.1`]));
    for (let i = 0; i < cases.length; i += 2) {
      // after 3 steps the cumulative average (1, 1/2, 1/3) and the 0.1 average differ
      expect(cases[i].after[2].running_mean.data).not.toEqual(cases[i + 1].after[2].running_mean.data);
    }
  });

  for (const c of goldens.cases as Case[]) {
    const name = `${c.layer} ${JSON.stringify(c.shape)} momentum ${c.momentum}`;
    it(`${name}: 3 training steps and an evaluation on every device`, async () => {
      for (const d of devices) {
        const Layer = nn[c.layer];
        const bn = new Layer(c.shape[1], { momentum: c.momentum }).to(d);
        const xs = c.steps.map((s) => input(s, d));
        const before = answers(d);
        const ys = xs.map((x) => bn(x));
        // momentum null reads nothing back: its factor 1 / num_batches_tracked stays on the device
        expect(answers(d) - before, `${name} on ${d}: answers from the device during the 3 steps`).toBe(0);
        for (const [i, y] of ys.entries()) closeTo(await vals(y), c.after[i].out.data, 1e-4, `${name} on ${d}, step ${i + 1}: output`);
        const a = c.after[2];
        closeTo(await vals(bn.running_mean!), a.running_mean.data, 2e-6, `${name} on ${d}, after 3 steps: running_mean`);
        closeTo(await vals(bn.running_var!), a.running_var.data, 2e-6, `${name} on ${d}, after 3 steps: running_var`);
        expect(Number(await bn.num_batches_tracked!.item()), `${name} on ${d}: num_batches_tracked`).toBe(3);
        bn.eval();
        const ex = input(c.evalInput, d);
        const ey = bn(ex);
        closeTo(await vals(ey), c.evalOut.data, 1e-4, `${name} on ${d}: evaluation output`);
        [...xs, ...ys, ex, ey, ...bn.parameters(), ...bn.buffers()].forEach((t) => t.dispose());

        // The statistics after each step: a second layer, read after every batch.
        const bn2 = new Layer(c.shape[1], { momentum: c.momentum }).to(d);
        for (const [i, s] of c.steps.entries()) {
          const x = input(s, d);
          const y = bn2(x);
          closeTo(await vals(bn2.running_mean!), c.after[i].running_mean.data, 2e-6, `${name} on ${d}, step ${i + 1}: running_mean`);
          closeTo(await vals(bn2.running_var!), c.after[i].running_var.data, 2e-6, `${name} on ${d}, step ${i + 1}: running_var`);
          expect(Number(await bn2.num_batches_tracked!.item())).toBe(c.after[i].num_batches_tracked);
          x.dispose();
          y.dispose();
        }
        [...bn2.parameters(), ...bn2.buffers()].forEach((t) => t.dispose());
      }
    });
  }

  it('momentum null without running statistics, and in evaluation: no count, nothing to update', async () => {
    for (const d of devices) {
      const bn = new nn.BatchNorm1d(3, { momentum: null, trackRunningStats: false }).to(d);
      expect(bn.running_mean).toBe(null);
      const x = torch.tidy(() => torch.arange(12, { dtype: 'float32' }).reshape(4, 3).to(d));
      const y = bn(x);
      // batch statistics: each column is 0, 3, 6, 9 around its mean 4.5, over the biased std √11.25
      closeTo(await vals(y), [0, 1, 2, 3].flatMap((r) => Array(3).fill((3 * r - 4.5) / Math.sqrt(11.25 + 1e-5))), 1e-5, `trackRunningStats false on ${d}`);
      const bn2 = new nn.BatchNorm1d(3, { momentum: null }).to(d);
      bn2.eval();
      const y2 = bn2(x);
      expect(Number(await bn2.num_batches_tracked!.item()), `evaluation counts no batch on ${d}`).toBe(0);
      closeTo(await vals(bn2.running_mean!), [0, 0, 0], 0, `evaluation leaves running_mean on ${d}`);
      closeTo(await vals(y2), (await vals(x)).map((v) => v / Math.sqrt(1 + 1e-5)), 1e-6, `evaluation output on ${d}`);
      [x, y, y2, ...bn.parameters(), ...bn2.parameters(), ...bn2.buffers()].forEach((t) => t.dispose());
    }
  });
});
