/**
 * The NN suite: every case of test/fixtures/goldens-nn.json (made by PyTorch, see
 * make_goldens_nn.py), forward and backward, on every device; then what goldens cannot show:
 * dropout's random mask, the errors at the call, methods and namespaces, and a training step.
 * After each test the allocated bytes and live storages of every device are back where they were.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck, testDevices } from '../devices.js';
import { goldenTests, loadGoldens, T, type Runner, pieces } from '../golden.js';

const goldens = loadGoldens('goldens-nn.json');
const devices = await testDevices();
const F = torch.F;
type Opt = torch.Tensor | undefined;

const RUNNERS: Record<string, Runner> = {
  softmax: ([x], kw) => F.softmax(T(x), kw.dim, { dtype: kw.dtype }),
  log_softmax: ([x], kw) => F.logSoftmax(T(x), kw.dim, { dtype: kw.dtype }),
  cross_entropy: ([x, t, w], kw) => F.crossEntropy(T(x), T(t), { weight: w as Opt, ignoreIndex: kw.ignore_index, labelSmoothing: kw.label_smoothing, reduction: kw.reduction }),
  nll_loss: ([x, t, w], kw) => F.nllLoss(T(x), T(t), { weight: w as Opt, ignoreIndex: kw.ignore_index, reduction: kw.reduction }),
  mse_loss: ([a, b], kw) => F.mseLoss(T(a), T(b), { reduction: kw.reduction }),
  l1_loss: ([a, b], kw) => F.l1Loss(T(a), T(b), { reduction: kw.reduction }),
  bce_with_logits: ([x, t, ...rest], kw) => F.binaryCrossEntropyWithLogits(T(x), T(t), {
    weight: kw.has_weight ? T(rest[0]) : null, posWeight: kw.has_pos_weight ? T(rest[rest.length - 1]) : null, reduction: kw.reduction,
  }),
  linear: ([x, w, b]) => F.linear(T(x), T(w), b as Opt),
  dropout: ([x], kw) => F.dropout(T(x), kw.p, kw.training),
  layer_norm: ([x, w, b], kw) => F.layerNorm(T(x), kw.normalized_shape, w as Opt, b as Opt, kw.eps),
  batch_norm: ([x, rm, rv, w, b], kw) => F.batchNorm(T(x), T(rm), T(rv), w as Opt, b as Opt, kw.training, kw.momentum, kw.eps),
  batch_norm_stats: ([x, rm, rv], kw) => {
    F.batchNorm(T(x), T(rm), T(rv), null, null, true, kw.momentum).dispose();
    return torch.stack([T(rm), T(rv)]);
  },
  var: ([x], kw) => torch.var(T(x), kw.dim, { correction: kw.correction, unbiased: kw.unbiased, keepdim: kw.keepdim }),
  std: ([x], kw) => torch.std(T(x), kw.dim, { correction: kw.correction, unbiased: kw.unbiased, keepdim: kw.keepdim }),
  logsumexp: ([x], kw) => torch.logsumexp(T(x), kw.dim, kw.keepdim),
  norm: ([x], kw) => torch.norm(T(x), kw.p === 'inf' ? Infinity : kw.p, kw.dim, kw.keepdim),
  pad: ([x], kw) => F.pad(T(x), kw.pad, 'constant', kw.value),
  unfold: ([x], kw) => F.unfold(T(x), kw.kernel_size, { stride: kw.stride, padding: kw.padding, dilation: kw.dilation }),
  conv2d: ([x, w, b], kw) => F.conv2d(T(x), T(w), b as Opt, kw),
  conv1d: ([x, w, b], kw) => F.conv1d(T(x), T(w), b as Opt, kw),
  max_pool2d: ([x], kw) => F.maxPool2d(T(x), kw.kernel_size, {
    stride: kw.stride, padding: kw.padding, dilation: kw.dilation, ceilMode: kw.ceil_mode, returnIndices: kw.return_indices,
  } as torch.MaxPool2dOptions & { returnIndices: true }),
  avg_pool2d: ([x], kw) => F.avgPool2d(T(x), kw.kernel_size, {
    stride: kw.stride, padding: kw.padding, ceilMode: kw.ceil_mode, countIncludePad: kw.count_include_pad, divisorOverride: kw.divisor_override,
  }),
  adaptive_avg_pool2d: ([x], kw) => F.adaptiveAvgPool2d(T(x), kw.output_size),
  cat: (args, kw) => torch.cat(args as torch.Tensor[], kw.dim),
  stack: (args, kw) => torch.stack(args as torch.Tensor[], kw.dim),
  split: ([x], kw) => pieces(torch.split(T(x), kw.size, kw.dim)),
  chunk: ([x], kw) => pieces(torch.chunk(T(x), kw.chunks, kw.dim)),
  roll: ([x], kw) => torch.roll(T(x), kw.shifts, kw.dims ?? undefined),
  repeat: ([x], kw) => T(x).repeat(kw.repeats),
  tril: ([x], kw) => torch.tril(T(x), kw.diagonal),
  triu: ([x], kw) => torch.triu(T(x), kw.diagonal),
};

leakCheck(() => devices);
afterAll(async () => {
  await torch.shutdown();
});

describe.each(devices)(`nn ops on %s (goldens from PyTorch ${goldens.torch})`, (device) => {
  goldenTests(goldens.cases, device, RUNNERS);
});

describe('the nn goldens', () => {
  it('cover every op with forward and backward cases', () => {
    for (const op of Object.keys(RUNNERS)) {
      const cases = goldens.cases.filter((c) => c.op === op);
      expect(cases.length, op).toBeGreaterThan(0);
      if (!['dropout', 'batch_norm_stats'].includes(op)) expect(cases.some((c) => c.grads), `${op} has a backward case`).toBe(true);
    }
  });
});

/** im2col on the host: [N, C·kh·kw, oh·ow] of x [N, C, H, W] (row-major values), zero padded. */
function hostUnfold(x: number[], [N, C, H, W]: number[], k: number[], s: number[], p: number[], d: number[]) {
  const oh = Math.floor((H + 2 * p[0] - d[0] * (k[0] - 1) - 1) / s[0]) + 1, ow = Math.floor((W + 2 * p[1] - d[1] * (k[1] - 1) - 1) / s[1]) + 1;
  const out: number[] = [], from: number[] = [];
  for (let n = 0; n < N; n++) for (let c = 0; c < C; c++) for (let i = 0; i < k[0]; i++) for (let j = 0; j < k[1]; j++) {
    for (let oy = 0; oy < oh; oy++) for (let ox = 0; ox < ow; ox++) {
      const y = oy * s[0] + i * d[0] - p[0], xx = ox * s[1] + j * d[1] - p[1], inside = y >= 0 && y < H && xx >= 0 && xx < W;
      const at = ((n * C + c) * H + y) * W + xx;
      out.push(inside ? x[at] : 0);
      from.push(inside ? at : -1);
    }
  }
  return { out, from, oh, ow };
}

