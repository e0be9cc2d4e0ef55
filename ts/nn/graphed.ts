/**
 * `torch.gpu.makeGraphedCallables(moduleOrFn, sampleArgs)`: PyTorch's `make_graphed_callables`.
 *
 * The forward and the backward are captured as two graphs sharing one pool, as PyTorch does:
 * the forward graph runs the callable on the static inputs (the sample arguments) with autograd
 * recording, the backward graph runs `autograd.grad` of its outputs with respect to the inputs
 * that require grad and the module's parameters, from static output gradients. A call then
 * copies its arguments into the static inputs, replays the forward graph, and returns views of
 * the static outputs recorded on the tape as one op, whose backward copies the incoming
 * gradients into the static output gradients, replays the backward graph, and hands the static
 * input gradients back (copies: the next replay overwrites the static ones). So it mixes with
 * eager code: the loss after it, the optimizer step, `zeroGrad`, all run as usual.
 */
import { grad as autogradGrad } from '../autograd/grad.js';
import { record, withGradMode, isGradEnabled } from '../autograd/graph.js';
import { Module } from './module.js';
import type { Tensor } from '../tensor.js';
import { withDevice as withGpu, type Device } from '../device.js';
import { emptyLike, onesLike, zerosLike } from '../ops/creation.js';
import { graph, Graph, CpuGraph, graphPoolHandle, markGraphStatic } from '../runtime/graphs.js';

/** What `makeGraphedCallables` returns for a function: the graphed function, with `reset()` to free its graphs. */
export type GraphedFunction<A extends Tensor[], R> = ((...args: A) => R) & { reset(): void; graphs: [Graph, Graph] };

/** Options of `makeGraphedCallables` (PyTorch's `num_warmup_iters`, `allow_unused_input`). */
export interface GraphedOptions {
  /** Eager iterations before capture (default 3, as PyTorch). */
  numWarmupIters?: number;
  /** Inputs that the outputs do not depend on get no gradient instead of raising (default false). */
  allowUnusedInput?: boolean;
}

const asList = (x: unknown): Tensor[] => (Array.isArray(x) ? x : [x]) as Tensor[];

/**
 * Captures `callable` (a Module or a function of tensors) on the device of `sampleArgs` as a
 * forward and a backward graph; resolves with the graphed callable: for a Module, the module
 * itself with its `forward` replaced while it is in the training state it was captured in
 * (`module.graphed.reset()` frees the graphs); for a function, a function with `reset()`.
 * The sample arguments are the static inputs: keep them alive while the callable is used.
 */
