// Raw Dawn's device→host download paths (issue 13: what caps device→host, and would a ring help?).
// For 4 and 128 MiB: a kept MAP_READ staging buffer (copy, submit, mapAsync, copy out, unmap), with
// the map and the copy out timed apart; the copy out into an ArrayBuffer and into a SharedArrayBuffer
// (a pinned tensor); a ring of 8 MiB MAP_READ chunks (the next chunk's GPU copy and map overlap this
// one's copy out); and the host's own memcpy. Medians of 7, in GB/s (the split rows in ms).
// Run: node bench/probe-download.mjs
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
  const plain = new Uint8Array(bytes);
  const shared = new Uint8Array(new SharedArrayBuffer(bytes));
  const src = device.createBuffer({ size: bytes, usage: U.STORAGE | U.COPY_DST | U.COPY_SRC });
  const fill = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i += 4096) fill[i] = i & 255;
  device.queue.writeBuffer(src, 0, fill);
  const staging = device.createBuffer({ size: bytes, usage: U.MAP_READ | U.COPY_DST });
  const CH = Math.min(bytes, 8 << 20);
  const ring = [0, 1, 2].map(() => device.createBuffer({ size: CH, usage: U.MAP_READ | U.COPY_DST }));
  const split = { map: [], out: [] };
  const check = (dst) => { for (let i = 0; i < bytes; i += 4096) if (dst[i] !== (i & 255)) throw new Error(`wrong byte at ${i}`); };
  const kept = (dst) => async () => {
    const enc = device.createCommandEncoder(); enc.copyBufferToBuffer(src, 0, staging, 0, bytes);
    device.queue.submit([enc.finish()]);
    const t0 = performance.now();
    await staging.mapAsync(GPUMapMode.READ);
    const t1 = performance.now();
    dst.set(new Uint8Array(staging.getMappedRange()));
    split.map.push(t1 - t0); split.out.push(performance.now() - t1);
    staging.unmap();
    check(dst);
  };
  const ringRead = (dst) => async () => {
    const n = Math.ceil(bytes / CH);
    const mapped = [];
    const start = (i) => {
      const b = ring[i % ring.length], off = i * CH, len = Math.min(CH, bytes - off);
      const enc = device.createCommandEncoder(); enc.copyBufferToBuffer(src, off, b, 0, len);
      device.queue.submit([enc.finish()]);
      mapped[i] = b.mapAsync(GPUMapMode.READ, 0, len).then(() => ({ b, off, len }));
    };
    for (let i = 0; i < Math.min(ring.length, n); i++) start(i);
    for (let i = 0; i < n; i++) {
      const { b, off, len } = await mapped[i];
      dst.set(new Uint8Array(b.getMappedRange(0, len)), off);
      b.unmap();
      if (i + ring.length < n) start(i + ring.length);
    }
    check(dst);
  };
  const variants = {
    'kept MAP_READ staging, copy out into an ArrayBuffer': kept(plain),
    'kept MAP_READ staging, copy out into a SharedArrayBuffer': kept(shared),
    'ring of three 8 MiB MAP_READ chunks, into a SharedArrayBuffer': ringRead(shared),
    'host memcpy alone (ArrayBuffer into SharedArrayBuffer)': async () => { shared.set(plain); },
  };
  for (const [label, f] of Object.entries(variants)) {
    split.map.length = split.out.length = 0;
    await f();
    const t = [];
    for (let i = 0; i < 7; i++) {
      const t0 = performance.now();
      await f();
      t.push(performance.now() - t0);
    }
    const extra = split.map.length ? `   (map ${median(split.map).toFixed(2)} ms, copy out ${median(split.out).toFixed(2)} ms)` : '';
    console.log(`${String(mib).padStart(3)} MiB  ${label.padEnd(64)} ${(bytes / median(t) / 1e6).toFixed(2).padStart(7)} GB/s${extra}`);
  }
  for (const b of [src, staging, ...ring]) b.destroy();
}
device.destroy();
