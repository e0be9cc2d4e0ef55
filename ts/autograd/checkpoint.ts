/**
 * `torch.utils.checkpoint`: `checkpoint(fn, ...args, {useReentrant, preserveRngState,
 * determinismCheck})` and `checkpointSequential(functions, segments, input, {useReentrant,
 * preserveRngState})`. Memory for compute: the forward keeps no activations, and backward runs
 * the region again to get them.
 *
 * How (`useReentrant: false`, the default, as in current PyTorch):
 * - The forward runs `fn` with grad mode on but nothing recorded (`collectingInputs` in
 *   ts/autograd/graph.ts): no node is made inside, so nothing is saved, and the tensors requiring
 *   grad that the region's ops read are noted: the arguments, the module's parameters, anything
 *   else it closes over. The tensors it made and does not return are freed when it ends (as
 *   `torch.tidy` frees them): that is the memory saved.
 * - One node, `CheckpointBackward`, has an edge to each tensor the region read, and is the
 *   `gradFn` of each floating output. It saves the tensor arguments only.
 * - Its rule runs `fn` again with recording on, on detached handles of the saved arguments, with
 *   the random generators of every device (the cpu's and each GPU's) set back to their states at
 *   the forward (so dropout draws the same mask) and the forward's autocast state, then runs a
 *   backward over that recomputed graph that stops at the tensors the region read (a `Boundary`
 *   in ts/autograd/engine.ts) and returns their gradients as the node's. Parameters thus get their
 *   gradients through the ordinary engine (DDP's hooks included: a parameter that DDP's forward
 *   showed through its hooked identity is mapped to that identity, `withStandIns`), and
 *   `autograd.grad` works through a checkpoint.
 *
 * `useReentrant: true` is PyTorch's older form: the node's edges are the tensor arguments alone,
 * and the recompute's backward writes the other leaves' `.grad` directly (so, as in PyTorch, a
 * call whose arguments do not require grad gives no gradients, and `autograd.grad` raises).
 */
import { CPU, Device, knownGpuCount } from '../device.js';
import { defaultGeneratorOf } from '../rng.js';
import type { Generator } from '../random.js';
import { autocast, getAutocastDtype, isAutocastEnabled } from '../amp/autocast.js';
import { isFloating } from '../dtype.js';
import { checkOptions, isKeywords } from '../args.js';
import { tidy } from '../ops/scoped.js';
import { Tensor } from '../tensor.js';
import { collectingInputs, currentStandIns, isGradEnabled, record, withGradMode, type Node } from './graph.js';
import { insideGradCall, runBackward, type Boundary } from './engine.js';

/** `checkpoint`'s keywords (PyTorch's, camelCase). */
export interface CheckpointOptions {
  /** PyTorch's older, reentrant form (default false, as current PyTorch's default). */
  useReentrant?: boolean | null;
  /** Set every device's generator back to its forward state for the recompute (default true). */
  preserveRngState?: boolean;
  /** `'default'`: the recompute's outputs must match the forward's in shape, dtype and device; `'none'`: no check. */
  determinismCheck?: 'default' | 'none';
}

/** PyTorch's `CheckpointError`: the recompute did not give what the forward did. */
export class CheckpointError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CheckpointError';
  }
}

/** The tensors in a returned value (a tensor, or arrays and plain objects of them), in a fixed order. */
function tensorsIn(value: unknown, out: Tensor[] = [], depth = 0): Tensor[] {
  if (value instanceof Tensor) out.push(value);
  else if (depth < 4 && (Array.isArray(value) || isKeywords(value))) for (const v of Object.values(value as object)) tensorsIn(v, out, depth + 1);
  return out;
}

/** The default generators of the cpu and of every GPU device, and their states now. */
function rngStates(): { gens: Generator[]; states: Uint8Array[] } {
  const gens = [CPU, ...Array.from({ length: knownGpuCount() }, (_, i) => Device.of('gpu', i))].map(defaultGeneratorOf);
  return { gens, states: gens.map((g) => g.getState()) };
}

/** The forward's autocast state, to run the recompute in. */
function autocastState(): () => <R>(fn: () => R) => R {
  const gpu = { enabled: isAutocastEnabled('gpu'), dtype: getAutocastDtype('gpu') as 'float16' | 'bfloat16' };
  const cpu = { enabled: isAutocastEnabled('cpu'), dtype: getAutocastDtype('cpu') as 'float16' | 'bfloat16' };
  return () => <R>(fn: () => R): R => autocast('gpu', gpu, () => autocast('cpu', cpu, fn));
}

const describe = (t: Tensor): string => `shape=[${t.shape.join(', ')}], dtype=${t.dtype}, device=${t.device}`;

