/**
 * The one place that knows whether we run in Node or in a browser.
 *
 * Node: devices are `worker_threads` Workers, WebGPU comes from Dawn's `webgpu` package, the
 * kernel `.wasm` is read from disk. Browser: Web Workers, `navigator.gpu`, `fetch`. Everything
 * else in webtorch is written against the standard Worker/MessagePort/WebGPU APIs.
 * Node-only modules are imported dynamically, through `nodeImport`, whose specifier bundlers do
 * not follow, so bundling for a browser needs no shims and pulls in none of Node's modules.
 *
 * Bundlers (Vite, which the browser tests build with; webpack 5 and Parcel document the same)
 * find a worker's script only where the code says `new Worker(new URL('./script.js',
 * import.meta.url), { type: 'module' })` literally, and a `.wasm` only as `new URL('./file.wasm',
 * import.meta.url)`. So the callers that start
 * workers write that form themselves and pass it in as `open` (ts/worker-scripts.ts for the
 * device workers, ts/worker/cpu-pool.ts for the cpu helper). Each lives in a module that the
 * script it starts never imports: a bundler bundles a worker's imports into it, and a worker
 * script that (through its imports) starts itself is a cycle that Vite refuses.
 */
import * as Comlink from 'comlink';

/** True in Node.js (also inside Node worker threads). */
export const isNode = typeof process !== 'undefined' && !!process.versions?.node;

/**
 * Imports a module that only Node has (`node:*`, Dawn's `webgpu`). The specifier is not a
 * literal, so bundlers leave it alone (the comments say so to Vite and webpack as well).
 */
function nodeImport<T>(specifier: string): Promise<T> {
  return import(/* @vite-ignore */ /* webpackIgnore: true */ specifier) as Promise<T>;
}

/** Reads an environment variable (always undefined in browsers). */
export function env(name: string): string | undefined {
  return isNode ? process.env[name] : undefined;
}

/** A duration setting in ms from the environment (`fallback` when unset); a value that is not one raises. */
export function envMs(name: string, fallback: number): number {
  const v = env(name);
  if (v === undefined || v.trim() === '') return fallback;
  const ms = Number(v);
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`webtorch: ${name} must be a duration in milliseconds, 0 or more, got ${JSON.stringify(v)}`);
  return ms;
}

/**
 * A value carried through a call and every asynchronous continuation started inside it: Node's
 * `AsyncLocalStorage`, or the TC39 `AsyncContext.Variable` where a browser has it. `ts/context.ts`
 * builds `ContextVar` on it.
 */
export interface AsyncScope<T> {
  /** The value of the innermost `run` this code (or the code that started it) is inside; undefined outside. */
  get(): T | undefined;
  /** Calls `fn` with `value` current for it and for the async work it starts. */
  run<R>(value: T, fn: () => R): R;
}

/** The constructor of `AsyncContext.Variable` (TC39 proposal) where the platform has it. */
type AsyncContextVariable = new <T>() => { get(): T | undefined; run<R>(value: T, fn: () => R): R };

/**
 * A new async scope, or null where the platform has none (a browser without `AsyncContext`,
 * Node before 20.16, which lacks the synchronous `process.getBuiltinModule`).
 */
export function asyncScope<T>(): AsyncScope<T> | null {
  if (isNode) {
    const hooks = process.getBuiltinModule?.('node:async_hooks') as typeof import('node:async_hooks') | undefined;
    if (!hooks) return null;
    const als = new hooks.AsyncLocalStorage<T>();
    return { get: () => als.getStore(), run: (value, fn) => als.run(value, fn) };
  }
  const Variable = (globalThis as { AsyncContext?: { Variable?: AsyncContextVariable } }).AsyncContext?.Variable;
  if (!Variable) return null;
  const v = new Variable<T>();
  return { get: () => v.get(), run: (value, fn) => v.run(value, fn) };
}

/** The worker entry files, next to the bundled library in `dist/`. */
const WORKER_FILES = { cpu: 'webtorch-cpu-worker.js', gpu: 'webtorch-gpu-worker.js' } as const;

