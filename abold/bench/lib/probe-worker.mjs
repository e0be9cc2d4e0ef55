// The worker of bench/probe-latency.mjs: answers each message, optionally holding a Dawn device
// (workerData.dawn), replying only after `onSubmittedWorkDone` (workerData.onDone), or running one
// dispatch, a copy and `mapAsync` per message (workerData.roundTrip), as the GPU worker's read does.
import { parentPort, workerData } from 'node:worker_threads';

let device = null, step = null;
if (workerData.dawn) {
  const { create, globals } = await import('webgpu');
  Object.assign(globalThis, globals);
  const gpu = create([]);
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  device = await adapter.requestDevice();
  globalThis.keepDawnAlive = [gpu, adapter];
  const buf = device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const module = device.createShaderModule({ code: `@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(4) fn main(@builtin(global_invocation_id) g: vec3u) { x[g.x] = x[g.x] + 1.0; }` });
  const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
  const group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: buf } }] });
  step = async () => {
    const enc = device.createCommandEncoder(), pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(1);
    pass.end();
    const staging = device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    enc.copyBufferToBuffer(buf, 0, staging, 0, 16);
    device.queue.submit([enc.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    staging.destroy();
  };
}
parentPort.on('message', async (m) => {
  if (m === 'close') {
    device?.destroy();
    parentPort.postMessage('closed');
    return;
  }
  if (workerData.roundTrip) await step();
  else if (workerData.onDone) await device.queue.onSubmittedWorkDone();
  parentPort.postMessage(m);
});
parentPort.postMessage('ready');
