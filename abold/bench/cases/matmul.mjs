// matmul, f32, in GFLOP/s (2·B·M·K·N flops per product): square 256…8192, two skinny shapes
// (small M; long K, where split-K pays), and a batched one. Checked against a float64 plain-JS
// dot product over every output element of small products and a sample of large ones.
import { compare, sampleIndices, uniform } from '../lib/harness.mjs';
import { tfImpl, wtFrom, wtImpl } from './common.mjs';

const mm = (label, b, m, k, n) => ({
  label,
  size: `${b > 1 ? `${b}×` : ''}${m === k && k === n ? `${m}³` : `${m}×${k}×${n}`}`,
  params: { b, m, k, n },
});

/** @type {import('./common.mjs').Case[]} */
export default [{
  name: 'matmul',
  group: 'matmul',
  unit: 'GFLOP/s',
  higherIsBetter: true,
  rows(quick, device) {
    if (quick) return [mm('matmul', 1, 256, 256, 256), mm('matmul', 1, 512, 512, 512), mm('matmul (skinny)', 1, 64, 4096, 64), mm('matmul (batched)', 8, 128, 128, 128)];
    const square = device === 'gpu' ? [256, 512, 1024, 2048, 4096, 8192] : [256, 512, 1024];
    return [
      ...square.map((s) => mm('matmul', 1, s, s, s)),
      device === 'gpu' ? mm('matmul (skinny)', 1, 32, 4096, 4096) : mm('matmul (skinny)', 1, 32, 1024, 1024),
      device === 'gpu' ? mm('matmul (skinny)', 1, 256, 16384, 256) : mm('matmul (skinny)', 1, 64, 8192, 64),
      device === 'gpu' ? mm('matmul (batched)', 32, 512, 512, 512) : mm('matmul (batched)', 8, 256, 256, 256),
    ];
  },
  inputs: ({ b, m, k, n }) => ({ a: uniform(b * m * k, 1), w: uniform(b * k * n, 2) }),
  check({ b, m, k, n }, { a, w }) {
    const total = b * m * n;
    const indices = total * k <= 1 << 26 ? null : sampleIndices(total, 1024);
    return (out) => compare(out, total, (i) => {
      const bi = Math.floor(i / (m * n)), r = Math.floor(i / n) % m, c = i % n;
      const ao = bi * m * k + r * k, wo = bi * k * n + c;
      let s = 0, abs = 0;
      for (let j = 0; j < k; j++) {
        const p = a[ao + j] * w[wo + j * n];
        s += p;
        abs += Math.abs(p);
      }
      return [s, 1e-5 * abs + 1e-6];
    }, indices);
  },
  figure: ({ b, m, k, n }, sec) => (2 * b * m * k * n) / sec / 1e9,
  impls: {
    webtorch(ctx, { b, m, k, n }, { a, w }) {
      const A = wtFrom(ctx, a, b > 1 ? [b, m, k] : [m, k]), W = wtFrom(ctx, w, b > 1 ? [b, k, n] : [k, n]);
      return wtImpl(ctx, [A, W], () => A.matmul(W));
    },
    tfjs(ctx, { b, m, k, n }, { a, w }) {
      if (!ctx.tf) return null;
      const A = ctx.tf.tensor(a, b > 1 ? [b, m, k] : [m, k]), W = ctx.tf.tensor(w, b > 1 ? [b, k, n] : [k, n]);
      return tfImpl(ctx, [A, W], () => ctx.tf.matMul(A, W));
    },
  },
  torchJob: (p) => ({ op: 'matmul', ...p }),
}];