/** A started worker: its comlink endpoint and a way to stop it. */
export interface WorkerHandle {
  endpoint: Comlink.Endpoint;
  terminate(): Promise<void>;
  /** Node: whether an idle worker keeps the process alive (only while a result is awaited). */
  keepAlive(on: boolean): void;
  /**
   * Node: calls `fn` with why, if the worker's thread ends without `terminate()` (an uncaught
   * exception, `process.exit` in it), so that the device raises rather than waits forever
   * (ts/runtime/device-lost.ts). Browsers have no such event.
   */
  onDeath(fn: (why: string) => void): void;
}

/**
 * Starts a device worker of a kind. Node: a `worker_threads` Worker on the script next to this
 * file. Browser: `open()`, which the caller writes as `new Worker(new URL('./…', import.meta.url),
 * { type: 'module' })` so that bundlers find the script (see the note at the top).
 */
export async function spawnWorker(kind: 'cpu' | 'gpu', open: () => Worker): Promise<WorkerHandle> {
  if (isNode) {
    const url = new URL(WORKER_FILES[kind], import.meta.url);
    const { Worker } = await nodeImport<typeof import('node:worker_threads')>('node:worker_threads');
    const { default: nodeEndpoint } = await import('comlink/dist/esm/node-adapter.mjs');
    // Device workers start with default flags: they would inherit the parent's execArgv, where
    // process-wide flags (`--expose-gc`, `--input-type`) make the Worker constructor throw.
    // `--cpu-prof*` passes through, so that `node --cpu-prof` profiles the device workers too.
    // A GPU worker gets an exit gate (see `holdAtExit`); the cpu worker runs WebAssembly, which can stop anywhere.
    const gate = kind === 'gpu' ? new Int32Array(new SharedArrayBuffer(8)) : null;
    const w = new Worker(url, { execArgv: process.execArgv.filter((f) => f.startsWith('--cpu-prof')), workerData: { exitGate: gate } });
    w.unref();
    if (gate) {
      gates.add(gate);
      if (gates.size === 1 && !exitHooked) (exitHooked = true), process.on('exit', holdAtExit);
    }
    // A thread that ends by itself is a device that died (without a listener, its error would be
    // rethrown on this thread and end the program).
    let stopping = false, died: ((why: string) => void) | null = null, why: string | null = null;
    const death = (reason: string) => {
      if (stopping || why) return;
      why = reason;
      died?.(why);
    };
    w.on('error', (e: Error) => death(`its thread threw ${e.name}: ${e.message}`));
    w.on('exit', (code: number) => death(`its thread exited with code ${code}`));
    return {
      endpoint: nodeEndpoint(w),
      terminate: async () => {
        stopping = true;
        await w.terminate();
        if (gate) gates.delete(gate);
      },
      keepAlive: (on) => (on ? w.ref() : w.unref()),
      onDeath: (fn) => {
        died = fn;
        if (why) fn(why);
      },
    };
  }
  const w = open();
  await workerStarted(w, kind === 'cpu' ? 'cpu' : 'gpu', WORKER_FILES[kind]);
  return { endpoint: w, terminate: async () => w.terminate(), keepAlive: () => undefined, onDeath: () => undefined };
}

/** The message a browser worker posts once its API is exposed (comlink ignores it: it has no id). */
const READY = 'webtorch:ready';

/**
 * Browser: resolves when the worker posts `READY`; rejects when its script fails to load or to
 * run, naming the script's URL and, where Resource Timing has it, the HTTP status (a Worker's
 * `error` event carries neither).
 */
function workerStarted(w: Worker, device: string, file: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const done = () => {
      w.removeEventListener('message', onMessage);
      w.removeEventListener('error', onError);
    };
    const onMessage = (ev: MessageEvent) => {
      if (ev.data !== READY) return;
      done();
      resolve();
    };
    const onError = async (ev: ErrorEvent) => {
      done();
      w.terminate();
      // The error event names neither the script nor why; ask the server for the script again.
      const url = (w as { scriptURL?: URL }).scriptURL;
      let status = '';
      if (url) {
        try {
          const res = await fetch(url, { method: 'HEAD', cache: 'no-store' });
          status = res.ok ? ' (it loads, so the script or one of its imports failed to run)' : ` (HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''})`;
        } catch (e) {
          status = ` (${e instanceof Error ? e.message : String(e)})`;
        }
      }
      const why = ev.message ? `: ${ev.message}` : '';
      reject(new Error(`webtorch: the ${device} device's worker script ${url?.href ?? file} failed to load${status}${why}`));
    };
    w.addEventListener('message', onMessage);
    w.addEventListener('error', onError);
  });
}

