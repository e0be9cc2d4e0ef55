// A training step of a small CNN, in steps per second: conv 3×3 (1→8, pad 1), ReLU, max-pool 2,
// conv 3×3 (8→16, pad 1), ReLU, max-pool 2, flatten, Linear(16·7·7 → 10), cross-entropy, plain SGD,
// on 28×28 single-channel inputs. Zero the grads, forward, backward, update, from the caller to the
// sync point. Every implementation starts from the same weights; the checked step's loss and the
// gradients of the last layer are compared with a float64 plain-JS forward pass. tfjs runs NHWC,
// its own layout: its conv weights and the rows of its linear weight are laid out for it on the
// host, and its gradients are put back into PyTorch's layout for the check, outside the timing.
import { compare, uniform } from '../lib/harness.mjs';
import { tfTrainImpl, wtTrainImpl } from './common.mjs';
import { fn } from './nn.mjs';

const LR = 0.01;
const C1 = 8, C2 = 16, HW = 28, FEAT = C2 * 7 * 7, OUT = 10;
/** The parameters' shapes, PyTorch's layout. */
const SHAPES = [[C1, 1, 3, 3], [C1], [C2, C1, 3, 3], [C2], [OUT, FEAT], [OUT]];
const size = (s) => s.reduce((a, b) => a * b, 1);

function inputs({ b }) {
  const fanIn = [9, 9, C1 * 9, C1 * 9, FEAT, FEAT];
  const params = SHAPES.map((s, k) => uniform(size(s), 90 + k, -1 / Math.sqrt(fanIn[k]), 1 / Math.sqrt(fanIn[k])));
  const x = uniform(b * HW * HW, 96, 0, 1);
  const y = Int32Array.from(uniform(b, 97, 0, OUT), (u) => Math.min(OUT - 1, Math.floor(u)));
  const onehot = new Float32Array(b * OUT);
  y.forEach((c, i) => (onehot[i * OUT + c] = 1));
  return { params, x, y, onehot };
}

/** conv 3×3, pad 1, then ReLU, in float64: [B, cin, h, h] → [B, cout, h, h]. */
function convRelu(x, W, bias, B, cin, cout, h) {
  const y = new Float64Array(B * cout * h * h);
  for (let n = 0; n < B; n++) for (let o = 0; o < cout; o++) for (let r = 0; r < h; r++) for (let c = 0; c < h; c++) {
    let s = bias[o];
    for (let i = 0; i < cin; i++) for (let dy = 0; dy < 3; dy++) for (let dx = 0; dx < 3; dx++) {
      const rr = r + dy - 1, cc = c + dx - 1;
      if (rr >= 0 && rr < h && cc >= 0 && cc < h) s += x[((n * cin + i) * h + rr) * h + cc] * W[((o * cin + i) * 3 + dy) * 3 + dx];
    }
    y[((n * cout + o) * h + r) * h + c] = Math.max(s, 0);
  }
  return y;
}

/** max-pool 2×2, stride 2: [B, ch, h, h] → [B, ch, h/2, h/2]. */
function pool(x, B, ch, h) {
  const g = h / 2, y = new Float64Array(B * ch * g * g);
  for (let p = 0; p < B * ch; p++) for (let r = 0; r < g; r++) for (let c = 0; c < g; c++) {
    const at = (dr, dc) => x[(p * h + 2 * r + dr) * h + 2 * c + dc];
    y[(p * g + r) * g + c] = Math.max(at(0, 0), at(0, 1), at(1, 0), at(1, 1));
  }
  return y;
}

/** [loss, dW (the linear layer's weight), db] in float64. */
function reference({ b: B }, { params: [W1, b1, W2, b2, W3, b3], x, y }) {
  const h = pool(convRelu(pool(convRelu(x, W1, b1, B, 1, C1, HW), B, C1, HW), W2, b2, B, C1, C2, HW / 2), B, C2, HW / 2);
  const dW = new Float64Array(OUT * FEAT), db = new Float64Array(OUT);
  let loss = 0;
  for (let n = 0; n < B; n++) {
    const z = new Float64Array(OUT);
    for (let o = 0; o < OUT; o++) {
      let s = b3[o];
      for (let k = 0; k < FEAT; k++) s += h[n * FEAT + k] * W3[o * FEAT + k];
      z[o] = s;
    }
    const m = Math.max(...z);
    const e = z.map((v) => Math.exp(v - m)), sum = e.reduce((a, v) => a + v, 0);
    loss += Math.log(sum) + m - z[y[n]];
    for (let o = 0; o < OUT; o++) {
      const g = (e[o] / sum - (o === y[n] ? 1 : 0)) / B;
      db[o] += g;
      for (let k = 0; k < FEAT; k++) dW[o * FEAT + k] += g * h[n * FEAT + k];
    }
  }
  return [loss / B, ...dW, ...db];
}

function check(p, inp) {
  const ref = reference(p, inp);
  const maxAbs = (a, b) => ref.slice(a, b).reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  const gradTol = 1e-3 * maxAbs(1, ref.length) + 1e-7;
  return (out) => compare(out, ref.length, (i) => [ref[i], i === 0 ? 1e-4 * Math.abs(ref[0]) + 1e-6 : gradTol]);
}

/** tfjs flattens NHWC: feature (r·7 + c)·C2 + ch where PyTorch has ch·49 + r·7 + c. */
const nhwcFeature = (k) => { const ch = Math.floor(k / 49), rc = k % 49; return rc * C2 + ch; };

