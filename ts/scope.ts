/**
 * `torch.tidy(fn)`: disposes every tensor created inside `fn` except those it returns.
 * Scopes nest; a tensor returned from an inner scope belongs to the outer one. `fn` must be
 * synchronous (an `await` inside would let other code's tensors into the scope).
 */
import type { Tensor } from './tensor.js';

const scopes: Set<Tensor>[] = [];

/** @internal Called for each new tensor handle. */
export function track(t: Tensor): void {
  scopes[scopes.length - 1]?.add(t);
}

/** @internal Takes a tensor out of the enclosing scopes (autograd's saved tensors, `.grad`). */
export function untrack(t: Tensor): void {
  for (const s of scopes) s.delete(t);
}

/**
 * @internal Runs `fn` outside every enclosing scope: the tensors it makes belong to the caller of
 * webtorch's API that runs it (a user's hook called from inside a gradient rule's tidy), as if no
 * `tidy` were open.
 */
export function outsideScopes<T>(fn: () => T): T {
  const own = new Set<Tensor>();
  scopes.push(own);
  try {
    return fn();
  } finally {
    scopes.splice(scopes.lastIndexOf(own), 1);
  }
}

/**
 * @internal Gives `t` the scope of `owner`: a leaf's `.grad` (or a retained non-leaf's) lives as
 * long as the tensor it belongs to. It leaves the scopes it was made in and joins the innermost
 * scope that holds `owner`, if any; so a tensor made inside `tidy` takes its gradient with it
 * when the scope disposes it, and a parameter made outside keeps its gradient across scopes.
 */
export function adopt(owner: Tensor, t: Tensor): void {
  untrack(t);
  for (let i = scopes.length - 1; i >= 0; i--) {
    if (scopes[i].has(owner)) {
      scopes[i].add(t);
      return;
    }
  }
}

/** @internal The innermost open scope, or undefined outside `tidy` (a module records the one it was built in). */
export function currentScope(): Set<Tensor> | undefined {
  return scopes[scopes.length - 1];
}

/**
 * @internal Gives `t` to `scope` (a module's, from `currentScope()` when it was built): state a
 * module makes or registers later, inside some `tidy` (a lazy layer's weights, a buffer set in
 * `forward`), lives as long as the module, not as the `tidy` it was made in. It leaves the scopes
 * it was made in, and joins `scope` if that is still open.
 */
export function giveToScope(t: Tensor, scope: Set<Tensor> | undefined): void {
  untrack(t);
  if (scope && scopes.includes(scope)) scope.add(t);
}

/** Collects the tensors in a returned value: a tensor, or arrays and plain objects of them. */
function collect(value: unknown, into: Set<Tensor>, isTensor: (v: unknown) => v is Tensor, depth = 0): void {
  if (isTensor(value)) {
    into.add(value);
    if (value.grad) into.add(value.grad); // a returned tensor keeps its gradient (see `adopt`)
  } else if (depth < 8 && value && (typeof value === 'object' || typeof value === 'function')) {
    for (const v of Array.isArray(value) ? value : Object.values(value)) collect(v, into, isTensor, depth + 1);
  }
}

/** Runs `fn`, then disposes the tensors it created and did not return. */
export function tidy<T>(fn: () => T, isTensor: (v: unknown) => v is Tensor): T {
  const scope = new Set<Tensor>();
  scopes.push(scope);
  let result: T;
  try {
    result = fn();
  } catch (e) {
    scopes.pop();
    scope.forEach((t) => t.dispose());
    throw e;
  }
  scopes.pop();
  if (result instanceof Promise) {
    scope.forEach((t) => t.dispose());
    throw new TypeError('tidy: fn must be synchronous (it returned a Promise); dispose tensors explicitly in async code');
  }
  const keep = new Set<Tensor>();
  collect(result, keep, isTensor);
  for (const t of scope) {
    if (keep.has(t)) track(t);
    else t.dispose();
  }
  return result;
}
