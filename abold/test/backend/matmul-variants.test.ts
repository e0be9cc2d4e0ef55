/**
 * The matmul goldens under each GPU matmul variant (`WEBTORCH_MATMUL`, read when a GPU worker
 * starts): the default rule (0), the plain tiles (1), the vec4 tiles (3), and the tiled
 * variants the default picks for large (6) and medium (10) products, and for 16–48 rows on a CPU adapter (28). A forced variant runs
 * wherever its kernel applies (f32, K and N multiples of 4), so the goldens' small and ragged
 * shapes exercise it; the rest fall back to variant 1.
 */
import { afterAll, beforeAll, describe } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck, testDevices } from '../devices.js';
import { goldenTests, loadGoldens } from '../golden.js';

const cases = loadGoldens('goldens.json').cases.filter((c) => c.op === 'matmul');
const gpu = (await testDevices()).includes('gpu:0');

describe.runIf(gpu).each(['0', '1', '3', '6', '10', '28'])('matmul goldens on gpu:0 with WEBTORCH_MATMUL=%s', (variant) => {
  beforeAll(async () => {
    await torch.shutdown();
    process.env.WEBTORCH_MATMUL = variant;
    torch.gpu.configure({ devices: 1 });
    await torch.gpu.init();
  });
  leakCheck(() => ['gpu:0']);
  goldenTests(cases, 'gpu:0');
});

afterAll(async () => {
  await torch.shutdown();
  delete process.env.WEBTORCH_MATMUL;
});
