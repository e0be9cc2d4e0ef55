// Launch overhead, measured from the caller as time to result: a chain of 1,000 dependent tiny
// adds (y = y + x on 4 floats) then one read, in µs per op; and one tiny op plus its read, in µs.
// Raw Dawn gives the floor: one dispatch per submit, and (as a note) 1,000 dispatches in one pass.
// tfjs-webgpu runs these tiny ops on the GPU here (its CPU forwarding is off); a note shows its default.
import { compare } from '../lib/harness.mjs';
import { dawnAdd, dawnRead, keepLastTensor } from './common.mjs';

const OPS = 1000, N = 4;
const expect = (v) => (out) => compare(out, N, () => [v, 0]);

/** Dawn: `ops` dispatches of y += x, each in its own submit or all in one pass; then a readback. */
function dawnChain(device, ops, onePass) {
  const k = dawnAdd(device, N);
  const staging = device.createBuffer({ size: N * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  let last = null;
  return {
    inner: 1,
    launch() {
      k.reset();
      if (onePass) {
        const enc = device.createCommandEncoder(), pass = enc.beginComputePass();
        for (let i = 0; i < ops; i++) k.record(pass);
        pass.end();
        device.queue.submit([enc.finish()]);
      } else {
        for (let i = 0; i < ops; i++) {
          const enc = device.createCommandEncoder(), pass = enc.beginComputePass();
          k.record(pass);
          pass.end();
          device.queue.submit([enc.finish()]);
        }
      }
    },
    sync: async () => { last = await dawnRead(device, k.y, N * 4, staging); },
    output: async () => last,
    dispose: () => { k.destroy(); staging.destroy(); },
  };
}

/** An Impl whose sync point is reading the last result (time to result). */
function readImpl(lib, make, held) {
  const out = keepLastTensor();
  let last = null;
  return {
    inner: 1,
    launch: () => out.set(lib.tidy(make)),
    sync: async () => { last = await out.get().data(); },
    output: async () => last,
    dispose: () => { out.clear(); held.forEach((t) => t.dispose()); },
  };
}

/**
 * tfjs-webgpu as it is by default: ops on small tensors whose values are on the host run on its
 * CPU backend (WEBGPU_CPU_FORWARD). The suite turns that off for the gpu rows; this note shows it on.
 */
function tfDefault(make) {
  return (ctx, p) => {
    if (!ctx.tf || ctx.device !== 'gpu') return null;
    const env = ctx.tf.env(), impl = make(ctx, p);
    const launch = impl.launch;
    impl.launch = () => {
      env.set('WEBGPU_CPU_FORWARD', true);
      try { return launch(); } finally { env.set('WEBGPU_CPU_FORWARD', false); }
    };
    return impl;
  };
}

const tfChain = (ctx, { ops }) => {
  if (!ctx.tf) return null;
  const X = ctx.tf.ones([N]);
  return readImpl(ctx.tf, () => { let y = X; for (let i = 0; i < ops; i++) y = ctx.tf.add(y, X); return y; }, [X]);
};

const tfRoundTrip = (ctx) => {
  if (!ctx.tf) return null;
  const X = ctx.tf.ones([N]);
  return readImpl(ctx.tf, () => ctx.tf.add(X, 1), [X]);
};

/** @type {import('./common.mjs').Case[]} */
export default [{
  name: 'launch',
  group: 'launch',
  unit: 'µs/op',
  higherIsBetter: false,
  rows: () => [{ label: 'launch: chain of 1000 adds', size: `[${N}]`, params: { ops: OPS } }],
  check: ({ ops }) => expect(ops + 1),
  figure: ({ ops }, sec) => (sec * 1e6) / ops,
  impls: {
    webtorch(ctx, { ops }) {
      const X = ctx.torch.ones([N], { device: ctx.wt });
      return readImpl(ctx.torch, () => { let y = X; for (let i = 0; i < ops; i++) y = y.add(X); return y; }, [X]);
    },
    tfjs: tfChain,
    dawn: (ctx, { ops }) => (ctx.dawn ? dawnChain(ctx.dawn, ops, false) : null),
    'ref:dawn, one pass': (ctx, { ops }) => (ctx.dawn ? dawnChain(ctx.dawn, ops, true) : null),
    'ref:tfjs default (on its CPU)': tfDefault(tfChain),
  },
  torchJob: ({ ops }) => ({ op: 'chain_add', n: N, ops }),
}, {
  name: 'roundtrip',
  group: 'launch',
  unit: 'µs',
  // On a GPU, samples in blocks of 10 per implementation (see measureRow's `block`): the row
  // measures a round trip of a program using one device, not the GPU's switch between the
  // peers' devices.
  block: 10,
  higherIsBetter: false,
  rows: () => [{ label: 'round trip: one op + read', size: `[${N}]`, params: {} }],
  check: () => expect(2),
  figure: (_, sec) => sec * 1e6,
  impls: {
    webtorch(ctx) {
      const X = ctx.torch.ones([N], { device: ctx.wt });
      return readImpl(ctx.torch, () => X.add(1), [X]);
    },
    tfjs: tfRoundTrip,
    dawn: (ctx) => (ctx.dawn ? dawnChain(ctx.dawn, 1, false) : null),
    'ref:tfjs default (on its CPU)': tfDefault(tfRoundTrip),
  },
  torchJob: () => ({ op: 'roundtrip', n: N }),
}];
