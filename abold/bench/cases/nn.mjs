// NN ops that webtorch gained with `torch.F`: layer norm over the last dim (GB/s of logical traffic,
// 8·R·C bytes) and a ResNet-style 3×3 convolution, stride 1, padding 1 (GFLOP/s, 2·N·K·C·9·H·W).
// TensorFlow.js has no layer norm op in tfjs-core: its row composes one from `tf.moments`. Its
// conv2d runs on NHWC (its native layout): inputs are laid out for it on the host, and its output
// is put back into NCHW on the host for the check, outside the timing.
import { compare, sampleIndices, uniform } from '../lib/harness.mjs';
import { tfImpl, wtFrom, wtImpl } from './common.mjs';

/** `torch.F.<name>` (or `torch.nn.functional.<name>`), or undefined. */
export const fn = (torch, name) => torch.F?.[name] ?? torch.nn?.functional?.[name];

const EPS = 1e-5;

/** @type {import('./common.mjs').Case[]} */
export default [{
  name: 'layer_norm',
  group: 'nn',
  unit: 'GB/s',
  higherIsBetter: true,
  requires: (torch) => (fn(torch, 'layerNorm') ? null : 'F.layerNorm'),
  rows(quick, device) {
    const s = quick ? [[256, 1024], [4096, 256]] : device === 'gpu' ? [[4096, 1024], [32768, 1024]] : [[1024, 1024], [4096, 1024]];
    return s.map(([r, c]) => ({ label: 'layer norm', size: `${r}×${c}`, params: { r, c } }));
  },
  inputs: ({ r, c }) => ({ x: uniform(r * c, 51, -2, 2) }),
  check({ r, c }, { x }) {
    const ref = new Float64Array(r * c);
    for (let i = 0; i < r; i++) {
      let m = 0, v = 0;
      for (let j = 0; j < c; j++) m += x[i * c + j];
      m /= c;
      for (let j = 0; j < c; j++) v += (x[i * c + j] - m) ** 2;
      const s = 1 / Math.sqrt(v / c + EPS);
      for (let j = 0; j < c; j++) ref[i * c + j] = (x[i * c + j] - m) * s;
    }
    return (out) => compare(out, r * c, (i) => [ref[i], 1e-4 * Math.abs(ref[i]) + 1e-5]);
  },
  figure: ({ r, c }, sec) => (8 * r * c) / sec / 1e9,
  impls: {
    webtorch(ctx, { r, c }, { x }) {
      const X = wtFrom(ctx, x, [r, c]), ln = fn(ctx.torch, 'layerNorm');
      return wtImpl(ctx, [X], () => ln(X, [c]));
    },
    tfjs(ctx, { r, c }, { x }) {
      if (!ctx.tf) return null;
      const tf = ctx.tf, X = tf.tensor2d(x, [r, c]);
      return tfImpl(ctx, [X], () => {
        const { mean, variance } = tf.moments(X, -1, true);
        return tf.div(tf.sub(X, mean), tf.sqrt(tf.add(variance, EPS)));
      });
    },
  },
  torchJob: (p) => ({ op: 'layer_norm', ...p }),
}, {
  name: 'conv2d',
  group: 'nn',
  unit: 'GFLOP/s',
  higherIsBetter: true,
  requires: (torch) => (fn(torch, 'conv2d') ? null : 'F.conv2d'),
  rows(quick, device) {
    const s = quick ? [[4, 16, 28, 16]] : device === 'gpu' ? [[32, 64, 56, 64], [32, 128, 28, 128]] : [[8, 64, 56, 64]];
    return s.map(([n, c, hw, k]) => ({ label: 'conv2d 3×3, pad 1', size: `${n}×${c}×${hw}² → ${k}`, params: { n, c, h: hw, w: hw, k } }));
  },
  inputs: ({ n, c, h, w, k }) => ({ x: uniform(n * c * h * w, 61), wt: uniform(k * c * 9, 62, -1 / Math.sqrt(c * 9), 1 / Math.sqrt(c * 9)) }),
  check({ n, c, h, w, k }, { x, wt }) {
    const total = n * k * h * w;
    return (out) => compare(out, total, (i) => {
      const ni = Math.floor(i / (k * h * w)), ki = Math.floor(i / (h * w)) % k, y = Math.floor(i / w) % h, xx = i % w;
      let s = 0, abs = 0;
      for (let ci = 0; ci < c; ci++) {
        for (let dy = 0; dy < 3; dy++) {
          const yy = y + dy - 1;
          if (yy < 0 || yy >= h) continue;
          for (let dx = 0; dx < 3; dx++) {
            const x2 = xx + dx - 1;
            if (x2 < 0 || x2 >= w) continue;
            const p = x[((ni * c + ci) * h + yy) * w + x2] * wt[((ki * c + ci) * 3 + dy) * 3 + dx];
            s += p;
            abs += Math.abs(p);
          }
        }
      }
      return [s, 1e-5 * abs + 1e-6];
    }, sampleIndices(total, 2048));
  },
  figure: ({ n, c, h, w, k }, sec) => (2 * n * k * c * 9 * h * w) / sec / 1e9,
  impls: {
    webtorch(ctx, { n, c, h, w, k }, { x, wt }) {
      const X = wtFrom(ctx, x, [n, c, h, w]), W = wtFrom(ctx, wt, [k, c, 3, 3]), conv = fn(ctx.torch, 'conv2d');
      return wtImpl(ctx, [X, W], () => conv(X, W, null, { padding: 1 }));
    },
    tfjs(ctx, { n, c, h, w, k }, { x, wt }) {
      if (!ctx.tf) return null;
      const tf = ctx.tf;
      const nhwc = new Float32Array(x.length), hwio = new Float32Array(wt.length);
      for (let ni = 0; ni < n; ni++) for (let ci = 0; ci < c; ci++) for (let p = 0; p < h * w; p++) nhwc[(ni * h * w + p) * c + ci] = x[(ni * c + ci) * h * w + p];
      for (let ki = 0; ki < k; ki++) for (let ci = 0; ci < c; ci++) for (let p = 0; p < 9; p++) hwio[(p * c + ci) * k + ki] = wt[(ki * c + ci) * 9 + p];
      const X = tf.tensor4d(nhwc, [n, h, w, c]), W = tf.tensor4d(hwio, [3, 3, c, k]);
      const impl = tfImpl(ctx, [X, W], () => tf.conv2d(X, W, 1, 'same'));
      const raw = impl.output;
      impl.output = async () => { // NHWC → NCHW on the host, for the check only
        const o = await raw(), out = new Float32Array(o.length);
        for (let ni = 0; ni < n; ni++) for (let p = 0; p < h * w; p++) for (let ki = 0; ki < k; ki++) out[(ni * k + ki) * h * w + p] = o[(ni * h * w + p) * k + ki];
        return out;
      };
      return impl;
    },
  },
  torchJob: (p) => ({ op: 'conv2d', ...p }),
}];