/**
 * Runs `fn` when the program has nothing left to do (Node's `beforeExit`: the event loop is
 * empty), at most once per time the loop empties; the promise it returns keeps the program alive
 * until it settles. webtorch stops its device workers there, because Node would otherwise
 * terminate them at exit wherever they are, and a GPU worker stopped inside a Dawn call aborts
 * the process (`FATAL ERROR: Error::ThrowAsJavaScriptException napi_throw`, exit 134).
 * Browsers: nothing (a page's workers end with the page). `process.exit()` skips `beforeExit`.
 */
export function onProgramEnd(fn: () => Promise<void>): void {
  if (!isNode) return;
  let running = false;
  process.on('beforeExit', () => {
    if (running) return;
    running = true;
    fn().then(
      () => (running = false),
      (e: unknown) => {
        running = false;
        console.error('webtorch: stopping the device workers at exit failed:', e);
      },
    );
  });
}

// ---- The exit gate of a GPU worker (Node) ----
//
// When a program leaves through `process.exit()` or an uncaught exception, `beforeExit` (see
// `onProgramEnd`) does not run, and Node terminates the device workers wherever they are. A GPU
// worker terminated inside a Dawn call aborts the whole process (`napi_throw` fails while the
// thread is being terminated). So each GPU worker shares two words with the calling thread:
// BUSY, set while it is inside a backend call, and STOP, set by the calling thread's `exit`
// handler, which then waits (at most `EXIT_WAIT_MS`) until no worker is BUSY. A worker that sees
// STOP before a call parks instead (Atomics.wait until it is terminated). The worker sets BUSY
// before it reads STOP and the handler sets STOP before it reads BUSY, so one of them always sees
// the other (Atomics are sequentially consistent).
const BUSY = 0, STOP = 1;
const EXIT_WAIT_MS = 5000;
const gates = new Set<Int32Array>();
let exitHooked = false;

/** The calling thread's `exit` handler: stops every GPU worker between two backend calls. */
function holdAtExit(): void {
  for (const g of gates) Atomics.store(g, STOP, 1);
  const deadline = Date.now() + EXIT_WAIT_MS;
  for (const g of gates) {
    while (Atomics.load(g, BUSY) !== 0) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      Atomics.wait(g, BUSY, 1, left);
    }
  }
}

/**
 * In a GPU worker: a wrapper that runs each backend call inside the exit gate (see above), or
 * one that just runs it where there is no gate (browsers, Node before 20.16). Its `hold(true)`
 * keeps the worker BUSY past the call until `hold(false)`: Dawn compiling a pipeline
 * asynchronously (ts/worker/gpu/core.ts) aborted the process when it exited meanwhile.
 */
export function exitGuard(): (<T>(fn: () => T) => T) & { hold(on: boolean): void } {
  const threads = isNode ? (process.getBuiltinModule?.('node:worker_threads') as typeof import('node:worker_threads') | undefined) : undefined;
  const gate = (threads?.workerData as { exitGate?: Int32Array | null } | undefined)?.exitGate;
  if (!gate) return Object.assign(<T>(fn: () => T) => fn(), { hold() {} });
  let depth = 0;
  const leave = () => {
    if (--depth === 0) {
      Atomics.store(gate, BUSY, 0);
      // Only the exit handler waits on BUSY, and it sets STOP first.
      if (Atomics.load(gate, STOP)) Atomics.notify(gate, BUSY);
    }
  };
  const guard = <T>(fn: () => T): T => {
    if (depth++ === 0) {
      Atomics.store(gate, BUSY, 1);
      if (Atomics.load(gate, STOP)) {
        Atomics.store(gate, BUSY, 0);
        Atomics.notify(gate, BUSY);
        Atomics.wait(gate, STOP, 1); // the program is exiting: wait here to be terminated
      }
    }
    try {
      return fn();
    } finally {
      leave();
    }
  };
  return Object.assign(guard, {
    hold(on: boolean) {
      if (!on) return leave();
      // (taken inside a backend call, so the gate is open: STOP is looked at by the next call)
      if (depth++ === 0) Atomics.store(gate, BUSY, 1);
    },
  });
}

