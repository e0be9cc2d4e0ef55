/**
 * `torch.distributions` (ts/distributions/): d2l's chapter 2 probability section line by line,
 * PyTorch's values (test/fixtures/distributions-goldens.json, from make_distributions_goldens.py),
 * sample shapes, statistical checks of samples, and PyTorch's validation errors; on `cpu` and
 * `gpu:0`.
 *
 * The statistical checks can fail: each compares a sample statistic with its expectation within
 * Z = 5 standard errors. A correct sampler fails one of them with probability about 6e-7 per
 * compared number (two-sided normal tail beyond 5σ); the whole file compares fewer than 100, so a
 * spurious failure is rarer than 1 in 10^4 runs, while a wrong probability, location or spread
 * by more than a few per cent fails at once.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

type Tensor = torch.Tensor;
const D = torch.distributions;
const devices = logicalGpuSuite(1, 'distributions');
const Z = 5;
const on = (device: string, data: number[] | number[][]) => torch.tensor(data, { dtype: 'float32', device });
const nums = async (t: Tensor): Promise<number[]> => Array.from(await t.data(), Number);
const free = (...xs: { dispose(): void }[]) => xs.forEach((x) => x.dispose());

describe('d2l 2.6 (Probability and Statistics): a fair die, tossed', () => {
  it.each(['cpu', 'gpu:0'])('runs as written on %s; the estimates after 1000 tosses are within 5 standard errors of 1/6', async (device) => {
    // from torch.distributions.multinomial import Multinomial
    const { Multinomial } = torch.distributions.multinomial;
    // fair_probs = torch.ones([6]) / 6
    const ones = torch.ones([6], { device });
    const fairProbs = torch.div(ones, 6);
    // Multinomial(1, fair_probs).sample()
    const one = new Multinomial(1, fairProbs);
    const a = one.sample();
    // Multinomial(10, fair_probs).sample()
    const ten = new Multinomial(10, fairProbs);
    const b = ten.sample();
    // counts = Multinomial(1000, fair_probs).sample()
    const thousand = new Multinomial(1000, fairProbs);
    const counts = thousand.sample();
    // counts / 1000
    const estimate = torch.div(counts, 1000);
    // counts = Multinomial(10, fair_probs).sample((500,))
    const counts500 = ten.sample([500]);
    // cum_counts = counts.cumsum(dim=0)
    const cumCounts = counts500.cumsum({ dim: 0 });
    // estimates = cum_counts / cum_counts.sum(dim=1, keepdims=True)
    const rowSums = cumCounts.sum({ dim: 1, keepdims: true });
    const estimates = torch.div(cumCounts, rowSums);

    expect([a.shape, b.shape, counts.shape, counts500.shape, rowSums.shape, estimates.shape]).toEqual([[6], [6], [6], [500, 6], [500, 1], [500, 6]]);
    expect(() => cumCounts.sum({ dim: 1, keepdim: true, keepdims: true })).toThrow("sum() got multiple values for argument 'keepdim'");
    expect([a.dtype, counts.dtype, a.device.toString()]).toEqual(['float32', 'float32', device]);
    const [va, vb, vc] = await Promise.all([nums(a), nums(b), nums(counts)]);
    expect(va.sort()).toEqual([0, 0, 0, 0, 0, 1]);
    expect(vb.reduce((s, x) => s + x, 0)).toBe(10);
    expect(vc.reduce((s, x) => s + x, 0)).toBe(1000);
    for (const x of [...vb, ...vc]) expect(Number.isInteger(x) && x >= 0).toBe(true);
    const p = 1 / 6;
    const se1000 = Math.sqrt((p * (1 - p)) / 1000); // 0.0118: each count is Binomial(1000, 1/6)
    for (const e of await nums(estimate)) expect(Math.abs(e - p), `estimate ${e}`).toBeLessThan(Z * se1000);
    const last = (await nums(estimates)).slice(-6); // after 500 × 10 = 5000 tosses
    expect(last.reduce((s, x) => s + x, 0)).toBeCloseTo(1, 5);
    for (const e of last) expect(Math.abs(e - p), `estimate ${e} after 5000 tosses`).toBeLessThan(Z * Math.sqrt((p * (1 - p)) / 5000));
    const rows500 = (await counts500.tolist()) as number[][];
    expect(rows500.every((r) => r.reduce((s, x) => s + x, 0) === 10)).toBe(true);
    free(ones, fairProbs, one, a, ten, b, thousand, counts, estimate, counts500, cumCounts, rowSums, estimates);
  });

  it('follows torch.manualSeed: the same seed draws the same counts', async () => {
    const probs = torch.tensor([0.1, 0.2, 0.3, 0.4]);
    const m = new D.Multinomial(50, probs);
    torch.manualSeed(7);
    const x = m.sample([3]);
    torch.manualSeed(7);
    const y = m.sample([3]);
    const z = m.sample([3]);
    expect(await x.tolist()).toEqual(await y.tolist());
    expect(await z.tolist()).not.toEqual(await x.tolist());
    free(probs, m, x, y, z);
  });
});

interface Case {
  name: string; dist: 'Normal' | 'Uniform' | 'Bernoulli' | 'Categorical' | 'Multinomial';
  params: Record<string, number | number[] | number[][]>; batchShape: number[]; eventShape: number[];
  value?: number[] | number[][]; q?: number[] | number[][]; grads?: Record<string, number[]>;
  [result: string]: unknown;
}
const goldens: { cases: Case[] } = JSON.parse(readFileSync(new URL('../fixtures/distributions-goldens.json', import.meta.url), 'utf8'));
const decode = (x: unknown): number[] => [x].flat(4).map((v) => (v === 'nan' ? NaN : v === 'inf' ? Infinity : v === '-inf' ? -Infinity : (v as number)));

/** Builds the case's distribution on `device` (tensor parameters there; number parameters stay numbers). */
function build(c: Case, device: string, grad = false): { d: torch.distributions.Distribution; made: Tensor[] } {
  const made: Tensor[] = [];
  const p = (k: string) => {
    const v = c.params[k];
    if (v === undefined || typeof v === 'number') return v;
    const t = on(device, v as number[]);
    if (grad) t.requiresGrad_();
    made.push(t);
    return t;
  };
  const d = c.dist === 'Normal' ? new D.Normal(p('loc') as Tensor, p('scale') as Tensor)
    : c.dist === 'Uniform' ? new D.Uniform(p('low') as Tensor, p('high') as Tensor)
      : c.dist === 'Bernoulli' ? new D.Bernoulli({ probs: p('probs') as Tensor, logits: p('logits') as Tensor })
        : c.dist === 'Categorical' ? new D.Categorical({ probs: p('probs') as Tensor, logits: p('logits') as Tensor })
          : new D.Multinomial(c.params.total_count as number, { probs: p('probs') as Tensor, logits: p('logits') as Tensor });
  return { d, made };
}

