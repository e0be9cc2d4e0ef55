/**
 * Reverse-mode autograd: the tape and the backward engine.
 *
 * An op whose inputs require grad calls `record`, giving the output a `Node` that holds the
 * op's backward closure and edges to its inputs. The closure is the op's gradient rule, written
 * next to its forward in `ts/ops/*`. Tensors a rule needs are kept with `ctx.save`, which holds
 * a handle on their storage until the node is released; `backward` releases every node it runs
 * unless `retainGraph` is set, and running a released node raises PyTorch's error.
 *
 * Gradients are ordinary tensors computed by ordinary ops, on the device where the forward
 * value lived: `to()` is an op like any other, so a gradient flows back across devices through
 * the copy (its rule is `g.to(source device)`). Backward runs with grad mode off unless
 * `createGraph` is set. Intermediate gradients are disposed as soon as they are consumed.
 */
import { ContextVar } from '../context.js';
import { untrack } from '../scope.js';
import type { Tensor } from '../tensor.js';
import { gradFnName } from '../print.js';

/** Grad mode, scoped to a callback and the async work it starts (ts/context.ts). */
const gradMode = new ContextVar('noGrad/enableGrad', true);

/** Whether ops record the tape now. */
export const isGradEnabled = (): boolean => gradMode.get();

/** Runs a synchronous `fn` with grad mode set to `on` (webtorch's own steps: no async scope needed). */
export function withGradMode<T>(on: boolean, fn: () => T): T {
  return gradMode.runSync(on, fn);
}

/** `noGrad`/`enableGrad`: runs `fn`, sync or async, with grad mode `on`; concurrent tasks keep their own mode. */
export function scopedGradMode<T>(on: boolean, fn: () => T): T {
  return gradMode.run(on, fn);
}

/** What a gradient rule receives besides the output gradients. */
export interface SaveContext {
  /** Keeps `t`'s data alive for the backward pass; returns the handle to use there. */
  save(t: Tensor): Tensor;
}

/** A gradient rule: output gradients in, one gradient (or null) per input out. */
export type GradRule = (grads: (Tensor | null)[]) => (Tensor | null)[];

let detachHook: ((t: Tensor) => Tensor) | null = null;

/** @internal Lets the tensor module provide `detach` without an import cycle. */
export function setDetach(fn: (t: Tensor) => Tensor): void {
  detachHook = fn;
}

/** Where an input's gradient goes: a leaf tensor's `.grad`, or an output slot of another node. */
export type Edge = { leaf: Tensor } | { node: Node; index: number } | null;

/**
 * One recorded op. Nodes are reference-counted by the live tensors they produced and the nodes
 * that consume them: when the last holder goes (a disposed output, a released consumer), the
 * node frees its saved tensors and lets go of its inputs, so a graph nobody will backward
 * through is freed as soon as its outputs are disposed. (Dropped, undisposed outputs are
 * collected with their nodes by the garbage collector.)
 */
export class Node {
  private saved: Tensor[] = [];
  /** Each saved tensor's storage version when it was saved, and what it was (for the error). */
  private versions: { version: number; producer: string | null; output: number }[] = [];
  /**
   * Where each saved tensor's own gradient goes in a backward with `createGraph` (Note [Saved
   * tensors under createGraph]): the edge of the input it saved, this node's own output index, or
   * null (neither: its gradient goes nowhere).
   */
  private links: (Edge | number)[] = [];
  private released = false;
  private holders = 0;
  private dropped = false;
  rule: GradRule | null = null;
  /** Non-leaf outputs whose `.grad` the user asked to keep (`retainGrad`). */
  retained: (WeakRef<Tensor> | undefined)[] = [];

  constructor(readonly name: string, readonly edges: Edge[]) {
    for (const e of edges) if (e && 'node' in e) e.node.hold();
  }

  /** @internal One more tensor or node depends on this node. */
  hold(): void {
    this.holders++;
  }

  /** @internal A holder taken for a while is given back, never freeing the node (see `apply`). */
  unhold(): void {
    this.holders--;
  }

  /** @internal One holder is gone; the last one frees the node and lets go of its inputs. */
  drop(): void {
    if (--this.holders > 0 || this.dropped) return;
    this.dropped = true;
    this.release();
    for (const e of this.edges) if (e && 'node' in e) e.node.drop();
  }

  /** @internal */
  save(t: Tensor, link: Edge | number = null): Tensor {
    const h = detachHook!(t);
    untrack(h);
    this.saved.push(h);
    this.links.push(link);
    // the producer's name is spelt out only in the error (a regex per save cost the CNN step's caller 0.16 ms)
    this.versions.push({ version: h.storage.version, producer: t.gradFn?.name ?? null, output: t._outputIndex });
    return h;
  }

  /** Frees the saved tensors (after a backward without `retainGraph`); the edges stay. */
  release(): void {
    this.released = true;
    this.rule = null;
    this.saved.forEach((t) => t.dispose());
    this.saved = [];
    this.versions = [];
    this.links = [];
  }

