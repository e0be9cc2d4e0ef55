// Where a GPU read's time goes (issue 13, "a fast sync point"): raw Dawn round trips of a 16-byte
// read with and without a dispatch before the copy, split into submits, waited in different ways.
// Each variant runs on this thread; medians of 300 round trips, in µs.
// Run: node bench/probe-readback.mjs [--worker]
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { median } from './lib/harness.mjs';

process.env.XDG_RUNTIME_DIR ??= '/tmp';

async function main(log) {
  const { create, globals } = await import('webgpu');
  Object.assign(globalThis, globals);
  const gpu = create([]);
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  const device = await adapter.requestDevice({ requiredFeatures: adapter.features.has('timestamp-query') ? ['timestamp-query'] : [] });
  globalThis.keepDawnAlive = [gpu, adapter];
  const info = adapter.info ?? {};
  log(`adapter: ${info.vendor} ${info.architecture} ${info.device} ${info.description}`);
  const buf = device.createBuffer({ size: 256, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  const module = device.createShaderModule({ code: `@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(4) fn main(@builtin(global_invocation_id) g: vec3u) { x[g.x] = x[g.x] + 1.0; }` });
  const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
  const group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: buf } }] });
  const kept = device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const newStaging = () => device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const dispatch = (enc) => {
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(1);
    pass.end();
  };
  const spinMap = async (staging) => {
    // poll instead of awaiting the promise alone: one setImmediate turn per check
    let done = false;
    staging.mapAsync(GPUMapMode.READ).then(() => { done = true; });
    while (!done) await new Promise((r) => setImmediate(r));
  };
  const variants = {
    'copy + mapAsync (new staging)': async () => {
      const s = newStaging(), enc = device.createCommandEncoder();
      enc.copyBufferToBuffer(buf, 0, s, 0, 16);
      device.queue.submit([enc.finish()]);
      await s.mapAsync(GPUMapMode.READ); s.destroy();
    },
    'copy + mapAsync (kept staging)': async () => {
      const enc = device.createCommandEncoder();
      enc.copyBufferToBuffer(buf, 0, kept, 0, 16);
      device.queue.submit([enc.finish()]);
      await kept.mapAsync(GPUMapMode.READ); kept.unmap();
    },
    'dispatch + copy, one submit (new staging)': async () => {
      const s = newStaging(), enc = device.createCommandEncoder();
      dispatch(enc); enc.copyBufferToBuffer(buf, 0, s, 0, 16);
      device.queue.submit([enc.finish()]);
      await s.mapAsync(GPUMapMode.READ); s.destroy();
    },
    'dispatch + copy, one submit (kept staging)': async () => {
      const enc = device.createCommandEncoder();
      dispatch(enc); enc.copyBufferToBuffer(buf, 0, kept, 0, 16);
      device.queue.submit([enc.finish()]);
      await kept.mapAsync(GPUMapMode.READ); kept.unmap();
    },
    'dispatch + copy, kept, polled by setImmediate': async () => {
      const enc = device.createCommandEncoder();
      dispatch(enc); enc.copyBufferToBuffer(buf, 0, kept, 0, 16);
      device.queue.submit([enc.finish()]);
      await spinMap(kept); kept.unmap();
    },
    'dispatch submit, then copy submit (kept)': async () => {
      const e1 = device.createCommandEncoder(); dispatch(e1);
      device.queue.submit([e1.finish()]);
      const e2 = device.createCommandEncoder(); e2.copyBufferToBuffer(buf, 0, kept, 0, 16);
      device.queue.submit([e2.finish()]);
      await kept.mapAsync(GPUMapMode.READ); kept.unmap();
    },
    'dispatch, onSubmittedWorkDone, then copy + map (kept)': async () => {
      const e1 = device.createCommandEncoder(); dispatch(e1);
      device.queue.submit([e1.finish()]);
      await device.queue.onSubmittedWorkDone();
      const e2 = device.createCommandEncoder(); e2.copyBufferToBuffer(buf, 0, kept, 0, 16);
      device.queue.submit([e2.finish()]);
      await kept.mapAsync(GPUMapMode.READ); kept.unmap();
    },
    'dispatch only + onSubmittedWorkDone': async () => {
      const e1 = device.createCommandEncoder(); dispatch(e1);
      device.queue.submit([e1.finish()]);
      await device.queue.onSubmittedWorkDone();
    },
    'clearBuffer + copy + map (kept)': async () => {
      const enc = device.createCommandEncoder();
      enc.clearBuffer(buf, 0, 16); enc.copyBufferToBuffer(buf, 0, kept, 0, 16);
      device.queue.submit([enc.finish()]);
      await kept.mapAsync(GPUMapMode.READ); kept.unmap();
    },
    'writeBuffer + copy + map (kept)': async () => {
      device.queue.writeBuffer(buf, 0, new Float32Array(4));
      const enc = device.createCommandEncoder();
      enc.copyBufferToBuffer(buf, 0, kept, 0, 16);
      device.queue.submit([enc.finish()]);
      await kept.mapAsync(GPUMapMode.READ); kept.unmap();
    },
    'empty submit + onSubmittedWorkDone': async () => {
      device.queue.submit([device.createCommandEncoder().finish()]);
      await device.queue.onSubmittedWorkDone();
    },
  };
  // A second GPUDevice on the same adapter doing the same round trip between ours, as the bench suite
  // interleaves webtorch, tfjs and raw Dawn samples on one adapter.
  const other = await (await gpu.requestAdapter({ powerPreference: "high-performance" })).requestDevice();
  const otherBuf = other.createBuffer({ size: 16, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  const otherStaging = other.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const otherTrip = async () => {
    const enc = other.createCommandEncoder();
    enc.copyBufferToBuffer(otherBuf, 0, otherStaging, 0, 16);
    other.queue.submit([enc.finish()]);
    await otherStaging.mapAsync(GPUMapMode.READ); otherStaging.unmap();
  };
  const keptTrip = variants['dispatch + copy, one submit (kept staging)'];
  variants['as above, another device\'s round trip between (ours timed)'] = async () => { await otherTrip(); return keptTrip(); };
  variants['as above, untimed other device work first'] = keptTrip;
  for (const [label, f] of Object.entries(variants)) {
    for (let i = 0; i < 50; i++) await f();
    const t = [];
    for (let i = 0; i < 300; i++) {
      if (label.startsWith('as above, another')) await otherTrip();
      const t0 = performance.now();
      await (label.startsWith('as above, another') ? keptTrip() : f());
      t.push(performance.now() - t0);
    }
    t.sort((a, b) => a - b);
    log(`${label.padEnd(56)} median ${(median(t) * 1000).toFixed(0).padStart(6)} µs  p10 ${(t[30] * 1000).toFixed(0).padStart(6)}  p90 ${(t[270] * 1000).toFixed(0).padStart(6)}`);
  }
  device.destroy();
  other.destroy();
}

if (isMainThread && process.argv.includes('--worker')) {
  const w = new Worker(new URL(import.meta.url), { workerData: { worker: true } });
  w.on('message', (m) => console.log(m));
  await new Promise((r) => w.once('exit', r));
} else if (!isMainThread) {
  await main((s) => parentPort.postMessage(`[worker] ${s}`));
} else {
  await main((s) => console.log(`[main] ${s}`));
}
