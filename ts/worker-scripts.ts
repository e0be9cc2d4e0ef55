/**
 * Starts the device workers. Bundlers (Vite, webpack, Parcel) find a worker's script only in the
 * literal form `new Worker(new URL('./script.js', import.meta.url), { type: 'module' })`, so it is
 * written out here once per script. Only the calling thread imports this module: a device
 * worker's bundle must not contain the code that starts device workers (a cycle that Vite
 * refuses). Node ignores these forms and starts `worker_threads` on the same files (ts/platform.ts).
 */
import { isNode, spawnWorker as spawnOn, type WorkerHandle } from './platform.js';

export type { WorkerHandle };

/**
 * The browser's Worker, remembering its script's URL (as the bundler rewrote it), so that a
 * script that fails to load can be named (ts/platform.ts: `workerStarted`). Bundlers match the
 * `new Worker(new URL(...))` form by its shape, so this local class takes the global's place.
 */
const Worker = (isNode
  ? undefined
  : class extends globalThis.Worker {
    constructor(readonly scriptURL: URL, options?: WorkerOptions) {
      super(scriptURL, options);
    }
  }) as unknown as new (url: URL, options?: WorkerOptions) => globalThis.Worker & { scriptURL: URL };

/** Starts a device worker of a kind (the scripts sit next to this file in `dist/`). */
export function spawnWorker(kind: 'cpu' | 'gpu'): Promise<WorkerHandle> {
  return kind === 'cpu'
    ? spawnOn('cpu', () => new Worker(new URL('./webtorch-cpu-worker.js', import.meta.url), { type: 'module', name: 'webtorch cpu' }))
    : spawnOn('gpu', () => new Worker(new URL('./webtorch-gpu-worker.js', import.meta.url), { type: 'module', name: 'webtorch gpu' }));
}