  /** Runs the rule. */
  apply(grads: (Tensor | null)[]): (Tensor | null)[] {
    if (this.released || !this.rule) {
      throw new Error(
        'Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). ' +
          'Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). ' +
          `Specify retainGraph: true if you need to backward through the graph a second time (in ${this.name}Backward).`,
      );
    }
    // PyTorch's check: a tensor the rule saved was written in place since (its values are gone)
    this.saved.forEach((t, i) => {
      const { version, producer, output } = this.versions[i];
      if (t.storage.version !== version) {
        const what = producer !== null ? `, which is output ${output} of ${gradFnName(producer)},` : '';
        throw new Error(`one of the variables needed for gradient computation has been modified by an inplace operation: [${t.device} ${t.dtype} [${t.shape.join(', ')}]]${what} is at version ${t.storage.version}; expected version ${version} instead. (in ${gradFnName(this.name)})`);
      }
    });
    if (!gradMode.get()) return this.rule(grads);
    // Note [Saved tensors under createGraph]: a saved tensor is kept detached (holding its own
    // producer would keep the graph alive), so the ops of a rule run with grad mode on would not
    // reach what it saved, and a second derivative through it would be silently missing
    // (d²(x·x)/dx²). For the rule's run, each saved tensor stands for the one it saved: the
    // input's node or leaf, or this node's output.
    const linked: Tensor[] = [];
    this.saved.forEach((h, i) => {
      const link = this.links[i];
      if (link === null) return;
      if (typeof link === 'number') h._linkGrad(this, link);
      else if ('node' in link) h._linkGrad(link.node, link.index);
      else h._linkLeaf(link.leaf);
      linked.push(h);
    });
    try {
      return this.rule(grads);
    } finally {
      for (const h of linked) h._unlinkGrad();
    }
  }
}

/** Whether any of the inputs needs a gradient (and grad mode is on). */
export function needsGrad(...inputs: unknown[]): boolean {
  if (!gradMode.get()) return false;
  return inputs.some((t) => typeof t === 'object' && t !== null && (t as Tensor).requiresGrad);
}

/**
 * Records an op on the tape when an input requires grad. `makeRule` receives a context to save
 * tensors and receives the outputs; it returns the gradient rule. Returns the outputs unchanged.
 */
export function record<T extends Tensor | Tensor[]>(name: string, inputs: (Tensor | null | number | boolean | undefined)[], outputs: T, makeRule: (ctx: SaveContext, outputs: T) => GradRule): T {
  if (!needsGrad(...inputs)) return outputs;
  if (collecting) {
    // a checkpointed forward (ts/autograd/checkpoint.ts): note what the region reads, record nothing
    for (const t of inputs) if (typeof t === 'object' && t !== null && t.requiresGrad) collecting.add(t);
    return outputs;
  }
  const edges = inputs.map((t): Edge => {
    if (typeof t !== 'object' || t === null || !t.requiresGrad) return null;
    return t.gradFn ? { node: t.gradFn, index: t._outputIndex } : { leaf: t._gradTarget ?? t };
  });
  const node = new Node(name, edges);
  const outs: Tensor[] = Array.isArray(outputs) ? outputs : [outputs];
  // what a saved tensor stands for under createGraph: an output of this node, or an input's edge
  const linkOf = (t: Tensor): Edge | number => {
    const o = outs.indexOf(t);
    if (o >= 0) return o;
    const i = inputs.indexOf(t);
    return i >= 0 ? edges[i] : null;
  };
  node.rule = makeRule({ save: (t) => node.save(t, linkOf(t)) }, outputs);
  outs.forEach((o, i) => o._setGradFn(node, i));
  return outputs;
}

/**
 * Runs an op's forward with recording off (its internal steps are not part of the tape) and
 * records the op itself when an input requires grad.
 */
export function op<T extends Tensor | Tensor[]>(name: string, inputs: (Tensor | null | number | boolean | undefined)[], forward: () => T, makeRule: (ctx: SaveContext, outputs: T) => GradRule): T {
  if (!needsGrad(...inputs)) return forward();
  const out = withGradMode(false, forward);
  const outs = Array.isArray(out) ? out : [out];
  if (!outs.some((o) => o.dtype === 'float32' || o.dtype === 'float16' || o.dtype === 'bfloat16')) return out;
  return record(name, inputs, out, makeRule);
}

// ---- What gradient checkpointing needs from the tape (ts/autograd/checkpoint.ts) ----

/** While a checkpointed forward runs: the tensors requiring grad that its ops read (nothing is recorded). */
let collecting: Set<Tensor> | null = null;

/**
 * @internal Runs `fn` (synchronous) with grad mode on but no node recorded: each op's inputs that
 * require grad are added to the returned set instead, and its outputs do not require grad. Since
 * no tensor made inside requires grad, the set holds exactly what the region reads from outside.
 */
export function collectingInputs<T>(fn: () => T): { result: T; read: Set<Tensor> } {
  const outer = collecting;
  const read = new Set<Tensor>();
  collecting = read;
  try {
    return { result: withGradMode(true, fn), read };
  } finally {
    collecting = outer;
  }
}

/** @internal Whether a checkpointed forward is running (autocast does not cache casts made there). */
export const isCollectingInputs = (): boolean => collecting !== null;

/** Stand-ins: leaves that ops see through another tensor while some forward runs (DDP's hooked parameters). */
const standIns: Map<Tensor, Tensor>[] = [];

/**
 * @internal Runs `fn` (synchronous) telling checkpoints made inside that ops there read each key
 * of `map` (a parameter) through its value (a recorded identity of it, which DDP hooks): a
 * checkpoint's recompute, which reads the parameter itself, sends its gradient to the identity.
 */
export function withStandIns<T>(map: Map<Tensor, Tensor>, fn: () => T): T {
  standIns.push(map);
  try {
    return fn();
  } finally {
    standIns.pop();
  }
}

/** @internal The stand-ins in force now (innermost last). */
export const currentStandIns = (): Map<Tensor, Tensor>[] => standIns.slice();

