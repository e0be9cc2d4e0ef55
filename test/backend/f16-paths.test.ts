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
  const [gt, wt] = torch.tidy(() => [got.to('cpu').float(), want.float()]);
  const g = await gt.data(), w = await wt.data();
  gt.dispose();
  wt.dispose();
  expect(g.length).toBe(w.length);
  const mant = dt === 'float16' ? 10 : 7;
  let worst = 0;
  for (let i = 0; i < w.length; i++) {
    const spacing = 2 ** (Math.floor(Math.log2(Math.max(Math.abs(w[i]), 2 ** -14))) - mant);
    worst = Math.max(worst, Math.abs(g[i] - w[i]) / spacing);
  }
  return worst;
}

const dt16 = 'float16';

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
    // lavapipe (CI's adapter) has shader-f16: there the native mode must really be native, else both runs test one path
    if (process.env.CI && p.isSoftware && mode === 'native') expect(p.f16Path).toBe('shader-f16');
  });

  for (const dt of ['float16', 'bfloat16'] as const) {
    it(`${dt} matmul on every kernel: tiled, plain and direct (16-bit output in place), odd N (cast), transposed, batched and broadcast, at an offset`, async () => {
      torch.manualSeed(1);
      // tiled (64, 128 and 16-row tiles), then the plain tiles and the direct kernel writing 16-bit pairs (K not a
      // multiple of 4; 10 rows; 10 columns), and an odd N (f32 scratch, then a cast)
      const shapes: [number, number, number][] = [[64, 128, 96], [200, 256, 128], [300, 64, 512], [40, 32, 64], [17, 36, 20],
        [64, 10, 256], [33, 30, 50], [10, 64, 256], [64, 256, 10], [5, 8, 7], [70, 12, 33]];
      for (const [m, k, n] of shapes) {
        const [got, gotT, want] = torch.tidy(() => {
          const a = torch.randn([m, k]).to(dt), b = torch.randn([k, n]).to(dt);
          const ga = a.to('gpu:0'), gbt = b.transpose(0, 1).contiguous().to('gpu:0').transpose(0, 1);
          return [ga.matmul(b.to('gpu:0')), ga.matmul(gbt), a.float().matmul(b.float()).to(dt)];
        });
        try {
          expect(got.dtype).toBe(dt);
          expect(await ulps(got, want, dt), `${m}x${k} @ ${k}x${n}`).toBeLessThanOrEqual(1);
          expect(await ulps(gotT, want, dt), `${m}x${k} @ (${n}x${k}).T`).toBeLessThanOrEqual(1);
        } finally {
          [got, gotT, want].forEach((t) => t.dispose());
        }
      }
      // batched (3 products), a broadcast right operand at an element offset of 4
      const [got3, want3] = torch.tidy(() => {
        const a3 = torch.randn([3, 64, 68]).to(dt), w = torch.randn([68 * 65]).to(dt);
        const gwv = w.to('gpu:0').narrow(0, 4, 68 * 64).view([68, 64]);
        return [a3.to('gpu:0').matmul(gwv), a3.float().matmul(w.narrow(0, 4, 68 * 64).view([68, 64]).float()).to(dt)];
      });
      try {
        expect(got3.shape).toEqual([3, 64, 64]);
        expect(await ulps(got3, want3, dt)).toBeLessThanOrEqual(1);
      } finally {
        [got3, want3].forEach((t) => t.dispose());
      }
    });

    it(`${dt} elementwise ops and casts on the vec4 path: contiguous, broadcast, strided, misaligned, mixed with float32`, async () => {
      torch.manualSeed(2);
      // each op on gpu:0 and on cpu, from the same 16-bit inputs: exact float32 arithmetic rounded once, so equal bits
      const ops: [string, (x: torch.Tensor, x32: torch.Tensor, bias: torch.Tensor) => torch.Tensor][] = [
        ['float32 -> 16-bit cast', (_x, x32) => x32.to(dt)],
        ['16-bit -> float32 cast', (x) => x.float()],
        ['relu, times a scalar', (x) => x.relu().mul(3)],
        ['plus a broadcast bias', (x, _x32, bias) => x.add(bias)],
        ['16-bit plus float32 (promotes to float32)', (x, x32) => x.add(x32)],
        ['a transposed operand', (x) => x.transpose(0, 1).mul(x.transpose(0, 1))],
        ['a slice at an odd offset', (x) => { const s = x.view([-1]).narrow(0, 1, 1001); return s.sub(s.relu()); }],
        ['where with a bool mask', (x) => torch.where(x.gt(0), x, x.neg())],
      ];
      const x32 = torch.tidy(() => torch.randn([37, 64]).mul(50)), bias32 = torch.randn([64]);
      const g32 = x32.to('gpu:0'), gb32 = bias32.to('gpu:0');
      for (const [what, f] of ops) {
        const [got, want] = torch.tidy(() => [f(g32.to(dt), g32, gb32.to(dt)).to('cpu'), f(x32.to(dt), x32, bias32.to(dt))]);
        const [g, w] = torch.tidy(() => [got.float(), want.float()]);
        try {
          expect(got.dtype, what).toBe(want.dtype);
          expect(Array.from(await g.data()), what).toEqual(Array.from(await w.data()));
        } finally {
          [got, want, g, w].forEach((t) => t.dispose());
        }
      }
      [x32, bias32, g32, gb32].forEach((t) => t.dispose());
    });
  }

  it('rounds float32 to float16 as the cpu does (PyTorch: nearest even, overflow to inf, subnormals), on every store path', async () => {
    // random bit patterns, half of them in float16's range, and the edges: inf, NaN, 65504..65520, subnormal ties, 2^-25
    const n = 100000, bits = new Uint32Array(n);
    let seed = 12345;
    for (let i = 0; i < n; i++) {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      bits[i] = i < n / 2 ? (seed & 0x807fffff) | ((100 + (seed % 44)) << 23) : seed;
    }
    bits.set([0x7f800000, 0xff800000, 0x7fc00000, 0x477fe000, 0x477fefff, 0x477ff000, 0x477ff001, 0x47800000, 0x38800000, 0x387fffff,
      0x33800000, 0x33000000, 0x33000001, 0x32ffffff, 0x337fffff, 1, 0x80000000, 0x3f801000, 0x3f803000, 0x3f800fff, 0x33c00000, 0x34200000]);
    const values = Array.from(new Float32Array(bits.buffer));
    const ints = [2049, 2051, 4097, 65519, 65520, 70000, -70000, 1 << 30];
    const x = torch.tensor(values), g = x.to('gpu:0'), xi = torch.tensor(ints), gi = xi.to('gpu:0');
    const cases: [string, () => torch.Tensor, () => torch.Tensor][] = [
      ['a cast (vec4 path)', () => g.to(dt16), () => x.to(dt16)],
      ['a cast from an odd offset', () => g.narrow(0, 1, n - 1).to(dt16), () => x.narrow(0, 1, n - 1).to(dt16)],
      ['int64 to float16 (word-packed path)', () => gi.to(dt16), () => xi.to(dt16)],
      ['copy_ into a strided float16 view (scatter path)', () => {
        const d = torch.zeros([2, n / 2], { dtype: dt16, device: 'gpu:0' });
        d.transpose(0, 1).copy_(g.view([n / 2, 2]));
        return d;
      }, () => x.view([n / 2, 2]).transpose(0, 1).contiguous().to(dt16)],
    ];
    try {
      for (const [what, onGpu, onCpu] of cases) {
        const [got, want] = torch.tidy(() => [onGpu().float().to('cpu'), onCpu().float()]);
        const a = await got.data(), b = await want.data();
        [got, want].forEach((t) => t.dispose());
        let bad = 0, first = '';
        for (let i = 0; i < b.length; i++) {
          if (!Object.is(a[i], b[i]) && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) {
            if (!bad++) first = `element ${i}: ${a[i]} where the cpu gives ${b[i]}`;
          }
        }
        expect(bad, `${what}: ${first}`).toBe(0);
      }
    } finally {
      [x, g, xi, gi].forEach((t) => t.dispose());
    }
  });

  describe('the 16-bit goldens of the shared op suite', () => {
    goldenTests(cases, 'gpu:0');
  });
});

describe.runIf(gpu)('WEBTORCH_F16', () => {
  it('refuses a value other than storage or native, naming it', async () => {
    await torch.shutdown();
    process.env.WEBTORCH_F16 = 'fast';
    torch.gpu.configure({ devices: 1 });
    await expect(torch.gpu.getDeviceProperties(0)).rejects.toThrow("WEBTORCH_F16 must be 'storage' or 'native' (or unset), got 'fast'");
    await torch.shutdown();
  });
});

afterAll(async () => {
  await torch.shutdown();
  delete process.env.WEBTORCH_F16;
});
