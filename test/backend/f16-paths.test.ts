/**
 * float16 and bfloat16 on gpu:0 under both float16 paths (ts/worker/half.ts, wgsl/half.ts): with
 * `shader-f16` where the adapter has it (lavapipe has: `WEBTORCH_F16` unset), and with it off
 * (`WEBTORCH_F16=storage`: 16-bit words unpacked to f32). In each mode: what
 * `getDeviceProperties` reports, every 16-bit golden of the shared op suite, and products and
 * elementwise ops large and aligned enough to take the vec4 kernels (the goldens' shapes are
 * mostly too small), against the cpu device computing the same in float32 and rounding once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck, testDevices } from '../devices.js';
import { goldenTests, loadGoldens, type Case } from '../golden.js';

const half = (c: Case) => c.args.some((a) => 'dtype' in a && (a.dtype === 'float16' || a.dtype === 'bfloat16'));
const cases = loadGoldens('goldens.json').cases.filter(half);
const gpu = (await testDevices()).includes('gpu:0');
await torch.shutdown();

/** Largest |got - want| relative to a 16-bit float's spacing at |want| (1 = one unit in the last place). */
async function ulps(got: torch.Tensor, want: torch.Tensor, dt: 'float16' | 'bfloat16'): Promise<number> {
  const g = await got.to('cpu').float().data(), w = await want.float().data();
  expect(g.length).toBe(w.length);
  const mant = dt === 'float16' ? 10 : 7;
  let worst = 0;
  for (let i = 0; i < w.length; i++) {
    const spacing = 2 ** (Math.floor(Math.log2(Math.max(Math.abs(w[i]), 2 ** -14))) - mant);
    worst = Math.max(worst, Math.abs(g[i] - w[i]) / spacing);
  }
  return worst;
}

