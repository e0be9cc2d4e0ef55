// Row reductions in GB/s of logical traffic: `sum` over the last dim of [R, C] (4·R·C + 4·R bytes)
// and softmax over the last dim (8·R·C bytes: read once, write once). "softmax" is each library's
// own softmax (`F.softmax`, `tf.softmax`, `torch.softmax`). "softmax (composed)" builds it from five
// ops, `exp(x - max) / sum`, in every library alike: it measures broadcasting elementwise ops and
// small reductions, as user code that spells softmax out runs them.
import { compare, uniform } from '../lib/harness.mjs';
import { tfImpl, wtFrom, wtImpl } from './common.mjs';
import { fn } from './nn.mjs';

const shape = (label, r, c) => ({ label, size: `${r}×${c}`, params: { r, c } });

/** Softmax of each row in float64, for the check. */
function softmaxRef(x, r, c) {
  const out = new Float64Array(r * c);
  for (let i = 0; i < r; i++) {
    let m = -Infinity, s = 0;
    for (let j = 0; j < c; j++) m = Math.max(m, x[i * c + j]);
    for (let j = 0; j < c; j++) s += (out[i * c + j] = Math.exp(x[i * c + j] - m));
    for (let j = 0; j < c; j++) out[i * c + j] /= s;
  }
  return out;
}

/** Composed softmax over the last dim from webtorch's ops (call inside `torch.tidy`). */
const composedSoftmax = (X) => {
  const e = X.sub(X.max(-1, true).values).exp();
  return e.div(e.sum(-1, true));
};

/** The same composition in TensorFlow.js. */
const tfComposedSoftmax = (tf, X) => {
  const e = tf.exp(tf.sub(X, tf.max(X, -1, true)));
  return tf.div(e, tf.sum(e, -1, true));
};

const softmax = (name, label, rowsOf, webtorchOp, tfOp, torchOp) => ({
  name,
  group: 'softmax',
  unit: 'GB/s',
  higherIsBetter: true,
  rows: (quick, device, ctx) => (webtorchOp(ctx) ? rowsOf(quick, device).map(([r, c]) => shape(label, r, c)) : []),
  inputs: ({ r, c }) => ({ x: uniform(r * c, 31, -4, 4) }),
  check({ r, c }, { x }) {
    const ref = softmaxRef(x, r, c);
    return (out) => compare(out, r * c, (i) => [ref[i], 1e-5 * ref[i] + 1e-7]);
  },
  figure: ({ r, c }, sec) => (8 * r * c) / sec / 1e9,
  impls: {
    webtorch(ctx, { r, c }, { x }) {
      const X = wtFrom(ctx, x, [r, c]);
      const op = webtorchOp(ctx);
      return wtImpl(ctx, [X], () => op(X));
    },
    tfjs(ctx, { r, c }, { x }) {
      if (!ctx.tf) return null;
      const X = ctx.tf.tensor2d(x, [r, c]);
      return tfImpl(ctx, [X], () => tfOp(ctx.tf, X));
    },
  },
  torchJob: (p) => ({ op: torchOp, ...p }),
});

const softmaxSizes = (quick, device) => (quick ? [[256, 1024], [4096, 256]] : device === 'gpu' ? [[1024, 1024], [8192, 4096], [32768, 1024]] : [[1024, 1024], [4096, 1024]]);

/** @type {import('./common.mjs').Case[]} */
export default [{
  name: 'sum',
  group: 'sum',
  unit: 'GB/s',
  higherIsBetter: true,
  rows(quick, device) {
    const s = quick ? [[1024, 1024], [64, 16384]] : device === 'gpu' ? [[4096, 4096], [32768, 1024], [64, 524288]] : [[4096, 4096], [64, 262144]];
    return s.map(([r, c]) => shape('sum(-1)', r, c));
  },
  inputs: ({ r, c }) => ({ x: uniform(r * c, 21) }),
  check({ r, c }, { x }) {
    const ref = new Float64Array(r), abs = new Float64Array(r);
    for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) { ref[i] += x[i * c + j]; abs[i] += Math.abs(x[i * c + j]); }
    return (out) => compare(out, r, (i) => [ref[i], 1e-5 * abs[i] + 1e-6]);
  },
  figure: ({ r, c }, sec) => (4 * r * c + 4 * r) / sec / 1e9,
  impls: {
    webtorch(ctx, { r, c }, { x }) {
      const X = wtFrom(ctx, x, [r, c]);
      return wtImpl(ctx, [X], () => X.sum(-1));
    },
    tfjs(ctx, { r, c }, { x }) {
      if (!ctx.tf) return null;
      const X = ctx.tf.tensor2d(x, [r, c]);
      return tfImpl(ctx, [X], () => ctx.tf.sum(X, -1));
    },
  },
  torchJob: (p) => ({ op: 'sum_last', ...p }),
},
softmax('softmax', 'softmax', softmaxSizes, (ctx) => { const f = fn(ctx.torch, 'softmax'); return f ? (X) => f(X, -1) : null; },
  (tf, X) => tf.softmax(X), 'softmax'),
softmax('softmax_composed', 'softmax (composed)', softmaxSizes, () => composedSoftmax, tfComposedSoftmax, 'softmax_composed'),
];
