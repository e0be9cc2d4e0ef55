/**
 * The cpu device's helper threads: both (or all) cores work on one matmul.
 *
 * The cpu worker's WebAssembly memory is shared (`canShareMemory`); each helper instantiates the
 * same kernel module on it and waits on a control block of a few i32 words (a separate
 * SharedArrayBuffer). A job is an export name, its integer arguments and a number of chunks; each
 * thread claims the next chunk from a shared counter (`claim` in cpu-pool-loop.ts says how a late
 * helper is kept out of the next job) and calls `export(...args, ws, chunk, chunks)`
 * with its own workspace, until none is left; the export decides which piece of the output a chunk
 * owns (`matmulPart` in `assembly/kernels/matmul.ts`). Taking chunks, rather than one fixed share
 * per thread, keeps a busy machine from stalling the product on a helper that the OS has
 * descheduled: the other threads take its chunks, and the worker waits only for chunks that were
 * claimed (a count of finished chunks), never for a helper that has not woken. The worker blocks
 * in `Atomics.wait` until they are done, so a job is as synchronous as a plain kernel call and the
 * executor's ordering is untouched.
 *
 * Note [Kernels on several threads]: the kernels never allocate and keep no state in memory (the
 * module is built with `--runtime stub`; the few mutable globals are per instance). A pooled
 * export must only touch memory that it is given by pointer, and each part its own slice of it:
 * the worker writes the descriptor and the workspace before the job and reads nothing until every
 * part has finished. Instantiating a helper re-applies the module's data segments (constant tables,
 * the same bytes), so helpers start inside `init`, before the device runs any command.
 */
import { canShareMemory, env, hardwareThreads, spawnHelper, type HelperHandle } from '../platform.js';
import { ARGS, CHUNKS, DONE, FAILED, JOB, MAX_ARGS, MAX_CHUNKS, NARGS, NEXT, POOL_JOBS, QUIT, SEQ, WS, WS_BYTES, claim, claimWord, type HelperInit, type PoolJob } from './cpu-pool-loop.js';

export { POOL_JOBS, type PoolJob, type HelperInit } from './cpu-pool-loop.js';

/** Helpers and the worker itself, over one shared memory. */
export interface KernelPool {
  /** Threads a job runs on: the helpers and the calling thread. */
  readonly threads: number;
  /**
   * Runs `exports[job](...args, ws + thread * wsBytes, chunk, chunks)` for every chunk, on every
   * thread; returns when all chunks are done. `ws` must hold `threads * wsBytes` bytes.
   */
  run(job: PoolJob, args: number[], chunks: number, ws: number, wsBytes: number): void;
  /** Stops the helpers. */
  close(): Promise<void>;
}

/**
 * How many threads the cpu device computes with: `WEBTORCH_CPU_THREADS` when set, else the
 * cores there are, at most 4; 1 where memory cannot be shared.
 */
export async function poolThreads(): Promise<number> {
  const asked = Number(env('WEBTORCH_CPU_THREADS'));
  const want = Number.isInteger(asked) && asked > 0 ? asked : Math.min(await hardwareThreads(), 4);
  return want > 1 && canShareMemory() ? want : 1;
}

/**
 * A shared memory for the kernels' shared build: `initial` pages, and the largest maximum this
 * platform grants among 4, 2 and 1 GiB (a shared memory reserves its maximum up front). Null
 * when none can be made.
 */
export function sharedMemory(initial: number): WebAssembly.Memory | null {
  for (const maximum of [65536, 32768, 16384]) {
    try {
      return new WebAssembly.Memory({ initial, maximum, shared: true });
    } catch {
      /* try a smaller reservation */
    }
  }
  return null;
}

/** Starts `threads - 1` helpers on `memory`; `exports` is the calling thread's instance of `module`. */
export async function startPool(module: WebAssembly.Module, memory: WebAssembly.Memory, exports: object, threads: number): Promise<KernelPool> {
  const control = new SharedArrayBuffer((ARGS + MAX_ARGS) * 4);
  const c = new Int32Array(control);
  const started = await Promise.allSettled(
    Array.from({ length: threads - 1 }, (_, i) => spawnHelper(
        { module, memory, control, part: i + 1 } satisfies HelperInit,
        // In this literal form bundlers find the helper's script and bundle it (see ts/platform.ts).
        () => new Worker(new URL('./webtorch-cpu-helper.js', import.meta.url), { type: 'module', name: 'webtorch cpu helper' }),
      )),
  );
  const helpers: HelperHandle[] = [];
  for (const s of started) if (s.status === 'fulfilled') helpers.push(s.value);
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await Promise.all(helpers.map((h) => h.terminate()));
    throw failed.reason;
  }
  const fns = exports as Record<PoolJob, (...args: number[]) => void>;
  let closed = false;
  return {
    threads,
    run(job, args, chunks, ws, wsBytes) {
      const fn = fns[job];
      if (closed || helpers.length === 0 || args.length > MAX_ARGS || chunks > MAX_CHUNKS) {
        for (let i = 0; i < chunks; i++) fn(...args, ws, i, chunks);
        return;
      }
      // NEXT names no job while the job's words are written; then it names the new job; then SEQ
      // wakes the helpers. A helper that read some of these words for an earlier job cannot claim.
      Atomics.store(c, NEXT, -1);
      c.set(args, ARGS);
      c[JOB] = POOL_JOBS.indexOf(job);
      c[NARGS] = args.length;
      c[CHUNKS] = chunks;
      c[WS] = ws;
      c[WS_BYTES] = wsBytes;
      Atomics.store(c, DONE, 0);
      Atomics.store(c, FAILED, 0);
      const seq = (Atomics.load(c, SEQ) + 1) & 0x7fffffff || 1;
      Atomics.store(c, NEXT, claimWord(seq, 0));
      Atomics.store(c, SEQ, seq);
      Atomics.notify(c, SEQ);
      let failure: unknown = null;
      for (let i; (i = claim(c, seq, chunks)) >= 0;) {
        try {
          fn(...args, ws, i, chunks);
        } catch (e) {
          failure ??= e;
        }
        Atomics.add(c, DONE, 1);
      }
      // Every chunk is claimed; wait for those still running on helpers: spin briefly, then sleep.
      for (let spin = 0; Atomics.load(c, DONE) !== chunks && spin < 2000; spin++);
      for (let done; (done = Atomics.load(c, DONE)) !== chunks;) Atomics.wait(c, DONE, done);
      if (failure) throw failure;
      if (Atomics.load(c, FAILED)) throw new Error(`${job} failed on a helper thread`);
    },
    async close() {
      if (closed) return;
      closed = true;
      Atomics.store(c, QUIT, 1);
      Atomics.store(c, SEQ, (Atomics.load(c, SEQ) + 1) & 0x7fffffff || 1);
      Atomics.notify(c, SEQ);
      await Promise.all(helpers.map((h) => h.terminate()));
    },
  };
}