describe.each(devices)('sliding windows on %s', (device) => {
  const shape = [2, 3, 5, 7], k = [3, 2], s = [1, 2], p = [2, 1], d = [2, 3];
  const values = Array.from({ length: 2 * 3 * 5 * 7 }, (_, i) => i + 1);
  const flat = async (t: torch.Tensor) => {
    const f = t.flatten(), v = await f.values();
    f.dispose();
    return v;
  };

  /**
   * Runs `f`; on a GPU, also requires that its windows came from the path that adapter takes: the
   * windows kernel on a CPU adapter (lavapipe), the composed pad and strided copy elsewhere (the
   * kernel was slower on an H100: `windowsAsOne` in ts/worker/gpu.ts).
   */
  async function viaKernel<T>(f: () => Promise<T>): Promise<T> {
    if (!device.startsWith('gpu')) return f();
    const kernel = (await torch.gpu.getDeviceProperties(device)).cpuAdapter;
    await torch._profileWorker(torch.device(device), true);
    const r = await f();
    const prof = await torch._profileWorker(torch.device(device), false);
    if (kernel) expect(prof?.commands.windows?.count, 'windows commands run').toBeGreaterThan(0);
    else expect(prof?.commands.windows, 'no windows command on a GPU that composes them').toBeUndefined();
    return r;
  }

  /** Runs `f` and requires that max pooling ran as its own kernel (`maxPool`), with no windows copied out, on every device. */
  async function viaPoolKernel<T>(f: () => Promise<T>): Promise<T> {
    await torch._profileWorker(torch.device(device), true);
    const r = await f();
    const prof = await torch._profileWorker(torch.device(device), false);
    expect(prof?.commands.maxPool?.count, 'maxPool commands run').toBeGreaterThan(0);
    expect(prof?.commands.windows, 'no windows copied out').toBeUndefined();
    return r;
  }

  it('unfold reads every window position with padding, stride and dilation, and its gradient sums them back', async () => {
    const ref = hostUnfold(values, shape, k, s, p, d);
    const w = ref.out.map((_, i) => (i % 7) - 3);
    const grad = values.map(() => 0);
    ref.from.forEach((at, i) => { if (at >= 0) grad[at] += w[i]; });
    await viaKernel(async () => {
      const x = torch.tidy(() => torch.tensor(values, { device, dtype: 'float32' }).reshape(shape)).requiresGrad_();
      const u = F.unfold(x, k, { stride: s, padding: p, dilation: d });
      expect(u.shape).toEqual([2, 3 * 3 * 2, ref.oh * ref.ow]);
      expect(await flat(u)).toEqual(ref.out);
      const wt = torch.tidy(() => torch.tensor(w, { device, dtype: 'float32' }).reshape(u.shape)), loss = torch.tidy(() => u.mul(wt).sum());
      loss.backward();
      expect(await flat(x.grad!)).toEqual(grad);
      [x, u, wt, loss, x.grad!].forEach((t) => t.dispose());
    });
  });

  it('max pooling skips the padding (a window of negative values never takes a padding zero), also on a channels-last view', async () => {
    const neg = values.map((v) => -v);
    const pk = [3, 3], ps = [2, 2], pp = [1, 1], pd = [1, 2];
    const { from, oh, ow } = hostUnfold(neg, shape, pk, ps, pp, pd);
    const want: number[] = [];
    for (let nc = 0; nc < 6; nc++) {
      for (let o = 0; o < oh * ow; o++) {
        let m = -Infinity;
        for (let q = 0; q < 9; q++) { const at = from[(nc * 9 + q) * oh * ow + o]; if (at >= 0) m = Math.max(m, neg[at]); }
        want.push(m);
      }
    }
    await viaPoolKernel(async () => {
      const x = torch.tidy(() => torch.tensor(neg, { device, dtype: 'float32' }).reshape(shape));
      const last = torch.tidy(() => x.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2]));
      for (const input of [x, last]) {
        const y = F.maxPool2d(input, pk, { stride: ps, padding: pp, dilation: pd });
        expect(y.shape).toEqual([2, 3, oh, ow]);
        expect(await flat(y)).toEqual(want);
        y.dispose();
      }
      [x, last].forEach((t) => t.dispose());
    });
  });
});

