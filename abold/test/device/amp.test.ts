/**
 * Mixed precision on every device: autocast's output dtypes per op against PyTorch's lists
 * (test/fixtures/amp-goldens.json), the cast cache, nesting, `enabled: false`, async scoping,
 * gradients through the casts, GradScaler against PyTorch's own GradScaler, a skipped step, AMP
 * training of the digits demo's model on gpu:0, and misuse.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const { F } = torch;
const goldens = JSON.parse(readFileSync(new URL('../fixtures/amp-goldens.json', import.meta.url), 'utf8'));
const devices = suiteDevices();
// Each device's random generator keeps its state on the device from the first draw: draw once before the leak checks.
beforeAll(() => devices.forEach((d) => torch.rand([1], { device: d }).dispose()));
const typeOf = (d: string) => (d === 'cpu' ? 'cpu' : 'gpu');
/** Frees modules' parameters and their gradients. */
const free = (...ms: torch.nn.Module[]) => ms.forEach((m) => m.parameters().forEach((p) => {
  p.grad?.dispose();
  p.dispose();
}));
const num = (v: number | string) => (v === 'nan' ? NaN : v === 'inf' ? Infinity : v === '-inf' ? -Infinity : (v as number));

/** The calls of make_goldens_amp.py, on `dev`: float32 inputs for the low-precision ops, a bfloat16 activation `h` for the others. */
function calls(dev: string, owned: torch.Tensor[]): Record<string, () => torch.Tensor> {
  const o = <T extends torch.Tensor>(t: T) => (owned.push(t), t);
  const x = o(torch.randn([4, 6], { device: dev })), w = o(torch.randn([5, 6], { device: dev })), b = o(torch.randn([5], { device: dev }));
  const t = o(torch.tensor([0, 1, 2, 3], { dtype: 'int64', device: dev }));
  const h = o(torch.randn([4, 5], { device: dev, dtype: 'bfloat16' })), tf = o(torch.rand([4, 5], { device: dev }));
  const tb = o(tf.to('bfloat16')), wt = o(w.transpose(0, 1));
  const img = o(torch.randn([2, 3, 8, 8], { device: dev })), k = o(torch.randn([4, 3, 3, 3], { device: dev }));
  const seq = o(torch.randn([2, 3, 8], { device: dev })), k1 = o(torch.randn([4, 3, 3], { device: dev }));
  return {
    matmul: () => torch.matmul(x, wt),
    linear: () => F.linear(x, w, b),
    conv1d: () => F.conv1d(seq, k1),
    conv2d: () => F.conv2d(img, k),
    softmax: () => torch.softmax(h, 1),
    log_softmax: () => torch.logSoftmax(h, 1),
    sum: () => h.sum(),
    prod: () => h.prod(),
    cumsum: () => h.cumsum(0),
    layer_norm: () => F.layerNorm(h, [5]),
    cross_entropy: () => F.crossEntropy(h, t),
    nll_loss: () => F.nllLoss(h, t),
    mse_loss: () => F.mseLoss(h, tb),
    l1_loss: () => F.l1Loss(h, tb),
    binary_cross_entropy_with_logits: () => F.binaryCrossEntropyWithLogits(h, tb),
    exp: () => torch.exp(h),
    relu: () => torch.relu(h),
    add: () => h.add(tf),
    cat: () => torch.cat([h, tf]),
    stack: () => torch.stack([h, tf]),
  };
}

