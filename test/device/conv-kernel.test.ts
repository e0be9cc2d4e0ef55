/**
 * A float32 convolution on the cpu device is its own kernel each way (ts/ops/conv.ts
 * `convKernel`, assembly/kernels/conv.ts): one `conv` command forward (bias included) and one
 * `convGrad` backward, where composed it was the windows, a batched product, a bias add, and in
 * the backward two products, a fold and the reductions. Checked against the GPU devices, which
 * still compose it, on what the goldens are too small to show: a batch large enough for the cpu
 * pool's threads; a gradient differentiated again (`createGraph`, the composed rule); the windows
 * kept for the weight's gradient only while it needs one; and no memory left behind.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';
import { counted } from './graphs-helpers.js';

const { F } = torch;
const devices = suiteDevices();
const gpus = devices.filter((d) => d !== 'cpu');

/** A tensor of `a` in `shape` on d (the reshape's source handle freed). */
const make = (a: Float32Array, shape: number[], d: string) => torch.tidy(() => torch.tensor(a, { device: d }).reshape(shape));
const ramp = (shape: number[], d: string) => torch.tidy(() => torch.linspace(-1, 1, shape.reduce((p, q) => p * q, 1), { device: d }).reshape(shape));
const flat = async (t: torch.Tensor) => Array.from((await t.data()) as Float32Array);
function expectClose(got: number[], want: number[], what: string, tol = 1e-4): void {
  expect(got.length, what).toBe(want.length);
  const scale = Math.max(1, ...want.map(Math.abs));
  let worst = 0;
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
  expect(worst / scale, what).toBeLessThan(tol);
}

/** The forward and every gradient of sum(conv2d(x, w, b, opts) · v) on device d. */
async function run(d: string, xs: Float32Array, ws: Float32Array, bs: Float32Array, shapes: number[][], opts: torch.ConvOptions) {
  const x = make(xs, shapes[0], d).requiresGrad_(), w = make(ws, shapes[1], d).requiresGrad_();
  const b = torch.tensor(bs, { device: d }).requiresGrad_();
  const y = F.conv2d(x, w, b, opts);
  const v = ramp(y.shape, d);
  const loss = torch.tidy(() => y.mul(v).sum());
  loss.backward();
  const out = { y: await flat(y), dx: await flat(x.grad!), dw: await flat(w.grad!), db: await flat(b.grad!) };
  for (const t of [x, w, b, y, v, loss, x.grad, w.grad, b.grad]) t?.dispose();
  return out;
}

const rand = (n: number, seed: number) => {
  const a = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) a[i] = ((s = (s * 48271) % 2147483647) / 2147483647) * 2 - 1;
  return a;
};