describe.each(devices)('dropout on %s', (device) => {
  it('zeroes about p of the elements, scales the rest by 1/(1-p), and its gradient is the same mask', async () => {
    torch.manualSeed(7);
    const x = torch.ones([4000], { device }).requiresGrad_();
    const y = F.dropout(x, 0.3), total = y.sum();
    total.backward();
    const [out, grad] = [(await y.values()) as number[], (await x.grad!.values()) as number[]];
    const kept = out.filter((v) => v !== 0);
    expect(kept.every((v) => Math.abs(v - 1 / 0.7) < 1e-6)).toBe(true);
    expect(Math.abs(kept.length / out.length - 0.7)).toBeLessThan(0.03);
    expect(grad).toEqual(out);
    [x, y, total, x.grad!].forEach((t) => t.dispose());
  });

  it('draws the same mask on every device for one seed', async () => {
    const masks = [];
    for (const d of devices) {
      torch.manualSeed(11);
      const x = torch.ones([64], { device: d });
      const y = F.dropout(x, 0.5);
      masks.push(await y.values());
      x.dispose();
      y.dispose();
    }
    masks.forEach((m) => expect(m).toEqual(masks[0]));
  });

  it('is a view of x when not training, and p = 1 zeroes everything', async () => {
    const x = torch.tensor([1, 2, 3], { dtype: 'float32', device });
    const a = F.dropout(x, 0.5, false), b = F.dropout(x, 1);
    expect(a).not.toBe(x);
    expect(await a.tolist()).toEqual([1, 2, 3]);
    expect(await b.tolist()).toEqual([0, 0, 0]);
    [x, a, b].forEach((t) => t.dispose());
  });
});

