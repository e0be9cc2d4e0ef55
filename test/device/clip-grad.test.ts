/**
 * `nn.utils.clipGradNorm_` as PyTorch's foreach path runs it (ts/nn/utils.ts): one `foreachNorm`
 * command over all float32 gradients of a device, the total and the coefficient on the device,
 * one `foreachMul` command; and `torch._foreachNorm` / `torch._foreachMul_` (ts/ops/foreach.ts;
 * wgsl/foreach.ts, assembly/kernels/foreach.ts), on cpu, gpu:0 and gpu:1.
 *
 * - PyTorch's goldens (test/fixtures/make_goldens_clip.py): 56 gradients of odd sizes (some over
 *   one workgroup's chunk of 4096 elements, one of 70001), norm types 2, 1, 3.5 and inf, a max norm
 *   under the total and one over it (no change), a gradient holding inf or NaN with
 *   errorIfNonfinite false (the values PyTorch gives) and true (the error, nothing scaled).
 * - The clip is a fixed number of commands (7) whatever the number of parameters.
 * - More segments than a dispatch binds; 16-bit, non-contiguous and other-device gradients
 *   among float32 ones; `foreach: false` gives the same values; a captured clip replays over new
 *   gradients; `_foreachNorm` of float16/bfloat16 tensors; `clipGradValue_` as one `foreachClamp`.
 *   (A gradient past the binding limit: test/device/large-tensors.test.ts.)
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';
import { capture, newGraph } from './graphs-helpers.js';

const { nn } = torch;
const devices = suiteDevices();

interface Case { normType: number | 'inf'; maxNorm: number; poison: number | string | null; total: number | string; norms: (number | string)[]; samples: (number | string)[][] }
const G = JSON.parse(readFileSync(new URL('../fixtures/clip-goldens.json', import.meta.url), 'utf8')) as { shapes: number[][]; scales: number[]; cases: Case[] };
const num = (v: number | string): number => (v === 'nan' ? NaN : v === 'inf' ? Infinity : v === '-inf' ? -Infinity : Number(v));
const numel = (s: number[]) => s.reduce((a, b) => a * b, 1);

/** Gradient k's values, as the generator makes them. */
function gradValues(k: number, poison: number | null = null): Float32Array {
  const n = numel(G.shapes[k]), v = new Float32Array(n);
  for (let i = 0; i < n; i++) v[i] = ((((k * 7919 + i * 104729) % 2001) - 1000) / 1000) * G.scales[k % 4];
  if (poison !== null && k === 5) v[3] = poison;
  return v;
}

/** The golden case's parameters on `d`, with their gradients. */
function params(d: string, poison: number | null = null, count = G.shapes.length): torch.Tensor[] {
  return G.shapes.slice(0, count).map((s, k) => {
    const p = torch.zeros(s, { device: d }).requiresGrad_();
    const flat = torch.tensor(Array.from(gradValues(k, poison)), { dtype: 'float32', device: d });
    p.grad = flat.reshape(s);
    flat.dispose();
    return p;
  });
}
function free(ps: torch.Tensor[]): void {
  for (const p of ps) {
    p.grad?.dispose();
    p.dispose();
  }
}
const near = (got: number, want: number, rel: number, what: string) => {
  if (Number.isNaN(want)) return expect(got, what).toBeNaN();
  if (!Number.isFinite(want)) return expect(got, what).toBe(want);
  expect(Math.abs(got - want), `${what}: ${got} vs ${want}`).toBeLessThanOrEqual(rel * Math.abs(want) + 1e-30);
};