/** @type {import('./common.mjs').Case[]} */
export default [{
  name: 'cnn_train',
  // The step runs dozens of ops through JS on both threads; V8 needs seconds of them to settle (on the
  // H100, 3.5 ms per step in the first 1.5 s of a fresh process, 1.2–1.7 ms after: BENCHMARKS.md).
  warmupMs: 4000,
  group: 'train',
  unit: 'steps/s',
  higherIsBetter: true,
  requires: (torch) => (typeof torch.Tensor?.prototype?.backward === 'function' && fn(torch, 'conv2d') && fn(torch, 'maxPool2d') && fn(torch, 'crossEntropy') && torch.optim?.SGD
    ? null : 'autograd, F.conv2d, F.maxPool2d, F.crossEntropy, optim.SGD'),
  rows: (quick) => [{ b: quick ? 16 : 64 }].map((p) => ({ label: 'small CNN train step (SGD)', size: `conv-pool-conv-pool-linear, b${p.b}`, params: p })),
  inputs,
  check,
  figure: (_, sec) => 1 / sec,
  impls: {
    webtorch(ctx, p, inp) {
      const { torch, wt } = ctx;
      const F = torch.F;
      const params = inp.params.map((v, k) => torch.tensor(v, { device: wt }).reshape(SHAPES[k]).detach().requiresGrad_());
      const [W1, b1, W2, b2, W3, b3] = params;
      const X = torch.tensor(inp.x, { device: wt }).reshape([p.b, 1, HW, HW]), Y = torch.tensor(inp.y, { device: wt, dtype: 'int64' });
      const lossOf = () => {
        const h1 = F.maxPool2d(F.conv2d(X, W1, b1, { padding: 1 }).relu(), 2);
        const h2 = F.maxPool2d(F.conv2d(h1, W2, b2, { padding: 1 }).relu(), 2);
        return F.crossEntropy(F.linear(h2.reshape([p.b, FEAT]), W3, b3), Y);
      };
      return wtTrainImpl(ctx, {
        lossOf,
        params,
        lr: LR,
        async output(loss) {
          const [l, dW, db] = await Promise.all([loss.data(), W3.grad.data(), b3.grad.data()]);
          return Float32Array.from([l[0], ...dW, ...db]);
        },
        free() { [X, Y].forEach((t) => t.dispose()); params.forEach((t) => { t.grad?.dispose(); t.dispose(); }); },
      });
    },
    tfjs(ctx, p, inp) {
      if (!ctx.tf) return null;
      const tf = ctx.tf;
      if (!tf.getKernel('Conv2DBackpropFilter', tf.getBackend())) return null; // tfjs-wasm cannot train a conv layer
      const hwio = (w, cout, cin) => {
        const out = new Float32Array(w.length);
        for (let o = 0; o < cout; o++) for (let i = 0; i < cin; i++) for (let q = 0; q < 9; q++) out[(q * cin + i) * cout + o] = w[(o * cin + i) * 9 + q];
        return out;
      };
      const [w1, bb1, w2, bb2, w3, bb3] = inp.params;
      const w3t = new Float32Array(FEAT * OUT); // tfjs's dense weight is [FEAT, OUT], rows in NHWC feature order
      for (let o = 0; o < OUT; o++) for (let k = 0; k < FEAT; k++) w3t[nhwcFeature(k) * OUT + o] = w3[o * FEAT + k];
      const name = (s) => `cnn_${s}_${Math.random()}`;
      const vars = [
        tf.variable(tf.tensor4d(hwio(w1, C1, 1), [3, 3, 1, C1]), true, name('w1')), tf.variable(tf.tensor1d(bb1), true, name('b1')),
        tf.variable(tf.tensor4d(hwio(w2, C2, C1), [3, 3, C1, C2]), true, name('w2')), tf.variable(tf.tensor1d(bb2), true, name('b2')),
        tf.variable(tf.tensor2d(w3t, [FEAT, OUT]), true, name('w3')), tf.variable(tf.tensor1d(bb3), true, name('b3')),
      ];
      const X = tf.tensor4d(inp.x, [p.b, HW, HW, 1]), onehot = tf.tensor2d(inp.onehot, [p.b, OUT]);
      const block = (x, w, bias) => tf.maxPool(tf.relu(tf.add(tf.conv2d(x, w, 1, 'same'), bias)), 2, 2, 'valid');
      const lossOf = () => {
        const h = tf.reshape(block(block(X, vars[0], vars[1]), vars[2], vars[3]), [p.b, FEAT]);
        return tf.losses.softmaxCrossEntropy(onehot, tf.add(tf.matMul(h, vars[4]), vars[5]));
      };
      return tfTrainImpl(ctx, {
        lossOf,
        vars,
        lr: LR,
        async output(value, grads) {
          const [l, gw, gb] = await Promise.all([value.data(), grads[vars[4].name].data(), grads[vars[5].name].data()]);
          const dW = new Float32Array(OUT * FEAT);
          for (let o = 0; o < OUT; o++) for (let k = 0; k < FEAT; k++) dW[o * FEAT + k] = gw[nhwcFeature(k) * OUT + o];
          return Float32Array.from([l[0], ...dW, ...gb]);
        },
        free() { [X, onehot].forEach((t) => t.dispose()); },
      });
    },
  },
  torchJob: (p) => ({ op: 'cnn_train', ...p, lr: LR }),
}];