/** Node's `Buffer`, where there is one (not in browsers). */
const NodeBuffer = (globalThis as { Buffer?: { allocUnsafeSlow(n: number): Uint8Array } }).Buffer ?? null;

/**
 * A copy of `bytes` in a new ArrayBuffer of its own (a read's result). In Node the new buffer is
 * not zeroed first (`Buffer.allocUnsafeSlow`, then every byte written): a fresh buffer's zeroing
 * and first touch took about as long as the copy (4 MiB out of the cpu's memory: 400–420 µs with
 * `slice`, 250 without the zeroing); browsers slice.
 */
export function copyOut(bytes: Uint8Array): ArrayBuffer {
  if (!NodeBuffer || bytes.byteLength < 1 << 16) return bytes.slice().buffer as ArrayBuffer;
  const out = NodeBuffer.allocUnsafeSlow(bytes.byteLength);
  out.set(bytes);
  return out.buffer as ArrayBuffer;
}

/**
 * Takes a message off a port synchronously (Node's `receiveMessageOnPort`), or null where the
 * platform has no such call (browsers): the worker's doorbell (ts/worker/channel.ts) needs it.
 */
export function portReceiver(): ((port: MessagePort) => { message: unknown } | undefined) | null {
  if (!isNode || typeof setImmediate !== 'function') return null;
  const threads = process.getBuiltinModule?.('node:worker_threads') as typeof import('node:worker_threads') | undefined;
  const receive = threads?.receiveMessageOnPort;
  return receive ? (port) => receive(port as unknown as import('node:worker_threads').MessagePort) : null;
}

/** Exposes a worker's API to its parent. */
export async function exposeWorker(api: object): Promise<void> {
  if (isNode) {
    const { parentPort } = await nodeImport<typeof import('node:worker_threads')>('node:worker_threads');
    const { default: nodeEndpoint } = await import('comlink/dist/esm/node-adapter.mjs');
    Comlink.expose(api, nodeEndpoint(parentPort!));
  } else {
    Comlink.expose(api, self as unknown as Comlink.Endpoint);
    (self as unknown as { postMessage(m: unknown): void }).postMessage(READY);
  }
}

/** The WebGPU entry point of this platform, or null when there is none. */
export async function getGpu(): Promise<GPU | null> {
  if (isNode) {
    const { create, globals } = await nodeImport<typeof import('webgpu')>('webgpu');
    Object.assign(globalThis, globals);
    // Dawn rounds timestamp queries coarsely unless told not to (a browser's guard against timing
    // attacks); events and the worker's profile want the GPU's own resolution, as CUDA events have.
    // Dawn also leaves `shader-f16` off on NVIDIA's Vulkan driver unless its adapter toggle
    // `vulkan_enable_f16_on_nvidia` is on; with it, float16 kernels load and store f16
    // (bench/probe-f16.mjs shows the feature appear and checks a kernel on the adapter).
    // WEBTORCH_DAWN_FLAGS replaces these defaults.
    const flags = (env('WEBTORCH_DAWN_FLAGS') ?? 'disable-dawn-features=timestamp_quantization enable-dawn-features=vulkan_enable_f16_on_nvidia').split(/\s+/).filter(Boolean);
    return create(flags) as GPU;
  }
  return (globalThis.navigator as Navigator | undefined)?.gpu ?? null;
}

/**
 * Compiles a WebAssembly module from a URL (a file next to this one: the caller writes
 * `new URL('./….wasm', import.meta.url)` literally, so that bundlers ship the file). A browser
 * whose server does not answer 200 gets an error naming the URL and the status.
 */
