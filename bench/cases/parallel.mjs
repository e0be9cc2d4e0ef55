// Several GPU devices: nn.DataParallel and DistributedDataParallel training steps per second on an
// MLP over 1 and 2 devices (one global batch: DataParallel splits it, each DDP rank takes its share;
// the scaling ratio is the 2-device row over the 1-device row; BENCHMARKS.md gives it), the same
// for a small CNN, DDP with ranks as 2 separate processes, GPipe micro-batches, and a
// device-to-device copy (`x.to('gpu:1')` from gpu:0, worker to worker) in GB/s, checked bit for bit.
// On a one-GPU machine gpu:0 and gpu:1 are two logical devices (two workers) on the one adapter,
// so DataParallel's figure there measures the overhead of the scatter/replicate/gather, not a
// second GPU's throughput. Correctness (same parameters as one device) is tested in
// test/device/parallel.test.ts; these rows time it.
import { fork } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { compare, uniform } from '../lib/harness.mjs';
import { bytesLabel, keepLastTensor } from './common.mjs';

// Two logical GPU devices for these rows (the runner configures allowSoftware only; an explicit
// WEBTORCH_GPU_DEVICES wins). Devices start on first use, so the other cases are unaffected.
process.env.WEBTORCH_GPU_DEVICES ??= '2';

const mlp = (quick) => (quick ? { b: 128, din: 784, h: 256, dout: 10 } : { b: 512, din: 784, h: 1024, dout: 10 });
const cnn = (quick) => (quick ? { b: 32, din: 784, dout: 10 } : { b: 128, din: 784, dout: 10 });

/** The two models of the data-parallel rows: the MLP, and bench/cases/cnn.mjs's CNN (on 1×28×28). */
const MODELS = {
  MLP: { params: mlp, size: (p) => `${p.din}-${p.h}-${p.h}-${p.dout}, b${p.b}` },
  CNN: { params: cnn, size: (p) => `conv8-conv16-fc10 on 1×28×28, b${p.b}` },
};

/** The model of a row, on the current device (`.to(dev)` after). */
function buildNet(torch, p) {
  const nn = torch.nn;
  if (p.model === 'CNN') {
    return new nn.Sequential(new nn.Conv2d(1, 8, 3, { padding: 1 }), new nn.ReLU(), new nn.MaxPool2d(2), new nn.Conv2d(8, 16, 3, { padding: 1 }),
      new nn.ReLU(), new nn.MaxPool2d(2), new nn.Flatten(), new nn.Linear(16 * 7 * 7, p.dout));
  }
  return new nn.Sequential(new nn.Linear(p.din, p.h), new nn.ReLU(), new nn.Linear(p.h, p.h), new nn.ReLU(), new nn.Linear(p.h, p.dout));
}
/** A row's input shape for `rows` samples. */
const inShape = (p, rows) => (p.model === 'CNN' ? [rows, 1, 28, 28] : [rows, p.din]);

/**
 * The scaling ratios of a case's rows: for each group of rows that differ only in `key`, each
 * row's figure over the figure of the row with `key` = `base` (2 devices over 1: the ideal is 2).
 */
function ratios(key, base, what) {
  return (rows) => {
    const lines = [];
    const groups = new Map();
    for (const r of rows) {
      const { [key]: k, ...rest } = r.params;
      const g = JSON.stringify({ ...rest, device: r.device });
      groups.set(g, [...(groups.get(g) ?? []), r]);
    }
    for (const rs of groups.values()) {
      const b = rs.find((r) => r.params[key] === base)?.webtorch?.value;
      for (const r of rs) {
        const v = r.webtorch?.value;
        if (r.params[key] === base || !(b > 0) || !(v > 0)) continue;
        lines.push(`${r.label} (${r.size}): ${(v / b).toFixed(2)}× ${what}`);
      }
    }
    return lines;
  };
}

/** Rows for 1 and 2 devices of both models. */
const dpRows = (quick, what, unit) => Object.entries(MODELS).flatMap(([model, m]) => [1, 2].map((n) => {
  const p = { ...m.params(quick), model, n };
  return { label: `${what} ${model} step, ${n} ${unit}${n > 1 ? 's' : ''}`, size: m.size(p), params: p };
}));

