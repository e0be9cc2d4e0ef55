/**
 * The one place that knows whether we run in Node or in a browser.
 *
 * Node: devices are `worker_threads` Workers, WebGPU comes from Dawn's `webgpu` package, the
 * kernel `.wasm` is read from disk. Browser: Web Workers, `navigator.gpu`, `fetch`. Everything
 * else in webtorch is written against the standard Worker/MessagePort/WebGPU APIs.
 * Node-only modules are imported dynamically, so bundling for a browser needs no shims.
 */
import * as Comlink from 'comlink';

/** True in Node.js (also inside Node worker threads). */
export const isNode = typeof process !== 'undefined' && !!process.versions?.node;

/** Reads an environment variable (always undefined in browsers). */
export function env(name: string): string | undefined {
  return isNode ? process.env[name] : undefined;
}

/** The worker entry files, next to the bundled library in `dist/`. */
const WORKER_FILES = { cpu: 'webtorch-cpu-worker.js', gpu: 'webtorch-gpu-worker.js' } as const;

/** A started worker: its comlink endpoint and a way to stop it. */
export interface WorkerHandle {
  endpoint: Comlink.Endpoint;
  terminate(): Promise<void>;
  /** Node: whether an idle worker keeps the process alive (only while a result is awaited). */
  keepAlive(on: boolean): void;
}

/** Starts a device worker of a kind. */
export async function spawnWorker(kind: 'cpu' | 'gpu', base: string | URL = import.meta.url): Promise<WorkerHandle> {
  const url = new URL(WORKER_FILES[kind], base);
  if (isNode) {
    const { Worker } = await import('node:worker_threads');
    const { default: nodeEndpoint } = await import('comlink/dist/esm/node-adapter.mjs');
    // Device workers start with default flags: they would inherit the parent's execArgv, where
    // process-wide flags (`--expose-gc`, `--input-type`) make the Worker constructor throw.
    const w = new Worker(url, { execArgv: [] });
    w.unref();
    return {
      endpoint: nodeEndpoint(w),
      terminate: async () => void (await w.terminate()),
      keepAlive: (on) => (on ? w.ref() : w.unref()),
    };
  }
  const w = new Worker(url, { type: 'module' });
  return { endpoint: w, terminate: async () => w.terminate(), keepAlive: () => undefined };
}

/** Exposes a worker's API to its parent. */
export async function exposeWorker(api: object): Promise<void> {
  if (isNode) {
    const { parentPort } = await import('node:worker_threads');
    const { default: nodeEndpoint } = await import('comlink/dist/esm/node-adapter.mjs');
    Comlink.expose(api, nodeEndpoint(parentPort!));
  } else {
    Comlink.expose(api, self as unknown as Comlink.Endpoint);
  }
}

/** The WebGPU entry point of this platform, or null when there is none. */
export async function getGpu(): Promise<GPU | null> {
  if (isNode) {
    const { create, globals } = await import('webgpu');
    Object.assign(globalThis, globals);
    const flags = (env('WEBTORCH_DAWN_FLAGS') ?? '').split(/\s+/).filter(Boolean);
    return create(flags) as GPU;
  }
  return (globalThis.navigator as Navigator | undefined)?.gpu ?? null;
}

/** Compiles the AssemblyScript kernels shipped next to this file. */
export async function loadKernelWasm(base: string | URL = import.meta.url): Promise<WebAssembly.Module> {
  const url = new URL('webtorch.wasm', base);
  if (isNode) {
    const { readFile } = await import('node:fs/promises');
    return WebAssembly.compile(await readFile(url));
  }
  return WebAssembly.compileStreaming(fetch(url));
}

/** A MessagePort pair for worker-to-worker traffic. */
export function messageChannel(): MessageChannel {
  return new MessageChannel();
}

/** Listens on a port in both Node and browsers. */
export function onPortMessage(port: MessagePort, fn: (data: unknown) => void): void {
  port.addEventListener('message', (ev: MessageEvent) => fn(ev.data));
  port.start();
}