function close(actual: number[], expected: number[], what: string, rtol: number, atol: number): void {
  expect(actual.length, what).toBe(expected.length);
  actual.forEach((a, i) => {
    const e = expected[i];
    if (Number.isNaN(e) || !Number.isFinite(e)) expect(a, `${what}[${i}]`).toBe(e);
    else expect(Math.abs(a - e), `${what}[${i}]: ${a} vs PyTorch's ${e}`).toBeLessThanOrEqual(atol + rtol * Math.abs(e));
  });
}

describe("PyTorch's values (test/fixtures/distributions-goldens.json)", () => {
  const cases = goldens.cases.flatMap((c) => ['cpu', 'gpu:0'].map((dev) => [c.name, dev, c] as const));
  it.each(cases)('%s on %s', async (_name, device, c) => {
    const allNumbers = Object.values(c.params).every((v) => typeof v === 'number');
    const dev = allNumbers ? 'cpu' : device; // number parameters make cpu tensors, as PyTorch's
    const { d, made } = build(c, device);
    expect([d.batchShape, d.eventShape]).toEqual([c.batchShape, c.eventShape]);
    // lgamma composed in float32: a few ulps of log Γ(1001) ≈ 5912 (Multinomial's n = 1000)
    const atol = c.dist === 'Multinomial' ? 2e-3 : 2e-5;
    const check = async (key: string, t: Tensor) => {
      close(await nums(t), decode(c[key]), `${c.name} ${key}`, 1e-5, atol);
      t.dispose();
    };
    for (const key of ['mean', 'variance', 'stddev'] as const) if (key in c) await check(key, d[key]);
    for (const key of ['probs', 'logits'] as const) {
      if (key in c) close(await nums((d as unknown as Record<string, Tensor>)[key]), decode(c[key]), `${c.name} ${key}`, 1e-5, 2e-5);
    }
    if ('entropy' in c && c.dist !== 'Multinomial') await check('entropy', d.entropy());
    if ('entropy' in c && c.dist === 'Multinomial') {
      // the entropy cancels terms of size log n! (5912 at n = 1000) down to tens: float32 keeps
      // about 1e-5 of that (PyTorch's own float32 value is 0.03 off at n = 1000); the golden is float64
      const n = c.params.total_count as number;
      let logFactorial = 0;
      for (let i = 2; i <= n; i++) logFactorial += Math.log(i);
      const h = d.entropy();
      close(await nums(h), decode(c.entropy), `${c.name} entropy`, 1e-5, 1e-4 + 2e-5 * logFactorial);
      h.dispose();
    }
    if (c.value) {
      const v = on(dev, c.value);
      await check('logProb', d.logProb(v));
      if ('cdf' in c) await check('cdf', d.cdf(v));
      v.dispose();
    }
    if (c.q) {
      const q = on(dev, c.q);
      await check('icdf', d.icdf(q));
      q.dispose();
    }
    free(d, ...made);
  });

  it.each(['cpu', 'gpu:0'])('Normal.logProb is differentiable in loc and scale as PyTorch (%s)', async (device) => {
    const c = goldens.cases.find((x) => x.grads)!;
    const { d, made } = build(c, device, true);
    const v = on(device, c.value as number[]);
    const lp = d.logProb(v);
    torch.tidy(() => lp.sum().backward());
    const [loc, scale] = made;
    close(await nums(loc.grad!), c.grads!.loc, 'd/dloc', 1e-5, 1e-5);
    close(await nums(scale.grad!), c.grads!.scale, 'd/dscale', 1e-5, 1e-5);
    free(loc.grad!, scale.grad!, lp, v, d, ...made);
  });
});

