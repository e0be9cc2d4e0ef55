/**
 * The helper thread's side of the cpu device's pool (see `cpu-pool.ts`): the control block's
 * layout and the loop a helper runs. Kept apart from `cpu-pool.ts` because the helper's script
 * must not import the code that starts helpers: a bundler follows `new Worker(new URL(...))`
 * into the helper's own bundle, and a script that starts itself is a cycle bundlers refuse.
 */

/** The control block's words. */
export const SEQ = 0, PENDING = 1, QUIT = 2, FAILED = 3, JOB = 4, NARGS = 5, CHUNKS = 6, NEXT = 7, WS = 8, WS_BYTES = 9, ARGS = 12;
export const MAX_ARGS = 8;
/** The exports a job may name (helpers look them up by index). */
export const POOL_JOBS = ['matmulPart', 'randomPart', 'rowNormPart', 'unaryPart', 'binaryPart'] as const;
export type PoolJob = (typeof POOL_JOBS)[number];

/** What the worker posts to a helper. */
export interface HelperInit {
  module: WebAssembly.Module;
  memory: WebAssembly.Memory;
  control: SharedArrayBuffer;
  part: number;
}

/** A helper's loop (`cpu-pool-helper.ts`): waits for a job, takes chunks while there are any, reports, until told to quit. */
export function helperLoop(exports: object, control: SharedArrayBuffer, part: number): void {
  const c = new Int32Array(control);
  const fns = POOL_JOBS.map((name) => (exports as Record<PoolJob, (...args: number[]) => void>)[name]);
  // SEQ is 0 until every helper is ready (the worker may post a job before this line runs).
  let seen = 0;
  for (;;) {
    let seq;
    while ((seq = Atomics.load(c, SEQ)) === seen) Atomics.wait(c, SEQ, seen);
    seen = seq;
    if (Atomics.load(c, QUIT)) return;
    try {
      const fn = fns[c[JOB]], args = Array.from(c.subarray(ARGS, ARGS + c[NARGS])), chunks = c[CHUNKS];
      const ws = (c[WS] >>> 0) + part * (c[WS_BYTES] >>> 0);
      for (let i; (i = Atomics.add(c, NEXT, 1)) < chunks;) fn(...args, ws, i, chunks);
    } catch {
      Atomics.store(c, FAILED, 1);
    }
    if (Atomics.sub(c, PENDING, 1) === 1) Atomics.notify(c, PENDING);
  }
}
