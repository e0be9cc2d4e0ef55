// The peers of the suite, set up in this process: a raw Dawn device in the main thread (the floor
// for launches, copies and allocations), TensorFlow.js on WebGPU (the same Dawn adapter) and on
// WebAssembly, and the Python interpreter that has PyTorch, when there is one.
import { spawnSync } from 'node:child_process';
import { createRequire, register } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const require = createRequire(import.meta.url);

/** Dawn tears its instance down once the object `create()` returned is collected: keep it here. */
let dawnInstance = null;

/**
 * Creates the main thread's Dawn instance, installs `navigator.gpu` (TensorFlow.js's WebGPU
 * backend looks for it) and opens a raw device with the adapter's largest buffer limits.
 * @returns {Promise<{adapter: GPUAdapter, device: GPUDevice, description: string} | null>} null without an adapter
 */
export async function setupDawn() {
  const { create, globals } = await import('webgpu');
  Object.assign(globalThis, globals);
  dawnInstance ??= create([]);
  const nav = globalThis.navigator;
  if (nav && typeof nav === 'object') {
    try { Object.defineProperty(nav, 'gpu', { value: dawnInstance, configurable: true }); } catch { /* replaced below */ }
  }
  if (globalThis.navigator?.gpu !== dawnInstance) {
    Object.defineProperty(globalThis, 'navigator', { value: { gpu: dawnInstance }, configurable: true, writable: true });
  }
  const adapter = await dawnInstance.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) return null;
  const requiredLimits = {};
  for (const l of ['maxStorageBufferBindingSize', 'maxBufferSize']) requiredLimits[l] = adapter.limits[l];
  const device = await adapter.requestDevice({ requiredLimits });
  const info = adapter.info ?? {};
  return { adapter, device, description: info.description || `${info.vendor ?? ''} ${info.architecture ?? ''}`.trim() };
}

/**
 * Loads TensorFlow.js with the backends a run needs. The WebGPU backend must come after
 * `setupDawn()`; the WASM backend reads its `.wasm` from the package's `dist/` folder. In Node the
 * WASM backend runs single-threaded (its threaded build spawns `blob:` workers, which Node rejects).
 * @param {{gpu: boolean, cpu: boolean, gradients?: boolean}} want
 */
export async function loadTf(want) {
  const tf = await import('@tensorflow/tfjs-core');
  const out = { tf, version: tf.version_core, webgpu: false, wasm: false, wasmThreads: 0, wasmSimd: false, adapterInfo: null, errors: {} };
  // gradients (for the training case): the `@tensorflow/tfjs` bundle registers them from tfjs-core's
  // ES-module build; its registries and engine are process-wide globals, shared with the CommonJS build
  // (loading those ~400 modules takes seconds, so only when a run trains)
  if (want.gradients) {
    try {
      register('./tfjs-esm-hooks.mjs', import.meta.url);
      await import('@tensorflow/tfjs-core/dist/register_all_gradients.js');
    } catch (e) { out.errors.gradients = String(e.message ?? e); }
  }
  const quiet = console.warn;
  console.warn = () => {}; // tfjs suggests tfjs-node on import; that advice is not for a benchmark
  try {
    if (want.gpu) {
      try {
        await import('@tensorflow/tfjs-backend-webgpu');
        out.webgpu = await tf.setBackend('webgpu');
        if (out.webgpu) {
          const ai = tf.backend().adapterInfo ?? {};
          out.adapterInfo = { vendor: ai.vendor, architecture: ai.architecture };
        }
      } catch (e) { out.errors.webgpu = String(e.message ?? e); }
    }
    if (want.cpu) {
      try {
        const wasm = await import('@tensorflow/tfjs-backend-wasm');
        const dir = path.join(path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json')), 'dist');
        wasm.setWasmPaths(dir + path.sep);
        out.wasm = await tf.setBackend('wasm');
        if (out.wasm) {
          out.wasmThreads = wasm.getThreadsCount();
          out.wasmSimd = Boolean(await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT'));
        }
      } catch (e) { out.errors.wasm = String(e.message ?? e); }
    }
  } finally {
    console.warn = quiet;
  }
  return out;
}

/**
 * The sync point of TensorFlow.js on WebGPU without a readback: submit what it has batched, then
 * wait for the queue. (`await t.data()` would add a copy to the host.) On WASM, ops are synchronous.
 * @param {any} tf
 * @returns {Promise<void>}
 */
export async function tfSync(tf) {
  const b = tf.backend();
  if (b.device?.queue) {
    b.ensureCommandEncoderReady();
    b.endComputePassEncoder();
    b.submitQueue();
    await b.device.queue.onSubmittedWorkDone();
  }
}

/**
 * The first Python that imports torch: $WEBTORCH_BENCH_PYTHON, python3, /usr/bin/python3, python.
 * @returns {{python: string, version: string} | {error: string}}
 */
export function findPython() {
  const tried = [process.env.WEBTORCH_BENCH_PYTHON, 'python3', '/usr/bin/python3', 'python'].filter(Boolean);
  for (const py of tried) {
    const r = spawnSync(py, ['-c', 'import torch; print(torch.__version__)'], { encoding: 'utf8', timeout: 60_000 });
    if (r.status === 0) return { python: py, version: r.stdout.trim() };
  }
  return { error: `no Python with torch (tried ${tried.join(', ')})` };
}

/** The host: Node, OS, CPU model and count, and the load average (other work on the machine skews figures). */
export function hostInfo() {
  const cpus = os.cpus();
  return { node: process.version, platform: `${os.platform()} ${os.release()}`, cpus: cpus.length, cpuModel: cpus[0]?.model?.trim() ?? 'unknown', loadavgAtStart: os.loadavg().map((x) => +x.toFixed(2)) };
}
