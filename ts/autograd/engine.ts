/**
 * The backward engine: walks the tape from the roots in reverse topological order, summing
 * the gradients that reach each node before running its rule, then hands each leaf its total.
 *
 * `.grad` accumulates across backward calls, as in PyTorch. Each intermediate gradient is
 * disposed as soon as it has been consumed, so a backward pass holds only the gradients in
 * flight. Nodes run once per call; without `retainGraph` they release their saved tensors.
 */
import { adopt } from '../scope.js';
import type { Tensor } from '../tensor.js';
import { withGradMode, type Edge, type Node } from './graph.js';
import { profilerHooks } from '../profiler/hooks.js';
import { gradFnName } from '../print.js';

/** Options of `backward` and `autograd.grad`. */
export interface BackwardOptions {
  retainGraph?: boolean;
  createGraph?: boolean;
}

/** What the engine needs from the tensor module (injected to avoid an import cycle). */
export interface EngineOps {
  add(a: Tensor, b: Tensor): Tensor;
  onesLike(t: Tensor): Tensor;
  zerosLike(t: Tensor): Tensor;
  /** Another handle on `t`'s storage, the same view (no kernel). */
  alias(t: Tensor): Tensor;
  /** `torch.tidy`: disposes what `fn` created except what it returns. */
  tidy<R>(fn: () => R): R;
}

let ops: EngineOps | null = null;

/** @internal Zeros like `t` (`autograd.grad`'s `materializeGrads`). */
export const zerosLike = (t: Tensor): Tensor => ops!.zerosLike(t);

/** @internal */
export function setEngineOps(o: EngineOps): void {
  ops = o;
}

/**
 * Gradients handed to more than one edge: a rule that passes one tensor on twice (add's g, for
 * each residual connection) gives the second edge an alias of it, not a copy, as PyTorch's
 * engine passes the same tensor. Rules and sums never write into an incoming gradient, so
 * sharing is safe until a gradient becomes a leaf's `.grad` or is returned by `autograd.grad`:
 * those are written in place later (`zero_`, clipping, an optimizer), so there a shared one is
 * copied, as PyTorch's AccumulateGrad copies a gradient it cannot steal.
 */
const shared = new WeakSet<Tensor>();

/** `g` itself, or a copy of it where `g` shares its storage with another edge's gradient. */
function own(g: Tensor): Tensor {
  if (!shared.has(g)) return g;
  const c = g.clone();
  g.dispose();
  return c;
}

function sum(a: Tensor | null, b: Tensor | null): Tensor | null {
  if (!a) return b;
  if (!b) return a;
  const s = ops!.add(a, b);
  a.dispose();
  b.dispose();
  return s;
}

/**
 * Where a backward stops (a checkpoint's recompute, ts/autograd/checkpoint.ts): gradients that
 * reach one of these leaves, or an output of one of these nodes, are summed into `grads` at the
 * slot given, and the nodes are not run.
 */
export interface Boundary {
  leaves: Map<Tensor, number>;
  nodes: Map<Node, Map<number, number>>;
  grads: (Tensor | null)[];
}

/** Nodes reachable from the roots, in an order where every node comes before its inputs. */
function order(roots: Node[], stop?: Map<Node, unknown>): Node[] {
  const seen = new Set<Node>(), post: Node[] = [];
  const stack: [Node, number][] = roots.map((n) => [n, 0]);
  for (const r of roots) seen.add(r);
  while (stack.length) {
    const top = stack[stack.length - 1];
    const [node, i] = top;
    if (i < node.edges.length) {
      top[1]++;
      const e = node.edges[i];
      if (e && 'node' in e && !seen.has(e.node) && !stop?.has(e.node)) {
        seen.add(e.node);
        stack.push([e.node, 0]);
      }
    } else {
      stack.pop();
      post.push(node);
    }
  }
  return post.reverse();
}

/**
 * Runs backward from `roots` with the given output gradients. Leaf gradients go to `.grad`,
 * or, when `capture` is given, into it (keyed by tensor) instead.
 */