describe.each(devices)('a training step on %s', (device) => {
  it('conv → batchNorm → relu → maxPool → linear → crossEntropy: gradients reach every parameter and SGD lowers the loss', async () => {
    torch.manualSeed(0);
    const x = torch.randn([8, 1, 6, 6], { device }), y = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1], { device });
    const init = [torch.randn([4, 1, 3, 3], { device }), torch.zeros([4], { device }), torch.ones([4], { device }), torch.zeros([4], { device }),
      torch.randn([3, 36], { device }), torch.zeros([3], { device })];
    const params = init.map((p) => p.mul(0.5).requiresGrad_());
    init.forEach((p) => p.dispose());
    const [cw, cb, g, b, lw, lb] = params;
    const rm = torch.zeros([4], { device }), rv = torch.ones([4], { device });
    const losses: number[] = [];
    for (let step = 0; step < 4; step++) {
      const a = F.conv2d(x, cw, cb, { padding: 1 }), n = F.batchNorm(a, rm, rv, g, b, true), r = F.relu(n), h = F.maxPool2d(r, 2);
      const f = h.flatten(1), logits = F.linear(f, lw, lb), loss = F.crossEntropy(logits, y);
      [a, n, r, h, f, logits].forEach((t) => t.dispose());
      losses.push((await loss.item()) as number);
      loss.backward();
      loss.dispose();
      torch.noGrad(() => params.forEach((p) => {
        const step = p.grad!.mul(0.5), next = p.sub(step);
        p.copy_(next);
        [step, next].forEach((t) => t.dispose());
        p.grad!.dispose();
        p.grad = null;
      }));
    }
    expect(losses[3]).toBeLessThan(losses[0]);
    expect(((await rm.values()) as number[]).some((v) => v !== 0)).toBe(true);
    [x, y, rm, rv, ...params].forEach((t) => t.dispose());
  });
});

describe('methods and namespaces', () => {
  it('Tensor methods forward to the functional ops', async () => {
    const x = torch.tensor([[1, 2, 3], [4, 5, 7]], { dtype: 'float32' });
    const pairs: [torch.Tensor, torch.Tensor][] = [
      [x.softmax(1), F.softmax(x, 1)], [x.logSoftmax(0), F.logSoftmax(x, 0)], [x.var(1), torch.var(x, 1)],
      [x.std(undefined, { correction: 0 }), torch.std(x, undefined, { correction: 0 })], [x.logsumexp(1), torch.logsumexp(x, 1)],
      [x.norm(1), torch.norm(x, 1)], [x.roll(1, 1), torch.roll(x, 1, 1)], [x.repeat(2, 1), x.repeat([2, 1])],
      [x.tril(), torch.tril(x)], [x.triu(1), torch.triu(x, 1)],
    ];
    for (const [a, b] of pairs) expect(await a.tolist()).toEqual(await b.tolist());
    const parts = [...x.split(2, 1), ...x.chunk(2)];
    expect(parts.map((p) => p.shape)).toEqual([[2, 2], [2, 1], [1, 3], [1, 3]]);
    [x, ...pairs.flat(), ...parts].forEach((t) => t.dispose());
  });

  it('torch.F holds the functional ops', () => {
    for (const name of ['softmax', 'logSoftmax', 'nllLoss', 'crossEntropy', 'linear', 'mseLoss', 'l1Loss', 'binaryCrossEntropyWithLogits', 'dropout',
      'layerNorm', 'batchNorm', 'pad', 'unfold', 'conv1d', 'conv2d', 'maxPool2d', 'avgPool2d', 'adaptiveAvgPool2d', 'relu', 'gelu', 'silu', 'sigmoid', 'tanh', 'softplus']) {
      expect(typeof (F as unknown as Record<string, unknown>)[name], name).toBe('function');
    }
  });

  it('std and the 2-norm have a zero gradient where they are zero, as in PyTorch', async () => {
    const x = torch.tensor([2, 2, 2], { dtype: 'float32' }).requiresGrad_();
    const z = torch.zeros([3]).requiresGrad_();
    const s = x.std(), n = z.norm();
    s.backward();
    n.backward();
    expect(await x.grad!.tolist()).toEqual([0, 0, 0]);
    expect(await z.grad!.tolist()).toEqual([0, 0, 0]);
    [x, z, s, n, x.grad!, z.grad!].forEach((t) => t.dispose());
  });
});

