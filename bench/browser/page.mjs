// The browser column of `npm run bench -- --browser`: the suite's cases (bench/cases), measured by
// the same harness (bench/lib/harness.mjs), in one Chromium page: webtorch (the plain dist/, as
// the server gives it), TensorFlow.js on WebGPU (gpu rows) or WebAssembly (cpu rows) and a raw
// WebGPU device of the page (the floor rows), all on the browser's one adapter. Vite bundles
// this page (bench/browser/vite.config.mjs) so that TensorFlow.js's bare imports resolve.
// `window.runBench(options)` runs it and resolves with the rows.
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-core/dist/register_all_gradients';
import '@tensorflow/tfjs-backend-webgpu';
import { setWasmPaths, getThreadsCount } from '@tensorflow/tfjs-backend-wasm';
import * as torch from '/dist/webtorch.js';
import { BROWSER_CASES } from './cases.mjs';
import { measureRow, BUDGETS } from '../lib/harness.mjs';
import { figureOf } from '../lib/report.mjs';
import { tfSync } from '../lib/tf-sync.mjs';

/** The suite in this page: rows like bench/run.mjs's, with the page's figures. */
async function runBench({ quick = true, devices = ['gpu', 'cpu'], cases: wanted = null } = {}) {
  const budget = quick ? BUDGETS.quick : BUDGETS.full;
  const cases = BROWSER_CASES.filter((c) => !c.requires?.(torch) && (!wanted || wanted.includes(c.name) || wanted.includes(c.group)));
  torch.gpu.configure({ allowSoftware: true }); // the page times whatever adapter the browser has
  const info = { userAgent: navigator.userAgent, crossOriginIsolated: self.crossOriginIsolated, tfjs: tf.version_core, errors: {} };
  const gpu = devices.includes('gpu') && (await torch.tryGpu(0)).type === 'gpu';
  let raw = null;
  if (gpu) {
    const props = await torch.gpu.getDeviceProperties(0);
    info.adapter = [props.vendor, props.architecture, props.description].filter(Boolean).join(' · ');
    // The page's own raw WebGPU device: the floor rows (launch chains, copies, allocations).
    const adapter = await navigator.gpu.requestAdapter({ powerPreference: 'high-performance' });
    const requiredLimits = {};
    for (const l of ['maxStorageBufferBindingSize', 'maxBufferSize']) requiredLimits[l] = adapter.limits[l];
    raw = await adapter.requestDevice({ requiredLimits });
  } else if (devices.includes('gpu')) info.errors.gpu = 'no WebGPU adapter in this page';
  setWasmPaths('/node_modules/@tensorflow/tfjs-backend-wasm/dist/');
  // tfjs-wasm's threaded build (the page is cross-origin isolated): its threads start from a blob
  // of its factory's source, which works because the page is bundled without minifying
  // (vite.config.mjs). It takes half the logical cores, at most 8 (`getThreadsCount`, reported
  // as `tfjsWasmThreads`): one thread on a 2-core machine.
  const rows = [];
  for (const device of devices) {
    if (device === 'gpu' && !gpu) continue;
    const backend = device === 'gpu' ? 'webgpu' : 'wasm';
    let tfOk = false;
    try {
      tfOk = await tf.setBackend(backend);
    } catch (e) {
      info.errors[backend] = String(e?.message ?? e);
    }
    if (tfOk && device === 'gpu') tf.env().set('WEBGPU_CPU_FORWARD', false);
    if (tfOk && device === 'cpu') {
      info.tfjsWasmThreads = getThreadsCount();
      info.tfjsWasmThreadedBuild = (await tf.env().getAsync('WASM_HAS_MULTITHREAD_SUPPORT')) === true;
    }
    const wt = device === 'gpu' ? torch.device('gpu:0') : torch.CPU;
    const ctx = {
      device, torch, wt,
      wtSync: () => torch.gpu.synchronize(wt),
      tf: tfOk ? tf : null,
      tfSync: () => tfSync(tf),
      dawn: device === 'gpu' ? raw : null,
    };
    for (const c of cases) {
      for (const spec of c.rows(quick, device, ctx)) {
        const inputs = c.inputs?.(spec.params);
        const check = c.check?.(spec.params, inputs) ?? null;
        const impls = [];
        for (const [who, make] of Object.entries(c.impls)) {
          if (who.startsWith('ref:')) continue; // the notes column stays Node's
          try {
            const impl = make(ctx, spec.params, inputs);
            if (impl) impls.push([who, impl]);
          } catch (e) {
            impls.push([who, { launch() { throw e; }, sync: async () => {} }]);
          }
        }
        const measured = await measureRow(impls, check, budget, device === 'gpu' ? c.block ?? 1 : 1);
        const figures = Object.fromEntries(Object.entries(measured).map(([who, r]) => [who, figureOf(r, (sec) => c.figure(spec.params, sec))]));
        rows.push({ case: c.name, label: spec.label, size: spec.size, device, unit: c.unit, higherIsBetter: c.higherIsBetter, figures });
        console.log(`[bench] [browser ${device}] ${spec.label} ${spec.size}: ` + Object.entries(figures).map(([w, f]) => `${w} ${f?.error ? 'error' : f?.value?.toPrecision(3)}`).join(', '));
      }
    }
  }
  raw?.destroy();
  return { info, rows };
}

window.runBench = runBench;
window.pageReady = true;
