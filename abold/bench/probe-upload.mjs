// Raw Dawn's host→device upload paths (issue 13: is the pinned-copy figure capped by Dawn?).
// For 4 and 128 MiB: queue.writeBuffer, a kept MAP_WRITE staging buffer (mapAsync, set, unmap,
// copyBufferToBuffer), a new buffer mappedAtCreation per upload, and a ring of 8 MiB mapped chunks.
// Each upload is complete (onSubmittedWorkDone) before the clock stops. Medians of 7, in GB/s.
// Run: node bench/probe-upload.mjs
import { median } from './lib/harness.mjs';

process.env.XDG_RUNTIME_DIR ??= '/tmp';
const { create, globals } = await import('webgpu');
Object.assign(globalThis, globals);
const gpu = create([]);
const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
const device = await adapter.requestDevice({ requiredLimits: { maxBufferSize: adapter.limits.maxBufferSize, maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize } });
globalThis.keepDawnAlive = [gpu, adapter];
console.log(`adapter: ${adapter.info.vendor} ${adapter.info.device} ${adapter.info.description}`);
const U = GPUBufferUsage;
for (const mib of [4, 128]) {
  const bytes = mib << 20;
  const host = new Uint8Array(new SharedArrayBuffer(bytes));
  const plain = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i += 4096) host[i] = plain[i] = i & 255;
  const dst = device.createBuffer({ size: bytes, usage: U.STORAGE | U.COPY_DST | U.COPY_SRC });
  const staging = device.createBuffer({ size: bytes, usage: U.MAP_WRITE | U.COPY_SRC });
  const CH = Math.min(bytes, 8 << 20);
  const ring = [0, 1].map(() => device.createBuffer({ size: CH, usage: U.MAP_WRITE | U.COPY_SRC }));
  const variants = {
    'writeBuffer (ArrayBuffer)': async () => { device.queue.writeBuffer(dst, 0, plain); await device.queue.onSubmittedWorkDone(); },
    'writeBuffer (copy of a SharedArrayBuffer view)': async () => { device.queue.writeBuffer(dst, 0, host.slice()); await device.queue.onSubmittedWorkDone(); },
    'kept MAP_WRITE staging + copyBufferToBuffer': async () => {
      await staging.mapAsync(GPUMapMode.WRITE);
      new Uint8Array(staging.getMappedRange()).set(host);
      staging.unmap();
      const enc = device.createCommandEncoder(); enc.copyBufferToBuffer(staging, 0, dst, 0, bytes);
      device.queue.submit([enc.finish()]); await device.queue.onSubmittedWorkDone();
    },
    'new mappedAtCreation buffer + copyBufferToBuffer': async () => {
      const b = device.createBuffer({ size: bytes, usage: U.COPY_SRC, mappedAtCreation: true });
      new Uint8Array(b.getMappedRange()).set(host);
      b.unmap();
      const enc = device.createCommandEncoder(); enc.copyBufferToBuffer(b, 0, dst, 0, bytes);
      device.queue.submit([enc.finish()]); await device.queue.onSubmittedWorkDone(); b.destroy();
    },
    'ring of two 8 MiB MAP_WRITE chunks': async () => {
      const pending = [null, null];
      for (let off = 0, i = 0; off < bytes; off += CH, i ^= 1) {
        if (pending[i]) await pending[i];
        const b = ring[i];
        await b.mapAsync(GPUMapMode.WRITE);
        const n = Math.min(CH, bytes - off);
        new Uint8Array(b.getMappedRange(0, n)).set(host.subarray(off, off + n));
        b.unmap();
        const enc = device.createCommandEncoder(); enc.copyBufferToBuffer(b, 0, dst, off, n);
        device.queue.submit([enc.finish()]);
        pending[i] = device.queue.onSubmittedWorkDone();
      }
      await Promise.all(pending);
    },
    'host memcpy alone (set into an ArrayBuffer)': async () => { plain.set(host); },
  };
  for (const [label, f] of Object.entries(variants)) {
    for (let i = 0; i < 2; i++) await f();
    const t = [];
    for (let i = 0; i < 7; i++) { const t0 = performance.now(); await f(); t.push(performance.now() - t0); }
    console.log(`${String(mib).padStart(3)} MiB  ${label.padEnd(50)} ${(bytes / (median(t) / 1e3) / 1e9).toFixed(2).padStart(7)} GB/s`);
  }
  for (const b of [dst, staging, ...ring]) b.destroy();
}
device.destroy();
