// Shared pieces of the cases: the Case shape, uploading host inputs to webtorch and TensorFlow.js,
// and small raw-Dawn helpers (buffers, a readback, one tiny WGSL kernel) for the floor figures.
import { keepLast } from '../lib/harness.mjs';

/**
 * What a case module exports (an array of these).
 * @typedef {object} Case
 * @property {string} name  `--cases` selects by this name or by `group`
 * @property {string} group
 * @property {string} unit
 * @property {boolean} higherIsBetter  false for time units (µs/op)
 * @property {(quick: boolean, device: 'gpu' | 'cpu', ctx: Ctx) => Row[]} rows
 * @property {(p: any) => any} [inputs]  host inputs of a row (computed once, shared by every implementation)
 * @property {(p: any, inputs: any) => ((out: ArrayLike<number>) => (string | null)) | null} [check]
 * @property {(p: any, seconds: number) => number} figure  seconds per iteration → the unit
 * @property {{[impl: string]: (ctx: Ctx, p: any, inputs: any) => (import('../lib/harness.mjs').Impl | null)}} impls
 *   keys: `webtorch`, the peers `tfjs` and `dawn`, and `ref:<name>` for figures shown as notes
 * @property {(p: any, device: 'gpu' | 'cpu') => (object | null)} [torchJob]  what bench/torch_peer.py runs for the row
 * @property {(torch: any) => (string | null)} [requires]  what this build of webtorch lacks for the case, or null
 * @property {number} [warmupMs]  a longer warm-up for every implementation of the case's full-size rows
 * @property {(rows: any[]) => string[]} [summary]  lines printed after the table (and kept in the JSON) from the case's measured rows
 */

/**
 * One row of the table: a case at one size.
 * @typedef {object} Row
 * @property {string} label  the case column (`matmul (batched)`)
 * @property {string} size
 * @property {any} params
 */

/**
 * What implementations get.
 * @typedef {object} Ctx
 * @property {'gpu' | 'cpu'} device
 * @property {any} torch  the webtorch module
 * @property {any} wt  the webtorch Device
 * @property {() => Promise<void>} wtSync
 * @property {any} tf  TensorFlow.js with this device's backend set, or null
 * @property {() => Promise<void>} tfSync
 * @property {GPUDevice | null} dawn  the raw main-thread device (gpu rows only)
 */

/** A webtorch tensor of `shape` from host floats (the 1-D handle is dropped; the view keeps the storage). */
export function wtFrom(ctx, host, shape) {
  const flat = ctx.torch.tensor(host, { device: ctx.wt, dtype: 'float32' });
  const t = flat.reshape(shape);
  if (t !== flat) flat.dispose();
  return t;
}

/** Keeps the last tensor (webtorch or tfjs) of a series of iterations, disposing the one before. */
export const keepLastTensor = () => keepLast((t) => t.dispose());

/** An Impl whose `op()` returns a tensor made inside `tidy`; the last one is kept, `held` are freed at the end. */
function tidyImpl(tidy, sync, held, op) {
  const out = keepLastTensor();
  return {
    launch: () => out.set(tidy(op)),
    sync,
    output: () => out.get().data(),
    dispose: () => { out.clear(); held.forEach((t) => t.dispose()); },
  };
}

/** An Impl for ops of webtorch (`op` runs inside `torch.tidy`). */
export const wtImpl = (ctx, held, op) => tidyImpl((f) => ctx.torch.tidy(f), ctx.wtSync, held, op);

/** The same for TensorFlow.js. */
export const tfImpl = (ctx, held, op) => tidyImpl((f) => ctx.tf.tidy(f), ctx.tfSync, held, op);

/**
 * An Impl of one SGD training step in webtorch: `lossOf()` builds the loss (inside `torch.tidy`),
 * `params` are updated; `output(loss)` reads what the check compares; `free()` runs at the end.
 */
export function wtTrainImpl(ctx, { lossOf, params, lr, output, free }) {
  const { torch } = ctx;
  const opt = new torch.optim.SGD(params, { lr });
  let loss = null;
  if (ctx.graphed) return wtGraphTrainImpl(ctx, { lossOf, opt, output, free });
  return {
    launch() {
      loss?.dispose();
      loss = torch.tidy(lossOf);
      opt.zeroGrad();
      loss.backward();
      opt.step();
    },
    sync: ctx.wtSync,
    output: () => output(loss),
    dispose() { loss?.dispose(); free(); },
  };
}

