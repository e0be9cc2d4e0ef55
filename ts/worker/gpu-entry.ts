/**
 * The `gpu` worker's entry point. Every backend call runs inside the exit gate (`exitGuard` in
 * ts/platform.ts), so that a program leaving through `process.exit()` or an uncaught exception
 * never has Node terminate this thread inside a Dawn call, which would abort the process; and
 * inside the device-loss guard (ts/worker/gpu-lost.ts). So are the pipelines Dawn compiles asynchronously.
 */
import { serve } from './executor.js';
import type { Backend } from './backend.js';
import { gpuBackend } from './gpu.js';
import { holdWhileCompiling, whenCompiled } from './gpu/core.js';
import { guardLoss, settleBeforeDeath } from './gpu-lost.js';
import { exitGuard, isNode } from '../platform.js';

const guard = exitGuard();
// Pipelines compiling on Dawn's threads keep the worker inside the gate too (ts/worker/gpu/core.ts).
holdWhileCompiling(guard.hold);
const guarded = Object.fromEntries(
  Object.entries(gpuBackend).map(([k, v]) => [k, typeof v === 'function' ? (...args: unknown[]) => guard(() => v.apply(gpuBackend, args)) : v]),
) as unknown as Backend;

// Device loss wraps the guarded calls (ts/worker/gpu-lost.ts).
serve(guardLoss(guarded));

// An uncaught error ends the thread, and Dawn aborts the whole process when a thread ends with a
// promise of its pending (a read's mapAsync, a pipeline compiling): Dawn settles them first
// (`settleBeforeDeath`), then the same error ends the thread, which the calling thread reports
// as the device lost (reason `worker died`).
if (isNode) {
  const onUncaught = (e: unknown) => {
    process.off('uncaughtException', onUncaught);
    void settleBeforeDeath(whenCompiled).then(() => setTimeout(() => {
      throw e;
    }));
  };
  process.on('uncaughtException', onUncaught);
}
