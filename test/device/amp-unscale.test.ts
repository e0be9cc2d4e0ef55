/**
 * GradScaler's fused check, `torch._ampForeachNonFiniteCheckAndUnscale_` (PyTorch's
 * `_amp_foreach_non_finite_check_and_unscale_`), on cpu, gpu:0 and gpu:1: mixed dtypes,
 * gradients in different segments, zero-size gradients, inf/NaN/-inf in the first, a middle and
 * the last gradient, 16-bit gradients sharing a word, gradients larger than one binding (in
 * windows), and ONE command (one GPU dispatch) per
 * device, counted by the worker profile.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const devices = suiteDevices();
type DT = 'float32' | 'float16' | 'bfloat16';
/** The gradients: dtype and size; the big one lands in a segment of its own. */
const SPECS: [DT, number][] = [['float32', 37], ['float16', 0], ['float16', 9], ['bfloat16', 600_001], ['float32', 0], ['float32', 5], ['float16', 2], ['bfloat16', 11]];
const INV = Math.fround(1 / 3); // not a power of two: the products round

/** Host values of a gradient (exact, as float32), with `bad` written at `at` when given. */
function values(n: number, seed: number): Float32Array {
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) v[i] = (((i * 7919 + seed * 104729) % 2001) - 1000) * 0.37;
  return v;
}

/** Expected gradient after unscaling: f32 product, rounded to the gradient's dtype (bad values kept). */
function expected(v: Float32Array, dt: DT): torch.Tensor {
  const p = v.map((x) => (Number.isFinite(x) ? Math.fround(x * INV) : x));
  return make(p, dt, 'cpu');
}

/** A tensor of `dt` on `dev` from float32 host values (the float32 intermediate freed). */
function make(v: Float32Array, dt: DT, dev: string): torch.Tensor {
  return torch.tidy(() => torch.tensor(v).to({ dtype: dt, device: dev }));
}

async function bits(t: torch.Tensor): Promise<number[]> {
  const f = t.dtype === 'float32' ? t : t.to('float32');
  try {
    return Array.from(await f.data() as Float32Array);
  } finally {
    if (f !== t) f.dispose();
  }
}

async function check(dev: string, bad: { at: number; value: number } | null): Promise<void> {
  const host = SPECS.map(([, n], i) => values(n, i));
  if (bad) host[bad.at][Math.floor(host[bad.at].length / 2)] = bad.value;
  const grads = SPECS.map(([dt], i) => make(host[i], dt, dev));
  // what the gradient holds before (its dtype's rounding of the host values)
  const before = await Promise.all(grads.map((g) => bits(g)));
  const found = torch.zeros([1], { device: dev }), inv = torch.full([1], INV, { device: dev });
  try {
    const segments = new Set(grads.map((g) => (g as unknown as { storage: { id: number } }).storage.id));
    expect(segments.size, 'the gradients lie in more than one segment').toBeGreaterThan(1);
    await torch.gpu.synchronize(dev === 'cpu' ? undefined : dev);
    await torch._profileWorker(dev, true);
    torch._ampForeachNonFiniteCheckAndUnscale_(grads, found, inv);
    await torch.gpu.synchronize(dev === 'cpu' ? undefined : dev);
    const p = (await torch._profileWorker(dev, false))!;
    expect(p.commands.ampUnscale.count, 'one fused command').toBe(1);
    const kernels = Object.entries(p.commands).filter(([k]) => !['record', 'mark', 'call', 'opTag', 'wait'].includes(k));
    expect(kernels.map(([k]) => k), 'no other kernel command').toEqual(['ampUnscale']);
    if (dev !== 'cpu') expect(p.gpu!.ampUnscale.count, 'one GPU dispatch').toBe(1);
    expect(Array.from(await found.data())).toEqual([bad ? 1 : 0]);
    for (let i = 0; i < grads.length; i++) {
      const want = expected(Float32Array.from(before[i]), SPECS[i][0]);
      try {
        const got = await bits(grads[i]), w = await bits(want);
        expect(got.length).toBe(SPECS[i][1]);
        // toEqual treats NaN as equal to NaN, and compares -0 and 0 apart
        expect(got, `gradient ${i} (${SPECS[i][0]})`).toEqual(w);
      } finally {
        want.dispose();
      }
    }
  } finally {
    [...grads, found, inv].forEach((t) => t.dispose());
  }
}