describe('sample shapes: sampleShape + batchShape + eventShape', () => {
  it.each(['cpu', 'gpu:0'])('every class on %s', async (device) => {
    const made: { dispose(): void }[] = [];
    const keep = <T extends { dispose(): void }>(x: T): T => (made.push(x), x);
    const kinds: [torch.distributions.Distribution, number[], number[], string][] = [
      [keep(new D.Normal(keep(on(device, [[0, 1, 2], [3, 4, 5]])), 1)), [2, 3], [], 'float32'],
      [keep(new D.Uniform(keep(on(device, [0])), keep(on(device, [[1], [2]])))), [2, 1], [], 'float32'],
      [keep(new D.Bernoulli(keep(on(device, [0.1, 0.5, 0.9, 0.2, 0.3])))), [5], [], 'float32'],
      [keep(new D.Categorical(keep(torch.ones([2, 3, 4], { device })))), [2, 3], [], 'int64'],
      [keep(new D.Multinomial(7, keep(torch.ones([2, 4], { device })))), [2], [4], 'float32'],
    ];
    for (const [d, batch, event, dtype] of kinds) {
      expect([d.batchShape, d.eventShape]).toEqual([batch, event]);
      for (const sampleShape of [[], [4], [4, 3]]) {
        const s = keep(d.sample(sampleShape));
        expect(s.shape, `${d}.sample([${sampleShape}])`).toEqual([...sampleShape, ...batch, ...event]);
        expect([s.dtype, s.device.toString()]).toEqual([dtype, device]);
      }
      if (d.hasRsample) expect(keep(d.rsample([2])).shape).toEqual([2, ...batch, ...event]);
      else expect(() => d.rsample()).toThrow(/has no rsample/);
    }
    const m = kinds[4][0] as torch.distributions.Multinomial;
    const rows = (await keep(m.sample([5])).tolist()) as number[][][];
    expect(rows.flat().map((r) => r.reduce((s, x) => s + x, 0))).toEqual(new Array(10).fill(7));
    const e = keep(m.expand([3, 2]));
    expect([e.batchShape, e.eventShape, keep(e.sample()).shape]).toEqual([[3, 2], [4], [3, 2, 4]]);
    const n = keep((kinds[0][0] as torch.distributions.Normal).expand([5, 2, 3]));
    expect(keep(n.sample()).shape).toEqual([5, 2, 3]);
    made.reverse().forEach((x) => x.dispose());
  });

  it('rsample is loc + eps·scale: its gradient is 1 in loc and eps in scale', async () => {
    const loc = torch.tensor([1, -2], { dtype: 'float32' }).requiresGrad_(), scale = torch.tensor([2, 0.5]).requiresGrad_();
    const d = new D.Normal(loc, scale);
    const s = d.rsample([3]);
    torch.tidy(() => s.sum().backward());
    expect(await nums(loc.grad!)).toEqual([3, 3]);
    const eps = torch.tidy(() => s.detach().sub(loc.detach()).div(scale.detach()).sum(0));
    close(await nums(scale.grad!), await nums(eps), 'd/dscale', 1e-5, 1e-5);
    const sampled = d.sample();
    expect(sampled.requiresGrad).toBe(false);
    free(loc.grad!, scale.grad!, eps, sampled, s, d, loc, scale);
  });
});

