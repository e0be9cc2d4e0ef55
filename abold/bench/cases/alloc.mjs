// The allocator: tensors created and disposed per second (`torch.empty` + `dispose()`, 1,000 per
// iteration, then a sync), against raw `device.createBuffer` + `destroy()` in the main thread.
// TensorFlow.js allocates lazily (on first use), so it has no like-for-like figure here.
import { bytesLabel } from './common.mjs';

const COUNT = 1000;

/** @type {import('./common.mjs').Case[]} */
export default [{
  name: 'alloc',
  group: 'alloc',
  unit: 'k/s',
  higherIsBetter: true,
  rows: () => [4096, 4 << 20].map((bytes) => ({ label: 'alloc: create + dispose', size: bytesLabel(bytes), params: { n: bytes / 4, count: COUNT } })),
  figure: ({ count }, sec) => count / sec / 1e3,
  impls: {
    webtorch(ctx, { n, count }) {
      return {
        launch() { for (let i = 0; i < count; i++) ctx.torch.empty([n], { device: ctx.wt }).dispose(); },
        sync: ctx.wtSync,
      };
    },
    dawn(ctx, { n, count }) {
      if (!ctx.dawn) return null;
      const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
      return {
        launch() { for (let i = 0; i < count; i++) ctx.dawn.createBuffer({ size: 4 * n, usage }).destroy(); },
        sync: () => ctx.dawn.queue.onSubmittedWorkDone(),
      };
    },
  },
  torchJob: (p) => ({ op: 'alloc', ...p }),
}];
