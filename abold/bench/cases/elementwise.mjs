// Elementwise ops in GB/s of logical traffic: `a*b+c` (three reads, one write: 16 bytes per
// element, two kernels in webtorch and tfjs today) and `relu` (8 bytes per element). Every output
// element is checked against plain JS.
import { compare, rel, uniform } from '../lib/harness.mjs';
import { pow2, tfImpl, wtFrom, wtImpl } from './common.mjs';

const sizes = (quick, device) => (quick ? [1 << 20, 1 << 22] : device === 'gpu' ? [1 << 20, 1 << 24, 1 << 25] : [1 << 20, 1 << 24]);

/** @type {import('./common.mjs').Case[]} */
export default [{
  name: 'mul_add',
  group: 'elementwise',
  unit: 'GB/s',
  higherIsBetter: true,
  rows: (quick, device) => sizes(quick, device).map((n) => ({ label: 'a*b+c', size: pow2(n), params: { n } })),
  inputs: ({ n }) => ({ a: uniform(n, 11), b: uniform(n, 12), c: uniform(n, 13) }),
  check: ({ n }, { a, b, c }) => (out) => compare(out, n, (i) => [a[i] * b[i] + c[i], 1e-6 * (Math.abs(a[i] * b[i]) + Math.abs(c[i])) + 1e-7]),
  figure: ({ n }, sec) => (16 * n) / sec / 1e9,
  impls: {
    webtorch(ctx, { n }, { a, b, c }) {
      const [A, B, C] = [a, b, c].map((h) => wtFrom(ctx, h, [n]));
      return wtImpl(ctx, [A, B, C], () => A.mul(B).add(C));
    },
    tfjs(ctx, { n }, { a, b, c }) {
      if (!ctx.tf) return null;
      const tf = ctx.tf;
      const [A, B, C] = [a, b, c].map((h) => tf.tensor1d(h));
      return tfImpl(ctx, [A, B, C], () => tf.add(tf.mul(A, B), C));
    },
  },
  torchJob: (p) => ({ op: 'mul_add', ...p }),
}, {
  name: 'relu',
  group: 'elementwise',
  unit: 'GB/s',
  higherIsBetter: true,
  rows: (quick, device) => sizes(quick, device).map((n) => ({ label: 'relu', size: pow2(n), params: { n } })),
  inputs: ({ n }) => ({ x: uniform(n, 14) }),
  check: ({ n }, { x }) => (out) => compare(out, n, rel(x.map((v) => Math.max(v, 0)), 0, 0)),
  figure: ({ n }, sec) => (8 * n) / sec / 1e9,
  impls: {
    webtorch(ctx, { n }, { x }) {
      const X = wtFrom(ctx, x, [n]);
      return wtImpl(ctx, [X], () => X.relu());
    },
    tfjs(ctx, { n }, { x }) {
      if (!ctx.tf) return null;
      const X = ctx.tf.tensor1d(x);
      return tfImpl(ctx, [X], () => ctx.tf.relu(X));
    },
  },
  torchJob: (p) => ({ op: 'relu', ...p }),
}];
