/**
 * Module hooks: forward pre-hooks, forward hooks and full backward hooks, run around `forward`
 * when a module is called, with PyTorch's handles (`handle.remove()`).
 *
 * A full backward hook wraps the call's tensor inputs and outputs in identity nodes on the tape
 * (PyTorch's `BackwardHookFunction`): the outputs' node notes the gradients with respect to the
 * outputs; the inputs' node, run later, calls the hooks with both, and may replace the gradients
 * with respect to the inputs. When no input needs a gradient, the hooks run at the outputs' node
 * with gradInput all null, as PyTorch's do.
 */
import { isGradEnabled, record, withGradMode } from '../autograd/graph.js';
import { index } from '../ops/views.js';
import { outsideScopes, untrack } from '../scope.js';
import { Tensor } from '../tensor.js';

type Hook = (...args: any[]) => unknown;

/** A module's hooks by id, in call order. */
export interface HookSet {
  pre: Map<number, Hook>;
  post: Map<number, Hook>;
  backward: Map<number, Hook>;
}

let nextId = 0;

/** What registering a hook returns: `remove()` unregisters it (PyTorch's `RemovableHandle`). */
export class RemovableHandle {
  private constructor(private readonly map: Map<number, Hook>, readonly id: number) {}

  /** @internal Adds `hook` to `map` (first with `prepend`) and returns its handle. */
  static add(map: Map<number, Hook>, hook: Hook, prepend: boolean): RemovableHandle {
    if (typeof hook !== 'function') throw new TypeError(`hook must be a function, got ${typeof hook}`);
    const id = nextId++;
    if (prepend) {
      const rest = [...map];
      map.clear();
      map.set(id, hook);
      rest.forEach(([k, v]) => map.set(k, v));
    } else map.set(id, hook);
    return new RemovableHandle(map, id);
  }

  /** Unregisters the hook (again is a no-op). */
  remove(): void {
    this.map.delete(this.id);
  }
}

/** Identity copies of `ts` recorded as one node whose rule is `rule` (gradients in, gradients out). */
function identityNode(name: string, ts: Tensor[], rule: (grads: (Tensor | null)[]) => (Tensor | null)[]): Tensor[] {
  const outs = withGradMode(false, () => ts.map((t) => index(t)));
  return record(name, ts, outs, () => rule);
}

/** Runs `forward` on `args` with `h`'s hooks around it. */
export function runHooked(m: object, h: HookSet, args: unknown[], forward: (args: unknown[]) => unknown): unknown {
  for (const hook of [...h.pre.values()]) {
    const r = hook(m, args);
    if (r !== undefined) args = Array.isArray(r) ? r : [r];
  }
  const wrapped: Tensor[] = [];
  let gradOutput: (Tensor | null)[] | null = null;
  const backward = [...h.backward.values()];
  const callBackward = (gradInput: (Tensor | null)[]) => {
    let gi = gradInput;
    try {
      for (const hook of backward) {
        const r = outsideScopes(() => hook(m, gi, gradOutput ?? []));
        if (r !== undefined) {
          if (!Array.isArray(r) || r.length !== gi.length) throw new Error(`Backward hook returned an invalid number of grad_input, got ${Array.isArray(r) ? r.length : 1}, but expected ${gi.length}`);
          gi = r as (Tensor | null)[];
        }
      }
    } finally {
      gradOutput?.forEach((g) => g?.dispose());
      gradOutput = null;
    }
    return gi;
  };
  const grading = backward.length > 0 && isGradEnabled();
  const tensorArgs = args.map((a, i) => [a, i] as const).filter(([a]) => a instanceof Tensor && a.requiresGrad) as [Tensor, number][];
  if (grading && tensorArgs.length) {
    const ids = identityNode('BackwardHookFunction', tensorArgs.map(([t]) => t), (grads) => callBackward(grads));
    args = args.slice();
    tensorArgs.forEach(([, i], j) => (args[i] = ids[j]));
    wrapped.push(...ids);
  }
  let out: unknown;
  try {
    out = forward(args);
    for (const hook of [...h.post.values()]) {
      const r = hook(m, args, out);
      if (r !== undefined) out = r;
    }
  } catch (e) {
    wrapped.forEach((t) => t.dispose());
    throw e;
  }
  const outs = grading ? (Array.isArray(out) ? out : [out]).filter((o): o is Tensor => o instanceof Tensor && o.requiresGrad) : [];
  wrapped.filter((t) => !outs.includes(t)).forEach((t) => t.dispose());
  if (!outs.length) return out;
  const ids = identityNode('BackwardHookFunction', outs, (grads) => {
    // the engine frees these once passed on: the hooks, which run later, see handles of their own
    // (rules run inside tidy: untracked, they outlive this one)
    gradOutput = grads.map((g) => {
      if (!g) return null;
      const own = index(g);
      untrack(own);
      return own;
    });
    if (!tensorArgs.length) callBackward(args.filter((a) => a instanceof Tensor).map(() => null));
    return grads;
  });
  outs.forEach((o) => o.dispose());
  const swap = (o: unknown) => {
    const j = outs.indexOf(o as Tensor);
    return j < 0 ? o : ids[j];
  };
  return Array.isArray(out) ? out.map(swap) : swap(out);
}
