/**
 * `torch.autograd.gradcheck`: compares the gradients autograd computes (one backward per output
 * element) with central finite differences (two forwards per input element). webtorch computes in
 * float32 (there is no float64), so the defaults are a float32 step and tolerances, not PyTorch's
 * float64 ones (eps 1e-6, atol 1e-5, rtol 1e-3). Reading values is a sync point: it is async.
 */
import { tensor } from '../ops/creation.js';
import { checkOptions } from '../args.js';
import { reshape } from '../ops/views.js';
import { Tensor } from '../tensor.js';
import { grad } from './grad.js';
import { withGradMode } from './graph.js';

/** Options of `gradcheck`. */
export interface GradcheckOptions {
  /** The finite-difference step (default 1e-3). */
  eps?: number;
  /** Absolute tolerance (default 1e-3). */
  atol?: number;
  /** Relative tolerance (default 1e-2). */
  rtol?: number;
  /** Throw on a mismatch, naming the output and input (default true); else resolve to false. */
  raiseException?: boolean;
}

type Fn = (...inputs: Tensor[]) => Tensor | Tensor[];

const asList = (o: Tensor | Tensor[]): Tensor[] => (Array.isArray(o) ? o : [o]);

async function valuesOf(t: Tensor): Promise<number[]> {
  return Array.from((await t.values()) as ArrayLike<number>, Number);
}

/** The outputs' values for inputs with element `j` of input `i` replaced by `v` (grad mode off). */
async function evaluate(fn: Fn, inputs: Tensor[], i: number, host: number[], j: number, v: number): Promise<number[][]> {
  const x = inputs[i], vals = host.slice();
  vals[j] = v;
  const flat = tensor(vals, { dtype: x.dtype, device: x.device }), shaped = reshape(flat, x.shape.slice());
  const args = inputs.slice();
  args[i] = shaped;
  const outs = withGradMode(false, () => asList(fn(...args)));
  const got = await Promise.all(outs.map(valuesOf));
  [flat, shaped, ...outs].forEach((t) => t.dispose());
  return got;
}

/**
 * `gradcheck(func, inputs, {eps, atol, rtol, raiseException})`: whether the analytical Jacobian of
 * `func` with respect to each input that requires grad matches the numerical one, within
 * `atol + rtol·|numerical|`. `func` must not keep state between calls.
 */
export async function gradcheck(func: Fn, inputs: Tensor | Tensor[], options: GradcheckOptions = {}): Promise<boolean> {
  checkOptions('gradcheck', options, ['eps', 'atol', 'rtol', 'raiseException']);
  const { eps = 1e-3, atol = 1e-3, rtol = 1e-2, raiseException = true } = options;
  const ins = asList(inputs);
  ins.forEach((t, i) => {
    if (!(t instanceof Tensor)) throw new TypeError(`gradcheck: input ${i} is not a Tensor`);
  });
  const diff = ins.map((t, i) => [t, i] as const).filter(([t]) => t.requiresGrad);
  if (!diff.length) throw new Error('gradcheck expects at least one input tensor to require gradient, but none of the them have requires_grad=True.');
  const outs = asList(func(...ins));
  try {
    for (let k = 0; k < outs.length; k++) {
      const out = outs[k], n = out.numel();
      // analytical[i][r][c]: d out[r] / d input_i[c]
      const analytical = diff.map(() => [] as number[][]);
      for (let r = 0; r < n; r++) {
        const oneHot = Array(n).fill(0);
        oneHot[r] = 1;
        const flat = tensor(oneHot, { dtype: out.dtype, device: out.device }), g = reshape(flat, out.shape.slice());
        const gs = grad([out], diff.map(([t]) => t), [g], { retainGraph: true, allowUnused: true });
        for (let d = 0; d < diff.length; d++) analytical[d].push(gs[d] ? await valuesOf(gs[d]!) : Array(diff[d][0].numel()).fill(0));
        [flat, g, ...gs.filter((x): x is Tensor => !!x)].forEach((t) => t.dispose());
      }
      for (let d = 0; d < diff.length; d++) {
        const [x, i] = diff[d];
        const host = await valuesOf(x);
        for (let c = 0; c < host.length; c++) {
          const plus = (await evaluate(func, ins, i, host, c, host[c] + eps))[k];
          const minus = (await evaluate(func, ins, i, host, c, host[c] - eps))[k];
          for (let r = 0; r < n; r++) {
            const num = (plus[r] - minus[r]) / (2 * eps), ana = analytical[d][r][c];
            if (!(Math.abs(num - ana) <= atol + rtol * Math.abs(num))) {
              if (!raiseException) return false;
              throw new Error(`Jacobian mismatch for output ${k} with respect to input ${i},\nnumerical: ${num}\nanalytical: ${ana}\n(at output element ${r}, input element ${c})`);
            }
          }
        }
      }
    }
    return true;
  } finally {
    outs.forEach((t) => t.dispose());
  }
}
