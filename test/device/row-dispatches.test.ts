/**
 * Softmax, log-softmax and layer norm along the last dim are one row kernel each way on every
 * device: the `softmax` command forward, the `rowGrad` command backward (wgsl/softmax.ts on a
 * GPU, assembly/kernels/rownorm.ts on the cpu). Composed, a GPU's gradient was three to eight
 * commands (exp, mul, a sum over the row, sub...), each a dispatch of ~7–10 µs through Dawn; in
 * the benchmark MLP step, cross entropy's log-softmax gradient was 3 of them. Counted on
 * captured graphs (`g.info()`), unfused so that a count is the op's own, on cpu, gpu:0 and
 * gpu:1, over rows shorter than a subgroup and longer than a workgroup. The numbers are the nn
 * goldens' (test/backend/nn.test.ts, rows-* cases).
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';
import { counted } from './graphs-helpers.js';

const { F } = torch;
const devices = suiteDevices();

const OPS: [string, (x: torch.Tensor) => torch.Tensor][] = [
  ['softmax', (x) => F.softmax(x, -1)],
  ['log_softmax', (x) => F.logSoftmax(x, -1)],
  ['layer_norm', (x) => F.layerNorm(x, [x.shape[x.ndim - 1]])],
];

describe('row normalisations are one kernel each way', () => {
  it.each(OPS)('%s along the last dim: 1 command forward, 1 backward (and the seed\'s copy)', async (_, op) => {
    for (const d of devices) {
      for (const shape of [[7, 3], [3, 1029], [2, 3, 64]]) {
        const x = torch.randn(shape, { device: d, requiresGrad: true }), seed = torch.randn(shape, { device: d });
        let y: torch.Tensor | null = null;
        expect(await counted(d, () => (y = op(x))), `${d} ${shape} forward`).toEqual({ commands: 1, dispatches: 1 });
        // backward: a copy of the seed given, then the row gradient (the leaf takes it as it is)
        expect(await counted(d, () => y!.backward(seed)), `${d} ${shape} backward`).toEqual({ commands: 2, dispatches: 2 });
        expect(x.grad!.shape, `${d} ${shape}`).toEqual(shape);
        for (const z of [x, x.grad, seed, y]) z?.dispose();
      }
    }
  });

  it('log_softmax\'s gradient is g − exp(y)·Σ g and softmax\'s y·(g − Σ g·y), the same on every device', async () => {
    // one row longer than a workgroup and five rows of 7: sums of every reduction form
    const want: number[][] = [];
    for (const d of devices) {
      const got: number[] = [];
      for (const shape of [[5, 7], [2, 1029]]) {
        torch.manualSeed(1);
        const x0 = torch.randn(shape), g0 = torch.randn(shape);
        for (const log of [true, false]) {
          const on = (t: torch.Tensor) => (d === 'cpu' ? t.clone() : t.to(d));
          const x = on(x0).requiresGrad_(), g = on(g0);
          const y = log ? F.logSoftmax(x, -1) : F.softmax(x, -1);
          y.backward(g);
          const [yv, gv, gx] = [await y.tolist() as number[][], await g.tolist() as number[][], await x.grad!.tolist() as number[][]];
          yv.forEach((row, r) => {
            // the rule in f64 on the host, from the device's own y
            const s = row.reduce((a, v, k) => a + gv[r][k] * (log ? 1 : v), 0);
            row.forEach((v, k) => expect(gx[r][k], `${d} ${shape} ${log ? 'log_softmax' : 'softmax'} [${r}, ${k}]`)
              .toBeCloseTo(log ? gv[r][k] - Math.exp(v) * s : v * (gv[r][k] - s), 5));
          });
          got.push(...gx.flat());
          for (const z of [x, x.grad, g, y]) z.dispose();
        }
        x0.dispose();
        g0.dispose();
      }
      want.push(got);
    }
    for (let i = 1; i < want.length; i++) want[i].forEach((v, k) => expect(v, `${devices[i]} against cpu at ${k}`).toBeCloseTo(want[0][k], 5));
  });

  it('a softmax over another dim, or a gradient to be differentiated (createGraph), is composed, and still right', async () => {
    for (const d of devices) {
      const x = torch.randn([4, 6], { device: d, requiresGrad: true }), seed = torch.randn([4, 6], { device: d });
      let y: torch.Tensor | null = null;
      expect((await counted(d, () => (y = F.logSoftmax(x, 0)))).commands, `${d} dim 0 forward`).toBeGreaterThan(1);
      y!.dispose();
      // createGraph: the gradient must be differentiable in the upstream gradient v
      const z = F.logSoftmax(x, -1);
      const v = torch.rand([4, 6], { device: d, requiresGrad: true });
      const [gx] = torch.autograd.grad(z, x, v, { createGraph: true });
      // Σ c·gx with gx = v − exp(z)·Σ v: its derivative in v[r, j] is c[r, j] − Σ_k c[r, k]·exp(z[r, k])
      const c = torch.randn([4, 6], { device: d });
      const s = torch.tidy(() => gx!.mul(c).sum());
      s.backward();
      const [cv, zv, vg] = [await c.tolist() as number[][], await z.tolist() as number[][], await v.grad!.tolist() as number[][]];
      cv.forEach((row, r) => {
        const dot = row.reduce((a, ck, k) => a + ck * Math.exp(zv[r][k]), 0);
        row.forEach((ck, j) => expect(vg[r][j], `${d} [${r}, ${j}]`).toBeCloseTo(ck - dot, 5));
      });
      c.dispose();
      for (const t of [x, x.grad, seed, z, v, v.grad, gx, s]) t?.dispose();
    }
  });
});