/** @type {import('./common.mjs').Case[]} */
export default [{
  name: 'dp_train',
  summary: ratios('n', 1, 'the 1-device row'),
  group: 'parallel',
  unit: 'steps/s',
  higherIsBetter: true,
  warmupMs: 2000,
  requires: (torch) => (torch.nn?.DataParallel ? null : 'nn.DataParallel'),
  rows: (quick) => dpRows(quick, 'DataParallel', 'device'),
  inputs: (p) => ({ x: uniform(p.b * p.din, 90, 0, 1), y: Int32Array.from(uniform(p.b, 91, 0, p.dout), (u) => Math.min(p.dout - 1, Math.floor(u))) }),
  figure: (_, sec) => 1 / sec,
  impls: {
    webtorch(ctx, p, { x, y }) {
      if (ctx.device !== 'gpu') return null;
      const { torch } = ctx;
      if (p.n > 1 && torch.device(`gpu:${p.n - 1}`) === null) return null;
      torch.manualSeed(0);
      const net = buildNet(torch, p).to('gpu:0');
      const model = p.n > 1 ? new torch.nn.DataParallel(net, Array.from({ length: p.n }, (_, i) => i)) : net;
      const X = torch.tidy(() => torch.tensor(x, { device: 'gpu:0', dtype: 'float32' }).reshape(inShape(p, p.b)));
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
  summary: ratios('n', 1, 'the 1-rank row'),
  group: 'parallel',
  unit: 'steps/s',
  higherIsBetter: true,
  warmupMs: 2000,
  requires: (torch) => (torch.distributed?.spawn ? null : 'torch.distributed'),
  rows: (quick) => dpRows(quick, 'DDP', 'rank'),
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
        const net = buildNet(torch, p).to('cuda');
        const ddp = new torch.nn.parallel.DistributedDataParallel(net);
        const X = torch.tidy(() => torch.tensor(x.subarray(rank * per * p.din, (rank + 1) * per * p.din), { device: 'cuda', dtype: 'float32' }).reshape(inShape(p, per)));
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
  // DDP with each rank a separate Node process (bench/lib/ddp-rank.mjs, forked with torchrun's
  // environment): the gradients' all-reduce goes device → this process's host → sockets. Each
  // iteration sends every rank a `step`; the sync point asks every rank to finish and answer.
  name: 'ddp_proc',
  summary: ratios('n', 1, 'the 1-process row'),
  group: 'parallel',
  unit: 'steps/s',
  higherIsBetter: true,
  warmupMs: 2000,
  requires: (torch) => (torch.distributed?.TCPStore ? null : 'torch.distributed between processes'),
  rows: (quick) => [1, 2].map((n) => {
    const p = { ...mlp(quick), n };
    return { label: `DDP MLP step, ${n} process${n > 1 ? 'es' : ''}`, size: `${p.din}-${p.h}-${p.h}-${p.dout}, b${p.b}`, params: p };
  }),
  figure: (_, sec) => 1 / sec,
  impls: {
    webtorch(ctx, p) {
      if (ctx.device !== 'gpu') return null;
      const script = fileURLToPath(new URL('../lib/ddp-rank.mjs', import.meta.url));
      let kids = [], ready, syncs = 0;
      const start = (async () => {
        const port = await new Promise((res) => { const s = createServer().listen(0, '127.0.0.1', () => { const a = s.address().port; s.close(() => res(a)); }); });
        kids = Array.from({ length: p.n }, (_, r) => fork(script, [JSON.stringify(p)], {
          env: { ...process.env, RANK: String(r), LOCAL_RANK: String(r), WORLD_SIZE: String(p.n), LOCAL_WORLD_SIZE: String(p.n), MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port) },
          stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        }));
        await Promise.all(kids.map((c) => new Promise((res, rej) => {
          c.on('message', (m) => m.ready && res());
          c.once('exit', (code) => rej(new Error(`ddp_proc: a rank exited with code ${code} before it was ready`)));
        })));
        ready = true;
      })();
      let last = 0;
      return {
        launch() {
          if (ready) kids.forEach((c) => c.send({ step: 1 }));
        },
        sync: async () => {
          await start;
          const id = ++syncs;
          const answers = kids.map((c) => new Promise((res) => {
            const on = (m) => { if (m.synced === id) { c.off('message', on); res(m.loss); } };
            c.on('message', on);
          }));
          kids.forEach((c) => c.send({ sync: id }));
          last = (await Promise.all(answers))[0];
        },
        output: async () => [last],
        dispose: async () => {
          await start.catch(() => {});
          await Promise.all(kids.map((c) => new Promise((res) => { c.once('exit', res); c.send({ stop: true }); })));
        },
      };
    },
  },
  torchJob: () => null,
}, {
  // GPipe (nn.parallel.Pipe): an MLP split in two halves, the first on gpu:0 and the second on
  // gpu:1, trained with the whole batch at once (1 micro-batch: the plain model-parallel run) and
  // in 4 micro-batches. The ratio of the two rows is the pipeline's gain; on one adapter (two
  // logical devices) it shows the schedule's overhead rather than a second GPU's work.
  name: 'pipe_train',
  summary: ratios('chunks', 1, 'the 1-micro-batch row (the pipeline\'s gain)'),
  group: 'parallel',
  unit: 'steps/s',
  higherIsBetter: true,
  warmupMs: 2000,
  requires: (torch) => (torch.nn?.parallel?.Pipe ? null : 'nn.parallel.Pipe'),
  rows: (quick) => [1, 4].map((chunks) => {
    const p = { ...mlp(quick), chunks };
    return { label: `model-parallel MLP step (gpu:0 | gpu:1), ${chunks} micro-batch${chunks > 1 ? 'es' : ''}`, size: `${p.din}-${p.h}-${p.h}-${p.h}-${p.dout}, b${p.b}`, params: p };
  }),
  inputs: (p) => ({ x: uniform(p.b * p.din, 90, 0, 1), y: Int32Array.from(uniform(p.b, 91, 0, p.dout), (u) => Math.min(p.dout - 1, Math.floor(u))) }),
  figure: (_, sec) => 1 / sec,
  impls: {
    webtorch(ctx, p, { x, y }) {
      if (ctx.device !== 'gpu') return null;
      const { torch } = ctx, nn = torch.nn;
      if (torch.device('gpu:1') === null) return null;
      torch.manualSeed(0);
      const s1 = new nn.Sequential(new nn.Linear(p.din, p.h), new nn.ReLU(), new nn.Linear(p.h, p.h), new nn.ReLU()).to('gpu:0');
      const s2 = new nn.Sequential(new nn.Linear(p.h, p.h), new nn.ReLU(), new nn.Linear(p.h, p.dout)).to('gpu:1');
      const seq = new nn.Sequential(s1, s2);
      const model = new nn.parallel.Pipe(seq, { chunks: p.chunks });
      const X = torch.tidy(() => torch.tensor(x, { device: 'gpu:0', dtype: 'float32' }).reshape(p.b, p.din));
      const Y = torch.tensor(y, { device: 'gpu:1', dtype: 'int64' });
      const opt = new torch.optim.SGD(seq.parameters(), { lr: 0.01 });
      const lossFn = new nn.CrossEntropyLoss();
      let loss = null;
      return {
        launch() {
          loss?.dispose();
          opt.zeroGrad();
          loss = torch.tidy(() => lossFn(model(X), Y));
          loss.backward();
          opt.step();
        },
        sync: () => Promise.all([torch.gpu.synchronize('gpu:0'), torch.gpu.synchronize('gpu:1')]),
        output: async () => loss.data(),
        dispose() {
          loss?.dispose();
          opt.zeroGrad();
          [X, Y, ...seq.parameters()].forEach((t) => t.dispose());
        },
      };
    },
  },
  torchJob: () => null,
}, {
  name: 'd2d_copy',
  summary: ratios('chunk', 0, 'the whole copy'),
  group: 'parallel',
  unit: 'GB/s',
  higherIsBetter: true,
  // `chunk`: bytes per send/recv pair (0: the whole tensor in one, as before chunking).
  rows: (quick) => (quick ? [[1 << 22, 4 << 20], [1 << 22, 0]] : [[1 << 20, 4 << 20], [1 << 25, 4 << 20], [1 << 25, 0], [1 << 25, 16 << 20]]).map(([n, chunk]) => ({
    label: `device→device (gpu:0→gpu:1), ${chunk ? `${chunk >> 20} MiB chunks` : 'whole'}`, size: bytesLabel(4 * n), params: { n, chunk },
  })),
  inputs: ({ n }) => ({ x: uniform(n, 92) }),
  check: ({ n }, { x }) => (out) => compare(out, n, (i) => [x[i], 0]),
  figure: ({ n }, sec) => (4 * n) / sec / 1e9,
  impls: {
    webtorch(ctx, p, { x }) {
      if (ctx.device !== 'gpu') return null;
      const { torch } = ctx;
      const src = torch.tensor(x, { device: 'gpu:0', dtype: 'float32' });
      const out = keepLastTensor();
      const chunk = p.chunk || 2 ** 30;
      return {
        inner: 1,
        launch: () => {
          const old = torch._setCopyChunkBytes?.(chunk);
          out.set(src.to('gpu:1'));
          if (old) torch._setCopyChunkBytes(old);
        },
        // Both devices: the copy is done when gpu:1 has the bytes.
        sync: () => torch.gpu.synchronize('gpu:1'),
        output: () => out.get().data(),
        dispose: () => { out.clear(); src.dispose(); },
      };
    },
  },
  torchJob: () => null,
}];
