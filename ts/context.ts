/**
 * Context variables: settings that are current for a piece of code, synchronous or not
 * (the current GPU, grad mode; the current stream will be one too).
 *
 * Why this exists: `withDevice(1, async () => …)` used to set a global and restore it when the
 * promise settled, so every task that ran in between (another request, another `Promise.all`
 * branch) saw device 1. A `ContextVar` keeps its value in the platform's async scope
 * (`asyncScope` in ts/platform.ts: Node's AsyncLocalStorage, or `AsyncContext` in a browser that
 * has it), so a value given by `run` is seen by the callback and by the async work it starts,
 * and by nothing else.
 *
 * The model is Python's `contextvars` under PyTorch's thread-local current device, with the
 * top level of the program as "the thread":
 * - `get()` is the value of the innermost `run` around the calling code, else the top-level value.
 * - `run(value, fn)` calls `fn` (sync or async) with `value` current and returns what it returns.
 * - `set(value)` changes the innermost run's value for the rest of that run (its async
 *   continuations included), or the top-level value outside any run. So `setDevice(2)` inside
 *   `withDevice(1, …)` lasts until that scope ends, as `torch.cuda.set_device(2)` inside
 *   `with torch.cuda.device(1):` does in PyTorch; at the top level it lasts until changed.
 *
 * Where the platform has no async scope, a synchronous `fn` still works (the value is set for
 * its duration, then restored); an async one raises a TypeError before or as it starts, since
 * its continuations could not be told apart from other tasks'.
 *
 * `runSync` is `run` for callbacks known to be synchronous (webtorch's own: an optimizer step, a
 * gradient rule): a plain stack, no async scope. This matters on Node before 24, where the first
 * `AsyncLocalStorage.run` turns on promise hooks that make every `await` in the process slower:
 * a program that never calls `withDevice`/`noGrad` itself never pays that.
 */
import { asyncScope, type AsyncScope } from './platform.js';

/** The value of one `run` (a cell, so that `set` inside the run is seen by all of it). */
interface Cell<T> {
  value: T;
}

const isThenable = (x: unknown): x is PromiseLike<unknown> =>
  (typeof x === 'object' || typeof x === 'function') && x !== null && typeof (x as PromiseLike<unknown>).then === 'function';

const isAsyncFunction = (fn: unknown): boolean =>
  typeof fn === 'function' && /^Async(Generator)?Function$/.test((fn as { constructor?: { name?: string } }).constructor?.name ?? '');

/** A value that is current for a run of code and its async continuations (see the file's note). */
export class ContextVar<T> {
  private readonly top: Cell<T>;
  /** The cell of the `runSync` (or scope-less `run`) in progress; null outside one. */
  private override: Cell<T> | null = null;
  private readonly scope: AsyncScope<Cell<T>> | null;

  /**
   * @param name used in errors (`withDevice`, `noGrad`, …).
   * @param initial the top-level value.
   * @param scope the async scope to keep values in; the platform's by default (tests pass null
   *   to exercise a platform without one).
   */
  constructor(readonly name: string, initial: T, scope: AsyncScope<Cell<T>> | null = asyncScope<Cell<T>>()) {
    this.top = { value: initial };
    this.scope = scope;
  }

  /** Whether async callbacks are scoped on this platform. */
  get scopesAsync(): boolean {
    return this.scope !== null;
  }

  // A synchronous run's cell wins while it runs: no other task's code can run meanwhile, and an
  // async run started inside it clears it for its own synchronous part (see `run`).
  private cell(): Cell<T> {
    return this.override ?? this.scope?.get() ?? this.top;
  }

  /** The current value. */
  get(): T {
    return this.cell().value;
  }

  /** Changes the current run's value (the top-level value outside any run). */
  set(value: T): void {
    this.cell().value = value;
  }

  /** Calls `fn` with `value` current for it and for the async work it starts; returns its result. */
  run<R>(value: T, fn: () => R): R {
    if (!this.scope) {
      if (isAsyncFunction(fn)) throw this.noAsync();
      return this.runSync(value, fn, () => this.noAsync());
    }
    const outer = this.override;
    this.override = null;
    try {
      return this.scope.run({ value }, fn);
    } finally {
      this.override = outer;
    }
  }

  /** `run` for a synchronous `fn`, without the async scope; raises if `fn` returns a promise. */
  runSync<R>(value: T, fn: () => R, onAsync: () => Error = () => new TypeError(`${this.name}: expected a synchronous callback, got one that returned a Promise`)): R {
    const outer = this.override;
    this.override = { value };
    let result: R;
    try {
      result = fn();
    } finally {
      this.override = outer;
    }
    if (isThenable(result)) {
      // Its first part already ran scoped; the rest would not be. Its own failure is reported by ours.
      result.then(undefined, () => undefined);
      throw onAsync();
    }
    return result;
  }

  private noAsync(): TypeError {
    return new TypeError(
      `${this.name}: an async callback needs an async context (Node's AsyncLocalStorage, from Node 20.16, or a browser's AsyncContext), ` +
        'which this platform lacks, so its value would leak into other tasks; pass a synchronous callback, or set the value around the async code',
    );
  }
}
