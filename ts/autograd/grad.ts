/**
 * `torch.autograd.grad(outputs, inputs)`: computes gradients without touching `.grad`.
 */
import type { Tensor } from '../tensor.js';
import { rootGrad, runBackward, type BackwardOptions } from './engine.js';

/** Options of `autograd.grad`. */
export interface GradOptions extends BackwardOptions {
  /** Return null for inputs the outputs do not depend on, instead of throwing. */
  allowUnused?: boolean;
}

/**
 * The gradients of `outputs` with respect to `inputs` (PyTorch's `torch.autograd.grad`).
 * Frees the graph unless `retainGraph`; `createGraph` records the backward for higher orders.
 */
export function grad(outputs: Tensor | Tensor[], inputs: Tensor | Tensor[], gradOutputs?: (Tensor | undefined)[] | Tensor, options: GradOptions = {}): (Tensor | null)[] {
  const outs = Array.isArray(outputs) ? outputs : [outputs];
  const ins = Array.isArray(inputs) ? inputs : [inputs];
  const gos = gradOutputs === undefined ? [] : Array.isArray(gradOutputs) ? gradOutputs : [gradOutputs];
  ins.forEach((t, i) => {
    if (!t.requiresGrad) throw new Error(`One of the differentiated Tensors (input ${i}) does not require grad`);
  });
  const capture = new Map<Tensor, Tensor | null>(ins.map((t) => [t, null]));
  runBackward(outs, outs.map((o, i) => rootGrad(o, gos[i], 'autograd.grad')), { retainGraph: options.retainGraph ?? options.createGraph, createGraph: options.createGraph }, capture);
  return ins.map((t, i) => {
    const g = capture.get(t) ?? null;
    if (!g && !options.allowUnused) {
      throw new Error(`One of the differentiated Tensors (input ${i}) appears to not have been used in the graph. Set allowUnused: true if this is the desired behavior.`);
    }
    return g;
  });
}