/**
 * `torch.utils.checkpoint.checkpoint(fn, ...args, {useReentrant, preserveRngState,
 * determinismCheck})`: runs `fn(...args)` without keeping its activations and returns what it
 * returns; backward runs it again (see the file's note). `fn` must be synchronous and, run twice
 * from the same generator states, do the same thing. Tensors it makes and does not return are
 * freed when it returns.
 */
export function checkpoint<R>(fn: (...args: any[]) => R, ...rest: unknown[]): R {
  if (typeof fn !== 'function') throw new TypeError(`checkpoint(): function must be callable, got ${typeof fn}`);
  let options: CheckpointOptions = {};
  if (rest.length && isKeywords(rest[rest.length - 1])) options = rest.pop() as CheckpointOptions;
  checkOptions('checkpoint', options, ['useReentrant', 'preserveRngState', 'determinismCheck']);
  const args = rest;
  const reentrant = options.useReentrant ?? false;
  const preserve = options.preserveRngState ?? true;
  const check = options.determinismCheck ?? 'default';
  if (typeof reentrant !== 'boolean') throw new TypeError(`checkpoint(): useReentrant must be a boolean, got ${typeof reentrant}`);
  if (check !== 'default' && check !== 'none') throw new Error(`ValueError: determinism_check should be one of ['default', 'none'], but got ${String(check)}`);
  if (!isGradEnabled()) return fn(...args); // nothing would be saved: PyTorch runs it as it is

  const rng = preserve ? rngStates() : null;
  const inAutocast = autocastState();
  const standIns = currentStandIns();
  const runForward = (xs: unknown[]) => tidy(() => {
    const r = fn(...xs);
    if (typeof (r as PromiseLike<unknown> | null)?.then === 'function') throw new TypeError('checkpoint(): fn must be synchronous (it returned a Promise)');
    return r;
  });
  let result: R;
  let read: Tensor[];
  if (reentrant) {
    result = withGradMode(false, () => runForward(args));
    read = args.filter((a): a is Tensor => a instanceof Tensor && a.requiresGrad);
    if (!read.length) console.warn('None of the inputs have requires_grad=True. Gradients will be None');
  } else {
    const c = collectingInputs(() => runForward(args));
    result = c.result;
    read = [...c.read];
  }
  // Outputs made in the region get the node; one that already requires grad (an argument returned as it is) keeps its own.
  const all = tensorsIn(result);
  const outIdx = all.map((t, i) => (all.indexOf(t) === i && !t.requiresGrad && isFloating(t.dtype) ? i : -1)).filter((i) => i >= 0);
  const outs = outIdx.map((i) => all[i]);
  if (!outs.length || !read.length) return result;

  const tensorArgs = args.map((a) => (a instanceof Tensor ? a : null));
  record('Checkpoint', read, outs, (ctx) => {
    const saved = tensorArgs.map((a) => (a ? ctx.save(a) : null));
    const shapes = outs.map(describe);
    return (grads) => {
      if (reentrant && insideGradCall()) {
        throw new Error('Checkpointing is not compatible with .grad() or when an `inputs` parameter is passed to .backward(). Please use .backward() and do not pass its `inputs` argument.');
      }
      // The recompute's inputs: fresh leaves over the saved arguments, as requiring grad as the arguments were.
      const inputs = args.map((a, i) => {
        if (!saved[i]) return a;
        const h = saved[i]!.detach();
        if (tensorArgs[i]!.requiresGrad) h.requiresGrad = true;
        return h;
      });
      const boundary: Boundary = { leaves: new Map(), nodes: new Map(), grads: read.map(() => null) };
      const slot = (t: Tensor, k: number) => {
        if (!t.gradFn) return boundary.leaves.set(t, k);
        const byIndex = boundary.nodes.get(t.gradFn) ?? new Map<number, number>();
        byIndex.set(t._outputIndex, k);
        boundary.nodes.set(t.gradFn, byIndex);
      };
      read.forEach((t, k) => slot(t, k));
      inputs.forEach((h, i) => {
        const k = read.indexOf(tensorArgs[i]!);
        if (saved[i] && k >= 0) boundary.leaves.set(h as Tensor, k);
      });
      // A parameter the forward read through a stand-in (DDP's hooked identity) sends its gradient there.
      for (const map of standIns) for (const [p, s] of map) {
        const k = read.indexOf(s);
        if (k >= 0) boundary.leaves.set(p, k);
      }
      const now = rng && rngStates();
      rng?.gens.forEach((g, i) => g.setState(rng.states[i]));
      let again: unknown;
      try {
        again = withGradMode(true, () => inAutocast()(() => runForward(inputs)));
      } finally {
        now?.gens.forEach((g, i) => g.setState(now.states[i]));
      }
      const allAgain = tensorsIn(again);
      const fresh = outIdx.map((i) => allAgain[i]);
      try {
        if (check === 'default' && (allAgain.length !== all.length || fresh.some((t, k) => describe(t) !== shapes[k]))) {
          throw new CheckpointError('torch.utils.checkpoint: Recomputed values for the following tensors have different metadata than during the forward pass.\n' +
            `forward: [${shapes.join('; ')}]\nrecomputed: [${allAgain.filter((_, i) => outIdx.includes(i)).map(describe).join('; ')}]`);
        }
        const live = fresh.map((t, k) => (t?.requiresGrad && grads[k] ? k : -1)).filter((k) => k >= 0);
        runBackward(live.map((k) => fresh[k]), live.map((k) => grads[k]!), { createGraph: isGradEnabled() }, undefined, reentrant ? onlyLeaves(boundary, inputs) : boundary);
      } finally {
        // what the recompute made (a tensor it returns from outside the region is the forward's own object)
        allAgain.forEach((t, i) => t !== all[i] && t.dispose());
        inputs.forEach((h) => h instanceof Tensor && !args.includes(h) && h.dispose());
      }
      return boundary.grads;
    };
  });
  return result;
}

