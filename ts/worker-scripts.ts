/**
 * Starts the device workers. Bundlers (Vite, webpack, Parcel) find a worker's script only in the
 * literal form `new Worker(new URL('./script.js', import.meta.url), { type: 'module' })`, so it is
 * written out here once per script. Only the calling thread imports this module: a device
 * worker's bundle must not contain the code that starts device workers (a cycle that Vite
 * refuses). Node ignores these forms and starts `worker_threads` on the same files (ts/platform.ts).
 */
import { spawnWorker as spawnOn, type WorkerHandle } from './platform.js';

export type { WorkerHandle };

/** Starts a device worker of a kind (the scripts sit next to this file in `dist/`). */
export function spawnWorker(kind: 'cpu' | 'gpu'): Promise<WorkerHandle> {
  return kind === 'cpu'
    ? spawnOn('cpu', () => new Worker(new URL('./webtorch-cpu-worker.js', import.meta.url), { type: 'module', name: 'webtorch cpu' }))
    : spawnOn('gpu', () => new Worker(new URL('./webtorch-gpu-worker.js', import.meta.url), { type: 'module', name: 'webtorch gpu' }));
}