export async function makeGraphedCallables<A extends Tensor[], R>(callable: Module | ((...args: A) => R), sampleArgs: A, options: GraphedOptions = {}): Promise<typeof callable> {
  if (!Array.isArray(sampleArgs) || !sampleArgs.length || sampleArgs.some((t) => typeof t !== 'object' || t === null || !('shape' in t))) {
    throw new TypeError('make_graphed_callables: sampleArgs must be a non-empty array of tensors (PyTorch: a tuple of tensors)');
  }
  const module = callable instanceof Module ? callable : null;
  const fn = module ? (module.forward.bind(module) as (...args: A) => R) : (callable as (...args: A) => R);
  const dev = sampleArgs[0].device;
  for (const t of sampleArgs) if (t.device !== dev) throw new Error(`make_graphed_callables: the sample arguments are on ${dev} and ${t.device}; they must be on one device`);
  const params = module ? [...module.parameters()] : [];
  for (const p of params) {
    if (p.device !== dev) throw new Error(`make_graphed_callables: a parameter is on ${p.device}, the sample arguments on ${dev}`);
  }
  // the graphs read the parameters' storage: optimizers update them in place from now on
  for (const p of params) markGraphStatic(p);
  const surface = [...sampleArgs, ...params].filter((t) => t.requiresGrad);
  const grads = (outs: Tensor[], gradOuts: Tensor[]) => autogradGrad(outs.filter((o) => o.requiresGrad), surface, gradOuts, { allowUnused: options.allowUnusedInput });

  // Warmup, as PyTorch (it runs the lazy parts of the callable once before capture).
  for (let i = 0; i < (options.numWarmupIters ?? 3); i++) {
    const outs = asList(fn(...sampleArgs));
    if (surface.length && outs.some((o) => o.requiresGrad)) {
      const ones = outs.filter((o) => o.requiresGrad).map((o) => onesLike(o));
      for (const g of grads(outs, ones)) g?.dispose();
      for (const o of ones) o.dispose();
    }
    for (const o of outs) o.dispose();
  }

  const fwd = dev.type === 'cpu' ? new CpuGraph() : withGpu(dev.index, () => new Graph());
  const bwd = dev.type === 'cpu' ? new CpuGraph() : withGpu(dev.index, () => new Graph());
  const pool = graphPoolHandle();
  let rawOutputs: R | null = null;
  let staticOutputs: Tensor[] = [];
  await inDevice(dev, () => graph(fwd, () => {
    rawOutputs = fn(...sampleArgs);
    staticOutputs = asList(rawOutputs);
  }, { pool }));
  const needGrad = staticOutputs.filter((o) => o.requiresGrad);
  let staticGradOutputs: Tensor[] = [];
  let staticGradInputs: (Tensor | null)[] = [];
  if (needGrad.length && surface.length) {
    await inDevice(dev, () => graph(bwd, () => {
      staticGradOutputs = needGrad.map((o) => emptyLike(o));
      staticGradInputs = grads(staticOutputs, staticGradOutputs);
    }, { pool }));
  }
  // the static outputs, off the tape (the graphed op records its own)
  const detached = staticOutputs.map((o) => o.detach());
  for (const o of staticOutputs) o.dispose();
  const training = module?.training ?? true;

  const graphed = (...args: A): R => {
    if (args.length !== sampleArgs.length) throw new TypeError(`graphed callable: expected ${sampleArgs.length} arguments (as the sample arguments), got ${args.length}`);
    withGradMode(false, () => {
      args.forEach((a, i) => {
        if (a === sampleArgs[i]) return;
        if (String(a.shape) !== String(sampleArgs[i].shape) || a.dtype !== sampleArgs[i].dtype || a.device !== dev) {
          throw new Error(`graphed callable: argument ${i} is ${a.dtype} [${a.shape.join(', ')}] on ${a.device}, but the graph was captured for ${sampleArgs[i].dtype} [${sampleArgs[i].shape.join(', ')}] on ${dev}`);
        }
        sampleArgs[i].copy_(a);
      });
    });
    fwd.replay();
    const outs = detached.map((o) => o.detach());
    const inputs = [...args, ...params];
    const wanted = inputs.map((t) => t.requiresGrad);
    if (isGradEnabled() && needGrad.length && surface.length && wanted.some((w) => w)) {
      const recordedOuts = outs.filter((_, i) => staticOutputs[i].requiresGrad);
      record('GraphedCallable', inputs, recordedOuts, () => (gs) => {
        withGradMode(false, () => gs.forEach((g, i) => (g ? staticGradOutputs[i].copy_(g) : zeroFill(staticGradOutputs[i]))));
        bwd.replay();
        let k = 0;
        return inputs.map((t, i) => {
          const surfaceT = i < args.length ? sampleArgs[i] : t;
          if (!surfaceT.requiresGrad) return null;
          const g = staticGradInputs[k++];
          return g ? withGradMode(false, () => g.clone()) : null;
        });
      });
    }
    const out = Array.isArray(rawOutputs) ? outs : outs[0];
    return out as R;
  };

  const reset = () => {
    fwd.reset();
    bwd.reset();
    for (const t of [...detached, ...staticGradOutputs]) t.dispose();
    for (const t of staticGradInputs) t?.dispose();
  };
  if (module) {
    const original = module.forward;
    Object.defineProperty(module, 'forward', {
      configurable: true, writable: true,
      value: (...args: unknown[]) => (module.training === training ? graphed(...(args as A)) : original.apply(module, args)),
    });
    Object.defineProperty(module, 'graphed', {
      configurable: true,
      value: { graphs: [fwd, bwd], reset: () => { reset(); Object.defineProperty(module, 'forward', { configurable: true, writable: true, value: original }); } },
    });
    return module;
  }
  return Object.assign(graphed, { reset, graphs: [fwd, bwd] as [Graph, Graph] }) as unknown as typeof callable;
}

/** Fills `t` with zeros in place (a missing output gradient). */
function zeroFill(t: Tensor): void {
  const z = zerosLike(t);
  t.copy_(z);
  z.dispose();
}

/** Runs `fn` with `d` current (a GPU) or as it is (the cpu). */
function inDevice<T>(d: Device, fn: () => T): T {
  return d.type === 'cpu' ? fn() : withGpu(d.index, fn);
}