describe.each(G.cases.map((c) => [`normType ${c.normType}, maxNorm ${c.maxNorm}${c.poison === null ? '' : `, a gradient holding ${c.poison}`}`, c] as const))('clipGradNorm_ against PyTorch: %s', (_n, c) => {
  const poison = c.poison === null ? null : num(c.poison);
  const total = num(c.total), coef = Math.min(1, c.maxNorm / (total + 1e-6));

  it('the total norm, a device tensor; every gradient scaled as PyTorch scales it', async () => {
    for (const d of devices) {
      const ps = params(d, poison);
      const t = nn.utils.clipGradNorm_(ps, c.maxNorm, c.normType) as torch.Tensor;
      expect(t).toBeInstanceOf(torch.Tensor);
      expect(t.device.toString()).toBe(d);
      expect(t.shape).toEqual([]);
      near(await t.item(), total, 1e-5, `${d} total`);
      for (let k = 0; k < ps.length; k++) {
        const got = (await ps[k].grad!.data()) as Float32Array, orig = gradValues(k, poison), n = got.length;
        [0, n >> 1, n - 1].forEach((i, j) => near(got[i], num(c.samples[k][j]), 1e-5, `${d} gradient ${k} [${i}] (golden)`));
        if (coef >= 1) {
          // a max norm over the total: the gradients are untouched
          expect(got.every((v, i) => Object.is(v, orig[i])), `${d} gradient ${k} unchanged`).toBe(true);
        } else {
          for (let i = 0; i < n; i++) near(got[i], orig[i] * coef, 2e-6, `${d} gradient ${k} [${i}]`);
        }
      }
      t.dispose();
      free(ps);
    }
  });

  if (poison !== null) {
    it('errorIfNonfinite: PyTorch\'s error, and no gradient scaled', async () => {
      for (const d of devices) {
        const ps = params(d, poison);
        await expect(nn.utils.clipGradNorm_(ps, c.maxNorm, c.normType, true)).rejects.toThrow(`The total norm of order ${c.normType} for gradients from \`parameters\` is non-finite, so it cannot be clipped`);
        const got = (await ps[7].grad!.data()) as Float32Array;
        expect(Array.from(got)).toEqual(Array.from(gradValues(7)));
        free(ps);
      }
    });
  }

  it('torch._foreachNorm: each gradient\'s norm', async () => {
    for (const d of devices) {
      const ps = params(d, poison);
      const norms = torch._foreachNorm(ps.map((p) => p.grad!), c.normType);
      expect(norms.length).toBe(ps.length);
      for (let k = 0; k < ps.length; k++) {
        expect(norms[k].shape).toEqual([]);
        expect(norms[k].device.toString()).toBe(d);
        // order 3.5: PyTorch's own float32 norm of the 70001 gradient is 1.3e-5 off the float64 one (0.157726869 vs
        // 0.157728864); webtorch's cpu (float64 sums) gives 0.157728866
        near(await norms[k].item(), num(c.norms[k]), c.normType === 3.5 ? 3e-5 : 1e-5, `${d} norm ${k}`);
      }
      norms.forEach((t) => t.dispose());
      free(ps);
    }
  });
});

/** The commands (by kind) and their count for one clip of the first `count` golden gradients. */
async function clipCommands(d: string, count: number, foreach: boolean | null): Promise<{ kinds: Record<string, number>; total: number }> {
  const ps = params(d, null, count);
  await torch._profileWorker(d, true);
  const t = nn.utils.clipGradNorm_(ps, 0.5, { foreach }) as torch.Tensor;
  const prof = (await torch._profileWorker(d, false))!;
  t.dispose();
  free(ps);
  const kinds = Object.fromEntries(Object.entries(prof.commands).filter(([, v]) => v.count > 0).map(([k, v]) => [k, v.count]));
  return { kinds, total: Object.values(kinds).reduce((a, b) => a + b, 0) };
}

describe('the clip is a fixed number of commands', () => {
  it('10 and 56 gradients take the same commands: one foreachNorm, one foreachMul; foreach: false takes more with more gradients', async () => {
    for (const d of devices) {
      const few = await clipCommands(d, 10, null), many = await clipCommands(d, 56, null);
      expect(many.kinds, `${d}: commands of a clip of 56 gradients`).toEqual(few.kinds);
      expect(many.kinds.foreachNorm, `${d}: foreachNorm`).toBe(1);
      expect(many.kinds.foreachMul, `${d}: foreachMul`).toBe(1);
      // foreachNorm; the total's sumsq and sqrt; + 1e-6, div, clamp; foreachMul
      expect(many.total, `${d}: commands in all`).toBe(7);
      const loopFew = await clipCommands(d, 10, false), loopMany = await clipCommands(d, 56, false);
      expect(loopMany.total, `${d}: foreach: false grows with the gradients`).toBeGreaterThan(loopFew.total + 46);
      expect(loopMany.kinds.foreachNorm).toBeUndefined();
    }
  });
});

