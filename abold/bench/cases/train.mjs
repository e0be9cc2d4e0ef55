// A training step of an MLP (784-1024-1024-10, ReLU, batch 256, cross-entropy, plain SGD), in
// steps per second: zero the grads, forward, loss, backward, update, from the caller to the sync
// point. Every implementation starts from the same weights; the checked step's loss and gradients
// (of the last layer, and a sample of the first) are compared with a float64 plain-JS backprop.
import { compare, sampleIndices, uniform } from '../lib/harness.mjs';
import { tfTrainImpl, wtTrainImpl } from './common.mjs';
import { fn } from './nn.mjs';

const LR = 0.01;

/** The layers' shapes: [out, in] weights as in PyTorch. */
const layers = ({ din, h, dout }) => [[h, din], [h, h], [dout, h]];

/** Deterministic weights (uniform ±1/√fan_in, as PyTorch initialises Linear), inputs and labels. */
function inputs(p) {
  const params = layers(p).flatMap(([o, i], l) => {
    const b = 1 / Math.sqrt(i);
    return [uniform(o * i, 70 + 2 * l, -b, b), uniform(o, 71 + 2 * l, -b, b)];
  });
  const x = uniform(p.b * p.din, 80, 0, 1);
  const y = Int32Array.from(uniform(p.b, 81, 0, p.dout), (u) => Math.min(p.dout - 1, Math.floor(u)));
  const onehot = new Float32Array(p.b * p.dout);
  y.forEach((c, i) => (onehot[i * p.dout + c] = 1));
  return { params, x, y, onehot, w1Sample: sampleIndices(p.h * p.din, 256) };
}

/** y[B, o] = x[B, i]·Wᵀ + b, in float64. */
function dense(x, W, bias, B, o, i) {
  const y = new Float64Array(B * o);
  for (let r = 0; r < B; r++) {
    for (let c = 0; c < o; c++) {
      let s = bias[c];
      for (let k = 0; k < i; k++) s += x[r * i + k] * W[c * i + k];
      y[r * o + c] = s;
    }
  }
  return y;
}

/** Loss, then the gradients the check looks at: [loss, dW3, db3, dW1 at the sampled indices]. */
function reference(p, { params: [W1, b1, W2, b2, W3, b3], x, y, w1Sample }) {
  const { b: B, din, h, dout } = p;
  const a1 = dense(x, W1, b1, B, h, din), h1 = a1.map((v) => Math.max(v, 0));
  const a2 = dense(h1, W2, b2, B, h, h), h2 = a2.map((v) => Math.max(v, 0));
  const z = dense(h2, W3, b3, B, dout, h);
  let loss = 0;
  const dz = new Float64Array(B * dout);
  for (let r = 0; r < B; r++) {
    let m = -Infinity, s = 0;
    for (let c = 0; c < dout; c++) m = Math.max(m, z[r * dout + c]);
    for (let c = 0; c < dout; c++) s += Math.exp(z[r * dout + c] - m);
    loss += Math.log(s) + m - z[r * dout + y[r]];
    for (let c = 0; c < dout; c++) dz[r * dout + c] = (Math.exp(z[r * dout + c] - m) / s - (c === y[r] ? 1 : 0)) / B;
  }
  const dW3 = new Float64Array(dout * h), db3 = new Float64Array(dout), dh2 = new Float64Array(B * h), dh1 = new Float64Array(B * h);
  for (let r = 0; r < B; r++) {
    for (let c = 0; c < dout; c++) {
      const g = dz[r * dout + c];
      db3[c] += g;
      for (let k = 0; k < h; k++) { dW3[c * h + k] += g * h2[r * h + k]; dh2[r * h + k] += g * W3[c * h + k]; }
    }
    for (let k = 0; k < h; k++) if (a2[r * h + k] <= 0) dh2[r * h + k] = 0;
    for (let j = 0; j < h; j++) {
      const g = dh2[r * h + j];
      if (g !== 0) for (let k = 0; k < h; k++) dh1[r * h + k] += g * W2[j * h + k];
    }
    for (let k = 0; k < h; k++) if (a1[r * h + k] <= 0) dh1[r * h + k] = 0;
  }
  const dW1 = w1Sample.map((idx) => {
    const i = Math.floor(idx / din), j = idx % din;
    let s = 0;
    for (let r = 0; r < B; r++) s += dh1[r * h + i] * x[r * din + j];
    return s;
  });
  return [loss / B, ...dW3, ...db3, ...dW1];
}

/** Groups of the checked vector and their tolerances: the loss, then gradients (to 1e-3 of their largest). */
function check(p, inp) {
  const ref = reference(p, inp);
  const groups = [[0, 1], [1, 1 + p.dout * p.h], [1 + p.dout * p.h, 1 + p.dout * p.h + p.dout], [1 + p.dout * p.h + p.dout, ref.length]];
  const tol = new Float64Array(ref.length);
  for (const [a, b] of groups) {
    let m = 0;
    for (let i = a; i < b; i++) m = Math.max(m, Math.abs(ref[i]));
    tol.fill(a === 0 ? 1e-4 * m + 1e-6 : 1e-3 * m + 1e-7, a, b);
  }
  return (out) => compare(out, ref.length, (i) => [ref[i], tol[i]]);
}

