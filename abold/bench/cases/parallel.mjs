// Several GPU devices: nn.DataParallel and DistributedDataParallel training steps per second on an
// MLP over 1 and 2 devices (one global batch: DataParallel splits it, each DDP rank takes its share;
// the scaling ratio is the 2-device row over the 1-device row; BENCHMARKS.md gives it), and a
// device-to-device copy (`x.to('gpu:1')` from gpu:0, worker to worker) in GB/s, checked bit for bit.
// On a one-GPU machine gpu:0 and gpu:1 are two logical devices (two workers) on the one adapter,
// so DataParallel's figure there measures the overhead of the scatter/replicate/gather, not a
// second GPU's throughput. Correctness (same parameters as one device) is tested in
// test/device/parallel.test.ts; these rows time it.
import { compare, uniform } from '../lib/harness.mjs';
import { bytesLabel, keepLastTensor } from './common.mjs';

// Two logical GPU devices for these rows (the runner configures allowSoftware only; an explicit
// WEBTORCH_GPU_DEVICES wins). Devices start on first use, so the other cases are unaffected.
process.env.WEBTORCH_GPU_DEVICES ??= '2';

const mlp = (quick) => (quick ? { b: 128, din: 784, h: 256, dout: 10 } : { b: 512, din: 784, h: 1024, dout: 10 });

