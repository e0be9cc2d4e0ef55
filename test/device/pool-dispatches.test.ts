/**
 * Max pooling of float32 is its own kernel each way (ts/ops/pool.ts): one `maxPool` command
 * forward (values and indices) and one `maxPoolGrad` backward (average pooling: `avgPool` and
 * `avgPoolGrad`), on cpu, gpu:0 and gpu:1, where
 * composed it was the windows copied out, two reductions and six int64 ops forward, and a mask, a
 * `where` and the fold backward. Counted on captured graphs (unfused). Also what the goldens are
 * too small to show: planes large enough for the cpu pool's threads and for many GPU workgroups,
 * with overlapping windows; a gradient differentiated again (`createGraph`); and a captured graph
 * with fusion on, where the fusion must see what the commands read.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';
import { capture, counted, newGraph } from './graphs-helpers.js';

const { F } = torch;
const devices = suiteDevices();

/** The host reference of PyTorch's loop: values, indices and the gradient (a scatter in output order) of [P, H, W] planes. */
function reference(x: Float32Array, P: number, H: number, W: number, k: number, s: number, p: number, g: Float32Array) {
  const oh = Math.floor((H + 2 * p - k) / s) + 1, ow = Math.floor((W + 2 * p - k) / s) + 1;
  const values: number[] = [], indices: number[] = [], grad = new Float32Array(P * H * W);
  for (let q = 0; q < P; q++) {
    for (let oy = 0; oy < oh; oy++) {
      for (let ox = 0; ox < ow; ox++) {
        const h0 = Math.max(oy * s - p, 0), w0 = Math.max(ox * s - p, 0);
        const h1 = Math.min(oy * s - p + k, H), w1 = Math.min(ox * s - p + k, W);
        let m = -Infinity, mi = h0 * W + w0;
        for (let h = h0; h < h1; h++) for (let w = w0; w < w1; w++) {
          const v = x[q * H * W + h * W + w];
          if (v > m || Number.isNaN(v)) (m = v), (mi = h * W + w);
        }
        grad[q * H * W + mi] += g[values.length];
        values.push(m);
        indices.push(mi);
      }
    }
  }
  return { values, indices, grad: Array.from(grad), oh, ow };
}