describe('errors at the call', () => {
  let t: Record<string, torch.Tensor>;
  beforeAll(() => {
    t = {
      x: torch.randn([3, 4]), x23: torch.randn([2, 3]), img: torch.randn([1, 3, 5, 5]), img4: torch.randn([1, 4, 5, 5]), img8: torch.randn([1, 8, 5, 5]),
      small: torch.randn([1, 4, 2, 2]), row: torch.randn([1, 3]), w: torch.randn([8, 4, 3, 3]), f3: torch.randn([3]), f4: torch.zeros([4]),
      ints: torch.tensor([0, 1, 2]), i32: torch.tensor([0, 1, 2], { dtype: 'int32' }), t2: torch.tensor([0, 1]),
    };
  });
  afterAll(() => Object.values(t).forEach((v) => v.dispose()));
  const cases: [string, () => unknown, RegExp][] = [
    ['softmax of int64 names the dtype', () => F.softmax(t.ints, 0), /"softmax" not implemented for 'Long' \(input of shape \[3\]\)/],
    ['softmax needs a dim', () => F.softmax(t.x, undefined as unknown as number), /dim argument is required/],
    ['softmax dim out of range', () => F.softmax(t.x, 2), /Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)/],
    ['cross_entropy batch mismatch', () => F.crossEntropy(t.x, t.t2), /Expected input batch_size \(3\) to match target batch_size \(2\)/],
    ['cross_entropy int32 target', () => F.crossEntropy(t.x, t.i32), /expected scalar type Long but found Int/],
    ['cross_entropy bad reduction', () => F.crossEntropy(t.x, t.ints, { reduction: 'avg' as 'mean' }), /"avg" is not a valid value for reduction/],
    ['cross_entropy label smoothing range', () => F.crossEntropy(t.x, t.ints, { labelSmoothing: 1.5 }), /label_smoothing must be between 0.0 and 1.0. Got: 1.5/],
    ['cross_entropy int input', () => F.crossEntropy(t.ints, t.ints), /cross_entropy\(\): expected input to have a floating point dtype, but got int64/],
    ['nll_loss weight size', () => F.nllLoss(t.x, t.ints, { weight: t.f3 }), /weight tensor should be defined either for all 4 classes or no classes but got weight tensor of shape: \[3\]/],
    ['nll_loss spatial target', () => F.nllLoss(t.img, t.x), /Expected target size \[1, 5, 5\], got \[3, 4\]|expected scalar type Long but found Float/],
    ['linear shapes', () => F.linear(t.x, t.x23), /mat1 and mat2 shapes cannot be multiplied \(3x4 and 3x2\)/],
    ['bce target size', () => F.binaryCrossEntropyWithLogits(t.x, t.img), /Target size \(\[1, 3, 5, 5\]\) must be the same as input size \(\[3, 4\]\)/],
    ['mse_loss shapes', () => F.mseLoss(t.x, t.x23), /The size of tensor a \(\d\) must match the size of tensor b \(\d\)/],
    ['dropout p', () => F.dropout(t.x, 1.5), /dropout probability has to be between 0 and 1, but got 1.5/],
    ['layer_norm shape', () => F.layerNorm(t.x, [3]), /Given normalized_shape=\[3\], expected input with shape \[\*, 3\], but got input of size\[3, 4\]/],
    ['layer_norm weight', () => F.layerNorm(t.x, [4], t.f3), /Expected weight to be of same shape as normalized_shape, but got weight of shape \[3\] and normalized_shape = \[4\]/],
    ['batch_norm running stats size', () => F.batchNorm(t.img, t.f4, null, null, null, true), /running_mean should contain 3 elements not 4/],
    ['batch_norm eval without stats', () => F.batchNorm(t.img, null, null), /running_mean must be defined in evaluation mode/],
    ['batch_norm one value per channel', () => F.batchNorm(t.row, null, null, null, null, true), /Expected more than 1 value per channel when training, got input size \[1, 3\]/],
    ['var of int64', () => torch.var(t.ints), /std and var only support floating point and complex dtypes/],
    ['norm p', () => torch.norm(t.x, 3), /p=3 is not supported/],
    ['logsumexp dim', () => torch.logsumexp(t.x, 3), /Dimension out of range/],
    ['conv2d channels', () => F.conv2d(t.img, t.w), /Given groups=1, weight of size \[8, 4, 3, 3\], expected input\[1, 3, 5, 5\] to have 4 channels, but got 3 channels instead/],
    ['conv2d input dims', () => F.conv2d(t.x, t.w), /Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: \[3, 4\]/],
    ['conv2d kernel too large', () => F.conv2d(t.small, t.w), /Calculated padded input size per channel: \(2 x 2\). Kernel size: \(3 x 3\). Kernel size can't be greater than actual input size/],
    ['conv2d groups', () => F.conv2d(t.img8, t.w, null, { groups: 3 }), /Given groups=3, expected weight to be divisible by 3 at dimension 0/],
    ['conv2d stride', () => F.conv2d(t.img4, t.w, null, { stride: 0 }), /non-positive stride is not supported/],
    ['conv2d same + stride', () => F.conv2d(t.img4, t.w, null, { padding: 'same', stride: 2 }), /padding='same' is not supported for strided convolutions/],
    ['conv2d bias', () => F.conv2d(t.img4, t.w, t.f3), /expected bias to be 1-dimensional with 8 elements, but got bias of size \[3\]/],
    ['conv1d weight dims', () => F.conv1d(t.img, t.w), /Expected 2D \(unbatched\) or 3D \(batched\) input to conv1d, but got input of size: \[1, 3, 5, 5\]/],
    ['max_pool2d padding', () => F.maxPool2d(t.img, 3, { padding: 2 }), /pad should be at most half of kernel size, but got pad=2 and kernel_size=3/],
    ['max_pool2d output too small', () => F.maxPool2d(t.img, 6), /Given input size: \(3x5x5\). Calculated output size: \(3x0x0\). Output size is too small/],
    ['avg_pool2d input dims', () => F.avgPool2d(t.x, 2), /non-empty 3D or 4D \(batch mode\) tensor expected for input, but got \[3, 4\]/],
    ['adaptive_avg_pool2d size', () => F.adaptiveAvgPool2d(t.img, [0, 2]), /output_size must be a positive integer/],
    ['unfold dims', () => F.unfold(t.x, 2), /Only 3D or 4D input Tensors are supported \(got 2D\)/],
    ['pad odd length', () => F.pad(t.x, [1]), /Padding length must be divisible by 2/],
    ['pad mode', () => F.pad(t.x, [1, 1], 'reflect' as 'constant'), /mode 'reflect' is not supported/],
    ['pad crops too much', () => F.pad(t.x, [-3, -2]), /The input size 4, plus negative padding -3 and -2 resulted in a negative output size/],
    ['cat ranks', () => torch.cat([t.x, t.img]), /Tensors must have same number of dimensions: got 2 and 4/],
    ['cat other dim', () => torch.cat([t.x, t.x23]), /Sizes of tensors must match except in dimension 0. Expected size 4 but got size 3 for tensor number 1 in the list./],
    ['cat empty list', () => torch.cat([]), /expected a non-empty list of Tensors/],
    ['stack sizes', () => torch.stack([t.x, t.x23]), /stack expects each tensor to be equal size, but got \[3, 4\] at entry 0 and \[2, 3\] at entry 1/],
    ['split sections', () => torch.split(t.x, [1, 1]), /split_with_sizes expects split_sizes to sum exactly to 3/],
    ['chunk count', () => torch.chunk(t.x, 0), /chunk expects `chunks` to be greater than 0, got: 0/],
    ['roll shifts/dims', () => torch.roll(t.x, [1, 2], [0]), /shifts and dimensions must align. shifts: 2, dims:1/],
    ['repeat dims', () => t.x.repeat(2), /Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor/],
    ['unknown option', () => F.crossEntropy(t.x, t.ints, { ignore_index: 1 } as object), /cross_entropy\(\) got an unexpected keyword argument 'ignore_index'/],
    ['unknown conv option', () => F.conv2d(t.img4, t.w, null, { pad: 1 } as object), /conv2d\(\) got an unexpected keyword argument 'pad'/],
    ['tril 1-D', () => torch.tril(t.ints), /tril: input tensor must have at least 2 dimensions/],
  ];
  it.each(cases)('%s', (_name, fn, re) => {
    expect(fn).toThrow(re);
  });
  it('cross-device inputs name both devices', () => {
    if (devices.length < 2) return;
    const b = torch.tensor([0, 1, 2], { device: devices[1] });
    expect(() => F.crossEntropy(t.x, b)).toThrow(/Expected all tensors to be on the same device, but found at least two devices, cpu and gpu:0!/);
    b.dispose();
  });
});