/** @type {import('./common.mjs').Case[]} */
export default [{
  name: 'dp_train',
  group: 'parallel',
  unit: 'steps/s',
  higherIsBetter: true,
  warmupMs: 2000,
  requires: (torch) => (torch.nn?.DataParallel ? null : 'nn.DataParallel'),
  rows: (quick) => [1, 2].map((n) => {
    const p = mlp(quick);
    return { label: `DataParallel MLP step, ${n} device${n > 1 ? 's' : ''}`, size: `${p.din}-${p.h}-${p.h}-${p.dout}, b${p.b}`, params: { ...p, n } };
  }),
  inputs: (p) => ({ x: uniform(p.b * p.din, 90, 0, 1), y: Int32Array.from(uniform(p.b, 91, 0, p.dout), (u) => Math.min(p.dout - 1, Math.floor(u))) }),
  figure: (_, sec) => 1 / sec,
  impls: {
    webtorch(ctx, p, { x, y }) {
      if (ctx.device !== 'gpu') return null;
      const { torch } = ctx;
      if (p.n > 1 && torch.device(`gpu:${p.n - 1}`) === null) return null;
      torch.manualSeed(0);
      const net = new torch.nn.Sequential(new torch.nn.Linear(p.din, p.h), new torch.nn.ReLU(), new torch.nn.Linear(p.h, p.h), new torch.nn.ReLU(), new torch.nn.Linear(p.h, p.dout)).to('gpu:0');
      const model = p.n > 1 ? new torch.nn.DataParallel(net, Array.from({ length: p.n }, (_, i) => i)) : net;
      const X = torch.tidy(() => torch.tensor(x, { device: 'gpu:0', dtype: 'float32' }).reshape(p.b, p.din));
      const Y = torch.tensor(y, { device: 'gpu:0', dtype: 'int64' });
      const opt = new torch.optim.SGD(net.parameters(), { lr: 0.01 });
      const lossFn = new torch.nn.CrossEntropyLoss();
      let loss = null;
      return {
        launch() {
          loss?.dispose();
          opt.zeroGrad();
          loss = torch.tidy(() => lossFn(model(X), Y));
          loss.backward();
          opt.step();
        },
        sync: ctx.wtSync,
        output: async () => loss.data(),
        dispose() {
          loss?.dispose();
          opt.zeroGrad();
          [X, Y, ...net.parameters()].forEach((t) => t.dispose());
        },
      };
    },
  },
  torchJob: () => null,
}, {
  name: 'ddp_train',
  group: 'parallel',
  unit: 'steps/s',
  higherIsBetter: true,
  warmupMs: 2000,
  requires: (torch) => (torch.distributed?.spawn ? null : 'torch.distributed'),
  rows: (quick) => [1, 2].map((n) => {
    const p = mlp(quick);
    return { label: `DDP MLP step, ${n} rank${n > 1 ? 's' : ''}`, size: `${p.din}-${p.h}-${p.h}-${p.dout}, b${p.b}`, params: { ...p, n } };
  }),
  inputs: (p) => ({ x: uniform(p.b * p.din, 90, 0, 1), y: Int32Array.from(uniform(p.b, 91, 0, p.dout), (u) => Math.min(p.dout - 1, Math.floor(u))) }),
  figure: (_, sec) => 1 / sec,
  impls: {
    // The ranks are spawn tasks that build their DDP model and wait; each iteration runs one step on
    // every rank from here (DDP holds its process group, so the step needs no rank context). The
    // first launch, before the ranks are up, does nothing (it is the unchecked first run).
    webtorch(ctx, p, { x, y }) {
      if (ctx.device !== 'gpu') return null;
      const { torch } = ctx, dist = torch.distributed, per = p.b / p.n;
      const ranks = [];
      let stop;
      const stopped = new Promise((res) => { stop = res; });
      const lossFn = new torch.nn.CrossEntropyLoss();
      const run = dist.spawn(async (rank) => {
        await dist.initProcessGroup({ backend: 'webtorch' });
        torch.manualSeed(0);
        const net = new torch.nn.Sequential(new torch.nn.Linear(p.din, p.h), new torch.nn.ReLU(), new torch.nn.Linear(p.h, p.h), new torch.nn.ReLU(), new torch.nn.Linear(p.h, p.dout)).to('cuda');
        const ddp = new torch.nn.parallel.DistributedDataParallel(net);
        const X = torch.tidy(() => torch.tensor(x.subarray(rank * per * p.din, (rank + 1) * per * p.din), { device: 'cuda', dtype: 'float32' }).reshape(per, p.din));
        const Y = torch.tensor(y.subarray(rank * per, (rank + 1) * per), { device: 'cuda', dtype: 'int64' });
        ranks[rank] = { ddp, X, Y, opt: new torch.optim.SGD(net.parameters(), { lr: 0.01 }), loss: null };
        await stopped;
        const r = ranks[rank];
        r.loss?.dispose();
        r.opt.zeroGrad();
        [X, Y, ...net.parameters()].forEach((t) => t.dispose());
      }, { nprocs: p.n });
      const ready = (async () => { while (ranks.filter(Boolean).length < p.n) await new Promise((res) => setTimeout(res, 1)); })();
      return {
        launch() {
          if (ranks.filter(Boolean).length < p.n) return;
          for (const r of ranks) {
            r.loss?.dispose();
            r.opt.zeroGrad();
            r.loss = torch.tidy(() => lossFn(r.ddp(r.X), r.Y));
            r.loss.backward();
            r.opt.step();
          }
        },
        sync: async () => {
          await ready;
          await Promise.all(ranks.map((_, i) => torch.gpu.synchronize(`gpu:${i}`)));
        },
        output: async () => ranks[0].loss.data(),
        dispose: async () => { stop(); await run; },
      };
    },
  },
  torchJob: () => null,
}, {
  name: 'd2d_copy',
  group: 'parallel',
  unit: 'GB/s',
  higherIsBetter: true,
  rows: (quick) => (quick ? [1 << 22] : [1 << 20, 1 << 25]).map((n) => ({ label: 'device→device (gpu:0→gpu:1)', size: bytesLabel(4 * n), params: { n } })),
  inputs: ({ n }) => ({ x: uniform(n, 92) }),
  check: ({ n }, { x }) => (out) => compare(out, n, (i) => [x[i], 0]),
  figure: ({ n }, sec) => (4 * n) / sec / 1e9,
  impls: {
    webtorch(ctx, { n }, { x }) {
      if (ctx.device !== 'gpu') return null;
      const { torch } = ctx;
      const src = torch.tensor(x, { device: 'gpu:0', dtype: 'float32' });
      const out = keepLastTensor();
      return {
        inner: 1,
        launch: () => out.set(src.to('gpu:1')),
        // Both devices: the copy is done when gpu:1 has the bytes.
        sync: () => torch.gpu.synchronize('gpu:1'),
        output: () => out.get().data(),
        dispose: () => { out.clear(); src.dispose(); },
      };
    },
  },
  torchJob: () => null,
}];