describe('what the kernels do not take, and the binding limits', () => {
  it('float16, non-contiguous and other-device gradients among float32 ones: the values of foreach: false', async () => {
    const make = (d: string) => {
      torch.manualSeed(3);
      const a = torch.randn([33, 5]), b = torch.randn([7, 9]), c = torch.randn([100]), e = torch.randn([4097]);
      const ps = [a, b, c, e].map((t, i) => torch.zeros(i === 1 ? [9, 7] : t.shape, { device: i === 3 && d !== 'cpu' ? 'cpu' : d }).requiresGrad_());
      const copy = (t: torch.Tensor, to: string) => {
        const r = t.to(to);
        return r === t ? t.clone() : r;
      };
      ps[0].grad = copy(a, d);
      const bt = copy(b, d);
      ps[1].grad = bt.t(); // non-contiguous
      bt.dispose();
      ps[2].grad = c.to({ device: d, dtype: 'float16' });
      ps[3].grad = copy(e, ps[3].device.toString());
      [a, b, c, e].forEach((t) => t.dispose());
      return ps;
    };
    for (const d of devices) {
      for (const nt of [2, 'inf' as const]) {
        const x = make(d), y = make(d);
        const tx = nn.utils.clipGradNorm_(x, 0.7, nt) as torch.Tensor, ty = nn.utils.clipGradNorm_(y, 0.7, nt, false, false) as torch.Tensor;
        expect(tx.device.toString()).toBe(d);
        expect(tx.dtype).toBe('float32');
        near(await tx.item(), await ty.item(), 2e-6, `${d} ${nt} total`);
        expect(await tx.item()).toBeGreaterThan(0.7);
        for (let k = 0; k < x.length; k++) {
          const values = async (g: torch.Tensor) => {
            const f = g.float(), v = (await f.data()) as Float32Array;
            if (f !== g) f.dispose();
            return v;
          };
          const gx = await values(x[k].grad!), gy = await values(y[k].grad!);
          gx.forEach((v, i) => near(v, gy[i], 2e-6, `${d} ${nt} gradient ${k} [${i}]`));
        }
        [tx, ty].forEach((t) => t.dispose());
        free(x);
        free(y);
      }
    }
  });

  it('gpu:0: more segments than a dispatch binds: one command each, several dispatches, the right values', async () => {
    const d = devices.find((x) => x === 'gpu:0');
    if (!d) throw new Error('no gpu:0 (GPU suites do not skip)');
    const room = (await torch.gpu.getDeviceProperties(d)).limits.maxStorageBuffersPerShaderStage - 2;
    const count = room + 2, n = 2_700_000; // 10.8 MB each: a segment of its own
    const ps = Array.from({ length: count }, (_, i) => {
      const p = torch.zeros([n], { device: d }).requiresGrad_();
      p.grad = torch.full([n], (i % 3) - 1 + 0.5, { device: d, dtype: 'float32' }); // -0.5, 0.5, 1.5
      return p;
    });
    await torch._profileWorker(d, true);
    const t = nn.utils.clipGradNorm_(ps, 100) as torch.Tensor;
    await torch.gpu.synchronize(d);
    const prof = (await torch._profileWorker(d, false))!;
    expect(prof.commands.foreachNorm.count).toBe(1);
    expect(prof.commands.foreachMul.count).toBe(1);
    expect(prof.gpu!.foreachNorm.count, 'norm dispatches').toBeGreaterThan(2);
    expect(prof.gpu!.foreachMul.count, 'scale dispatches').toBeGreaterThan(1);
    const sq = ps.reduce((s, _, i) => s + n * ((i % 3) - 0.5) ** 2, 0), total = Math.sqrt(sq), coef = 100 / (total + 1e-6);
    near(await t.item(), total, 1e-5, 'total');
    for (const [i, p] of ps.entries()) {
      const v = (await p.grad!.data()) as Float32Array, want = ((i % 3) - 0.5) * coef;
      for (const k of [0, 1, n >> 1, n - 1]) near(v[k], want, 1e-5, `gradient ${i} [${k}]`);
    }
    t.dispose();
    free(ps);
  });
});