describe('statistics of samples (within 5 standard errors)', () => {
  const N = 20000;
  it.each(['cpu', 'gpu:0'])('Normal(1.5, 2): mean and variance (%s)', async (device) => {
    const loc = torch.tensor(1.5, { device }), d = new D.Normal(loc, 2);
    const s = d.sample([N]);
    const x = await nums(s);
    s.dispose();
    const mean = x.reduce((s, v) => s + v, 0) / N;
    const variance = x.reduce((s, v) => s + (v - mean) ** 2, 0) / (N - 1);
    expect(Math.abs(mean - 1.5)).toBeLessThan(Z * (2 / Math.sqrt(N)));
    expect(Math.abs(variance - 4)).toBeLessThan(Z * Math.sqrt((2 * 16) / (N - 1))); // var of s² = 2σ⁴/(N−1)
    free(d, loc);
  });

  it.each(['cpu', 'gpu:0'])('Uniform(-1, 3): every sample in [low, high), mean and variance (%s)', async (device) => {
    const low = torch.tensor(-1, { dtype: 'float32', device }), d = new D.Uniform(low, 3);
    const s = d.sample([N]);
    const x = await nums(s);
    expect(x.every((v) => v >= -1 && v < 3)).toBe(true);
    const mean = x.reduce((a, v) => a + v, 0) / N;
    const variance = x.reduce((a, v) => a + (v - mean) ** 2, 0) / (N - 1);
    expect(Math.abs(mean - 1)).toBeLessThan(Z * Math.sqrt(16 / 12 / N)); // σ² = (b − a)²/12
    expect(Math.abs(variance - 16 / 12)).toBeLessThan(Z * Math.sqrt((256 / 80 - (16 / 12) ** 2) / N)); // var of s² ≈ (μ₄ − σ⁴)/N, μ₄ = (b − a)⁴/80
    free(s, d, low);
  });

  it.each(['cpu', 'gpu:0'])('Bernoulli([0.2, 0.7]): the frequency of ones (%s)', async (device) => {
    const probs = on(device, [0.2, 0.7]), d = new D.Bernoulli(probs);
    const s = d.sample([N]);
    const x = await nums(s);
    for (const [j, p] of [0.2, 0.7].entries()) {
      let ones = 0;
      for (let i = j; i < x.length; i += 2) ones += x[i];
      expect(Math.abs(ones / N - p), `p = ${p}`).toBeLessThan(Z * Math.sqrt((p * (1 - p)) / N));
    }
    expect(new Set(x)).toEqual(new Set([0, 1]));
    free(s, d, probs);
  });

  it.each(['cpu', 'gpu:0'])('Categorical([1, 2, 3, 4]) (unnormalized): each category\'s frequency (%s)', async (device) => {
    const probs = on(device, [1, 2, 3, 4]), d = new D.Categorical(probs);
    const s = d.sample([N]);
    const x = await nums(s);
    const freq = [0, 0, 0, 0];
    for (const v of x) freq[v] += 1 / N;
    [0.1, 0.2, 0.3, 0.4].forEach((p, k) => expect(Math.abs(freq[k] - p), `category ${k}`).toBeLessThan(Z * Math.sqrt((p * (1 - p)) / N)));
    free(s, d, probs);
  });
});