describe('conv2d on the cpu is one kernel each way', () => {
  it('conv2d (with bias) is 1 command forward and its gradients 1 command', async () => {
    const x = torch.randn([4, 3, 10, 9]).requiresGrad_(), w = torch.randn([5, 3, 3, 3]).requiresGrad_(), b = torch.randn([5]).requiresGrad_();
    let y: torch.Tensor | null = null;
    expect(await counted('cpu', () => (y = F.conv2d(x, w, b, { padding: 1 }))), 'forward').toEqual({ commands: 1, dispatches: 1 });
    const seed = torch.onesLike(y!);
    // the seed's copy, then the gradients
    expect((await counted('cpu', () => y!.backward(seed))).commands, 'backward').toBe(2);
    expect(x.grad!.shape).toEqual([4, 3, 10, 9]);
    expect(w.grad!.shape).toEqual([5, 3, 3, 3]);
    expect(b.grad!.shape).toEqual([5]);
    for (const t of [x, w, b, y, seed, x.grad, w.grad, b.grad]) t?.dispose();
  });

  it('the small CNN\'s layers, a batch of 16 (the pool\'s threads), match the GPU\'s composed convolution', async () => {
    for (const [shapes, opts] of [
      [[[16, 8, 14, 14], [16, 8, 3, 3]], { padding: 1 }],
      [[[16, 1, 28, 28], [8, 1, 3, 3]], { padding: 1 }],
      [[[5, 6, 11, 13], [4, 3, 3, 2]], { stride: [2, 1], padding: [1, 2], dilation: [1, 2], groups: 2 }],
    ] as [number[][], torch.ConvOptions][]) {
      const xs = rand(shapes[0].reduce((a, b) => a * b), 7), ws = rand(shapes[1].reduce((a, b) => a * b), 11), bs = rand(shapes[1][0], 13);
      const want = await run('cpu', xs, ws, bs, shapes, opts);
      for (const d of gpus) {
        const got = await run(d, xs, ws, bs, shapes, opts);
        for (const k of ['y', 'dx', 'dw', 'db'] as const) expectClose(want[k], got[k], `${k} of ${JSON.stringify(shapes)} on cpu against ${d}`);
      }
    }
  });

  it('with createGraph the input\'s and weight\'s gradients are differentiable in the upstream gradient, as on the GPU devices', async () => {
    const xs = rand(2 * 3 * 7 * 6, 3), ws = rand(4 * 3 * 3 * 3, 5);
    const second = async (d: string) => {
      const x = make(xs, [2, 3, 7, 6], d).requiresGrad_(), w = make(ws, [4, 3, 3, 3], d).requiresGrad_();
      const y = F.conv2d(x, w, null, { padding: 1, stride: [1, 2] });
      const v = ramp(y.shape, d).requiresGrad_();
      const [gx, gw] = torch.autograd.grad(y, [x, w], v, { createGraph: true });
      // d/dv of Σ gx² + Σ gw²: the gradient rule run again on the composed ops
      const s = torch.tidy(() => gx!.pow(2).sum().add(gw!.pow(2).sum()));
      const [gv] = torch.autograd.grad(s, [v]);
      const out = { gx: await flat(gx!), gw: await flat(gw!), gv: await flat(gv!) };
      for (const t of [x, w, y, v, gx, gw, s, gv]) t?.dispose();
      return out;
    };
    const want = await second('cpu');
    expect(want.gv.some((v) => v !== 0)).toBe(true);
    for (const d of gpus) {
      const got = await second(d);
      for (const k of ['gx', 'gw', 'gv'] as const) expectClose(want[k], got[k], `${k} on cpu against ${d}`);
    }
  });

  it('keeps the windows only while the weight needs a gradient, and leaves no memory behind', async () => {
    await torch.cpu.synchronize();
    const base = torch.gpu.memoryAllocated('cpu');
    const x = torch.randn([8, 4, 12, 12]), w = torch.randn([6, 4, 3, 3]).requiresGrad_();
    // the allocator's blocks are multiples of 512 bytes, as PyTorch's
    const outBytes = 8 * 6 * 12 * 12 * 4, windowBytes = 8 * 4 * 9 * 12 * 12 * 4, gradBytes = Math.ceil((w.numel() * 4) / 512) * 512;
    const inputs = torch.gpu.memoryAllocated('cpu') - base;
    // inference: the output alone
    const y0 = torch.noGrad(() => F.conv2d(x, w, null, { padding: 1 }));
    expect(torch.gpu.memoryAllocated('cpu') - base - inputs).toBe(outBytes);
    y0.dispose();
    // training: the output and the kept windows, freed by the backward
    const y = F.conv2d(x, w, null, { padding: 1 });
    expect(torch.gpu.memoryAllocated('cpu') - base - inputs).toBe(outBytes + windowBytes);
    const total = y.sum();
    total.backward();
    total.dispose();
    y.dispose();
    expect(torch.gpu.memoryAllocated('cpu') - base - inputs).toBe(gradBytes); // w.grad
    for (const t of [x, w, w.grad]) t?.dispose();
    await torch.cpu.synchronize();
    expect(torch.gpu.memoryAllocated('cpu')).toBe(base);
  });
});