describe('autocast', () => {
  it('gives each op the output dtype PyTorch gives it (its CPU lists on cpu, its CUDA lists on gpu)', () => {
    for (const d of devices) {
      const owned: torch.Tensor[] = [];
      const ops = calls(d, owned);
      const want = goldens.autocast[typeOf(d)] as Record<string, string>;
      expect(Object.keys(ops).sort()).toEqual(Object.keys(want).sort());
      for (const low of ['bfloat16', 'float16'] as const) {
        const got = torch.autocast(typeOf(d), { dtype: low }, () =>
          Object.fromEntries(Object.entries(ops).map(([name, f]) => {
            const y = f();
            owned.push(y);
            return [name, y.dtype];
          })));
        for (const [name, dt] of Object.entries(want)) {
          // 'low' is the region's dtype; the rest were computed from a bfloat16 activation.
          expect(got[name], `${name} on ${d} in a ${low} region`).toBe(dt === 'low' ? low : dt);
        }
      }
      // Outside a region nothing is cast.
      const plain = ops.matmul(), soft = ops.softmax();
      expect([plain.dtype, soft.dtype]).toEqual(['float32', 'bfloat16']);
      [...owned, plain, soft].forEach((t) => t.dispose());
    }
  });

  it('leaves tensors of the other device type, integer tensors and explicit dtypes alone', () => {
    const [gpu] = devices.filter((d) => d !== 'cpu');
    const x = torch.randn([3, 3]), xi = torch.ones([3, 3], { dtype: 'int64' });
    const xg = gpu ? torch.randn([3, 3], { device: gpu }) : null, xh = xg ? xg.half() : null;
    const out = torch.autocast('gpu', () => [
      x.matmul(x),                 // cpu tensor in a gpu region
      xi.matmul(xi),               // integers are not eligible
      ...(xg ? [xg.matmul(xg), torch.softmax(xh!, 1, { dtype: 'float16' })] : []),
    ]);
    expect(out.map((t) => t.dtype)).toEqual(['float32', 'int64', ...(xg ? ['float16', 'float16'] : [])]);
    [x, xi, ...(xg ? [xg, xh!] : []), ...out].forEach((t) => t.dispose());
  });

  it('caches the low-precision cast of a weight (a float32 leaf requiring grad) for the region, and frees it at the end', () => {
    for (const d of devices) {
      const dev = torch.device(d);
      const w = torch.randn([8, 8], { device: d, requiresGrad: true }), x = torch.randn([2, 8], { device: d });
      const live = () => torch._liveStorage(dev).count;
      const base = live();
      const counts: number[] = [];
      torch.autocast(typeOf(d), { dtype: 'float16' }, () => {
        const a = x.matmul(w);
        counts.push(live() - base);  // a, the cached cast of w, and x's cast (kept by the tape for w's gradient)
        const b = x.matmul(w);
        counts.push(live() - base);  // b and x's cast again, but not w's: it is reused
        const c = torch.autocast(typeOf(d), { dtype: 'float16' }, () => x.matmul(w)); // a nested region shares the cache
        counts.push(live() - base);
        [a, b, c].forEach((t) => t.dispose());
        counts.push(live() - base);  // the outputs and their tapes are gone; w's cast is still cached
      });
      counts.push(live() - base);    // freed with the region
      expect(counts, d).toEqual([3, 5, 7, 1, 0]);
      // cacheEnabled: false, or a tensor that is not a weight: nothing stays.
      const off: number[] = [];
      torch.autocast(typeOf(d), { cacheEnabled: false }, () => {
        const a = x.matmul(w);
        off.push(live() - base);
        a.dispose();
      });
      torch.autocast(typeOf(d), () => {
        const [wd, xt] = [w.detach(), x.transpose(0, 1)];
        const a = wd.matmul(xt);
        off.push(live() - base);
        [a, wd, xt].forEach((t) => t.dispose());
      });
      expect(off, d).toEqual([2, 1]); // a and x's cast (for the tape); then an output of a graph-free call only
      [w, x].forEach((t) => t.dispose());
    }
  });

  it('nests: an inner region can change the dtype or turn autocasting off', () => {
    for (const d of devices) {
      const x = torch.randn([2, 2], { device: d });
      const type = typeOf(d);
      const seen: unknown[] = [];
      const outs = torch.autocast(type, { dtype: 'float16' }, () => {
        seen.push(torch.isAutocastEnabled(type), torch.getAutocastDtype(type));
        const a = x.matmul(x);
        const b = torch.autocast(type, { enabled: false }, () => (seen.push(torch.isAutocastEnabled(type)), x.matmul(x)));
        const c = torch.autocast(type, { dtype: 'bfloat16' }, () => x.matmul(x));
        const e = x.matmul(x);
        return [a, b, c, e];
      });
      seen.push(torch.isAutocastEnabled(type));
      expect(outs.map((t) => t.dtype), d).toEqual(['float16', 'float32', 'bfloat16', 'float16']);
      expect(seen).toEqual([true, 'float16', false, false]);
      [x, ...outs].forEach((t) => t.dispose());
    }
  });

  it('scopes an async region to its own task: concurrent work outside it is not cast', async () => {
    for (const d of devices) {
      const x = torch.randn([4, 4], { device: d });
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const inside = torch.autocast(typeOf(d), async () => {
        await gate;
        return x.matmul(x);
      });
      const outside = x.matmul(x); // runs while the region awaits
      release();
      const a = await inside;
      const after = x.matmul(x);
      expect([a.dtype, outside.dtype, after.dtype], d).toEqual([d === 'cpu' ? 'bfloat16' : 'float16', 'float32', 'float32']); // each device type's default
      expect(torch.isAutocastEnabled(typeOf(d))).toBe(false);
      [x, a, outside, after].forEach((t) => t.dispose());
    }
  });

  it('passes gradients back through the casts to the float32 parameters', async () => {
    for (const d of devices) {
      torch.manualSeed(3);
      const lin = new torch.nn.Linear(6, 4).to(d);
      const x = torch.randn([5, 6], { device: d }), y = torch.tensor([0, 1, 2, 3, 0], { dtype: 'int64', device: d });
      const grads = async (amp: boolean) => {
        lin.zeroGrad();
        const loss = torch.autocast(typeOf(d), { enabled: amp, dtype: 'bfloat16' }, () => torch.tidy(() => F.crossEntropy(lin.call(x), y)));
        expect(loss.dtype).toBe('float32');
        loss.backward();
        loss.dispose();
        return [lin.weight.grad!.dtype, lin.bias!.grad!.dtype, await lin.weight.grad!.tolist() as number[][]] as const;
      };
      const [wd, bd, low] = await grads(true);
      const [, , full] = await grads(false);
      expect([wd, bd]).toEqual(['float32', 'float32']);
      low.flat().forEach((v, i) => expect(Math.abs(v - full.flat()[i]), `${d} grad[${i}]`).toBeLessThan(2e-2));
      expect(low.flat().some((v, i) => v !== full.flat()[i]), 'bfloat16 differs from float32 somewhere').toBe(true);
      [x, y].forEach((t) => t.dispose());
      free(lin);
    }
  });

  it('refuses an unsupported dtype or device type with PyTorch\'s words', () => {
    expect(() => torch.autocast('gpu', { dtype: 'int32' as 'float16' }, () => 0)).toThrow(/In CUDA autocast, but the target dtype is not supported.*int32/);
    expect(() => torch.autocast('cpu', { dtype: 'float32' as 'float16' }, () => 0)).toThrow(/In CPU autocast, but the target dtype is not supported/);
    expect(() => torch.autocast('tpu', () => 0)).toThrow(/unsupported autocast device_type 'tpu'/);
    expect(() => torch.autocast('gpu', { dtpye: 'float16' } as never, () => 0)).toThrow(/unexpected keyword argument 'dtpye'/);
    expect(() => torch.autocast('gpu', {} as never)).toThrow(/expected a callback/);
    expect(torch.isAutocastEnabled('gpu')).toBe(false);
  });
});

