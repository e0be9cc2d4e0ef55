/**
 * `torch.autograd.grad(outputs, inputs)`: computes gradients without touching `.grad`.
 */
import type { Tensor } from '../tensor.js';
import { bindArgs, type PyArgs } from '../args.js';
import { rootGrad, runBackward, zerosLike, type BackwardOptions } from './engine.js';

/** Options of `autograd.grad` (PyTorch's keywords, camelCase). */
export interface GradOptions extends BackwardOptions {
  gradOutputs?: (Tensor | undefined)[] | Tensor | null;
  /** Return null for inputs the outputs do not depend on, instead of throwing. */
  allowUnused?: boolean | null;
  /** Deprecated in PyTorch and always true there: only true is accepted. */
  onlyInputs?: boolean;
  /** Only false: webtorch has no vmap. */
  isGradsBatched?: boolean;
  /** Zeros, not null, for inputs the outputs do not depend on. */
  materializeGrads?: boolean;
}

type GradPositional = [gradOutputs: (Tensor | undefined)[] | Tensor | null, retainGraph: boolean | null, createGraph: boolean, onlyInputs: boolean,
  allowUnused: boolean | null, isGradsBatched: boolean, materializeGrads: boolean];

/**
 * The gradients of `outputs` with respect to `inputs` (PyTorch's `torch.autograd.grad(outputs,
 * inputs, grad_outputs, retain_graph, create_graph, only_inputs, allow_unused, is_grads_batched,
 * materialize_grads)`), positional or as keywords: `grad(y, [x], {gradOutputs: g, createGraph: true})`.
 * Frees the graph unless `retainGraph`; `createGraph` records the backward for higher orders.
 */
export function grad(outputs: Tensor | Tensor[], inputs: Tensor | Tensor[], ...args: PyArgs<GradPositional, GradOptions>): (Tensor | null)[] {
  const defaults: GradOptions = { gradOutputs: null, retainGraph: undefined, createGraph: false, onlyInputs: true, allowUnused: null, isGradsBatched: false, materializeGrads: false };
  const o = bindArgs('grad', ['gradOutputs', 'retainGraph', 'createGraph', 'onlyInputs', 'allowUnused', 'isGradsBatched', 'materializeGrads'], args, defaults);
  if (o.onlyInputs !== true) throw new RangeError('grad(): onlyInputs=false is not supported (PyTorch ignores it and warns; the gradients of the inputs alone are computed)');
  if (o.isGradsBatched) throw new RangeError('grad(): isGradsBatched=true is not supported by webtorch (it needs vmap)');
  if (o.materializeGrads && o.allowUnused === false) throw new RangeError('Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False.');
  const outs = Array.isArray(outputs) ? outputs : [outputs];
  const ins = Array.isArray(inputs) ? inputs : [inputs];
  const gradOutputs = o.gradOutputs;
  const gos = gradOutputs == null ? [] : Array.isArray(gradOutputs) ? gradOutputs : [gradOutputs];
  ins.forEach((t, i) => {
    if (!t.requiresGrad) throw new Error(`One of the differentiated Tensors (input ${i}) does not require grad`);
  });
  const capture = new Map<Tensor, Tensor | null>(ins.map((t) => [t, null]));
  const createGraph = !!o.createGraph;
  runBackward(outs, outs.map((t, i) => rootGrad(t, gos[i] ?? undefined, 'autograd.grad')), { retainGraph: o.retainGraph ?? createGraph, createGraph }, capture);
  return ins.map((t, i) => {
    const g = capture.get(t) ?? null;
    if (g) return g;
    if (o.materializeGrads) return zerosLike(t);
    if (!o.allowUnused) {
      throw new Error(`One of the differentiated Tensors (input ${i}) appears to not have been used in the graph. Set allowUnused: true if this is the desired behavior.`);
    }
    return null;
  });
}
