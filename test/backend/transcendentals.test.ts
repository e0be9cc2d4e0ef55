/**
 * The float32 transcendentals (wgsl/math.ts on the GPU devices, the AssemblyScript kernels on
 * cpu) over test/math-sweep.mjs's dense sweeps against JavaScript's Math: sin, cos, exp, expm1,
 * log, log1p, sigmoid and tanh within a few ulp everywhere (sin and cos out to the largest
 * float32), their special values exact. The browser suite runs the same sweep on SwiftShader.
 * Graph fusion generates its kernels from the same WGSL: chains of these ops fused at capture end
 * give eager's results, special values included.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { capture, newGraph } from '../device/graphs-helpers.js';
import { leakCheck, testDevices } from '../devices.js';
import { MATH_ULP_BOUNDS, SPECIALS, mathSweep } from '../math-sweep.mjs';

const devices: string[] = [];
beforeAll(async () => {
  devices.push(...(await testDevices()).filter((d) => d !== 'gpu:1'));
});
leakCheck(() => devices);
afterAll(async () => {
  await torch.shutdown();
});

describe('float32 transcendentals against Math', () => {
  it('are within a few ulp over dense sweeps and exact at special values, on every device', async () => {
    for (const d of devices) {
      const report = await mathSweep(torch, d);
      console.log(`transcendentals on ${d}, worst ulps: ${Object.entries(report).map(([op, r]) => `${op} ${r.worst.toFixed(2)}`).join(', ')}`);
      expect(Object.keys(report)).toEqual(Object.keys(MATH_ULP_BOUNDS));
      for (const [op, r] of Object.entries(report)) {
        expect(r.ran, op).toBeGreaterThan(1e6);
        expect(r.wrongSpecials, `${d} ${op}: special values`).toEqual([]);
        expect(r.worst, `${d} ${op}: worst error in ulps (${JSON.stringify(r)})`).toBeLessThanOrEqual(MATH_ULP_BOUNDS[op as keyof typeof MATH_ULP_BOUNDS]);
      }
    }
  });

  it('give PyTorch\'s special values, signed zeros included', async () => {
    const x = [0, -0, Infinity, -Infinity, NaN, -1, -2, 1e-40, -1e-40];
    const want: Record<'sin' | 'cos' | 'exp' | 'expm1' | 'log' | 'log1p' | 'sigmoid' | 'tanh', number[]> = {
      sin: [0, -0, NaN, NaN, NaN, Math.fround(Math.sin(-1)), Math.fround(Math.sin(-2)), Math.fround(1e-40), Math.fround(-1e-40)],
      cos: [1, 1, NaN, NaN, NaN, Math.fround(Math.cos(-1)), Math.fround(Math.cos(-2)), 1, 1],
      exp: [1, 1, Infinity, 0, NaN, Math.fround(Math.exp(-1)), Math.fround(Math.exp(-2)), 1, 1],
      expm1: [0, -0, Infinity, -1, NaN, Math.fround(Math.expm1(-1)), Math.fround(Math.expm1(-2)), Math.fround(1e-40), Math.fround(-1e-40)],
      log: [-Infinity, -Infinity, Infinity, NaN, NaN, NaN, NaN, Math.fround(Math.log(Math.fround(1e-40))), NaN],
      log1p: [0, -0, Infinity, NaN, NaN, -Infinity, NaN, Math.fround(1e-40), Math.fround(-1e-40)],
      sigmoid: [0.5, 0.5, 1, 0, NaN, Math.fround(1 / (1 + Math.E)), Math.fround(1 / (1 + Math.exp(2))), 0.5, 0.5],
      tanh: [0, -0, 1, -1, NaN, Math.fround(Math.tanh(-1)), Math.fround(Math.tanh(-2)), Math.fround(1e-40), Math.fround(-1e-40)],
    };
    for (const d of devices) {
      const t = torch.tensor(x, { device: d });
      for (const [op, w] of Object.entries(want) as [keyof typeof want, number[]][]) {
        const y = t[op]();
        const got = Array.from(await y.data());
        y.dispose();
        // the float32 nearest, within an ulp where the value is an ordinary number
        got.forEach((g, i) => {
          if (Number.isNaN(w[i]) || !Number.isFinite(w[i]) || w[i] === 0 || w[i] === 1 || w[i] === 0.5 || Math.abs(w[i]) < 1e-30) expect(g, `${d} ${op}(${x[i]})`).toBe(w[i]);
          else expect(Math.abs(g - w[i]), `${d} ${op}(${x[i]}): got ${g}, want ${w[i]}`).toBeLessThanOrEqual(2 ** -22 * Math.abs(w[i]));
        });
      }
      t.dispose();
    }
  });
});

describe('fused chains of them (graph capture on a GPU)', () => {
  const chains: [string, (a: torch.Tensor) => torch.Tensor][] = [
    ['log then exp', (a) => a.log().exp()],
    ['expm1 then log1p', (a) => a.expm1().log1p()],
    ['sin, cos, sigmoid, tanh', (a) => a.sin().cos().sigmoid().tanh()],
    ['softplus then exp', (a) => torch.F.softplus(a).exp()],
  ];

  it.each(chains)('%s: one kernel, eager\'s results, special values included', async (_, chain) => {
    const xs = [...SPECIALS, ...Array.from({ length: 64 }, (_, i) => (i - 32) / 4)];
    for (const d of devices.filter((x) => x !== 'cpu')) {
      const x = torch.tensor(xs, { device: d });
      const g = newGraph(d);
      let out: torch.Tensor | null = null;
      await capture(d, g, () => {
        out = torch.tidy(() => chain(x));
      });
      expect(await g.dispatchCount(), 'fused into one kernel').toBe(1);
      g.replay();
      const e = torch.tidy(() => chain(x));
      const [got, want] = [await out!.data(), await e.data()];
      got.forEach((v, i) => {
        if (Number.isNaN(want[i]) || !Number.isFinite(want[i])) expect(v, `${d} at ${xs[i]}`).toBe(want[i]);
        else expect(Math.abs(v - want[i]), `${d} at ${xs[i]}: fused ${v}, eager ${want[i]}`).toBeLessThanOrEqual(1e-5 * (1 + Math.abs(want[i])));
      });
      g.reset();
      for (const t of [x, out!, e]) t.dispose();
    }
  });
});