describe('GradScaler', () => {
  /** PyTorch's run of make_goldens_amp.py: a Linear(3, 1), SGD, a gradient made inf on some steps. */
  async function replay(d: string, c: any) {
    const lin = new torch.nn.Linear(3, 1).to(d);
    torch.noGrad(() => {
      torch.tidy(() => {
        lin.weight.copy_(torch.tensor([c.init.weight]));
        lin.bias!.copy_(torch.tensor(c.init.bias));
      });
    });
    const opt = new torch.optim.SGD(lin.parameters(), { lr: 0.1 });
    const scaler = new torch.amp.GradScaler(typeOf(d), { initScale: c.initScale, growthFactor: 2, backoffFactor: 0.5, growthInterval: c.growthInterval });
    const xs = torch.tensor([[1, 2, -1], [0.5, -0.5, 2]], { device: d }), ys = torch.tensor([[1], [-1]], { device: d });
    for (const [i, want] of c.steps.entries()) {
      const before = await lin.weight.tolist();
      opt.zeroGrad();
      const loss = torch.tidy(() => F.mseLoss(lin.call(xs), ys));
      const scaled = torch.tidy(() => (c.infSteps.includes(i) ? scaler.scale(loss).mul(Infinity) : scaler.scale(loss)));
      scaled.backward();
      if (want.unscaledGrad) {
        scaler.unscale_(opt);
        const g = (await lin.weight.grad!.tolist() as number[][]).flat();
        if (c.infSteps.includes(i)) expect(g.some((v) => !Number.isFinite(v)), `step ${i} grad not finite`).toBe(true);
        else g.forEach((v, j) => expect(v, `step ${i} unscaled grad[${j}]`).toBeCloseTo(num(want.unscaledGrad[j]), 4));
      }
      await scaler.step(opt);
      scaler.update();
      expect(await scaler.getScale(), `${d} scale after step ${i}`).toBe(want.scale);
      const w = (await lin.weight.tolist() as number[][]).flat();
      if (c.infSteps.includes(i)) expect(w, `${d} step ${i} was skipped: weights unchanged`).toEqual((before as number[][]).flat());
      w.forEach((v, j) => expect(v, `${d} step ${i} weight[${j}]`).toBeCloseTo(want.weight[j], 5));
      expect(await loss.item()).toBeCloseTo(want.loss, 5);
      [loss, scaled].forEach((t) => t.dispose());
    }
    expect(await scaler.stateDict()).toEqual(c.stateDict);
    scaler.dispose();
    [xs, ys].forEach((t) => t.dispose());
    free(lin);
  }

  it('moves its scale and skips steps as PyTorch\'s GradScaler does (backoff on inf, growth after growthInterval)', async () => {
    for (const d of devices) for (const c of goldens.gradScaler) await replay(d, c);
  });

  it('checks each device\'s gradients: an inf on gpu:0 skips the step of a model split over gpu:0 and gpu:1', async () => {
    const gpus = devices.filter((d) => d !== 'cpu');
    const [d0, d1] = gpus.length >= 2 ? gpus : ['cpu', 'cpu'];
    torch.manualSeed(5);
    const l0 = new torch.nn.Linear(4, 4).to(d0), l1 = new torch.nn.Linear(4, 1).to(d1);
    const opt = new torch.optim.SGD([...l0.parameters(), ...l1.parameters()], { lr: 0.1 });
    const scaler = new torch.amp.GradScaler('gpu', { initScale: 256 });
    const x = torch.randn([3, 4], { device: d0 });
    const weights = async () => [await l0.weight.tolist(), await l1.weight.tolist()];
    for (const poison of [true, false]) {
      const before = await weights();
      opt.zeroGrad();
      const loss = torch.tidy(() => l1.call(l0.call(x).to(d1)).pow(2).mean());
      torch.tidy(() => scaler.scale(loss).backward());
      if (poison) torch.tidy(() => l0.weight.grad!.copy_(torch.full([4, 4], Infinity, { device: d0 })));
      await scaler.step(opt);
      scaler.update();
      const after = await weights();
      if (poison) expect(after, 'skipped on both devices').toEqual(before);
      else expect(after[0], 'stepped').not.toEqual(before[0]);
      expect(await scaler.getScale()).toBe(128); // backed off once; no growth before 2000 clean steps
      loss.dispose();
    }
    opt.zeroGrad();
    scaler.dispose();
    [x].forEach((t) => t.dispose());
    free(l0, l1);
  });

  it('update(newScale), stateDict/loadStateDict, getters and disabled scalers', async () => {
    for (const d of devices) {
      const s = new torch.amp.GradScaler(typeOf(d), { initScale: 8, growthInterval: 5 });
      expect([await s.getScale(), s.getGrowthFactor(), s.getBackoffFactor(), s.getGrowthInterval(), s.isEnabled()]).toEqual([8, 2, 0.5, 5, true]);
      const x = torch.ones([2], { device: d });
      const y = s.scale(x);
      expect(await y.tolist()).toEqual([8, 8]);
      s.update(3);
      expect(await s.getScale()).toBe(3);
      const t = torch.tensor([6], { device: d });
      s.update(t);
      expect(await s.getScale()).toBe(6);
      const sd = await s.stateDict();
      const s2 = new torch.gpu.amp.GradScaler();
      s2.loadStateDict(sd);
      expect(await s2.stateDict()).toEqual({ scale: 6, growth_factor: 2, backoff_factor: 0.5, growth_interval: 5, _growth_tracker: 0 });
      const nested = s.scale([x, [x]]) as unknown as [torch.Tensor, [torch.Tensor]];
      expect(await nested[1][0].tolist()).toEqual([6, 6]);
      const off = new torch.amp.GradScaler(typeOf(d), { enabled: false });
      expect(off.scale(x)).toBe(x);
      expect([await off.getScale(), off.isEnabled(), await off.stateDict()]).toEqual([1, false, {}]);
      [x, y, t, nested[0], nested[1][0]].forEach((v) => v.dispose());
      s.dispose();
    }
  });

  it('refuses misuse with PyTorch\'s messages', async () => {
    for (const d of devices) {
      const lin = new torch.nn.Linear(2, 1).to(d);
      const opt = new torch.optim.SGD(lin.parameters(), { lr: 0.1 });
      const s = new torch.amp.GradScaler(typeOf(d));
      expect(() => s.unscale_(opt)).toThrow('Attempted unscale_ but _scale is None.');
      await expect(s.step(opt)).rejects.toThrow('Attempted step but _scale is None.');
      expect(() => s.update()).toThrow('Attempted update but _scale is None.');
      const x = torch.ones([1, 2], { device: d });
      const loss = torch.tidy(() => s.scale(lin.call(x).sum()));
      loss.backward();
      s.unscale_(opt);
      expect(() => s.unscale_(opt)).toThrow('unscale_() has already been called on this optimizer since the last update().');
      await s.step(opt);
      await expect(s.step(opt)).rejects.toThrow('step() has already been called since the last update().');
      expect(() => s.unscale_(opt)).toThrow('unscale_() is being called after step().');
      await expect(s.step(opt, { closure: () => 0 })).rejects.toThrow('Closure use is not currently supported if GradScaler is enabled.');
      s.update();
      expect(() => s.update()).toThrow('No inf checks were recorded prior to update.');
      expect(() => s.loadStateDict({})).toThrow(/The source state dict is empty/);
      expect(() => new torch.amp.GradScaler(typeOf(d), { growthFactor: 1 })).toThrow('The growth factor must be > 1.0.');
      expect(() => new torch.amp.GradScaler(typeOf(d), { backoffFactor: 1 })).toThrow('The backoff factor must be < 1.0.');
      expect(() => new torch.amp.GradScaler(typeOf(d), { initscale: 2 } as never)).toThrow(/unexpected keyword argument 'initscale'/);
      const half = new torch.nn.Linear(2, 1).to({ device: d, dtype: 'float16' });
      const hopt = new torch.optim.SGD(half.parameters(), { lr: 0.1 });
      const hl = torch.tidy(() => s.scale(half.call(x.half()).sum()));
      hl.backward();
      expect(() => s.unscale_(hopt)).toThrow('Attempting to unscale FP16 gradients.');
      s.dispose();
      [x, loss, hl].forEach((t) => t.dispose());
      free(lin, half);
    }
  });
});

