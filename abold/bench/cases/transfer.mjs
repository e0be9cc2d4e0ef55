// Transfers in GB/s, from the caller: host→device (a new tensor from a Float32Array, until the
// device has it), device→host (`await t.data()`, into a new typed array) and device→device copies
// (`clone()`, counted as read + write). The pinned rows copy from and into pinned memory with
// `nonBlocking` (webtorch: a cpu tensor in the cpu worker's shared memory, which the GPU worker
// reads and writes in place; PyTorch: `pin_memory()` and `non_blocking=True`), until the device
// is synchronized. Raw Dawn gives the floor: `queue.writeBuffer`, a mapped
// staging read, `copyBufferToBuffer`. Each result is checked bit for bit before timing.
import { compare, uniform } from '../lib/harness.mjs';
import { bytesLabel, dawnBuffer, dawnRead, keepLastTensor, wtFrom, wtImpl } from './common.mjs';

const sizes = (quick) => (quick ? [1 << 22] : [1 << 20, 1 << 25]);
const rows = (label) => (quick) => sizes(quick).map((n) => ({ label, size: bytesLabel(4 * n), params: { n } }));
const inputs = ({ n }) => ({ x: uniform(n, 41) });
const exact = ({ n }, { x }) => (out) => compare(out, n, (i) => [x[i], 0]);

/** TensorFlow.js on WebGPU keeps a tensor's values on the host until a kernel needs them: upload now. */
function tfUpload(tf, t) {
  const b = tf.backend();
  if (b.uploadToGPU) b.uploadToGPU(t.dataId);
  return t;
}

/** TensorFlow.js on WebGPU caches what `data()` read on the host: drop it so the next read downloads. */
function tfForget(tf, t) {
  const d = tf.backend().tensorMap?.get?.(t.dataId);
  if (d && d.resource) d.values = null;
}

/** An Impl whose iteration is an async read. */
function readImpl(read, dispose) {
  let pending = null, last = null;
  return {
    inner: 1,
    launch: () => { pending = read(); },
    sync: async () => { last = await pending; },
    output: async () => last,
    dispose,
  };
}

