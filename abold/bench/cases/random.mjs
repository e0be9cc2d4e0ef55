// Random numbers in GB/s of output (4 bytes per element): `rand` (uniform) and `randn` (normal),
// made on the device (Philox4x32-10: wgsl/random.ts, assembly/kernels/random.ts). The check
// looks at the output's range and moments (the numbers differ from PyTorch's and TensorFlow.js's).

const sizes = (quick, device) => (quick ? [1 << 20, 1 << 22] : device === 'gpu' ? [1 << 20, 1 << 24, 1 << 25] : [1 << 20, 1 << 24]);

/** A check of n outputs: every value in [lo, hi), and the mean and standard deviation within tol. */
const moments = (n, lo, hi, mean, std) => (out) => {
  if (out.length !== n) return `expected ${n} values, got ${out.length}`;
  let s = 0, s2 = 0;
  for (let i = 0; i < n; i++) {
    const v = out[i];
    if (!(v >= lo && v < hi)) return `value ${v} at ${i} is outside [${lo}, ${hi})`;
    s += v;
    s2 += v * v;
  }
  const m = s / n, sd = Math.sqrt(s2 / n - m * m);
  if (Math.abs(m - mean) > 0.01 || Math.abs(sd - std) > 0.01) return `mean ${m} and std ${sd}, expected ${mean} and ${std}`;
  return null;
};

/** A case drawing n numbers per iteration with webtorch's `fn`, TensorFlow.js's `tfFn` and PyTorch's `op`. */
const drawCase = (name, label, fn, tfFn, check) => ({
  name,
  group: 'random',
  unit: 'GB/s',
  higherIsBetter: true,
  rows: (quick, device) => sizes(quick, device).map((n) => ({ label, size: `2^${Math.log2(n)}`, params: { n } })),
  check: ({ n }) => check(n),
  figure: ({ n }, sec) => (4 * n) / sec / 1e9,
  impls: {
    webtorch(ctx, { n }) {
      let last = null;
      return {
        launch() {
          last?.dispose();
          last = fn(ctx.torch)([n], { device: ctx.wt });
        },
        sync: ctx.wtSync,
        output: () => last.data(),
        dispose() { last?.dispose(); },
      };
    },
    tfjs(ctx, { n }) {
      if (!ctx.tf) return null;
      let last = null;
      return {
        launch() {
          last?.dispose();
          last = tfFn(ctx.tf)([n]);
        },
        sync: ctx.tfSync,
        output: () => last.data(),
        dispose() { last?.dispose(); },
      };
    },
  },
  torchJob: (p) => ({ op: name, ...p }),
});

/** @type {import('./common.mjs').Case[]} */
export default [
  drawCase('rand', 'rand', (torch) => torch.rand, (tf) => (shape) => tf.randomUniform(shape), (n) => moments(n, 0, 1, 0.5, Math.sqrt(1 / 12))),
  drawCase('randn', 'randn', (torch) => torch.randn, (tf) => (shape) => tf.randomNormal(shape), (n) => moments(n, -Infinity, Infinity, 0, 1)),
];
