/**
 * The GPU worker's side of device loss (ts/runtime/device-lost.ts has the design).
 *
 * `GPUDevice.lost` settles once, with a reason and a message, when the browser (or Dawn) loses
 * the device or code destroys it. From then on Dawn quietly ignores most calls (a submit, a
 * write) and fails others with bare errors (`mapAsync`'s AbortError), so nothing the worker
 * does on the device would say what happened. `guardLoss` wraps the backend: once the device
 * is lost, commands are dropped, and every read, write, mark and idle rejects with a
 * `DeviceLostError` naming the reason, as does one already waiting when the loss comes. The
 * worker stays up and answers, so the calling thread never waits forever on a dead device.
 *
 * The loss port (the `lost` option of `init`) tells the calling thread at once, and takes the
 * test hook's order (`torch.gpu._loseDevice`): destroy the device, answer once `lost` settled.
 */
import type { Backend } from './backend.js';
import { onPortMessage } from '../platform.js';
import { lostMessage, type LostInfo } from '../runtime/device-lost.js';

let watched: GPUDevice | null = null;
let lost: LostInfo | null = null;
let port: MessagePort | null = null;
/** The device's name (`gpu:0`), for the loss's message. */
let name = 'gpu';
/** Rejections of the calls waiting on the device, run when it is lost. */
const waiters = new Set<(e: Error) => void>();
/** The backend's reads, writes, marks and idles under way (each may wait on a Dawn promise: `settleBeforeDeath`). */
const underway = new Set<Promise<unknown>>();
/** Set when the thread is about to die of an uncaught error: the loss it causes is not reported as a loss. */
let dying = false;

/** Called by ts/worker/gpu.ts once it has its GPUDevice: watches `device.lost`. */
export function watchLoss(device: GPUDevice): void {
  watched = device;
  void device.lost.then((info) => {
    if (watched !== device || lost || dying) return;
    lost = { reason: info.reason ?? 'unknown', message: info.message ?? '' };
    port?.postMessage({ lost });
    const e = lostError();
    for (const reject of waiters) reject(e);
    waiters.clear();
  });
}

/** The error every call answers with once the device is lost (rebuilt as a `DeviceLostError` by the caller). */
function lostError(): Error {
  const e = new Error(lostMessage(name, lost!));
  e.name = 'DeviceLostError';
  return e;
}

/** Destroys the device (the test hook) and resolves once the loss has been seen. */
async function lose(): Promise<void> {
  const d = watched;
  if (!d || lost) return;
  d.destroy();
  await d.lost;
}

/** Runs `fn`; a loss before or while it runs turns its result, or its failure, into the loss. */
async function guarded<T>(fn: () => Promise<T> | T): Promise<T> {
  // A thread about to die starts nothing on the device and answers nothing: its death answers (`settleBeforeDeath`).
  if (dying) return never();
  if (lost) throw lostError();
  let reject!: (e: Error) => void;
  const onLoss = new Promise<never>((_, r) => (reject = r));
  waiters.add(reject);
  const call = (async () => fn())();
  underway.add(call);
  void call.then(() => underway.delete(call), () => underway.delete(call));
  try {
    const value = await Promise.race([call, onLoss]);
    if (dying) return never();
    if (lost) throw lostError();
    return value;
  } catch (e) {
    if (dying) return never();
    // Dawn fails a call cut short by the loss (a mapping's AbortError) a moment before `lost` settles.
    if (!lost && watched) await Promise.race([watched.lost, new Promise((r) => setTimeout(r, 50))]);
    throw lost ? lostError() : e;
  } finally {
    waiters.delete(reject);
  }
}

/**
 * Node: before the worker's thread dies of an uncaught error. Dawn aborts the whole process when a
 * thread ends with one of its promises pending (a `mapAsync`, a `createComputePipelineAsync`), so
 * the device is destroyed first (Dawn then settles them all), and this resolves once they have
 * settled (`compiled`: the pipelines compiling), or after `ms`. The loss is not reported on the
 * port: the calling thread learns of the death itself (`WorkerHandle.onDeath`), with its reason.
 */
export async function settleBeforeDeath(compiled: () => Promise<void> | null, ms = 2000): Promise<void> {
  dying = true;
  watched?.destroy();
  const settled = Promise.allSettled([...underway, compiled(), watched?.lost]);
  await Promise.race([settled, new Promise((r) => setTimeout(r, ms))]);
  // Dawn rejects the mappings it holds for itself (the upload ring, a read's staging behind a failed check) on its next ticks.
  await new Promise((r) => setTimeout(r, 100));
}

/** A promise that never settles (a call of a thread about to die). */
const never = <T>(): Promise<T> => new Promise<T>(() => {});

/** The backend, with device loss handled (see the note at the top). */
export function guardLoss(backend: Backend): Backend {
  return {
    ...backend,
    async init(options) {
      port = (options as { lost?: MessagePort }).lost ?? null;
      name = options.name;
      if (port) {
        onPortMessage(port, (m) => {
          if ((m as { lose?: boolean }).lose) void lose().then(() => port?.postMessage({ lost }));
          // Test-only: Dawn reports a validation error (a buffer both mappable and storage), which
          // the next sync point raises (gpu/core.ts `takeErrors`).
          if ((m as { gpuError?: boolean }).gpuError) {
            watched?.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.STORAGE });
            port?.postMessage({ gpuErrorMade: true });
          }
          // Test-only: the worker's thread dies of an uncaught error (the caller's death path).
          if ((m as { crash?: boolean }).crash) {
            setTimeout(() => {
              throw new Error('webtorch test: the GPU worker was made to crash');
            });
          }
        });
      }
      return backend.init(options);
    },
    run(cmd) {
      if (!lost && !dying) backend.run(cmd);
    },
    flush() {
      if (!lost && !dying) backend.flush();
    },
    read: (id, byteOffset, bytes) => guarded(() => backend.read(id, byteOffset, bytes)),
    write: (id, byteOffset, data) => guarded(() => backend.write(id, byteOffset, data)),
    mark: (timing) => guarded(() => backend.mark(timing)),
    idle: () => guarded(() => backend.idle()),
    async close() {
      try {
        await backend.close();
      } catch (e) {
        if (!lost) throw e;
      }
      port?.close();
    },
  };
}