describe.each([['cpu'], ['gpu:0'], ['gpu:1']])('%s', (dev) => {
  it('unscales every gradient, none bad: the flag stays 0', async () => {
    expect(devices).toContain(dev);
    await check(dev, null);
  });
  it('inf in the first gradient sets the flag', () => check(dev, { at: 0, value: Infinity }));
  it('NaN in a middle (float16) gradient sets the flag', () => check(dev, { at: 2, value: NaN }));
  it('-inf in the last (bfloat16) gradient sets the flag', () => check(dev, { at: SPECS.length - 1, value: -Infinity }));
  it('NaN in the big bfloat16 gradient in its own segment sets the flag', () => check(dev, { at: 3, value: NaN }));

  it('16-bit gradients sharing a word are both unscaled exactly (two dispatches on a GPU)', async () => {
    const base = make(values(10, 3), 'float16', dev);
    const a = base.narrow(0, 0, 3), b = base.narrow(0, 3, 7);
    const found = torch.zeros([1], { device: dev }), inv = torch.full([1], INV, { device: dev });
    const want = expected(Float32Array.from(await bits(base)), 'float16');
    try {
      await torch._profileWorker(dev, true);
      torch._ampForeachNonFiniteCheckAndUnscale_([a, b], found, inv);
      await torch.gpu.synchronize(dev === 'cpu' ? undefined : dev);
      const p = (await torch._profileWorker(dev, false))!;
      expect(p.commands.ampUnscale.count).toBe(1);
      if (dev !== 'cpu') expect(p.gpu!.ampUnscale.count).toBe(2);
      expect(await bits(base)).toEqual(await bits(want));
      expect(Array.from(await found.data())).toEqual([0]);
    } finally {
      [base, a, b, found, inv, want].forEach((t) => t.dispose());
    }
  });

  it("misuse raises PyTorch's errors", () => {
    const g = torch.ones([3], { device: dev }), found = torch.zeros([1], { device: dev }), inv = torch.ones([1], { device: dev });
    const f2 = torch.zeros([2], { device: dev }), i64 = torch.zeros([1], { dtype: 'int64', device: dev }), gi = torch.ones([3], { dtype: 'int32', device: dev });
    const other = torch.ones([3], { device: dev === 'cpu' ? 'gpu:0' : 'cpu' });
    try {
      expect(() => torch._ampForeachNonFiniteCheckAndUnscale_([g], f2, inv)).toThrow('found_inf must be a 1-element tensor.');
      expect(() => torch._ampForeachNonFiniteCheckAndUnscale_([g], found, f2)).toThrow('inv_scale must be a 1-element tensor.');
      expect(() => torch._ampForeachNonFiniteCheckAndUnscale_([g], i64, inv)).toThrow('found_inf must be a float tensor.');
      expect(() => torch._ampForeachNonFiniteCheckAndUnscale_([g, other], found, inv)).toThrow('scaled_grads must be on the same device.');
      expect(() => torch._ampForeachNonFiniteCheckAndUnscale_([gi], found, inv)).toThrow(/floating point.*int32/);
    } finally {
      [g, found, inv, f2, i64, gi, other].forEach((t) => t.dispose());
    }
  });
});

describe('GradScaler.unscale_', () => {
  it('runs one fused command per device for a model spread over cpu and gpu:0', async () => {
    const w0 = torch.randn([4, 3], { device: 'gpu:0', requiresGrad: true }), w1 = torch.randn([3], { device: 'cpu', requiresGrad: true });
    const opt = new torch.optim.SGD([w0, w1], { lr: 0.1 });
    const scaler = new torch.amp.GradScaler('gpu', { initScale: 4 });
    try {
      const loss = torch.tidy(() => scaler.scale(w0.sum().add(w1.sum().to('gpu:0'))));
      loss.backward();
      loss.dispose();
      await torch.gpu.synchronize();
      await Promise.all(['cpu', 'gpu:0'].map((d) => torch._profileWorker(d, true)));
      scaler.unscale_(opt);
      await torch.gpu.synchronize();
      const [pc, pg] = await Promise.all(['cpu', 'gpu:0'].map((d) => torch._profileWorker(d, false)));
      expect(pc!.commands.ampUnscale.count).toBe(1);
      expect(pg!.commands.ampUnscale.count).toBe(1);
      expect(pg!.gpu!.ampUnscale.count).toBe(1);
      expect(Array.from(await w0.grad!.data())).toEqual(new Array(12).fill(1));
      expect(Array.from(await w1.grad!.data())).toEqual([1, 1, 1]);
      expect(await scaler.step(opt)).toBeUndefined();
      scaler.update();
      expect(await scaler.getScale()).toBe(4);
    } finally {
      scaler.dispose();
      [w0.grad!, w1.grad!, w0, w1].forEach((t) => t.dispose());
    }
  });
});