describe.runIf(gpu).each(['native', 'storage'])('16-bit floats on gpu:0 with WEBTORCH_F16=%s', (mode) => {
  beforeAll(async () => {
    await torch.shutdown();
    process.env.WEBTORCH_F16 = mode;
    torch.gpu.configure({ devices: 1 });
    await torch.gpu.init();
    torch.rand([1], { device: 'gpu:0' }).dispose(); // the generator's state lives on the device from its first draw
  });
  leakCheck(() => ['cpu', 'gpu:0']);

  it('getDeviceProperties says which float16 path runs', async () => {
    const p = await torch.gpu.getDeviceProperties(0);
    expect(p.f16Path).toBe(mode === 'native' && p.shaderF16 ? 'shader-f16' : 'storage');
    expect(p.nativeF16).toBe(p.f16Path === 'shader-f16');
    expect(p.halfPrecisionMath).toBe('float32');
    // lavapipe has shader-f16: under CI (lavapipe) the native mode must really be native
    if (process.env.CI && mode === 'native') expect(p.f16Path).toBe('shader-f16');
  });

  for (const dt of ['float16', 'bfloat16'] as const) {
    it(`${dt} matmul on the tiled kernels: plain, transposed (copied row-major), batched and broadcast, at an offset`, async () => {
      const owned: torch.Tensor[] = [];
      const o = <T extends torch.Tensor>(t: T) => (owned.push(t), t);
      torch.manualSeed(1);
      const shapes: [number, number, number][] = [[64, 128, 96], [200, 256, 128], [300, 64, 512], [40, 32, 64], [17, 36, 20], [5, 8, 7]];
      for (const [m, k, n] of shapes) {
        const a = o(o(torch.randn([m, k])).to(dt)), b = o(o(torch.randn([k, n])).to(dt)), btc = o(o(b.transpose(0, 1)).contiguous());
        const want = o(o(o(a.float()).matmul(o(b.float()))).to(dt));
        const ga = o(a.to('gpu:0')), gb = o(b.to('gpu:0')), gbt = o(o(btc.to('gpu:0')).transpose(0, 1));
        const got = o(ga.matmul(gb)), gotT = o(ga.matmul(gbt));
        expect(got.dtype).toBe(dt);
        expect(await ulps(got, want, dt), `${m}x${k} @ ${k}x${n}`).toBeLessThanOrEqual(1);
        expect(await ulps(gotT, want, dt), `${m}x${k} @ (${n}x${k}).T`).toBeLessThanOrEqual(1);
      }
      // batched (3 products) and a broadcast right operand, and an operand at an element offset of 4
      const a3 = o(o(torch.randn([3, 64, 68])).to(dt)), w = o(o(torch.randn([68 * 65])).to(dt));
      const wv = o(o(w.narrow(0, 4, 68 * 64)).view([68, 64]));
      const want3 = o(o(o(a3.float()).matmul(o(wv.float()))).to(dt));
      const gw = o(w.to('gpu:0')), gwv = o(o(gw.narrow(0, 4, 68 * 64)).view([68, 64]));
      const got3 = o(o(a3.to('gpu:0')).matmul(gwv));
      expect(got3.shape).toEqual([3, 64, 64]);
      expect(await ulps(got3, want3, dt)).toBeLessThanOrEqual(1);
      owned.forEach((t) => t.dispose());
    });

    it(`${dt} elementwise ops and casts on the vec4 path: contiguous, broadcast, strided, misaligned, mixed with float32`, async () => {
      const owned: torch.Tensor[] = [];
      const o = <T extends torch.Tensor>(t: T) => (owned.push(t), t);
      torch.manualSeed(2);
      const x32 = o(o(torch.randn([37, 64])).mul(50)), bias32 = o(torch.randn([64])), g32 = o(x32.to('gpu:0')), gb32 = o(bias32.to('gpu:0'));
      const same = async (got: torch.Tensor, want: torch.Tensor, what: string) => {
        expect(got.dtype, what).toBe(want.dtype);
        expect(Array.from(await o(got.to('cpu')).float().data()), what).toEqual(Array.from(await o(want.float()).data()));
      };
      const x = o(x32.to(dt)), gx = o(g32.to(dt)), b = o(bias32.to(dt)), gb = o(gb32.to(dt));
      await same(gx, x, 'float32 -> 16-bit cast');
      await same(o(gx.float()), o(x.float()), '16-bit -> float32 cast');
      await same(o(o(gx.relu()).mul(3)), o(o(x.relu()).mul(3)), 'relu, times a scalar');
      await same(o(gx.add(gb)), o(x.add(b)), 'plus a broadcast bias');
      await same(o(gx.add(g32)), o(x.add(x32)), '16-bit plus float32 (promotes to float32)');
      await same(o(gx.transpose(0, 1).mul(gx.transpose(0, 1))), o(x.transpose(0, 1).mul(x.transpose(0, 1))), 'a transposed operand');
      const gs = o(gx.view([-1]).narrow(0, 1, 1001)), s = o(x.view([-1]).narrow(0, 1, 1001));
      await same(o(gs.sub(o(gs.exp()))), o(s.sub(o(s.exp()))), 'a slice at an odd offset');
      await same(o(torch.where(o(gx.gt(0)), gx, o(gx.neg()))), o(torch.where(o(x.gt(0)), x, o(x.neg()))), 'where with a bool mask');
      owned.forEach((t) => t.dispose());
    });
  }

  describe('the 16-bit goldens of the shared op suite', () => {
    goldenTests(cases, 'gpu:0');
  });
});

describe.runIf(gpu)('WEBTORCH_F16', () => {
  it('refuses a value other than storage or native, naming it', async () => {
    await torch.shutdown();
    process.env.WEBTORCH_F16 = 'fast';
    torch.gpu.configure({ devices: 1 });
    await expect(torch.gpu.init()).rejects.toThrow("WEBTORCH_F16 must be 'storage' or 'native' (or unset), got 'fast'");
    await torch.shutdown();
  });
});

afterAll(async () => {
  await torch.shutdown();
  delete process.env.WEBTORCH_F16;
});
