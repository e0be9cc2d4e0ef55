/**
 * The goldens of every op that runs the windows kernel (wgsl/window.ts) under both of its forms
 * (`WEBTORCH_WINDOWS`, read when a GPU worker starts): `row`, lavapipe's default, and `element`,
 * the default on a GPU, which the rest of the suite (on lavapipe) would otherwise never run.
 */
import { afterAll, beforeAll, describe } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck, testDevices } from '../devices.js';
import { goldenTests, loadGoldens, T, type Runner } from '../golden.js';

const F = torch.F;
const RUNNERS: Record<string, Runner> = {
  unfold: ([x], kw) => F.unfold(T(x), kw.kernel_size, { stride: kw.stride, padding: kw.padding, dilation: kw.dilation }),
  conv2d: ([x, w, b], kw) => F.conv2d(T(x), T(w), b as torch.Tensor | undefined, kw),
  conv1d: ([x, w, b], kw) => F.conv1d(T(x), T(w), b as torch.Tensor | undefined, kw),
  max_pool2d: ([x], kw) => F.maxPool2d(T(x), kw.kernel_size, {
    stride: kw.stride, padding: kw.padding, dilation: kw.dilation, ceilMode: kw.ceil_mode, returnIndices: kw.return_indices,
  } as torch.MaxPool2dOptions & { returnIndices: true }),
  avg_pool2d: ([x], kw) => F.avgPool2d(T(x), kw.kernel_size, {
    stride: kw.stride, padding: kw.padding, ceilMode: kw.ceil_mode, countIncludePad: kw.count_include_pad, divisorOverride: kw.divisor_override,
  }),
};

const cases = loadGoldens('goldens-nn.json').cases.filter((c) => c.op in RUNNERS);
const gpu = (await testDevices()).includes('gpu:0');

describe.runIf(gpu).each(['element', 'row'])('window goldens on gpu:0 with WEBTORCH_WINDOWS=%s', (form) => {
  beforeAll(async () => {
    await torch.shutdown();
    process.env.WEBTORCH_WINDOWS = form;
    torch.gpu.configure({ devices: 1 });
    await torch.gpu.init();
  });
  leakCheck(() => ['gpu:0']);
  goldenTests(cases, 'gpu:0', RUNNERS);
});

afterAll(async () => {
  await torch.shutdown();
  delete process.env.WEBTORCH_WINDOWS;
});
