/**
 * Finite-difference gradient checks for compositions of ops, on every device: the analytic
 * gradient from `backward()` against central differences computed in double precision on the
 * host from the op's forward values (each perturbed forward runs on the device in float32, so
 * the step is large and the tolerance loose). The per-op gradients are pinned by the goldens;
 * this checks that rules compose, across views, broadcasting and devices.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const devices = suiteDevices();

type Fn = (x: torch.Tensor) => torch.Tensor;

/** Checks d(sum(f(x)·w))/dx against central differences with step `h`. */
async function gradcheck(f: Fn, shape: number[], device: string, h = 1e-2, tol = 2e-2): Promise<void> {
  torch.manualSeed(1);
  const n = shape.reduce((a, b) => a * b, 1);
  const start = torch.randn(shape);
  const base = Array.from((await start.data()) as Float32Array);
  start.dispose();
  const probe = torch.tidy(() => f(torch.zeros(shape, { device })));
  const w = torch.tidy(() => torch.randn(probe.shape.slice()).to(device));
  probe.dispose();
  const value = async (vals: number[]) => {
    const out = torch.noGrad(() => torch.tidy(() => f(torch.tensor(vals, { device }).reshape(shape)).mul(w).sum()));
    const v = (await out.item()) as number;
    out.dispose();
    return v;
  };
  const x = torch.tidy(() => torch.tensor(base, { device }).reshape(shape)).requiresGrad_();
  const y = torch.tidy(() => f(x).mul(w).sum());
  y.backward();
  const analytic = (await x.grad!.values()) as number[];
  for (let i = 0; i < n; i++) {
    const up = base.slice(), down = base.slice();
    up[i] += h;
    down[i] -= h;
    const numeric = ((await value(up)) - (await value(down))) / (2 * h);
    expect(Math.abs(analytic[i] - numeric), `d/dx[${i}]: analytic ${analytic[i]}, numeric ${numeric}`).toBeLessThanOrEqual(tol * (1 + Math.abs(numeric)));
  }
  [x, y, w, x.grad!].forEach((t) => t.dispose());
}

const CASES: [string, Fn, number[]][] = [
  ['softmax of a transposed, broadcast product', (x) => torch.F.softmax(x.T.mul(x.sum(1)).add(1), 1), [3, 4]],
  ['layer norm then tanh then mean over a slice', (x) => torch.F.layerNorm(x, [4]).tanh().index(':', '1:3').mean(0), [3, 4]],
  ['matmul with itself, log-sum-exp', (x) => torch.logsumexp(x.matmul(x.T), 1), [3, 4]],
  ['cat, roll and repeat', (x) => torch.roll(torch.cat([x, x.mul(2)], 0), 1, 0).repeat(1, 2), [2, 3]],
  ['conv2d of a batch with groups, dilation, stride and uneven padding, then a padded average pool', (x) => torch.F.avgPool2d(torch.F.conv2d(x,
    torch.tensor([0.5, -1, 0.25, 2, -0.5, 1, 1.5, -0.75, 0.3, -0.2, 1.1, 0.6, -1.2, 0.4, 0.9, -0.35], { device: x.device }).reshape(4, 1, 2, 2),
    null, { groups: 2, stride: [1, 2], padding: [2, 1], dilation: [2, 1] }), 3, { stride: [2, 1], padding: 1, countIncludePad: false }), [2, 2, 3, 4]],
  ['conv2d with padding and stride', (x) => torch.F.conv2d(x.reshape(1, 1, 4, 4), x.reshape(1, 1, 4, 4).index(':', ':', ':3', ':3'), null, { padding: 1, stride: 2 }), [4, 4]],
  ['take (negative indices too) and cumprod of positive values', (x) => torch.take(x.abs().add(0.5).cumprod(1), torch.tensor([[0, -1], [5, 5]], { device: x.device })), [3, 4]],
  ['gather, cumsum and the max over a dim', (x) => torch.gather(x.cumsum(1), 1, torch.tensor([[0, 2], [1, 1], [3, 0]], { device: x.device })).add(x.max(1, true).values), [3, 4]],
];

describe.each(CASES)('gradcheck: %s', (_name, f, shape) => {
  it('matches central differences on every device', async () => {
    for (const d of devices) await gradcheck(f, shape, d);
  });
});