async function loadWasm(url: URL): Promise<WebAssembly.Module> {
  if (isNode) {
    const { readFile } = await nodeImport<typeof import('node:fs/promises')>('node:fs/promises');
    return WebAssembly.compile(await readFile(url));
  }
  let res: Response;
  try {
    res = await fetch(url);
  } catch (e) {
    throw new Error(`webtorch: could not fetch the kernels' WebAssembly from ${url.href}: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!res.ok) throw new Error(`webtorch: could not load the kernels' WebAssembly from ${url.href}: HTTP ${res.status} ${res.statusText}`.trimEnd());
  // compileStreaming needs the `application/wasm` type; a server that sends another still works.
  const type = res.headers.get('Content-Type') ?? '';
  return type.startsWith('application/wasm') ? WebAssembly.compileStreaming(res) : WebAssembly.compile(await res.arrayBuffer());
}

/** Compiles the AssemblyScript kernels shipped next to this file. */
export const loadKernelWasm = (): Promise<WebAssembly.Module> => loadWasm(new URL('./webtorch.wasm', import.meta.url));

/** A MessagePort pair for worker-to-worker traffic. */
export function messageChannel(): MessageChannel {
  return new MessageChannel();
}

/** Listens on a port in both Node and browsers. */
export function onPortMessage(port: MessagePort, fn: (data: unknown) => void): void {
  port.addEventListener('message', (ev: MessageEvent) => fn(ev.data));
  port.start();
}

/**
 * Calls `fn` once the other end of `port` is gone: Node fires `close` when the thread that held
 * it exits (a worker that died too); browsers that have no such event never call it.
 */
export function onPortClose(port: MessagePort, fn: () => void): void {
  port.addEventListener('close', fn, { once: true });
}

// ---- Helper threads of a device worker (the cpu device's matmul pool, `ts/worker/cpu-pool.ts`) ----

/** The helper thread's entry file, next to the bundled library in `dist/` (Node). */
const HELPER_FILE = 'webtorch-cpu-helper.js';

/** A started helper thread. */
export interface HelperHandle {
  /** Stops the thread (also when it is blocked in `Atomics.wait`). */
  terminate(): Promise<void>;
}

/**
 * Starts a helper thread of this worker, posts it `init` (which may hold a WebAssembly.Module,
 * a shared WebAssembly.Memory and SharedArrayBuffers) and resolves once it answers `'ready'`;
 * rejects with its error if it fails first. Node: the thread is unref'd, so it never keeps the
 * process alive. Browser: `open()` makes the Worker (the caller's literal form, see the top).
 */
export async function spawnHelper(init: unknown, open: () => Worker): Promise<HelperHandle> {
  if (isNode) {
    const url = new URL(HELPER_FILE, import.meta.url);
    const { Worker } = await nodeImport<typeof import('node:worker_threads')>('node:worker_threads');
    const w = new Worker(url, { execArgv: [] });
    w.unref();
    await new Promise<void>((resolve, reject) => {
      w.once('message', (m) => (m === 'ready' ? resolve() : reject(new Error(String(m)))));
      w.once('error', reject);
      w.once('exit', (code) => reject(new Error(`helper thread exited (${code}) before it was ready`)));
      w.postMessage(init);
    });
    w.removeAllListeners('exit');
    w.removeAllListeners('error');
    w.on('error', () => undefined);
    return { terminate: async () => void (await w.terminate()) };
  }
  const w = open();
  await new Promise<void>((resolve, reject) => {
    w.onmessage = (ev: MessageEvent) => (ev.data === 'ready' ? resolve() : reject(new Error(String(ev.data))));
    w.onerror = (ev) => reject(new Error(ev.message || 'helper thread failed to start'));
    w.postMessage(init);
  });
  w.onmessage = null;
  w.onerror = null;
  return { terminate: async () => w.terminate() };
}

/** In a helper thread: resolves with the parent's first message and a way to answer it. */
export async function helperInit(): Promise<{ data: unknown; reply(msg: unknown): void }> {
  if (isNode) {
    const { parentPort } = await nodeImport<typeof import('node:worker_threads')>('node:worker_threads');
    const data = await new Promise<unknown>((resolve) => parentPort!.once('message', resolve));
    return { data, reply: (msg) => parentPort!.postMessage(msg) };
  }
  const scope = self as unknown as { onmessage: ((ev: MessageEvent) => void) | null; postMessage(msg: unknown): void };
  const data = await new Promise<unknown>((resolve) => (scope.onmessage = (ev) => resolve(ev.data)));
  scope.onmessage = null;
  return { data, reply: (msg) => scope.postMessage(msg) };
}

/**
 * Whether this thread can share a WebAssembly memory with helper threads: SharedArrayBuffer
 * exists (browsers expose it only to cross-origin isolated pages: COOP `same-origin` and COEP
 * `require-corp`) and a shared WebAssembly.Memory can be made.
 */
export function canShareMemory(): boolean {
  if (typeof SharedArrayBuffer === 'undefined' || typeof Atomics === 'undefined') return false;
  if (!isNode && (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === false) return false;
  try {
    return new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true }).buffer instanceof SharedArrayBuffer;
  } catch {
    return false;
  }
}

/** The number of logical cores this process may use (`os.availableParallelism()`, `navigator.hardwareConcurrency`). */
export async function hardwareThreads(): Promise<number> {
  if (isNode) {
    const os = await nodeImport<typeof import('node:os')>('node:os');
    return os.availableParallelism?.() ?? os.cpus().length;
  }
  return (globalThis.navigator as Navigator | undefined)?.hardwareConcurrency ?? 1;
}

/** Compiles the kernels' shared-memory build (imports `env.memory`, shared), shipped next to this file. */
export const loadSharedKernelWasm = (): Promise<WebAssembly.Module> => loadWasm(new URL('./webtorch-shared.wasm', import.meta.url));

/** A full garbage collection, and a way to run a FinalizationRegistry's callbacks for what it found dead. */
export interface ForcedCollector {
  /** Runs a full (mark-compact) collection, synchronously. */
  gc(): void;
  /** Runs `registry`'s callbacks for the targets the last collection found dead, synchronously. */
  cleanupSome(registry: FinalizationRegistry<never>): void;
}

let forced: ForcedCollector | null | undefined;

/**
 * Note [Forcing a collection]. JavaScript has no synchronous finalization: a FinalizationRegistry's
 * callbacks run in a task of their own, after the current one, and a WeakRef's target stays alive
 * until the task that made or read it ends. A training loop that never yields to the event loop
 * would never free a tensor it dropped. Node can do it: V8's flags `--expose-gc` and
 * `--harmony-weak-refs-with-cleanup-some`, set at run time, make a fresh `vm` context's `gc` and
 * `FinalizationRegistry.prototype.cleanupSome`; the latter, called on a registry of this context,
 * runs the callbacks of the targets the collection found dead, at once. (V8 does not promise that
 * flags set after start take effect; these two do on Node 20 and 22, and where they do not this
 * returns null.) A browser has neither: there, null, and the collector frees dropped tensors when
 * the program yields (an `await` that reaches the event loop). `WEBTORCH_FORCED_GC=0` turns
 * forcing off in Node too (a loop that disposes its tensors itself never needs it).
 */
export function forcedCollector(): ForcedCollector | null {
  if (forced !== undefined) return forced;
  forced = null;
  if (!isNode || env('WEBTORCH_FORCED_GC') === '0') return null;
  try {
    const v8 = process.getBuiltinModule?.('node:v8') as typeof import('node:v8') | undefined;
    const vm = process.getBuiltinModule?.('node:vm') as typeof import('node:vm') | undefined;
    if (!v8 || !vm) return null;
    v8.setFlagsFromString('--expose-gc');
    v8.setFlagsFromString('--harmony-weak-refs-with-cleanup-some');
    const context = vm.createContext();
    const gc = vm.runInContext('gc', context) as unknown;
    const cleanup = vm.runInContext('FinalizationRegistry.prototype.cleanupSome', context) as unknown;
    if (typeof gc !== 'function' || typeof cleanup !== 'function') return null;
    forced = {
      gc: () => (gc as () => void)(),
      cleanupSome: (registry) => (cleanup as (this: FinalizationRegistry<never>) => void).call(registry),
    };
  } catch {
    forced = null;
  }
  return forced;
}