describe('devices', () => {
  it('isBf16Supported and getDeviceProperties say how 16-bit math runs', async () => {
    expect(torch.gpu.isBf16Supported()).toBe(true);
    expect(torch.gpu.isBf16Supported(false)).toBe(false);
    for (const d of devices.filter((x) => x !== 'cpu')) {
      const p = await torch.gpu.getDeviceProperties(d);
      expect(p.halfPrecisionMath).toBe('float32');
      expect(p.shaderF16).toBe(p.features.includes('shader-f16'));
    }
  });
});

describe('AMP training', () => {
  it('trains the digits demo model on gpu:0 to the float32 run\'s accuracy', async () => {
    const d = devices.includes('gpu:0') ? 'gpu:0' : 'cpu';
    const raw = readFileSync(new URL('../../data/digits.u8', import.meta.url));
    const n = raw.length / 65, nTest = 360;
    // The images in a fixed shuffled order (a small LCG), as the demo shuffles them before splitting.
    const order = [...Array(n).keys()];
    let seed = 1234;
    for (let i = n - 1; i > 0; i--) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const j = seed % (i + 1);
      [order[i], order[j]] = [order[j], order[i]];
    }
    const px = new Float32Array(n * 64), lab: number[] = [];
    order.forEach((src, i) => {
      for (let j = 0; j < 64; j++) px[i * 64 + j] = raw[src * 65 + j] / 16;
      lab.push(raw[src * 65 + 64]);
    });
    const X = torch.tidy(() => torch.tensor(px, { device: d }).reshape(n, 64)), Y = torch.tensor(Int32Array.from(lab), { dtype: 'int64', device: d });
    const [trainX, testX] = [X.narrow(0, nTest, n - nTest), X.narrow(0, 0, nTest)], [trainY, testY] = [Y.narrow(0, nTest, n - nTest), Y.narrow(0, 0, nTest)];
    const run = async (amp: boolean) => {
      torch.manualSeed(0);
      const model = new torch.nn.Sequential(new torch.nn.Linear(64, 128), new torch.nn.ReLU(), new torch.nn.Linear(128, 64), new torch.nn.ReLU(), new torch.nn.Linear(64, 10)).to(d);
      const opt = new torch.optim.SGD(model.parameters(), { lr: 0.05, momentum: 0.9 });
      const scaler = new torch.amp.GradScaler('gpu', { enabled: amp });
      const bs = 64, m = n - nTest, dtypes = new Set<string>(), losses: number[] = [];
      for (let epoch = 0; epoch < 10; epoch++) {
        for (let i = 0; i + bs <= m; i += bs) {
          const [xb, yb] = [trainX.narrow(0, i, bs), trainY.narrow(0, i, bs)];
          opt.zeroGrad();
          const loss = torch.autocast(typeOf(d), { enabled: amp }, () => torch.tidy(() => {
            const logits = model.call(xb);
            if (i === 0) dtypes.add(logits.dtype);
            return F.crossEntropy(logits, yb);
          }));
          if (i === 0) losses.push(Number(await loss.item()));
          const scaled = scaler.scale(loss);
          scaled.backward();
          await scaler.step(opt);
          scaler.update();
          new Set([xb, yb, loss, scaled]).forEach((t) => t.dispose());
        }
      }
      const correct = torch.noGrad(() => torch.autocast(typeOf(d), { enabled: amp }, () => torch.tidy(() => model.call(testX).argmax(1).eq(testY).sum())));
      const acc = Number(await correct.item()) / nTest;
      correct.dispose();
      scaler.dispose();
      free(model);
      for (const st of opt.state.values()) for (const v of Object.values(st)) if (v instanceof torch.Tensor) v.dispose();
      return { acc, dtypes: [...dtypes], losses };
    };
    const full = await run(false), low = await run(true);
    const [f32, amp] = [full.acc, low.acc];
    expect([full.dtypes, low.dtypes]).toEqual([['float32'], [d === 'cpu' ? 'bfloat16' : 'float16']]);
    // The same training, in other precision: the losses follow each other closely but not exactly.
    full.losses.forEach((l, e) => expect(Math.abs(l - low.losses[e]), `epoch ${e} loss`).toBeLessThan(0.05));
    expect(full.losses).not.toEqual(low.losses);
    expect(f32).toBeGreaterThan(0.9);
    expect(amp, `AMP ${amp} vs float32 ${f32}`).toBeGreaterThanOrEqual(f32 - 0.02);
    [X, Y, trainX, testX, trainY, testY].forEach((t) => t.dispose());
  }, 120_000);
});