describe('max pooling is one kernel each way', () => {
  it('maxPool2d is 1 command forward (with or without indices) and its gradient 1 command', async () => {
    for (const d of devices) {
      const x = torch.randn([2, 3, 9, 8], { device: d });
      let out: torch.Tensor | torch.ValuesIndices | null = null;
      expect(await counted(d, () => (out = F.maxPool2d(x, 2))), `${d} forward`).toEqual({ commands: 1, dispatches: 1 });
      (out as unknown as torch.Tensor).dispose();
      expect(await counted(d, () => (out = F.maxPool2d(x, 3, { stride: 1, padding: 1, returnIndices: true }))), `${d} with indices`)
        .toEqual({ commands: 1, dispatches: 1 });
      const vi = out as unknown as torch.ValuesIndices;
      vi.values.dispose();
      vi.indices.dispose();
      const leaf = x.detach().requiresGrad_();
      const y = F.maxPool2d(leaf, 3, { stride: 2, padding: 1 });
      const seed = torch.onesLike(y);
      // the seed's copy, then the gradient
      expect((await counted(d, () => y.backward(seed))).commands, `${d} backward`).toBe(2);
      for (const z of [x, leaf, leaf.grad, y, seed]) z?.dispose();
    }
  });

  it('avgPool2d is 1 command forward and its gradient 1 command', async () => {
    for (const d of devices) {
      const x = torch.randn([2, 3, 9, 8], { device: d });
      let out: torch.Tensor | null = null;
      expect(await counted(d, () => (out = F.avgPool2d(x, 3, { stride: 2, padding: 1, ceilMode: true, countIncludePad: false }))), `${d} forward`)
        .toEqual({ commands: 1, dispatches: 1 });
      out!.dispose();
      const leaf = x.detach().requiresGrad_();
      const y = F.avgPool2d(leaf, 2);
      const seed = torch.onesLike(y);
      expect((await counted(d, () => y.backward(seed))).commands, `${d} backward`).toBe(2);
      for (const z of [x, leaf, leaf.grad, y, seed]) z?.dispose();
    }
  });

  it('16-bit floats go through float32 (cast, maxPool, cast): PyTorch\'s rule (the last NaN of a window), and the gradient at its index', async () => {
    for (const d of devices) {
      for (const dtype of ['float16', 'bfloat16'] as const) {
        const x = torch.tensor([[[[1, NaN, 5], [NaN, 3, 5], [7, 7, 2]]]], { device: d, dtype, requiresGrad: true });
        let r: torch.ValuesIndices | null = null;
        expect((await counted(d, () => (r = F.maxPool2d(x, 2, { stride: 1, returnIndices: true })))).commands, `${d} ${dtype}`).toBe(3);
        r!.values.dispose();
        r!.indices.dispose();
        const { values, indices } = F.maxPool2d(x, 2, { stride: 1, returnIndices: true });
        expect(values.dtype).toBe(dtype);
        // windows: [1, nan, nan, 3] -> the nan at 3; [nan, 5, 3, 5] -> 1; [nan, 3, 7, 7] -> 3; [3, 5, 7, 2] -> 7
        expect(await indices.tolist(), `${d} ${dtype}`).toEqual([[[[3, 1], [3, 7]]]]);
        const seed = torch.onesLike(values);
        values.backward(seed);
        expect(await x.grad!.tolist(), `${d} ${dtype}`).toEqual([[[[0, 1, 0], [2, 0, 0], [0, 1, 0]]]]);
        for (const t of [x, x.grad, values, indices, seed]) t?.dispose();
      }
    }
  });

  it('planes large enough for the cpu pool and many GPU workgroups, overlapping windows: values, indices and gradient are PyTorch\'s', async () => {
    // 4·16·45·47 = 135360 elements (over the cpu's pool threshold), 3×3 windows at stride 2 with padding 1
    const [N, C, H, W] = [4, 16, 45, 47];
    const n = N * C * H * W;
    // values on a coarse grid: ties; a few NaNs
    const xs = Float32Array.from({ length: n }, (_, i) => ((i * 7919) % 31) / 4);
    for (let i = 5; i < n; i += 997) xs[i] = NaN;
    const { oh, ow } = reference(new Float32Array(0), 0, H, W, 3, 2, 1, new Float32Array(0));
    const gs = Float32Array.from({ length: N * C * oh * ow }, (_, i) => ((i * 104729) % 17) / 8 - 1);
    const ref = reference(xs, N * C, H, W, 3, 2, 1, gs);
    for (const d of devices) {
      const x = torch.tidy(() => torch.tensor(xs, { device: d }).reshape([N, C, H, W])).requiresGrad_();
      const { values, indices } = F.maxPool2d(x, 3, { stride: 2, padding: 1, returnIndices: true });
      const g = torch.tidy(() => torch.tensor(gs, { device: d }).reshape(values.shape));
      values.backward(g);
      expect(Array.from(await values.data()), `${d} values`).toEqual(ref.values);
      expect(Array.from(await indices.data(), Number), `${d} indices`).toEqual(ref.indices);
      expect(Array.from(await x.grad!.data()), `${d} gradient`).toEqual(ref.grad);
      for (const z of [x, x.grad, values, indices, g]) z?.dispose();
    }
  });

  it('average pooling over planes large enough for the cpu pool and many GPU workgroups, overlapping windows with padding', async () => {
    // 4·16·45·47 elements, 3×3 windows at stride 2 with padding 1, the padding counted: every divisor is 9
    const [N, C, H, W] = [4, 16, 45, 47], P = N * C, oh = 23, ow = 24;
    const xs = Float32Array.from({ length: P * H * W }, (_, i) => ((i * 7919) % 31) / 4 - 3);
    const gs = Float32Array.from({ length: P * oh * ow }, (_, i) => ((i * 104729) % 17) / 8 - 1);
    const want: number[] = [], grad = new Float64Array(P * H * W);
    for (let q = 0; q < P; q++) for (let oy = 0; oy < oh; oy++) for (let ox = 0; ox < ow; ox++) {
      let sum = 0;
      for (let h = Math.max(0, 2 * oy - 1); h < Math.min(H, 2 * oy + 2); h++) for (let w = Math.max(0, 2 * ox - 1); w < Math.min(W, 2 * ox + 2); w++) {
        sum += xs[(q * H + h) * W + w];
        grad[(q * H + h) * W + w] += gs[(q * oh + oy) * ow + ox] / 9;
      }
      want.push(sum / 9);
    }
    for (const d of devices) {
      const x = torch.tidy(() => torch.tensor(xs, { device: d }).reshape([N, C, H, W])).requiresGrad_();
      const y = F.avgPool2d(x, 3, { stride: 2, padding: 1 });
      expect(y.shape).toEqual([N, C, oh, ow]);
      const g = torch.tidy(() => torch.tensor(gs, { device: d }).reshape(y.shape));
      y.backward(g);
      const got = await y.data(), gx = await x.grad!.data();
      want.forEach((v, i) => { if (Math.abs(got[i] - v) > 1e-5) expect(got[i], `${d} value ${i}`).toBeCloseTo(v, 5); });
      grad.forEach((v, i) => { if (Math.abs(gx[i] - v) > 1e-5) expect(gx[i], `${d} gradient ${i}`).toBeCloseTo(v, 5); });
      for (const z of [x, x.grad, y, g]) z?.dispose();
    }
  });

  it('with createGraph the gradient is differentiable in the upstream gradient: d/dv Σ w·∂(v·y)/∂x is w at each window\'s index', async () => {
    for (const d of devices) {
      const x = torch.randn([2, 5, 6], { device: d, requiresGrad: true });
      const { values: y, indices } = F.maxPool2d(x, 2, { stride: 1, returnIndices: true });
      const v = torch.rand(y.shape, { device: d, requiresGrad: true }), w = torch.randn(x.shape, { device: d });
      const [gx] = torch.autograd.grad(y, x, v, { createGraph: true });
      const z = torch.tidy(() => gx!.mul(w).sum());
      z.backward();
      const ws = (await w.data()) as Float32Array, at = Array.from(await indices.data(), Number), got = Array.from(await v.grad!.data());
      const want = at.map((i, o) => ws[Math.floor(o / 20) * 30 + i]);
      expect(got, d).toEqual(want);
      for (const t of [x, x.grad, y, indices, v, v.grad, w, gx, z]) t?.dispose();
    }
  });

  it('a captured graph with fusion on replays what eager gives, where a pooled value is also an elementwise chain\'s intermediate', async () => {
    for (const d of devices) {
      const x = torch.randn([2, 4, 8, 8], { device: d, requiresGrad: true });
      const step = () => {
        const loss = torch.tidy(() => {
          // t1 feeds the add (a chain mul → add) and the pooling: the chain must not fuse t1 away
          const t1 = x.mul(2), t2 = t1.add(1), p = F.maxPool2d(t1, 2, { stride: 1 });
          return p.sum().add(t2.sum());
        });
        loss.backward();
        return loss;
      };
      const eager = step();
      const want = [await eager.item(), ...Array.from(await x.grad!.data())];
      eager.dispose();
      x.grad!.zero_();
      const g = newGraph(d);
      let loss: torch.Tensor | null = null;
      await capture(d, g, () => { loss = step(); });
      x.grad!.zero_();
      g.replay();
      const got = [await loss!.item(), ...Array.from(await x.grad!.data())];
      expect(got[0], d).toBeCloseTo(want[0], 4);
      expect(got.slice(1), d).toEqual(want.slice(1));
      g.reset();
      for (const t of [x, x.grad, loss]) t?.dispose();
    }
  });
});