/** The reentrant form's boundary: only the argument handles; the other leaves get their `.grad` written. */
function onlyLeaves(b: Boundary, inputs: unknown[]): Boundary {
  const leaves = new Map([...b.leaves].filter(([t]) => inputs.includes(t)));
  return { leaves, nodes: new Map<Node, Map<number, number>>(), grads: b.grads };
}

/** `checkpointSequential`'s keywords. */
export interface CheckpointSequentialOptions {
  useReentrant?: boolean | null;
  preserveRngState?: boolean;
}

/**
 * `torch.utils.checkpoint.checkpointSequential(functions, segments, input, {useReentrant,
 * preserveRngState})`: runs an `nn.Sequential` (or an array of modules or functions) in `segments`
 * runs, each but the last under `checkpoint`, as PyTorch's `checkpoint_sequential`.
 */
export function checkpointSequential(functions: Iterable<(x: any) => any> | { children(): Iterable<(x: any) => any> }, segments: number, input: Tensor, ...rest: [useReentrant?: boolean | null, options?: CheckpointSequentialOptions] | [options: CheckpointSequentialOptions]): Tensor {
  const o: CheckpointSequentialOptions = rest.length && isKeywords(rest[rest.length - 1]) ? (rest[rest.length - 1] as CheckpointSequentialOptions) : {};
  if (rest.length > (isKeywords(rest[rest.length - 1]) ? 2 : 1)) throw new TypeError(`checkpoint_sequential() takes from 3 to 4 positional arguments but ${3 + rest.length} were given`);
  if (typeof rest[0] === 'boolean' || rest[0] === null) {
    if (o.useReentrant !== undefined) throw new TypeError("checkpoint_sequential() got multiple values for argument 'useReentrant'");
    o.useReentrant = rest[0] as boolean | null;
  }
  const unexpected = Object.keys(o).filter((k) => k !== 'useReentrant' && k !== 'preserveRngState');
  if (unexpected.length) throw new Error(`ValueError: Unexpected keyword arguments: ${unexpected.join(',')}`);
  const list = [...(typeof (functions as { children?: unknown }).children === 'function' && !(Symbol.iterator in (functions as object))
    ? (functions as { children(): Iterable<(x: any) => any> }).children() : (functions as Iterable<(x: any) => any>))];
  if (!Number.isInteger(segments) || segments < 1) throw new RangeError(`checkpoint_sequential(): segments must be a positive integer, got ${String(segments)}`);
  const run = (start: number, end: number) => (x: Tensor): Tensor => {
    let h = x;
    for (let j = start; j <= end; j++) {
      const next = list[j](h) as Tensor;
      if (h !== x && next !== h) h.dispose();
      h = next;
    }
    return h;
  };
  const size = Math.floor(list.length / segments);
  let end = -1;
  let h = input;
  for (let start = 0; start < size * (segments - 1); start += size) {
    end = start + size - 1;
    const next = checkpoint(run(start, end), h, { useReentrant: o.useReentrant, preserveRngState: o.preserveRngState ?? true });
    if (h !== input) h.dispose(); // its checkpoint saved what backward needs
    h = next;
  }
  const out = run(end + 1, list.length - 1)(h);
  if (h !== input && out !== h) h.dispose();
  return out;
}