export function runBackward(roots: Tensor[], grads: Tensor[], opts: BackwardOptions = {}, capture?: Map<Tensor, Tensor | null>, boundary?: Boundary): void {
  const pending = new Map<Node, (Tensor | null)[]>();
  const deliverTo = (edge: Edge, g: Tensor | null) => {
    if (!edge || !g) {
      g?.dispose();
      return;
    }
    const slot = boundary && ('leaf' in edge ? boundary.leaves.get(edge.leaf) : boundary.nodes.get(edge.node)?.get(edge.index));
    if (slot !== undefined) {
      boundary!.grads[slot] = sum(boundary!.grads[slot], g);
      return;
    }
    if ('leaf' in edge) {
      const t = edge.leaf;
      if (capture) {
        if (capture.has(t)) {
          const prev = capture.get(t) ?? null;
          capture.set(t, prev ? sum(prev, g) : own(g));
        } else g.dispose();
        return;
      }
      const prev = t.grad;
      if (!prev) g = own(g);
      if (!prev && !g.isContiguous()) {
        // PyTorch's layout contract: a leaf's .grad is laid out like the leaf (row-major here).
        const c = g.contiguous();
        g.dispose();
        g = c;
      }
      t.grad = prev ? sum(prev, g) : g;
      adopt(t, t.grad!);
      return;
    }
    const slots = pending.get(edge.node) ?? [];
    slots[edge.index] = sum(slots[edge.index] ?? null, g);
    pending.set(edge.node, slots);
  };
  // A delivery that fails (an allocation in `sum`) has not consumed `g`: it goes, rather than leak.
  const deliver = (edge: Edge, g: Tensor | null) => {
    try {
      deliverTo(edge, g);
    } catch (e) {
      g?.dispose();
      throw e;
    }
  };
  const rootNodes: Node[] = [];
  roots.forEach((r, i) => {
    deliver(r.gradFn ? { node: r.gradFn, index: r._outputIndex } : { leaf: r }, grads[i]);
    if (r.gradFn) rootNodes.push(r.gradFn);
  });
  if (capture) gradCalls++;
  try {
    withGradMode(!!opts.createGraph, () => {
      for (const node of order(rootNodes.filter((n) => !boundary?.nodes.has(n)), boundary?.nodes)) {
        // (the node's gradients stay in `pending`, where a failure disposes them, until its rule runs)
        const gs = pending.get(node) ?? [];
        node.retained.forEach((ref, i) => {
          const t = ref?.deref();
          if (t && gs[i]) {
            t.grad = gs[i]!.clone();
            adopt(t, t.grad);
          }
        });
        if (capture) {
          for (const [t] of capture) if (t.gradFn === node && gs[t._outputIndex]) capture.set(t, gs[t._outputIndex]!.clone());
        }
        pending.delete(node);
        let inputs: (Tensor | null)[];
        // The profiler (ts/profiler): PyTorch's ranges around each node, its ops and kernels inside them.
        const hooks = profilerHooks.current;
        if (hooks) {
          const name = gradFnName(node.name);
          hooks.pushRange(`autograd::engine::evaluate_function: ${name}`, true);
          hooks.pushRange(name, true);
        }
        inputs = [];
        let ran = false;
        try {
          inputs = gs.some((g) => g) ? ops!.tidy(() => node.apply(gs)) : node.edges.map(() => null);
          // A rule may pass an incoming gradient on as it is (add's g): it moves on, once; a
          // second edge given the same tensor gets an alias of it (see `shared`), or under
          // createGraph a recorded copy (an alias would not carry the gradient's own graph).
          const seen = new Set<Tensor>();
          for (let i = 0; i < inputs.length; i++) {
            const t = inputs[i];
            if (t && seen.has(t)) {
              if (opts.createGraph) inputs[i] = t.clone();
              else {
                inputs[i] = ops!.alias(t);
                shared.add(t);
                shared.add(inputs[i]!);
              }
            } else if (t) seen.add(t);
          }
          ran = true;
        } finally {
          // A rule that failed (an allocation): what it was given and what it made are delivered to no one.
          gs.forEach((g) => g && (!ran || !inputs.includes(g)) && g.dispose());
          if (!ran) inputs.forEach((t) => t?.dispose());
          if (!opts.retainGraph) node.release();
          if (hooks) {
            hooks.popRange();
            hooks.popRange();
          }
        }
        node.edges.forEach((e, i) => {
          try {
            deliver(e, inputs[i] ?? null);
          } catch (err) {
            for (let j = i + 1; j < inputs.length; j++) inputs[j]?.dispose();
            throw err;
          }
        });
      }
    });
  } catch (e) {
    // A backward that fails part way (an OutOfMemoryError) leaves no gradient in flight behind.
    for (const gs of pending.values()) gs.forEach((g) => g?.dispose());
    pending.clear();
    throw e;
  } finally {
    if (capture) gradCalls--;
  }
}

/** How many `autograd.grad` calls are running (a reentrant checkpoint refuses them, as PyTorch's). */
let gradCalls = 0;

/** @internal Whether the backward running now is an `autograd.grad` call. */
export const insideGradCall = (): boolean => gradCalls > 0;

/** Checks a root and makes its default gradient (ones for a scalar). */
export function rootGrad(t: Tensor, grad: Tensor | undefined, what: string): Tensor {
  if (!t.requiresGrad) throw new Error(`element 0 of tensors does not require grad and does not have a grad_fn (${what})`);
  if (grad) {
    if (grad.shape.join() !== t.shape.join()) {
      throw new RangeError(`Mismatch in shape: grad_output[0] has a shape of [${grad.shape.join(', ')}] and output[0] has a shape of [${t.shape.join(', ')}].`);
    }
    return grad.clone();
  }
  if (t.numel() !== 1) throw new Error(`grad can be implicitly created only for scalar outputs (${what} of a tensor of shape [${t.shape.join(', ')}]); pass a gradient`);
  return ops!.onesLike(t);
}
