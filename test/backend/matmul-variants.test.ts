/**
 * The matmul goldens under each GPU matmul variant (`WEBTORCH_MATMUL`, read when a GPU worker
 * starts): the default rule (0), the plain tiles (1), the vec4 tiles (3), and the tiled
 * variants the default picks for large (6) and medium (10) products, for 16–48 rows on a CPU
 * adapter (28) and for few tiles on a GPU (35), the direct kernel (26) and the skinny ones (29:
 * narrow n, 32: narrow m). A forced variant runs wherever its kernel applies (the vec4 tiles: f32,
 * K and N multiples of 4; 26 and the skinny ones: any strides and float dtype), so the goldens'
 * small and ragged shapes exercise it; the rest fall back to variant 1. The MLP step's skinny
 * products (a classifier's x·Wᵀ with 10 outputs, its weight gradient gᵀ·h) are checked under each
 * against the cpu device, and the selection rule (`chooseMatmul`) by shape and adapter.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { DIRECT, chooseMatmul } from '../../wgsl/matmul.js';
import { leakCheck, testDevices } from '../devices.js';
import { goldenTests, loadGoldens } from '../golden.js';

const cases = loadGoldens('goldens.json').cases.filter((c) => c.op === 'matmul');
const gpu = (await testDevices()).includes('gpu:0');

/** Deterministic values in [-1, 1). */
const values = (n: number, seed: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 12.9898 + seed * 78.233) % 1);

describe.runIf(gpu).each(['0', '1', '3', '6', '10', '26', '28', '29', '32', '35'])('matmul goldens on gpu:0 with WEBTORCH_MATMUL=%s', (variant) => {
  beforeAll(async () => {
    await torch.shutdown();
    process.env.WEBTORCH_MATMUL = variant;
    torch.gpu.configure({ devices: 1 });
    await torch.gpu.init();
  });
  leakCheck(() => ['gpu:0', 'cpu']);
  goldenTests(cases, 'gpu:0');

  it.each([[256, 1024, 10, 'float32'], [17, 300, 15, 'float32'], [10, 256, 1024, 'float32'], [1, 129, 300, 'float32'], [256, 1024, 10, 'float16'], [10, 256, 1024, 'bfloat16']] as const)(
    'the MLP step\'s skinny products %i×%i×%i in %s (x·Wᵀ, gᵀ·x, a batch times Wᵀ) match the cpu device', async (m, k, n, dtype) => {
      const [x, w, g, xs] = torch.tidy(() => [[m, k], [n, k], [m, n], [2, m, k]].map((s, i) => torch.tensor(values(s.reduce((a, b) => a * b), i)).reshape(s)));
      const products = (d: string) => torch.tidy(() => {
        const [xd, wd, gd, xsd] = [x, w, g, xs].map((t) => t.to(d).to(dtype));
        return [torch.nn.functional.linear(xd, wd), torch.matmul(gd.t(), xd), torch.matmul(xsd, wd.t())].map((t) => t.to('cpu').float());
      });
      const [got, want] = [products('gpu:0'), products('cpu')];
      const tol = dtype === 'float32' ? 1e-4 : dtype === 'float16' ? 2e-3 : 2e-2;
      for (let i = 0; i < got.length; i++) {
        expect(got[i].shape).toEqual(want[i].shape);
        const [a, b] = [await got[i].data(), await want[i].data()];
        let worst = 0;
        for (let j = 0; j < b.length; j++) worst = Math.max(worst, Math.abs(a[j] - b[j]) / (1 + Math.abs(b[j])));
        expect(worst, `product ${i}`).toBeLessThan(tol);
      }
      [x, w, g, xs, ...got, ...want].forEach((t) => t.dispose());
    });
});

describe('chooseMatmul', () => {
  const gpuRule = (m: number, k: number, n: number, batch = 1) => chooseMatmul(m, n, k, batch, true, 0, 49152, false);
  const cpuRule = (m: number, k: number, n: number, batch = 1) => chooseMatmul(m, n, k, batch, true, 0, 32768, true);
  it('gives the MLP step\'s skinny products the skinny variants on a GPU, the direct one on a CPU adapter', () => {
    expect(gpuRule(256, 1024, 10)).toBe(29);
    expect(gpuRule(10, 256, 1024)).toBe(32);
    expect(cpuRule(256, 1024, 10)).toBe(DIRECT);
    expect(cpuRule(10, 256, 1024)).toBe(DIRECT);
  });
  it('keeps the direct kernel for a short K, and takes the side with more workgroups when both are narrow', () => {
    expect(gpuRule(256, 64, 10)).toBe(DIRECT);
    expect(gpuRule(1, 8, 1 << 20)).toBe(DIRECT); // the sum of split-K partials
    expect(gpuRule(8, 784, 9, 16)).toBe(29);
    expect(gpuRule(15, 784, 3)).toBe(29);
    expect(gpuRule(15, 784, 300)).toBe(32);
    expect(gpuRule(1 << 20, 256, 10)).toBe(DIRECT); // 2^20 rows: past the 65,535 workgroups of variant 29
  });
  it('takes 32×64 tiles where a GPU would get few 64×128 tiles, not on a CPU adapter', () => {
    expect(gpuRule(256, 1024, 1024)).toBe(35);
    expect(gpuRule(256, 784, 1024)).toBe(35);
    expect(gpuRule(1024, 256, 1024)).toBe(10);
    expect(gpuRule(2048, 2048, 2048)).toBe(6);
    expect(cpuRule(256, 1024, 1024)).toBe(10);
  });
});

afterAll(async () => {
  await torch.shutdown();
  delete process.env.WEBTORCH_MATMUL;
});