/**
 * `wtTrainImpl` with `ctx.graphed` (bench/cases/graphs.mjs): the first launch captures one step
 * (`torch.gpu.graph`, fusion as `ctx.graphed.fuse`) and every launch replays it: one command.
 * `ctx.graphed.info` receives what the graph holds (commands, dispatches).
 */
function wtGraphTrainImpl(ctx, { lossOf, opt, output, free }) {
  const { torch } = ctx;
  const ns = ctx.wt.type === 'cpu' ? torch.cpu : torch.gpu;
  let g = null, loss = null;
  return {
    launch() {
      if (g) return void g.replay();
      return (async () => {
        opt.zeroGrad();
        g = new ns.Graph();
        await ns.graph(g, () => {
          loss = torch.tidy(lossOf);
          loss.backward();
          opt.step();
        }, { fuse: ctx.graphed.fuse ?? true });
        ctx.graphed.info = await g.info();
        g.replay();
      })();
    },
    sync: ctx.wtSync,
    output: () => output(loss),
    dispose() { g?.reset(); loss?.dispose(); free(); },
  };
}

/** The same for TensorFlow.js (`tf.variableGrads` + `sgd.applyGradients`); `output(value, grads)`. */
export function tfTrainImpl(ctx, { lossOf, vars, lr, output, free }) {
  const tf = ctx.tf, opt = tf.train.sgd(lr);
  let last = null;
  const drop = () => { if (last) { last.value.dispose(); Object.values(last.grads).forEach((g) => g.dispose()); } };
  return {
    launch() {
      drop();
      last = tf.variableGrads(lossOf, vars);
      opt.applyGradients(last.grads);
    },
    sync: ctx.tfSync,
    output: () => output(last.value, last.grads),
    dispose() { drop(); vars.forEach((v) => v.dispose()); free(); opt.dispose(); },
  };
}

/** Storage usage for raw buffers. */
export const STORAGE = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

/** A raw buffer, optionally filled from host data. */
export function dawnBuffer(device, bytes, host) {
  const b = device.createBuffer({ size: Math.ceil(bytes / 4) * 4, usage: STORAGE() });
  if (host) device.queue.writeBuffer(b, 0, host.buffer, host.byteOffset, host.byteLength);
  return b;
}

/** Reads `bytes` of a raw buffer back to the host (copy to a staging buffer, map, copy out). */
export async function dawnRead(device, buf, bytes, staging) {
  const s = staging ?? device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(buf, 0, s, 0, bytes);
  device.queue.submit([enc.finish()]);
  await s.mapAsync(GPUMapMode.READ);
  const out = new Float32Array(s.getMappedRange(0, bytes).slice(0));
  s.unmap();
  if (!staging) s.destroy();
  return out;
}

/** y += x, elementwise, in place: the tiny kernel of the raw-Dawn launch figures. */
const ADD_WGSL = `
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3u) {
  if (g.x < arrayLength(&y)) { y[g.x] = y[g.x] + x[g.x]; }
}`;

/** A compiled `y += x` pipeline and its bind group over two new buffers of `n` floats (y = x = 1). */
export function dawnAdd(device, n) {
  const pipeline = device.createComputePipeline({
    layout: 'auto',
    compute: { module: device.createShaderModule({ code: ADD_WGSL }), entryPoint: 'main' },
  });
  const ones = new Float32Array(n).fill(1);
  const y = dawnBuffer(device, n * 4, ones), x = dawnBuffer(device, n * 4, ones);
  const group = device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: [{ binding: 0, resource: { buffer: y } }, { binding: 1, resource: { buffer: x } }],
  });
  const groups = Math.ceil(n / 64);
  return {
    y, x,
    /** Records one dispatch into an open pass. */
    record(pass) { pass.setPipeline(pipeline); pass.setBindGroup(0, group); pass.dispatchWorkgroups(groups); },
    /** Resets y to ones. */
    reset() { device.queue.writeBuffer(y, 0, ones); },
    destroy() { y.destroy(); x.destroy(); },
  };
}

/** Formats a count of elements as a power of two or a plain number (`2^20`). */
export const pow2 = (n) => (Number.isInteger(Math.log2(n)) ? `2^${Math.log2(n)}` : String(n));

/** Formats bytes as KiB/MiB. */
export const bytesLabel = (b) => (b >= 1 << 20 ? `${b / (1 << 20)} MiB` : `${b / 1024} KiB`);