/** Flattens [loss, dW3, db3, dW1 sampled] from host arrays. */
const gather = (loss, dW3, db3, dW1, sample) => Float32Array.from([loss, ...dW3, ...db3, ...sample.map((i) => dW1[i])]);

/** @type {import('./common.mjs').Case[]} */
export default [{
  name: 'mlp_train',
  // The step runs dozens of ops through JS on both threads; V8 needs seconds of them to settle (on the
  // H100, 3.5 ms per step in the first 1.5 s of a fresh process, 1.2–1.7 ms after: BENCHMARKS.md).
  warmupMs: 4000,
  group: 'train',
  unit: 'steps/s',
  higherIsBetter: true,
  requires: (torch) => (typeof torch.Tensor?.prototype?.backward === 'function' && torch.nn?.Linear && torch.optim?.SGD ? null : 'autograd, nn.Linear, optim.SGD'),
  rows: (quick) => [quick ? { b: 64, din: 784, h: 256, dout: 10 } : { b: 256, din: 784, h: 1024, dout: 10 }]
    .map((p) => ({ label: 'MLP train step (SGD)', size: `${p.din}-${p.h}-${p.h}-${p.dout}, b${p.b}`, params: p })),
  inputs,
  check,
  figure: (_, sec) => 1 / sec,
  impls: {
    webtorch(ctx, p, inp) {
      const { torch, wt } = ctx;
      const L = layers(p).map(([o, i]) => new torch.nn.Linear(i, o).to(wt));
      const held = [];
      const up = (host, shape) => { const t = torch.tensor(host, { device: wt }).reshape(shape); held.push(t); return t; };
      torch.noGrad(() => L.forEach((l, k) => { l.weight.copy_(up(inp.params[2 * k], layers(p)[k])); l.bias.copy_(up(inp.params[2 * k + 1], [layers(p)[k][0]])); }));
      const X = up(inp.x, [p.b, p.din]), Y = torch.tensor(inp.y, { device: wt, dtype: 'int64' }), onehot = up(inp.onehot, [p.b, p.dout]);
      held.push(Y);
      const ce = fn(torch, 'crossEntropy');
      const call = (m, x) => (m.call ? m.call(x) : m.forward(x));
      const lossOf = () => {
        const z = call(L[2], call(L[1], call(L[0], X).relu()).relu());
        if (ce) return ce(z, Y);
        // no F.crossEntropy in this build: log-sum-exp minus the true logit, from differentiable ops
        const m = torch.noGrad(() => z.max(1, true).values);
        const s = z.sub(m);
        return s.exp().sum(1, true).log().sub(s.mul(onehot).sum(1, true)).mean();
      };
      return wtTrainImpl(ctx, {
        lossOf,
        params: L.flatMap((l) => [l.weight, l.bias]),
        lr: LR,
        async output(loss) {
          const [l, dW3, db3, dW1] = await Promise.all([loss.data(), L[2].weight.grad.data(), L[2].bias.grad.data(), L[0].weight.grad.data()]);
          return gather(l[0], dW3, db3, dW1, inp.w1Sample);
        },
        free() { held.forEach((t) => t.dispose()); L.forEach((l) => [l.weight, l.bias, l.weight.grad, l.bias.grad].forEach((t) => t?.dispose())); },
      });
    },
    tfjs(ctx, p, inp) {
      if (!ctx.tf) return null;
      const tf = ctx.tf, shapes = layers(p);
      const vars = inp.params.map((v, k) => tf.variable(tf.tensor(v, k % 2 ? [shapes[k >> 1][0]] : shapes[k >> 1]), true, `mlp${k}_${Math.random()}`));
      const X = tf.tensor2d(inp.x, [p.b, p.din]), onehot = tf.tensor2d(inp.onehot, [p.b, p.dout]);
      const dense = (x, k) => tf.add(tf.matMul(x, vars[2 * k], false, true), vars[2 * k + 1]);
      const lossOf = () => tf.losses.softmaxCrossEntropy(onehot, dense(tf.relu(dense(tf.relu(dense(X, 0)), 1)), 2));
      return tfTrainImpl(ctx, {
        lossOf,
        vars,
        lr: LR,
        async output(value, grads) {
          const g = (k) => grads[vars[k].name].data();
          const [l, dW3, db3, dW1] = await Promise.all([value.data(), g(4), g(5), g(0)]);
          return gather(l[0], dW3, db3, dW1, inp.w1Sample);
        },
        free() { [X, onehot].forEach((t) => t.dispose()); },
      });
    },
  },
  torchJob: (p) => ({ op: 'mlp_train', ...p, lr: LR }),
}];