describe('torch._foreachMul_ and torch._foreachNorm', () => {
  it('by a number, by a 0-d tensor of another device; PyTorch\'s errors', async () => {
    for (const d of devices) {
      const a = torch.tensor([1, -2, 3], { device: d, dtype: 'float32' }), b = torch.tensor([[4, 5], [6, 7]], { device: d, dtype: 'float32' }), h = torch.tensor([2, 4], { device: d, dtype: 'float16' });
      torch._foreachMul_([a, b, h], 0.5);
      expect(await a.tolist()).toEqual([0.5, -1, 1.5]);
      expect(await b.tolist()).toEqual([[2, 2.5], [3, 3.5]]);
      expect(await h.tolist()).toEqual([1, 2]);
      const s = torch.tensor(-4, { dtype: 'float32' });
      torch._foreachMul_([a, b], s);
      expect(await a.tolist()).toEqual([-2, 4, -6]);
      expect(await b.tolist()).toEqual([[-8, -10], [-12, -14]]);
      const s1 = torch.tensor([2], { dtype: 'float32' });
      expect(() => torch._foreachMul_([a], s1)).toThrow('scalar tensor expected to be 0 dim but it has 1 dimensions and 1 elements.');
      expect(() => torch._foreachNorm([a], 0)).toThrow('positive order or inf');
      const [na, nb, na2] = torch._foreachNorm([a, b, a], 1);
      expect(await na.item()).toBe(12);
      expect(await nb.item()).toBe(44);
      expect(await na2.item()).toBe(12);
      // a tensor listed twice is multiplied twice, as PyTorch's
      torch._foreachMul_([a, b, a], 0.5);
      expect(await a.tolist()).toEqual([-0.5, 1, -1.5]);
      expect(await b.tolist()).toEqual([[-4, -5], [-6, -7]]);
      [a, b, h, s, s1, na, nb, na2].forEach((t) => t.dispose());
    }
  });
});

describe('under graph capture', () => {
  it('a captured clip, replayed over new gradients written in place, gives each replay\'s total and scale', async () => {
    for (const d of devices) {
      const ps = [[5, 3], [7], [4097]].map((s) => torch.zeros(s, { device: d }).requiresGrad_());
      for (const p of ps) p.grad = torch.zeros(p.shape, { device: d });
      const g = newGraph(d);
      let total: torch.Tensor | null = null;
      await capture(d, g, () => {
        total = nn.utils.clipGradNorm_(ps, 1.5) as torch.Tensor;
      });
      for (const [r, fill] of [[0, 2], [1, 0.001], [2, -3]] as const) {
        for (const [i, p] of ps.entries()) p.grad!.fill_(fill * (i + 1));
        g.replay();
        const sq = ps.reduce((a, p, i) => a + p.numel() * (fill * (i + 1)) ** 2, 0), want = Math.sqrt(sq), coef = Math.min(1, 1.5 / (want + 1e-6));
        near(await total!.item(), want, 1e-5, `${d} replay ${r} total`);
        for (const [i, p] of ps.entries()) {
          const v = (await p.grad!.data()) as Float32Array;
          for (const k of [0, v.length - 1]) near(v[k], fill * (i + 1) * coef, 1e-5, `${d} replay ${r} gradient ${i} [${k}]`);
        }
      }
      g.reset();
      total!.dispose();
      free(ps);
    }
  });
});

