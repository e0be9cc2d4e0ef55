/**
 * `torch.compile(model, {fullgraph, dynamic, backend, mode, options, disable})`: webtorch has no
 * graph compiler, so this is PyTorch's `backend='eager'`: it returns the module (or function)
 * itself, which computes exactly what it did. nanoGPT's `model = torch.compile(model)` ports as
 * it is. (For fewer dispatches per step, capture the step in a graph: `torch.gpu.graph`.)
 */
import { bindArgs, type PyArgs } from './args.js';

/** Keywords of `torch.compile`, checked and otherwise without effect. */
export interface CompileOptions {
  fullgraph?: boolean;
  dynamic?: boolean | null;
  backend?: string;
  mode?: 'default' | 'reduce-overhead' | 'max-autotune' | 'max-autotune-no-cudagraphs' | null;
  options?: Record<string, unknown> | null;
  disable?: boolean;
}

/** Returns `model` unchanged (see the module comment); refuses a non-callable and unknown keywords. */
export function compile<M>(model: M, ...args: PyArgs<[], CompileOptions>): M {
  const o = bindArgs('compile', ['fullgraph', 'dynamic', 'backend', 'mode', 'options', 'disable'], args, {} as CompileOptions, 1, 0);
  if (typeof model !== 'function') throw new TypeError(`compile(): expected a Module or a function, got ${model === null ? 'null' : typeof model}`);
  const modes = [undefined, null, 'default', 'reduce-overhead', 'max-autotune', 'max-autotune-no-cudagraphs'];
  if (!modes.includes(o.mode)) throw new RangeError(`compile(): Unrecognized mode=${o.mode}, should be one of: default, reduce-overhead, max-autotune, max-autotune-no-cudagraphs`);
  return model;
}
