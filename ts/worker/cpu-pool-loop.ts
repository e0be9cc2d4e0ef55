/**
 * The helper thread's side of the cpu device's pool (see `cpu-pool.ts`): the control block's
 * layout and the loop a helper runs. Kept apart from `cpu-pool.ts` because the helper's script
 * must not import the code that starts helpers: a bundler follows `new Worker(new URL(...))`
 * into the helper's own bundle, and a script that starts itself is a cycle bundlers refuse.
 */

/**
 * The control block's words. A job's chunks are claimed from NEXT, which holds the job's number
 * (the low 15 bits of SEQ) above a 16-bit chunk index: a helper that wakes late, after its job
 * ended and while the next one is being written, finds another number there and claims nothing,
 * so it never runs a chunk with half-written arguments. DONE counts finished chunks: the worker
 * waits for the chunks that were claimed, never for a helper the OS has not scheduled yet.
 */
export const SEQ = 0, DONE = 1, QUIT = 2, FAILED = 3, JOB = 4, NARGS = 5, CHUNKS = 6, NEXT = 7, WS = 8, WS_BYTES = 9, ARGS = 12;
/** A job of more chunks than this is run in rounds of it (the index has 16 bits). */
export const MAX_CHUNKS = 1 << 15;
/** NEXT's value for chunk `i` of job `seq`. */
export const claimWord = (seq: number, i: number): number => ((seq & 0x7fff) << 16) | i;

/** Claims the next chunk of job `seq` (< chunks), or returns -1 when there is none or the job is another. */
export function claim(c: Int32Array, seq: number, chunks: number): number {
  for (;;) {
    const v = Atomics.load(c, NEXT);
    if (v >>> 16 !== (seq & 0x7fff)) return -1;
    const i = v & 0xffff;
    if (i >= chunks) return -1;
    if (Atomics.compareExchange(c, NEXT, v, v + 1) === v) return i;
  }
}
export const MAX_ARGS = 8;
/** The exports a job may name (helpers look them up by index). */
export const POOL_JOBS = ['matmulPart', 'randomPart', 'rowNormPart', 'unaryPart', 'binaryPart', 'windowsPart', 'foldWindowsPart', 'convPart', 'convGradPart', 'maxPoolPart', 'maxPoolGradPart', 'avgPoolPart', 'attentionPart'] as const;
export type PoolJob = (typeof POOL_JOBS)[number];

/** What the worker posts to a helper. */
export interface HelperInit {
  module: WebAssembly.Module;
  memory: WebAssembly.Memory;
  control: SharedArrayBuffer;
  part: number;
}

/** A helper's loop (`cpu-pool-helper.ts`): waits for a job, takes chunks while there are any, until told to quit. */
export function helperLoop(exports: object, control: SharedArrayBuffer, part: number): void {
  const c = new Int32Array(control);
  const fns = POOL_JOBS.map((name) => (exports as Record<PoolJob, (...args: number[]) => void>)[name]);
  // SEQ is 0 until the first job (the worker may post a job before this line runs).
  let seen = 0;
  for (;;) {
    let seq;
    while ((seq = Atomics.load(c, SEQ)) === seen) Atomics.wait(c, SEQ, seen);
    seen = seq;
    if (Atomics.load(c, QUIT)) return;
    // Read the job, then claim: a claim succeeds only while NEXT names this job, and NEXT names no
    // job while the worker writes the next one's words, so what was read belongs to this job.
    const fn = fns[c[JOB]], args = Array.from(c.subarray(ARGS, ARGS + c[NARGS])), chunks = c[CHUNKS];
    const ws = (c[WS] >>> 0) + part * (c[WS_BYTES] >>> 0);
    for (let i; (i = claim(c, seq, chunks)) >= 0;) {
      try {
        fn(...args, ws, i, chunks);
      } catch {
        Atomics.store(c, FAILED, 1);
      }
      if (Atomics.add(c, DONE, 1) === chunks - 1) Atomics.notify(c, DONE);
    }
  }
}