describe('clipGradValue_', () => {
  it('one foreachClamp command for 56 gradients; each element clamped, inf to the bound, NaN kept; foreach: false alike', async () => {
    for (const d of devices) {
      for (const foreach of [null, false]) {
        const ps = params(d, NaN);
        const flat = ps[9].grad!.view([-1]), one = flat.narrow(0, 2, 1);
        one.fill_(-Infinity);
        [flat, one].forEach((t) => t.dispose());
        await torch._profileWorker(d, true);
        nn.utils.clipGradValue_(ps, 0.5, foreach);
        const prof = (await torch._profileWorker(d, false))!;
        if (foreach === null) {
          expect(prof.commands.foreachClamp?.count, `${d}: foreachClamp`).toBe(1);
          expect(Object.keys(prof.commands).filter((k) => prof.commands[k].count > 0 && k !== 'foreachClamp'), `${d}: other commands`).toEqual([]);
        } else {
          expect(prof.commands.foreachClamp?.count ?? 0).toBe(0);
        }
        for (let k = 0; k < ps.length; k++) {
          const got = (await ps[k].grad!.data()) as Float32Array, orig = gradValues(k, NaN);
          if (k === 9) orig[2] = -Infinity;
          const want = orig.map((x) => (Number.isNaN(x) ? NaN : Math.min(Math.max(x, -0.5), 0.5)));
          expect(Array.from(got), `${d} foreach ${foreach} gradient ${k}`).toEqual(Array.from(want));
        }
        free(ps);
      }
    }
  });
});

describe('clipGradValue_ with a negative value', () => {
  it('as PyTorch\'s clamp_min_(-v) then clamp_max_(v): every value becomes v, NaN stays', async () => {
    for (const d of devices) {
      for (const foreach of [null, false]) {
        const p = torch.zeros([5], { device: d }).requiresGrad_();
        p.grad = torch.tensor([-3, -0.1, 0, 2, NaN], { device: d, dtype: 'float32' });
        nn.utils.clipGradValue_(p, -0.25, foreach);
        const got = Array.from((await p.grad.data()) as Float32Array);
        expect(got.slice(0, 4), `${d} foreach ${foreach}`).toEqual([-0.25, -0.25, -0.25, -0.25]);
        expect(got[4]).toBeNaN();
        p.grad.dispose();
        p.dispose();
      }
    }
  });
});

describe('torch._foreachNorm of 16-bit tensors', () => {
  it.each(['float16', 'bfloat16'] as const)('%s: one foreachNorm command; each norm in the tensor\'s dtype, the float32 norm of its values rounded', async (dtype) => {
    const sizes = [[1], [3, 7], [4097], [9000]];
    for (const d of devices) {
      for (const ord of [2, 1, 3.5, 'inf'] as const) {
        const xs = sizes.map((s, k) => {
          const n = s.reduce((a, b) => a * b, 1), v: number[] = [];
          for (let i = 0; i < n; i++) v.push(((((k * 31 + i * 17) % 201) - 100) / 50) * (k === 1 ? 1e-6 : 1)); // gradient 1: float16 subnormals
          const f = torch.tensor(v, { dtype: 'float32', device: d }), h = f.to({ dtype }), r = h.reshape(s);
          [f, h].forEach((t) => t !== r && t.dispose());
          return r;
        });
        const wide = xs.map((x) => x.float());
        await torch._profileWorker(d, true);
        const got = torch._foreachNorm(xs, ord);
        const prof = (await torch._profileWorker(d, false))!;
        expect(prof.commands.foreachNorm?.count, `${d} ${ord}: foreachNorm`).toBe(1);
        const ref = torch._foreachNorm(wide, ord);
        for (let k = 0; k < xs.length; k++) {
          expect(got[k].dtype).toBe(dtype);
          const r16 = ref[k].to({ dtype });
          expect(await got[k].item(), `${d} ${dtype} ord ${ord} tensor ${k}`).toBe(await r16.item());
          expect(await ref[k].item()).toBeGreaterThan(0);
          r16.dispose();
        }
        [...xs, ...wide, ...got, ...ref].forEach((t) => t.dispose());
      }
    }
  });
});
