// Graphs (ts/runtime/graphs.ts): a training step captured once and replayed with one command,
// against the same step run eagerly (the `train` and `cnn_train` rows), with PyTorch's eager step
// and its torch.cuda.graphs replay in the same run; and the chain of 1,000 tiny adds replayed, in
// µs per op (against the eager `launch` row). Each replay row logs the dispatches a replay makes
// and the commands the eager step sends (`[graphs] ...` lines), the dispatches per step.
// Replays fuse elementwise chains on the GPU (ts/worker/gpu/fuse.ts); the `, unfused` rows replay
// with {fuse: false}, for comparison.
import { compare } from '../lib/harness.mjs';
import cnn from './cnn.mjs';
import train from './train.mjs';

const OPS = 1000, N = 4;

/** A case that replays what `base` runs eagerly: its rows, check and inputs, webtorch captured. */
function replayed(base, name, label, fuse = true) {
  return {
    ...base,
    name,
    group: 'graphs',
    requires: (torch) => base.requires?.(torch) ?? (typeof torch.gpu?.graph === 'function' ? null : 'torch.gpu.graph'),
    rows: (quick, device, ctx) => base.rows(quick, device, ctx).map((r) => ({ ...r, label: `${label}, replayed${fuse ? '' : ', unfused'}` })),
    impls: {
      webtorch(ctx, p, inp) {
        const graphed = { fuse };
        const impl = base.impls.webtorch({ ...ctx, graphed }, p, inp);
        const launch = impl.launch;
        let told = false;
        impl.launch = () => {
          const r = launch();
          if (r && !told) {
            told = true;
            return r.then(() => console.error(`[graphs] ${label}${fuse ? '' : ' (unfused)'} on ${ctx.device}: a step is ${graphed.info.commands} commands, each sent by eager code (the unfused row's dispatches are eager's); a replay is 1 command making ${graphed.info.dispatches} dispatches`));
          }
          return r;
        };
        return impl;
      },
    },
    // PyTorch's replay once (its graphs do not fuse)
    torchJob: fuse ? (p, device) => ({ ...base.torchJob(p, device), op: `${base.torchJob(p, device).op}_graph` }) : undefined,
  };
}

/** The chain of 1,000 adds captured once; a launch replays it and the sync point reads the result. */
function chainReplay(ctx, { ops, fuse }) {
  const { torch } = ctx;
  const ns = ctx.wt.type === 'cpu' ? torch.cpu : torch.gpu;
  const X = torch.ones([N], { device: ctx.wt });
  let g = null, y = null, last = null;
  return {
    inner: 1,
    launch() {
      if (g) return void g.replay();
      return (async () => {
        g = new ns.Graph();
        await ns.graph(g, () => {
          let t = X;
          for (let i = 0; i < ops; i++) {
            const next = t.add(X);
            if (t !== X) t.dispose();
            t = next;
          }
          y = t;
        }, { fuse });
        const info = await g.info();
        console.error(`[graphs] chain of ${ops} adds${fuse ? '' : ' (unfused)'} on ${ctx.device}: ${info.commands} commands, ${info.dispatches} dispatches per replay`);
        g.replay();
      })();
    },
    sync: async () => { last = await y.data(); },
    output: async () => last,
    dispose: () => { g?.reset(); y?.dispose(); X.dispose(); },
  };
}

/** @type {import('./common.mjs').Case[]} */
export default [
  replayed(train[0], 'mlp_train_graph', 'MLP train step (SGD)'),
  replayed(train[0], 'mlp_train_graph_unfused', 'MLP train step (SGD)', false),
  replayed(cnn[0], 'cnn_train_graph', 'small CNN train step (SGD)'),
  replayed(cnn[0], 'cnn_train_graph_unfused', 'small CNN train step (SGD)', false),
  {
    name: 'launch_graph',
    group: 'graphs',
    unit: 'µs/op',
    higherIsBetter: false,
    requires: (torch) => (typeof torch.gpu?.graph === 'function' ? null : 'torch.gpu.graph'),
    rows: () => [
      { label: 'launch: chain of 1000 adds, replayed', size: `[${N}]`, params: { ops: OPS, fuse: true } },
      { label: 'launch: chain of 1000 adds, replayed, unfused', size: `[${N}]`, params: { ops: OPS, fuse: false } },
    ],
    check: ({ ops }) => (out) => compare(out, N, () => [ops + 1, 0]),
    figure: ({ ops }, sec) => (sec * 1e6) / ops,
    impls: { webtorch: chainReplay },
    torchJob: ({ ops, fuse }) => (fuse ? { op: 'chain_add_graph', n: N, ops } : null),
  },
];