describe('gradients larger than one binding (gpu:0)', () => {
  const d = 'gpu:0';
  /** Unscales [small, big] by 0.5 with one command; returns the flag and the GPU dispatches. */
  async function unscale(small: torch.Tensor, big: torch.Tensor): Promise<[number, number]> {
    const found = torch.zeros([1], { device: d }), inv = torch.full([1], 0.5, { device: d });
    try {
      await torch._profileWorker(d, true);
      torch._ampForeachNonFiniteCheckAndUnscale_([small, big], found, inv);
      await torch.gpu.synchronize(d);
      const p = (await torch._profileWorker(d, false))!;
      expect(p.commands.ampUnscale.count).toBe(1);
      return [(await found.data())[0] as number, p.gpu!.ampUnscale.count];
    } finally {
      [found, inv].forEach((t) => t.dispose());
    }
  }

  it('runs in windows of the segment: every value unscaled, one command', async () => {
    const limit = (await torch.gpu.getDeviceProperties(d)).limits.maxStorageBufferBindingSize;
    const n = limit / 4 + (1 << 20); // float32, 4 MiB over the limit
    const big = torch.full([n], 2, { device: d, dtype: 'float32' });
    const small = make(Float32Array.from([8, 8, -Infinity, 8, 8]), 'bfloat16', d);
    try {
      // the small one's dispatch, and the big one's two windows
      expect(await unscale(small, big)).toEqual([1, 3]);
      expect(await bits(small)).toEqual([4, 4, -Infinity, 4, 4]);
      const v = (await big.data()) as Float32Array;
      expect(v.length).toBe(n);
      expect(v.every((x) => x === 1)).toBe(true);
    } finally {
      [big, small].forEach((t) => t.dispose());
    }
  });

  it('sets the flag from a window past the first', async () => {
    const limit = (await torch.gpu.getDeviceProperties(d)).limits.maxStorageBufferBindingSize;
    const n = limit / 4 + (1 << 20);
    const big = torch.full([n], Infinity, { device: d }), small = torch.ones([3], { device: d });
    try {
      expect(await unscale(small, big)).toEqual([1, 3]);
      expect(Array.from(await small.data())).toEqual([0.5, 0.5, 0.5]);
    } finally {
      [big, small].forEach((t) => t.dispose());
    }
  });
});

describe('more segments than the storage bindings of one dispatch', () => {
  it.each([['gpu:0'], ['gpu:1']])('%s: the fewest dispatches, the scale and flag bound in each', async (d) => {
    const per = (await torch.gpu.getDeviceProperties(d)).limits.maxStorageBuffersPerShaderStage;
    const count = per + 1, n = 2_700_000; // 10.8 MB each: a segment of its own (smaller ones share 20 MB segments)
    const grads = Array.from({ length: count }, () => torch.full([n], 2, { device: d, dtype: 'float32' }));
    const found = torch.zeros([1], { device: d }), inv = torch.full([1], 0.5, { device: d });
    const seg = (t: torch.Tensor) => (t as unknown as { storage: { id: number } }).storage.id;
    try {
      torch.tidy(() => grads[count - 1].copy_(torch.full([n], Infinity, { device: d, dtype: 'float32' })));
      const segments = new Set(grads.map(seg));
      expect(segments.size).toBe(count);
      const fixed = new Set([seg(found), seg(inv)]).size, room = per - 1 - fixed;
      await torch._profileWorker(d, true);
      torch._ampForeachNonFiniteCheckAndUnscale_(grads, found, inv);
      await torch.gpu.synchronize(d);
      const p = (await torch._profileWorker(d, false))!;
      expect(p.commands.ampUnscale.count).toBe(1);
      expect(p.gpu!.ampUnscale.count).toBe(Math.ceil(count / room));
      expect(Array.from(await found.data())).toEqual([1]);
      for (const g of grads.slice(0, -1)) expect(((await g.data()) as Float32Array).every((x) => x === 1)).toBe(true);
      expect(((await grads[count - 1].data()) as Float32Array).every((x) => x === Infinity)).toBe(true);
    } finally {
      [...grads, found, inv].forEach((t) => t.dispose());
    }
  });
});

describe('many gradients on cpu', () => {
  it('more than one descriptor area of gradients (1,365): all unscaled, the flag from the last', async () => {
    const grads = Array.from({ length: 1500 }, (_, i) => torch.full([3], i, { dtype: 'float32' }));
    const found = torch.zeros([1]), inv = torch.full([1], 0.5, { dtype: 'float32' });
    try {
      torch.tidy(() => grads[1499].copy_(torch.tensor([1, NaN, 1])));
      torch._ampForeachNonFiniteCheckAndUnscale_(grads, found, inv);
      expect(Array.from(await found.data())).toEqual([1]);
      for (let i = 0; i < 1499; i += 97) expect(Array.from(await grads[i].data()), `gradient ${i}`).toEqual([i / 2, i / 2, i / 2]);
      expect(Array.from(await grads[1400].data())).toEqual([700, 700, 700]);
      expect(Array.from(await grads[1499].data())).toEqual([0.5, NaN, 0.5]);
    } finally {
      [...grads, found, inv].forEach((t) => t.dispose());
    }
  });
});
