// Where a dispatch's ~10 µs goes on a GPU through Dawn (issue 15): raw Dawn, no webtorch.
// For K tiny dispatches in one compute pass, times the JS encode loop, finish(), submit() and the
// wait for the queue (onSubmittedWorkDone) separately, for dependent dispatches (each reads what
// the previous wrote: a chain) and independent ones (each writes its own buffer), and with one
// pass per dispatch. Medians of 30 runs, µs per dispatch.
//   node bench/probe-dispatch.mjs [K=1000]
import { setupDawn } from './lib/peers.mjs';

process.env.XDG_RUNTIME_DIR ??= '/tmp';
const K = +(process.argv[2] ?? 1000);
const dawn = await setupDawn();
if (!dawn) { console.log('no adapter'); process.exit(0); }
const { device } = dawn;
console.log(`adapter: ${dawn.description}`);
const code = `@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) { if (g.x < 4u) { b[g.x] = a[g.x] + 1.0; } }`;
const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module: device.createShaderModule({ code }), entryPoint: 'main' } });
const buf = () => device.createBuffer({ size: 256, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
const layout = pipeline.getBindGroupLayout(0);
const bg = (a, b) => device.createBindGroup({ layout, entries: [{ binding: 0, resource: { buffer: a } }, { binding: 1, resource: { buffer: b } }] });
// chain: ping-pong between two buffers; independent: K distinct outputs from one input
const p = [buf(), buf()];
const chain = [bg(p[0], p[1]), bg(p[1], p[0])];
const src = buf(), outs = Array.from({ length: K }, buf);
const indep = outs.map((o) => bg(src, o));
const med = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1];

async function run(label, groups, passPer) {
  const enc_ = [], fin = [], sub = [], wait = [], total = [];
  for (let r = 0; r < 35; r++) {
    const t0 = performance.now();
    const enc = device.createCommandEncoder();
    if (passPer) {
      for (let i = 0; i < K; i++) { const pass = enc.beginComputePass(); pass.setPipeline(pipeline); pass.setBindGroup(0, groups(i)); pass.dispatchWorkgroups(1); pass.end(); }
    } else {
      const pass = enc.beginComputePass(); pass.setPipeline(pipeline);
      for (let i = 0; i < K; i++) { pass.setBindGroup(0, groups(i)); pass.dispatchWorkgroups(1); }
      pass.end();
    }
    const t1 = performance.now();
    const cb = enc.finish();
    const t2 = performance.now();
    device.queue.submit([cb]);
    const t3 = performance.now();
    await device.queue.onSubmittedWorkDone();
    const t4 = performance.now();
    if (r >= 5) { enc_.push(t1 - t0); fin.push(t2 - t1); sub.push(t3 - t2); wait.push(t4 - t3); total.push(t4 - t0); }
  }
  const us = (a) => (med(a) * 1000 / K).toFixed(2);
  console.log(`${label.padEnd(40)} encode ${us(enc_)}  finish ${us(fin)}  submit ${us(sub)}  wait ${us(wait)}  total ${us(total)} µs/dispatch`);
}
await run('chain (dependent), one pass', (i) => chain[i & 1], false);
await run('independent outputs, one pass', (i) => indep[i], false);
await run('chain, a pass per dispatch', (i) => chain[i & 1], true);
await run('independent, a pass per dispatch', (i) => indep[i], true);
// an empty submit's wait: the floor of onSubmittedWorkDone
{
  const w = [];
  for (let r = 0; r < 50; r++) { const t = performance.now(); device.queue.submit([device.createCommandEncoder().finish()]); await device.queue.onSubmittedWorkDone(); w.push(performance.now() - t); }
  console.log(`empty submit + onSubmittedWorkDone: ${(med(w.slice(10)) * 1000).toFixed(1)} µs`);
}
device.destroy();
process.exit(0);
