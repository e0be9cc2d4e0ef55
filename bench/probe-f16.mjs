// Why the NVIDIA adapter lacks `shader-f16` under Dawn's Vulkan backend, and whether it can be had
// (issue 29): the adapter's features with webtorch's default Dawn flags, then with the adapter
// toggle `vulkan_enable_f16_on_nvidia` (Dawn leaves f16 off on NVIDIA's Vulkan driver by
// default; webtorch turns the toggle on, ts/platform.ts). Then, where the toggle gives the
// feature, a float16 kernel with `enable f16;` runs and its result is checked.
// Run: node bench/probe-f16.mjs      (prints one JSON line per flag set)
process.env.XDG_RUNTIME_DIR ??= '/tmp';
const { create, globals } = await import('webgpu');
Object.assign(globalThis, globals);
for (const flags of [['disable-dawn-features=timestamp_quantization'], ['disable-dawn-features=timestamp_quantization', 'enable-dawn-features=vulkan_enable_f16_on_nvidia']]) {
  const gpu = create(flags);
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  const features = [...adapter.features].sort();
  const out = { flags, adapter: `${adapter.info.vendor} ${adapter.info.description}`, shaderF16: features.includes('shader-f16'), features };
  if (out.shaderF16) {
    const device = await adapter.requestDevice({ requiredFeatures: ['shader-f16'] });
    const n = 1024;
    const code = `enable f16;
@group(0) @binding(0) var<storage, read_write> o: array<f16>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) {
  if (g.x < ${n}u) { o[g.x] = f16(g.x) * 0.5h + 1.0h; }
}`;
    const buf = device.createBuffer({ size: n * 2, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const read = device.createBuffer({ size: n * 2, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module: device.createShaderModule({ code }), entryPoint: 'main' } });
    const bind = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: buf } }] });
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline); pass.setBindGroup(0, bind); pass.dispatchWorkgroups(n / 64); pass.end();
    enc.copyBufferToBuffer(buf, 0, read, 0, n * 2);
    device.queue.submit([enc.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    const h = new Uint16Array(read.getMappedRange());
    const f16 = (b) => { const s = b >> 15 ? -1 : 1, e = (b >> 10) & 31, m = b & 1023; return e === 0 ? s * m * 2 ** -24 : e === 31 ? (m ? NaN : s * Infinity) : s * (1 + m / 1024) * 2 ** (e - 15); };
    let bad = 0;
    for (let i = 0; i < n; i++) if (f16(h[i]) !== i * 0.5 + 1) bad++; // exact in float16 for i < 1024
    out.kernelChecked = n; out.kernelWrong = bad;
    device.destroy();
  }
  console.log(JSON.stringify(out));
}
