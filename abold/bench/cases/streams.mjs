// Streams: a host→device copy from pinned memory on a side stream beside a compute kernel (a
// chain of matmuls) on the default stream, in ms to both results: the copy alone, the compute
// alone, and both issued together. (both) / (copy + compute) is the overlap figure: 1 when nothing
// overlaps, 0.5 when the shorter is hidden entirely behind an equal longer one. On one WebGPU
// device every stream feeds one queue, so what can overlap is the copy's host side (the GPU
// worker's copy out of pinned memory and its upload) with the kernels the GPU is running
// (docs/ARCHITECTURE.md, "Streams"). PyTorch runs the same with CUDA streams.

import { compare, uniform } from '../lib/harness.mjs';

const MODES = ['copy', 'compute', 'both'];
const rows = (quick) => MODES.map((mode) => ({
  label: `pinned copy ∥ matmul: ${mode === 'both' ? 'both' : `${mode} alone`}`,
  size: quick ? '4 MiB, 256²×4' : '64 MiB, 1024²×4',
  params: { mode, n: quick ? 1 << 20 : 1 << 24, m: quick ? 256 : 1024, steps: 4 },
}));

/** @type {import('./common.mjs').Case[]} */
export default [{
  name: 'overlap',
  group: 'streams',
  unit: 'ms',
  higherIsBetter: false,
  rows,
  inputs: ({ n }) => ({ x: uniform(n, 43) }),
  // The copied values, bit for bit, where a copy runs (the matmul chain is the matmul cases' to check).
  check: ({ mode, n }, { x }) => (mode === 'compute' ? null : (out) => compare(out, n, (i) => [x[i], 0])),
  figure: (p, sec) => sec * 1e3,
  impls: {
    webtorch(ctx, { mode, m, steps }, { x }) {
      if (ctx.device !== 'gpu') return null;
      const t = ctx.torch, dev = ctx.wt;
      const P = t.tensor(x, { dtype: 'float32', pinMemory: true });
      const A = t.rand([m, m], { device: dev }).div(m);
      const side = new t.gpu.Stream(dev);
      let copied = null, computed = null;
      return {
        inner: 1,
        launch() {
          copied?.dispose();
          computed?.dispose();
          copied = computed = null;
          if (mode !== 'compute') copied = t.gpu.stream(side, () => P.to(dev, { nonBlocking: true }));
          if (mode !== 'copy') computed = t.tidy(() => { let y = A; for (let i = 0; i < steps; i++) y = y.matmul(A); return y; });
        },
        sync: ctx.wtSync,
        output: async () => (copied ?? computed).data(),
        dispose: () => { copied?.dispose(); computed?.dispose(); P.dispose(); A.dispose(); },
      };
    },
  },
  torchJob: (p, device) => (device === 'gpu' ? { op: 'overlap', ...p } : null),
}];
