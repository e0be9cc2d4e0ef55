/**
 * Captured graphs on the gpu worker (`torch.gpu.graph`, ts/runtime/graphs.ts).
 *
 * Capture runs the graph's commands (fused where it can: gpu/fuse.ts) through the ordinary launch paths once, at capture end,
 * with nothing submitted: what they record (pipelines, buffers, grids and one params block) is
 * taken out of the batch, the params go into one buffer of the graph's own, written once, and
 * every dispatch's bind group is built then. A replay is then only the encode loop: one pass,
 * `setPipeline` where it changes, `setBindGroup` and `dispatchWorkgroups` per dispatch. No
 * WGSL, params, bind group or validation is made per op at replay.
 *
 * The buffers a graph binds are held (core.ts `holdBuffer`): a segment released, or a scratch
 * buffer retired meanwhile, is destroyed only once the last graph binding it is reset.
 */
import { bumpCounter, type Command, type ReplayRng } from '../../ir/commands.js';
import { contextBuffer } from '../scratch.js';
import { device, flush, handOver, holdBuffer, maxBinding, openEncoder, pendingBinds, readyKernels, retired, submitEvery, takeRecorded, unholdBuffer, type Kernel } from './core.js';
import { armChecks, collectChecks } from './checks.js';
import { fuseChains, runFused } from './fuse.js';

/** One dispatch of a graph, ready to encode (its kernel's pipeline may still be compiling until the first replay: core.ts). */
interface GraphDispatch {
  kernel: Kernel;
  group: GPUBindGroup;
  /** The params' dynamic offset (null: the bind group has the offset built in). */
  offset: number[] | null;
  grid: [number, number, number];
}

interface GpuGraph {
  dispatches: GraphDispatch[];
  params: GPUBuffer | null;
  /** The params as written at capture, and the first word of each random dispatch's (wgsl/random.ts: key at +4, counter at +6). */
  hostParams: Uint32Array;
  randoms: number[];
  /** Every buffer the graph binds (held until reset). */
  held: GPUBuffer[];
  /** The device checks its kernels make. */
  checks: Map<string, number>;
}

const graphs = new Map<number, GpuGraph>();

/**
 * Captures `cmds` (a stream's commands between capture begin and end) as graph `id`, running
 * each through `run` with nothing submitted. Returns how many dispatches a replay encodes.
 */
export function captureGraph(id: number, captured: Command[], run: (cmd: Command) => void, fuse = false, live: number[] = []): number {
  // fusion is a rewrite of the list (gpu/fuse.ts)
  const cmds = fuse ? fuseChains(captured, live) : captured;
  flush();
  const checks = new Map<string, number>();
  const retiredBefore = retired.length;
  collectChecks(checks);
  let taken: ReturnType<typeof takeRecorded>;
  const randomAt: number[] = [];
  try {
    for (const cmd of cmds) {
      const first = pendingBinds.length;
      if (cmd.k === 'fused') runFused(cmd);
      else run(cmd);
      if (cmd.k === 'random') for (let i = first; i < pendingBinds.length; i++) randomAt.push(pendingBinds[i].offset / 4);
    }
  } finally {
    collectChecks(null);
    taken = takeRecorded();
  }
  // scratch buffers the capture made (packed outputs, operand copies) belong to the graph now
  const owned = retired.splice(retiredBefore);
  const params = taken.params.byteLength
    ? contextBuffer(device.createBuffer({ size: Math.max(256, taken.params.byteLength), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST }))
    : null;
  if (params) device.queue.writeBuffer(params, 0, taken.params as Uint8Array<ArrayBuffer>);
  const held = new Set<GPUBuffer>(owned);
  // A kernel without an explicit layout takes its bind group's from its pipeline: that one is needed now.
  if (taken.dispatches.some((d) => !d.kernel.layout && d.kernel.desc)) readyKernels();
  const dispatches: GraphDispatch[] = taken.dispatches.map((d) => {
    for (const b of d.buffers) held.add(b);
    const { kernel, kernel: { layout } } = d;
    const entries = [params!, ...d.buffers].map((b, i) => {
      const off = i && d.at ? d.at[i - 1] : 0;
      if (i === 0) return { binding: 0, resource: { buffer: b, offset: layout ? 0 : d.offset, size: d.size } };
      return { binding: i, resource: { buffer: b, offset: off, size: Math.min(b.size - off, maxBinding) } };
    });
    const group = device.createBindGroup({ layout: layout ? layout.group : kernel.pipeline.getBindGroupLayout(0), entries });
    return { kernel, group, offset: layout ? [d.offset] : null, grid: d.grid };
  });
  for (const b of held) holdBuffer(b);
  // the owned scratch buffers are destroyed with the graph (held back until then)
  for (const b of owned) retired.push(b);
  const hostParams = new Uint32Array(taken.params.buffer, taken.params.byteOffset, taken.params.byteLength / 4);
  graphs.set(id, { dispatches, params, hostParams, randoms: randomAt, held: [...held], checks });
  return dispatches.length;
}

/** Encodes graph `id`'s dispatches after the work recorded so far (one pass). */
export function replayGraph(id: number, rng?: ReplayRng): void {
  const g = graphs.get(id);
  if (!g) throw new Error(`graph ${id} was never captured on this device (or was reset)`);
  if (!g.dispatches.length) return;
  if (rng && g.randoms.length) {
    // this replay's draws: the params' key and counter words, written once for the whole graph
    // after the work recorded so far is submitted (a write lands before the next submit)
    const words = g.hostParams.slice();
    for (const w of g.randoms) {
      const c = bumpCounter([g.hostParams[w + 6], g.hostParams[w + 7], g.hostParams[w + 8], g.hostParams[w + 9]], rng.delta);
      words.set(rng.key, w + 4);
      words.set(c, w + 6);
    }
    flush();
    device.queue.writeBuffer(g.params!, 0, words);
    handOver();
  }
  // Eager dispatches recorded before the replay go to the queue first: their params block is
  // written when they are encoded, and the next eager batch reuses it from offset 0, so it must
  // not share an encoder (one submit) with them.
  if (pendingBinds.length) flush();
  const enc = openEncoder();
  // the executor holds a replay back while kernels compile; missing pipelines are made here
  readyKernels();
  const p = enc.beginComputePass();
  let current: GPUComputePipeline | null = null;
  for (const d of g.dispatches) {
    const pipeline = d.kernel.pipeline;
    if (pipeline !== current) p.setPipeline((current = pipeline));
    if (d.offset) p.setBindGroup(0, d.group, d.offset);
    else p.setBindGroup(0, d.group);
    p.dispatchWorkgroups(d.grid[0], d.grid[1], d.grid[2]);
  }
  p.end();
  if (g.checks.size) armChecks(g.checks);
  // a long graph goes to the queue at once, so that the GPU starts while the worker goes on
  if (submitEvery && g.dispatches.length >= submitEvery) flush();
}

/** Drops graph `id`: its params, and its hold on the buffers it binds. */
export function dropGraph(id: number): void {
  const g = graphs.get(id);
  if (!g) return;
  graphs.delete(id);
  if (g.params) retired.push(g.params);
  for (const b of g.held) unholdBuffer(b);
}