/** @type {import('./common.mjs').Case[]} */
export default [{
  name: 'h2d',
  group: 'transfer',
  unit: 'GB/s',
  higherIsBetter: true,
  rows: rows('host→device'),
  inputs,
  check: exact,
  figure: ({ n }, sec) => (4 * n) / sec / 1e9,
  impls: {
    webtorch(ctx, { n }, { x }) {
      const out = keepLastTensor();
      return {
        inner: 1,
        launch: () => out.set(ctx.torch.tensor(x, { device: ctx.wt, dtype: 'float32' })),
        sync: ctx.wtSync,
        output: () => out.get().data(),
        dispose: () => out.clear(),
      };
    },
    tfjs(ctx, { n }, { x }) {
      if (!ctx.tf) return null;
      const out = keepLastTensor();
      return {
        inner: 1,
        launch: () => out.set(tfUpload(ctx.tf, ctx.tf.tensor1d(x))),
        sync: ctx.tfSync,
        output: () => out.get().data(),
        dispose: () => out.clear(),
      };
    },
    dawn(ctx, { n }, { x }) {
      if (!ctx.dawn) return null;
      const d = ctx.dawn, buf = dawnBuffer(d, 4 * n);
      return {
        inner: 1,
        launch: () => d.queue.writeBuffer(buf, 0, x.buffer, x.byteOffset, x.byteLength),
        sync: () => d.queue.onSubmittedWorkDone(),
        output: () => dawnRead(d, buf, 4 * n),
        dispose: () => buf.destroy(),
      };
    },
  },
  torchJob: (p, device) => (device === 'gpu' ? { op: 'h2d', ...p } : null),
}, {
  name: 'd2h',
  group: 'transfer',
  unit: 'GB/s',
  higherIsBetter: true,
  rows: rows('device→host'),
  inputs,
  check: exact,
  figure: ({ n }, sec) => (4 * n) / sec / 1e9,
  impls: {
    webtorch(ctx, { n }, { x }) {
      const X = wtFrom(ctx, x, [n]);
      return readImpl(() => X.data(), () => X.dispose());
    },
    tfjs(ctx, { n }, { x }) {
      if (!ctx.tf) return null;
      const X = tfUpload(ctx.tf, ctx.tf.tensor1d(x));
      return readImpl(() => { tfForget(ctx.tf, X); return X.data(); }, () => X.dispose());
    },
    dawn(ctx, { n }, { x }) {
      if (!ctx.dawn) return null;
      const d = ctx.dawn, buf = dawnBuffer(d, 4 * n, x);
      const staging = d.createBuffer({ size: 4 * n, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      return readImpl(() => dawnRead(d, buf, 4 * n, staging), () => { buf.destroy(); staging.destroy(); });
    },
  },
  torchJob: (p, device) => (device === 'gpu' ? { op: 'd2h', ...p } : null),
}, {
  name: 'copy',
  group: 'transfer',
  unit: 'GB/s',
  higherIsBetter: true,
  rows: rows('device copy: clone()'),
  inputs,
  check: exact,
  figure: ({ n }, sec) => (8 * n) / sec / 1e9,
  impls: {
    webtorch(ctx, { n }, { x }) {
      const X = wtFrom(ctx, x, [n]);
      return wtImpl(ctx, [X], () => X.clone());
    },
    // tfjs: tf.clone() shares the data (no copy), so there is no like-for-like figure.
    dawn(ctx, { n }, { x }) {
      if (!ctx.dawn) return null;
      const d = ctx.dawn, src = dawnBuffer(d, 4 * n, x), dst = dawnBuffer(d, 4 * n);
      return {
        launch() {
          const enc = d.createCommandEncoder();
          enc.copyBufferToBuffer(src, 0, dst, 0, 4 * n);
          d.queue.submit([enc.finish()]);
        },
        sync: () => d.queue.onSubmittedWorkDone(),
        output: () => dawnRead(d, dst, 4 * n),
        dispose: () => { src.destroy(); dst.destroy(); },
      };
    },
  },
  torchJob: (p) => ({ op: 'clone', ...p }),
}, {
  name: 'h2d-pinned',
  group: 'transfer',
  unit: 'GB/s',
  higherIsBetter: true,
  rows: rows('host→device, pinned'),
  inputs,
  check: exact,
  figure: ({ n }, sec) => (4 * n) / sec / 1e9,
  impls: {
    webtorch(ctx, { n }, { x }) {
      if (ctx.device !== 'gpu') return null;
      const P = ctx.torch.tensor(x, { dtype: 'float32', pinMemory: true }), out = keepLastTensor();
      return {
        inner: 1,
        launch: () => out.set(P.to(ctx.wt, { nonBlocking: true })),
        sync: ctx.wtSync,
        output: () => out.get().data(),
        dispose: () => { out.clear(); P.dispose(); },
      };
    },
  },
  torchJob: (p, device) => (device === 'gpu' ? { op: 'h2d_pinned', ...p } : null),
}, {
  name: 'd2h-pinned',
  group: 'transfer',
  unit: 'GB/s',
  higherIsBetter: true,
  rows: rows('device→host, pinned'),
  inputs,
  check: exact,
  figure: ({ n }, sec) => (4 * n) / sec / 1e9,
  impls: {
    webtorch(ctx, { n }, { x }) {
      if (ctx.device !== 'gpu') return null;
      const X = wtFrom(ctx, x, [n]), out = keepLastTensor();
      return {
        inner: 1,
        launch: () => out.set(X.to('cpu', { nonBlocking: true })),
        sync: ctx.wtSync,
        output: () => out.get().data(),
        dispose: () => { out.clear(); X.dispose(); },
      };
    },
  },
  torchJob: (p, device) => (device === 'gpu' ? { op: 'd2h_pinned', ...p } : null),
}];