describe("validation: PyTorch's errors", () => {
  const scaleMessage = 'ValueError: Expected parameter scale (Tensor of shape ()) of distribution Normal(loc: 0.0, scale: -1.0) to satisfy the constraint GreaterThan(lower_bound=0.0), but found invalid values:\n-1.0';

  it('a number parameter is checked at once, with the message and value PyTorch prints', () => {
    expect(() => new D.Normal(0, -1)).toThrow(scaleMessage);
    expect(() => new D.Normal(0, 0)).toThrow('to satisfy the constraint GreaterThan(lower_bound=0.0)');
    expect(() => new D.Normal(NaN, 1)).toThrow('Expected parameter loc (Tensor of shape ()) of distribution Normal(loc: nan, scale: 1.0) to satisfy the constraint Real()');
    expect(() => new D.Bernoulli(1.5)).toThrow('Expected parameter probs (Tensor of shape ()) of distribution Bernoulli(probs: 1.5) to satisfy the constraint Interval(lower_bound=0.0, upper_bound=1.0), but found invalid values:\n1.5');
    expect(() => new D.Uniform(1, 0)).toThrow('ValueError: Uniform is not defined when low>= high');
    expect(() => new D.Uniform(1, 1)).toThrow('Uniform is not defined when low>= high');
    // validateArgs: false (positional or keyword) and the class-wide default turn it off
    const quiet = [new D.Normal(0, -1, false), new D.Normal(0, -1, { validateArgs: false }), new D.Uniform(1, 0, { validateArgs: false })];
    D.Distribution.setDefaultValidateArgs(false);
    try {
      quiet.push(new D.Bernoulli(1.5));
    } finally {
      D.Distribution.setDefaultValidateArgs(true);
    }
    expect(() => new D.Bernoulli(1.5)).toThrow('Interval(lower_bound=0.0, upper_bound=1.0)');
    quiet.forEach((d) => d.dispose());
  });

  it.each(['cpu', 'gpu:0'])('a tensor parameter is checked on its device (%s): the next sync point raises the message', async (device) => {
    const loc = on(device, [0, 1]), scale = on(device, [1, -1]);
    const d = new D.Normal(loc, scale);
    const s = d.sample();
    await expect(s.data()).rejects.toThrow('ValueError: Expected parameter scale (Tensor of shape (2,)) of distribution Normal(loc: torch.Size([2]), scale: torch.Size([2])) to satisfy the constraint GreaterThan(lower_bound=0.0), but found invalid values');
    expect(await nums(loc), 'the next sync point after the error').toEqual([0, 1]);
    // not raised when the values are valid, or validation is off
    const pos = on(device, [1, 2]);
    const ok = new D.Normal(loc, pos);
    const quiet = new D.Normal(loc, scale, { validateArgs: false });
    expect(await nums(scale)).toEqual([1, -1]);
    free(s, d, pos, ok, quiet, loc, scale);
  });

  it.each(['cpu', 'gpu:0'])('Categorical and Multinomial normalize probs; negative ones fail Simplex() on the device (%s)', async (device) => {
    const raw = on(device, [1, 2, 3, 4]);
    const c = new D.Categorical(raw);
    close(await nums(c.probs), [0.1, 0.2, 0.3, 0.4], 'normalized probs', 1e-6, 1e-7);
    const bad = on(device, [0.5, -0.1, 0.6]);
    const simplex = 'ValueError: Expected parameter probs (Tensor of shape (3,)) of distribution Categorical(probs: torch.Size([3])) to satisfy the constraint Simplex(), but found invalid values';
    for (const make of [() => new D.Categorical(bad), () => new D.Multinomial(1, bad)]) {
      const d = make();
      await expect(torch.gpu.synchronize(device)).rejects.toThrow(simplex);
      d.dispose();
    }
    const zero = on(device, [0, 0]); // 0/0: NaN probabilities, not a simplex
    const z = new D.Categorical(zero);
    await expect(torch.gpu.synchronize(device)).rejects.toThrow('to satisfy the constraint Simplex()');
    free(z, zero, c, raw, bad);
  });

  it('values outside the support fail logProb and cdf; shapes are checked at once', async () => {
    const probs = torch.tensor([0.2, 0.8]);
    const c = new D.Categorical(probs);
    const two = torch.tensor([2]);
    const lp = c.logProb(two);
    await expect(lp.data()).rejects.toThrow('ValueError: Expected value argument (Tensor of shape (1,)) to be within the support (IntegerInterval(lower_bound=0, upper_bound=1)) of the distribution Categorical(probs: torch.Size([2])), but found invalid values');
    const n = new D.Normal(0, 1);
    const nan = torch.tensor([NaN]);
    const cdf = n.cdf(nan);
    await expect(cdf.data()).rejects.toThrow('to be within the support (Real()) of the distribution Normal(loc: 0.0, scale: 1.0)');
    const six = torch.ones([6]);
    const m = new D.Multinomial(10, six);
    const five = torch.ones([5]);
    expect(() => m.logProb(five)).toThrow('ValueError: The right-most size of value must match event_shape: torch.Size([5]) vs torch.Size([6]).');
    const normal3 = new D.Normal(torch.zeros([3]), 1);
    const four = torch.zeros([4]);
    expect(() => normal3.logProb(four)).toThrow('ValueError: Value is not broadcastable with batch_shape+event_shape: torch.Size([4]) vs torch.Size([3]).');
    expect(() => n.logProb(0.5 as never)).toThrow('The value argument to log_prob must be a Tensor');
    free(lp, cdf, two, nan, five, four, c, probs, n, m, six, normal3, normal3.loc);
  });

  it("raises PyTorch's errors for wrong arguments, and an unknown keyword", () => {
    const p = torch.tensor([0.5, 0.5]);
    expect(() => new D.Normal(0, 1, { bogus: 1 } as never)).toThrow("Normal() got an unexpected keyword argument 'bogus'");
    expect(() => new D.Categorical(p, { bogus: 1 } as never)).toThrow("Categorical() got an unexpected keyword argument 'bogus'");
    expect(() => new D.Multinomial(3, p, { totalCounts: 1 } as never)).toThrow("Multinomial() got an unexpected keyword argument 'totalCounts'");
    expect(() => new D.Categorical({ probs: p, logits: p })).toThrow('ValueError: Either `probs` or `logits` must be specified, but not both.');
    expect(() => new D.Bernoulli()).toThrow('Either `probs` or `logits` must be specified, but not both.');
    expect(() => new D.Multinomial(2.5, p)).toThrow('NotImplementedError: inhomogeneous total_count is not supported');
    expect(() => new D.Normal(0, 'x' as never)).toThrow('ValueError: Input arguments must all be instances of numbers.Number, torch.Tensor');
    const scalar = torch.tensor(0.5);
    expect(() => new D.Categorical(scalar)).toThrow('ValueError: `probs` parameter must be at least one-dimensional.');
    const n = new D.Normal(0, 1);
    expect(() => n.sample({ bogus: 1 } as never)).toThrow("sample() got an unexpected keyword argument 'bogus'");
    expect(() => n.sample([2], [3] as never)).toThrow('sample() takes from 0 to 1 positional arguments but 2 were given');
    expect(() => n.sample(3 as never)).toThrow('sampleShape must be a list of non-negative integers');
    expect(String(n)).toBe('Normal(loc: 0.0, scale: 1.0)');
    free(n, p, scalar);
  });

  it('dispose() frees what a distribution made and never the tensors passed in', async () => {
    const loc = torch.zeros([3]);
    const before = torch._liveStorage(torch.device('cpu')).count;
    const d = new D.Normal(loc, 2); // makes the broadcast scale
    const c = new D.Categorical({ logits: loc });
    void c.probs; // a lazily derived parameter is the distribution's too
    expect(torch._liveStorage(torch.device('cpu')).count).toBeGreaterThan(before);
    d.dispose();
    c.dispose();
    d.dispose();
    expect(torch._liveStorage(torch.device('cpu')).count).toBe(before);
    expect(loc.isDisposed).toBe(false);
    expect(() => d.sample()).toThrow('the distribution was disposed');
    loc.dispose();
  });
});
