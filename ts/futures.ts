/**
 * `torch.futures.Future`: a value that becomes available later, with PyTorch's methods.
 *
 * Note [Futures in stream order]: PyTorch's CUDA futures (what an NCCL collective's `get_future()`
 * gives) are marked completed as soon as the work is queued on the stream: `then` callbacks run at
 * once, and the device work they queue follows the collective on the stream. webtorch's
 * collectives queue their device side the same way, so a future of a collective (DDP's comm hooks,
 * ts/distributed/comm-hooks.ts) is completed when it is made: `value()` and `then()` can be used
 * at once, synchronously, inside `backward()`; `wait()` also waits for the host side (every rank
 * has issued its side) and rejects with its error.
 */

/** `torch.futures.Future()`: completed by `setResult` (or `setException`); `then`, `wait`, `value`, `done`. */
export class Future<T = unknown> {
  private state: 'pending' | 'ok' | 'error' = 'pending';
  private result: T | undefined;
  private error: unknown;
  private callbacks: (() => void)[] = [];
  /** Host-side work that `wait()` also waits for (a collective's rendezvous). */
  private host: Promise<void> | null = null;

  /** @internal A future completed in stream order with `value`, whose `wait()` also waits for `host`. */
  static _inStreamOrder<V>(value: V, host: Promise<void> | null): Future<V> {
    const f = new Future<V>();
    f.host = host;
    f.setResult(value);
    return f;
  }

  /** Whether the future is completed (with a result or an error). */
  done(): boolean {
    return this.state !== 'pending';
  }

  /** Completes the future with `result`; PyTorch's error when it is already completed. */
  setResult(result: T): void {
    this.complete('ok', result, undefined);
  }

  /** Completes the future with an error, raised by `value()` and `wait()`. */
  setException(error: unknown): void {
    this.complete('error', undefined, error);
  }

  private complete(state: 'ok' | 'error', result: T | undefined, error: unknown): void {
    if (this.state !== 'pending') throw new Error('Error setting result: Future can only be marked completed once.');
    this.state = state;
    this.result = result;
    this.error = error;
    const cbs = this.callbacks;
    this.callbacks = [];
    for (const cb of cbs) cb();
  }

  /** The result of a completed future (raises its error); an error when it is not completed yet. */
  value(): T {
    if (this.state === 'pending') throw new Error('Future.value() called on a Future that is not completed yet (call it after wait(), or inside then())');
    if (this.state === 'error') throw this.error;
    return this.result as T;
  }

  /** Resolves with the result once the future and the work it stands for are complete (rejects with its error). */
  async wait(): Promise<T> {
    if (this.state === 'pending') await new Promise<void>((res) => this.callbacks.push(res));
    if (this.host) await this.host;
    return this.value();
  }

  /**
   * `fut.then(callback)`: a new future completed with `callback(fut)`'s return once `fut` is
   * completed (at once when it already is: see Note [Futures in stream order]); an error thrown by
   * the callback completes it with that error.
   */
  then<S>(callback: (fut: Future<T>) => S): Future<S> {
    if (typeof callback !== 'function') throw new TypeError('then(): expected a callable callback');
    const next = new Future<S>();
    next.host = this.host;
    const run = () => {
      let r: S;
      try {
        r = callback(this);
      } catch (e) {
        next.setException(e);
        return;
      }
      next.setResult(r);
    };
    if (this.state === 'pending') this.callbacks.push(run);
    else run();
    return next;
  }

  /** `fut.add_done_callback(callback)`: runs `callback(fut)` once the future is completed (at once when it is). */
  addDoneCallback(callback: (fut: Future<T>) => void): void {
    if (this.state === 'pending') this.callbacks.push(() => callback(this));
    else callback(this);
  }
}
