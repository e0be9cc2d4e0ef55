/**
 * The gpu worker's device state and dispatch recording: the kernel cache (pipelines by their
 * WGSL, bind group layouts read from it), the cached bind groups, the batch's params block and
 * the dispatches recorded into one pass per batch, and the error scopes.
 *
 * Kernel params of a whole batch go into one buffer (each dispatch binds its slice at an
 * aligned offset), written with `queue.writeBuffer` just before the batch's encoder is
 * submitted, so a batch costs one write and one submit however many ops it holds. Pipelines
 * are cached by their WGSL source. Memory is segments (one GPUBuffer each) that the caching
 * allocator on the calling thread carves into blocks; kernels address tensors by element
 * offsets into their segment, and bind each distinct segment once (see `slotsOf`).
 *
 * The families (map.ts, matmul.ts, rows.ts, ...) read this module's `let` exports as live
 * bindings and change them only through its functions.
 *
 * Note [pipelines compile off the path]: kernels compile asynchronously (`createComputePipelineAsync`). A browser compiles a pipeline
 * in its GPU process, and the synchronous `createComputePipeline` does it on that process's
 * main thread, which also composites the page: every frame waited while a training step's
 * kernels compiled. So a cache miss starts the compile and returns a kernel whose pipeline is
 * still missing; the command is recorded as usual (a recorded dispatch needs its pipeline only
 * when it is encoded), and nothing is encoded while compiles are in flight: the chunked submit
 * waits, and the executor holds back the flush and every command that hands work to the queue
 * (reads, writes, marks, replays: see `Backend.compiling`) until `whenCompiled` settles. Should
 * anything encode a dispatch whose pipeline is missing anyway, or should the compile fail (a
 * WGSL error), `encodePending` creates the pipeline synchronously, as before: a failed one then
 * raises its validation error into the open error scope, surfacing at the next sync point.
 */
import { MAX_X, WG } from '../../../wgsl/elementwise.js';
import type { RowDevice } from '../../../wgsl/reduce.js';
import { ELEMENTWISE } from '../../ops/table.js';
import type { Command } from '../../ir/commands.js';
import { tooLarge } from '../split.js';
import { contextBuffer } from '../scratch.js';
import { ReduceOp } from '../../ir/ops.js';

export const UNARY = new Map(ELEMENTWISE.filter((o) => o.arity === 1).map((o) => [o.code, o]));
export const BINARY = new Map(ELEMENTWISE.filter((o) => o.arity === 2).map((o) => [o.code, o]));

/** Dawn tears its instance down once the object from `create()` is collected: keep both alive. */
let gpu: GPU | null = null;
let adapter: GPUAdapter | null = null;
export let device: GPUDevice;
export let paramAlign = 256;
/**
 * Which matmul kernel (`WEBTORCH_MATMUL`): 0 (default) lets `chooseMatmul` pick by shape
 * (variants 1, 6 and 10; bench/MATMUL-VARIANTS.md says why); a variant's number forces it
 * wherever it applies (test/backend/matmul-variants.test.ts runs the goldens under several).
 */
export let matmulVariant = 0;
/**
 * The adapter as the kernel choices weigh it, read once at init: its subgroups, whether it is a
 * CPU adapter (lavapipe: row kernels, conv windows and short matmuls take their CPU forms there),
 * and `WEBTORCH_ROWS`.
 */
export let rowDev: RowDevice = { subgroups: false, cpu: false, subgroupMinSize: 32 };
export let maxBinding = 1 << 27;
export const buffers = new Map<number, GPUBuffer>();
/**
 * A kernel; `layout` is null for a shader whose bindings `layoutOf` cannot read (bound the slow
 * way). While its pipeline is being compiled (or its compile failed) `pipeline` is unset and
 * `desc` holds what `encodePending` needs to create it synchronously (see the note at the top).
 */
export interface Kernel {
  pipeline: GPUComputePipeline;
  layout: { key: string; group: GPUBindGroupLayout } | null;
  desc: GPUComputePipelineDescriptor | null;
}
export const kernels = new Map<string, Kernel>();
/** Kernels whose pipeline is not there yet: compiling, or failed to (left to `readyKernels`). */
const unready = new Set<Kernel>();
/** Asynchronous compiles in flight (the chunked submit waits while there are any). */
export let compiling = 0;
/** Settles once no compile is in flight (see `whenCompiled`). */
let allCompiled: { promise: Promise<void>; resolve: () => void } | null = null;
/** Bind group layouts by their bindings' access ('r' read, 'w' read_write), the params binding first. */
const layouts = new Map<string, GPUBindGroupLayout>();
/** Bind groups by (layout, params size, buffers); dropped when one of their buffers is destroyed. */
const groups = new Map<string, GPUBindGroup>();
const groupsOf = new Map<GPUBuffer, string[]>();
const bufferIds = new WeakMap<GPUBuffer, number>();
let nextBufferId = 1;
export let encoder: GPUCommandEncoder | null = null;
export let params = new Uint8Array(new ArrayBuffer(1 << 16));
export let paramWords = new Uint32Array(params.buffer);
export let paramFloats = new Float32Array(params.buffer);
let paramBytes = 0;
let paramBuffer: GPUBuffer | null = null;
/** A recorded dispatch; `label` names its command while the worker's profile times passes. */
export interface PendingDispatch { kernel: Kernel; buffers: GPUBuffer[]; offset: number; size: number; grid: [number, number, number]; label: string; seq: number; at?: number[] }
/** While a launch runs in chunks (ts/worker/split.ts): the byte offset of each windowed buffer's binding. */
let windowOf: Map<GPUBuffer, number> | null = null;
/** The command being run, for the error of an op over a buffer larger than one binding. */
let currentCmd: Command | null = null;
/** The profile's trace entry of the command being run (executor's `traceSeq`), for its passes. */
export let traceSeq = -1;
/** The command whose dispatches are being recorded, while the profile is on. */
let label = '';

/** Where the next pass writes its timestamps: the profile's pass timer (ts/worker/gpu/timing.ts sets it). */
export interface PassTimestamps {
  next(enc: GPUCommandEncoder, label: string, seq: number): GPUComputePassTimestampWrites;
}
/** The pass timer while the profile times passes, else null. */
let timer: PassTimestamps | null = null;
/** Sets (or, with null, clears) the pass timer. */
export function setPassTimer(t: PassTimestamps | null): void {
  timer = t;
}

/** A command's name in the profile: its kind, and the op for elementwise and reduce commands. */
export function labelOf(cmd: Command): string {
  if (cmd.k === 'unary') return `unary:${UNARY.get(cmd.op)?.name ?? cmd.op}`;
  if (cmd.k === 'binary') return `binary:${BINARY.get(cmd.op)?.name ?? cmd.op}`;
  if (cmd.k === 'reduce') return `reduce:${ReduceOp[cmd.op] ?? cmd.op} ${cmd.outer}x${cmd.inner}`;
  if (cmd.k === 'matmul') return `matmul:${cmd.batch}x${cmd.m}x${cmd.kk}x${cmd.n}`;
  return cmd.k;
}

/** Sets the command being run (for errors, and its passes' label while `timer` is on). */
export function beginCommand(cmd: Command): void {
  currentCmd = cmd;
  if (timer) label = labelOf(cmd);
}

/** The command being run, for the error of an op over a buffer larger than one binding. */
export const commandNow = (): Command | null => currentCmd;

/** Sets the trace number of the command about to run. */
export function setTraceSeq(seq: number): void {
  traceSeq = seq;
}

/** Sets the byte offset of each windowed buffer's binding while a launch runs in chunks (null after). */
export function setWindow(w: Map<GPUBuffer, number> | null): void {
  windowOf = w;
}

/** The window of `b` while a launch runs in chunks. */
export const windowNow = (): Map<GPUBuffer, number> | null => windowOf;
export const pendingBinds: PendingDispatch[] = [];
/** Buffers to destroy once the work recorded so far is submitted. */
export const retired: GPUBuffer[] = [];
/**
 * GPU errors (validation, out of memory) of the work recorded since the last sync point took
 * them. Dawn reports an error inside the call that made it, through the device's
 * `uncapturederror` event (see `adopt`), so a sync point takes them at once: no error scope is
 * pushed or popped. Scopes cost four calls into Dawn and an awaited promise per sync point (about
 * a tenth of a round trip's worker time on the H100), and a scope still open when the device
 * died made Dawn abort.
 */
let gpuErrors: GPUError[] = [];

/** Whether GPU errors wait for a sync point. */
export const errorsPending = (): boolean => gpuErrors.length > 0;

/** Takes the GPU errors recorded so far (a sync point's; later work's errors wait for the next). */
export function takeErrors(): GPUError[] {
  const taken = gpuErrors;
  if (taken.length) gpuErrors = [];
  return taken;
}

/** Throws the first of a sync point's GPU errors, an out-of-memory one as `OutOfMemoryError`. */
export function throwFirst(errors: GPUError[]): void {
  const e = errors[0];
  if (!e) return;
  const err = new Error(e.message);
  if (e.constructor.name === 'GPUOutOfMemoryError') err.name = 'OutOfMemoryError';
  throw err;
}

/**
 * The bind group layout of a generated shader, read from its declarations: every binding is a
 * storage buffer, and binding 0 (the params block) takes a dynamic offset, so that one bind
 * group serves every dispatch on the same buffers whatever its params' place in the batch.
 */
function layoutOf(code: string): Kernel['layout'] {
  const access: string[] = [];
  for (const m of code.matchAll(/@binding\((\d+)\)\s*var<([^>]*)>/g)) {
    const a = /^storage,\s*(read|read_write)$/.exec(m[2].trim());
    if (!a) return null;
    access[Number(m[1])] = a[1] === 'read' ? 'r' : 'w';
  }
  const key = [...access].map((a) => a ?? '-').join('');
  if (access[0] !== 'r' || key.includes('-')) return null;
  let group = layouts.get(key);
  if (!group) {
    group = device.createBindGroupLayout({
      entries: access.map((a, i) => ({
        binding: i, visibility: GPUShaderStage.COMPUTE, buffer: { type: a === 'r' ? 'read-only-storage' : 'storage', hasDynamicOffset: i === 0 },
      })),
    });
    layouts.set(key, group);
  }
  return { key, group };
}

/**
 * Compiles a kernel, with the bind group layout read from its WGSL where it can be: its pipeline
 * is created asynchronously (see the note at the top) where the device can.
 */
export function compile(code: string): Kernel {
  const layout = layoutOf(code);
  const module = device.createShaderModule({ code });
  const desc: GPUComputePipelineDescriptor = {
    layout: layout ? device.createPipelineLayout({ bindGroupLayouts: [layout.group] }) : 'auto', compute: { module, entryPoint: 'main' },
  };
  if (typeof device.createComputePipelineAsync !== 'function') return { pipeline: device.createComputePipeline(desc), layout, desc: null };
  const k: Kernel = { pipeline: null as unknown as GPUComputePipeline, layout, desc };
  unready.add(k);
  if (compiling++ === 0) {
    hold?.(true);
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    allCompiled = { promise, resolve };
  }
  // A lost device may never settle the compile: its loss ends the wait (the commands are dropped then).
  void Promise.race([device.createComputePipelineAsync(desc), device.lost.then(() => null)]).then(
    (pipeline) => {
      if (pipeline && k.desc) {
        k.pipeline = pipeline;
        k.desc = null;
        unready.delete(k);
      }
    },
    () => {}, // a WGSL error: `readyKernels` creates it synchronously, which reports the error as before
  ).finally(() => {
    if (--compiling === 0) {
      const all = allCompiled!;
      allCompiled = null;
      hold?.(false);
      all.resolve();
    }
  });
  return k;
}

/** Told when compiles start (true: none was in flight) and when the last settles (the worker's exit gate: ts/platform.ts). */
let hold: ((on: boolean) => void) | null = null;

/** Sets what is told when compiles start and end (see `hold`). */
export function holdWhileCompiling(fn: (on: boolean) => void): void {
  hold = fn;
}

/** Resolves once no kernel is being compiled; null when none is. */
export const whenCompiled = (): Promise<void> | null => allCompiled?.promise ?? null;

/** Creates synchronously the pipelines still missing (compiling, or failed to). */
export function readyKernels(): void {
  if (!unready.size) return;
  for (const k of unready) {
    if (!k.desc) continue;
    k.pipeline = device.createComputePipeline(k.desc);
    k.desc = null;
  }
  unready.clear();
}

/** The kernel for a shader key; `make` writes the WGSL only on a cache miss. */
export function kernel(key: string, make: () => string): Kernel {
  let k = kernels.get(key);
  if (!k) kernels.set(key, (k = compile(make())));
  return k;
}

const bufferId = (b: GPUBuffer): number => {
  let id = bufferIds.get(b);
  if (id === undefined) bufferIds.set(b, (id = nextBufferId++));
  return id;
};

/** The bind group `bindGroup` returned last, and what it binds (consecutive dispatches often bind the same). */
let lastGroup: { layout: GPUBindGroupLayout; size: number; buffers: GPUBuffer[]; group: GPUBindGroup } | null = null;

const sameBuffers = (a: GPUBuffer[], b: GPUBuffer[]): boolean => {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
};

/**
 * The cached bind group of a kernel with an explicit layout over the params buffer (at offset 0
 * with `size` bytes, the offset given at `setBindGroup`) and the storage buffers `bind`.
 */
export function bindGroup(layout: NonNullable<Kernel['layout']>, bind: GPUBuffer[], size: number, at?: number[]): GPUBindGroup {
  const last = lastGroup;
  if (!at && last && last.layout === layout.group && last.size === size && sameBuffers(last.buffers, bind)) return last.group;
  const all = [paramBuffer!, ...bind];
  let key = `${layout.key}|${size}`;
  for (const b of all) key += `|${bufferId(b)}`;
  if (at) key += `@${at.join(',')}`;
  let g = groups.get(key);
  if (!g) {
    g = device.createBindGroup({
      layout: layout.group,
      entries: all.map((b, i) => ({ binding: i, resource: { buffer: b, offset: i && at ? at[i - 1] : 0, size: i === 0 ? size : Math.min(b.size - (i && at ? at[i - 1] : 0), maxBinding) } })),
    });
    groups.set(key, g);
    for (const b of all) {
      const keys = groupsOf.get(b);
      if (keys) keys.push(key);
      else groupsOf.set(b, [key]);
    }
  }
  lastGroup = at ? null : { layout: layout.group, size, buffers: bind, group: g };
  return g;
}

/**
 * Buffers that captured graphs bind (gpu/graphs.ts), with how many graphs bind each: destroying
 * one (a released segment, a grown scratch buffer) waits until the last such graph is reset.
 */
const graphHeld = new Map<GPUBuffer, number>();
const heldBack = new Set<GPUBuffer>();

/** A graph binds `b` until `unholdBuffer(b)`. */
export function holdBuffer(b: GPUBuffer): void {
  graphHeld.set(b, (graphHeld.get(b) ?? 0) + 1);
}

/** A graph no longer binds `b`: destroyed now if it was retired meanwhile. */
export function unholdBuffer(b: GPUBuffer): void {
  const n = (graphHeld.get(b) ?? 1) - 1;
  if (n > 0) return void graphHeld.set(b, n);
  graphHeld.delete(b);
  if (heldBack.delete(b)) destroyBuffer(b);
}

/** Destroys a buffer and forgets the bind groups that use it (later, if a captured graph binds it). */
export function destroyBuffer(b: GPUBuffer): void {
  if (graphHeld.has(b)) return void heldBack.add(b);
  for (const key of groupsOf.get(b) ?? []) groups.delete(key);
  groupsOf.delete(b);
  lastGroup = null;
  b.destroy();
}

export function buf(id: number): GPUBuffer {
  const b = buffers.get(id);
  if (!b) throw new Error(`segment ${id} does not exist on this device`);
  return b;
}

/**
 * Reserves `words` params words for the next dispatch, aligned for a dynamic offset; returns the
 * first word's index in `paramWords`/`paramFloats` (views of the batch's params block).
 */
export function reserveParams(words: number): number {
  const offset = Math.ceil(paramBytes / paramAlign) * paramAlign;
  const end = offset + words * 4;
  if (end > params.length) {
    const grown = new Uint8Array(new ArrayBuffer(Math.max(params.length * 2, end)));
    grown.set(params.subarray(0, paramBytes));
    params = grown;
    paramWords = new Uint32Array(params.buffer);
    paramFloats = new Float32Array(params.buffer);
  }
  paramWords.fill(0, offset / 4, end / 4);
  paramBytes = end;
  return offset / 4;
}

/**
 * Queues one dispatch whose params were written at word `at` (see `reserveParams`). `key` names
 * the shader (everything its WGSL depends on), so the WGSL is generated once per key.
 */
export function dispatchAt(key: string, make: () => string, bind: GPUBuffer[], at: number, words: number, grid: [number, number, number]): void {
  queueDispatch(kernel(key, make), bind, at, words, grid);
}

/** Queues one dispatch of a compiled kernel (see `dispatchAt`). */
export function queueDispatch(k: Kernel, bind: GPUBuffer[], at: number, words: number, grid: [number, number, number]): void {
  let windows: number[] | undefined;
  for (let i = 0; i < bind.length; i++) {
    const w = windowOf?.get(bind[i]);
    if (w !== undefined) (windows ??= bind.map(() => 0))[i] = w;
    else if (bind[i].size > maxBinding) throw tooLarge(currentCmd ? labelOf(currentCmd) : 'a kernel', bind[i].size, maxBinding);
  }
  pendingBinds.push({ kernel: k, buffers: bind, offset: at * 4, size: words * 4, grid, label, seq: traceSeq, at: windows });
}

/** Queues one dispatch with its params block `p`. */
export function dispatch(key: string, make: () => string, bind: GPUBuffer[], p: ArrayBuffer, grid: [number, number, number]): void {
  const at = reserveParams(p.byteLength / 4);
  params.set(new Uint8Array(p), at * 4);
  dispatchAt(key, make, bind, at, p.byteLength / 4, grid);
}

/** `dispatch` for a shader whose WGSL is its own key. */
export function dispatchCode(code: string, bind: GPUBuffer[], p: ArrayBuffer, grid: [number, number, number]): void {
  dispatch(code, () => code, bind, p, grid);
}

export function grid1d(invocations: number, wg = WG): [number, number, number] {
  const groups = Math.max(1, Math.ceil(invocations / wg));
  return groups <= MAX_X ? [groups, 1, 1] : [MAX_X, Math.ceil(groups / MAX_X), 1];
}

/** The distinct buffers of a dispatch (the output's first) and each input's slot among them. */
export function slotsOf(out: GPUBuffer, inputs: GPUBuffer[]): { bind: GPUBuffer[]; slot: number[] } {
  const bind = [out];
  const slot = inputs.map((b) => {
    const i = bind.indexOf(b);
    return i >= 0 ? i : bind.push(b) - 1;
  });
  return { bind, slot };
}

/**
 * Takes the dispatches recorded since the last batch, with their params block (for a graph's
 * capture, gpu/graphs.ts): the batch is left empty.
 */
export function takeRecorded(): { dispatches: PendingDispatch[]; params: Uint8Array } {
  const taken = { dispatches: pendingBinds.splice(0), params: params.slice(0, Math.ceil(paramBytes / 4) * 4) };
  paramBytes = 0;
  return taken;
}

/** Records pending dispatches into a pass of the current encoder. */
export function encodePending(): void {
  if (!pendingBinds.length) return;
  readyKernels();
  if (!paramBuffer || paramBuffer.size < paramBytes) {
    if (paramBuffer) destroyBuffer(paramBuffer);
    paramBuffer = contextBuffer(device.createBuffer({ size: Math.max(1 << 16, Math.ceil(paramBytes / 4096) * 4096 * 2), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST }));
    paramsWritten = new Uint32Array(paramBuffer.size / 4);
    paramsKnown = 0;
  }
  writeParams(Math.ceil(paramBytes / 4));
  encoder ??= newEncoder();
  if (timer) {
    // Profiling: one timed pass per dispatch, so that the GPU's time is told per command.
    for (const d of pendingBinds) {
      const p = encoder.beginComputePass({ timestampWrites: timer.next(encoder, d.label, d.seq) });
      record(p, d, null);
      p.end();
    }
  } else {
    const p = encoder.beginComputePass();
    let current: GPUComputePipeline | null = null;
    for (const d of pendingBinds) current = record(p, d, current);
    p.end();
  }
  pendingBinds.length = 0;
  paramBytes = 0;
}

/**
 * What the params buffer holds (its first `paramsKnown` words, as last written): a batch whose
 * params are the same bytes skips the write. A loop that repeats one batch (an op and a read,
 * the same step) then writes its params once, not once per batch: a `writeBuffer` is a call into
 * Dawn and a staging copy on the sync point's path.
 */
let paramsWritten = new Uint32Array(0), paramsKnown = 0;

/** Writes the batch's first `words` params words into the params buffer, unless it holds them already. */
function writeParams(words: number): void {
  if (words <= paramsKnown) {
    let i = 0;
    while (i < words && paramWords[i] === paramsWritten[i]) i++;
    if (i === words) return;
  }
  device.queue.writeBuffer(paramBuffer!, 0, params, 0, words * 4);
  paramsWritten.set(paramWords.subarray(0, words));
  paramsKnown = Math.max(paramsKnown, words);
}

/** Records one dispatch into `p`, whose current pipeline is `current`; returns the dispatch's pipeline. */
export function record(p: GPUComputePassEncoder, d: PendingDispatch, current: GPUComputePipeline | null): GPUComputePipeline {
  const { pipeline, layout } = d.kernel;
  if (pipeline !== current) p.setPipeline(pipeline);
  if (layout) p.setBindGroup(0, bindGroup(layout, d.buffers, d.size, d.at), [d.offset]);
  else {
    const entries = [paramBuffer!, ...d.buffers].map((b, i) => {
      const off = i && d.at ? d.at[i - 1] : 0;
      return { binding: i, resource: i === 0 ? { buffer: b, offset: d.offset, size: d.size } : { buffer: b, offset: off, size: Math.min(b.size - off, maxBinding) } };
    });
    p.setBindGroup(0, device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries }));
  }
  p.dispatchWorkgroups(d.grid[0], d.grid[1], d.grid[2]);
  return pipeline;
}

/**
 * A batch is submitted in chunks of about this many dispatches, so that the GPU runs the first
 * ones while the worker encodes the rest: one submit per batch left the GPU idle for the whole
 * encoding (an MLP training step on an H100, 100 steps per batch: worker 1.3 ms and GPU 1.1 ms
 * per step, one after the other). Larger chunks save little: most of a submit's cost is Dawn
 * translating each recorded dispatch (chunks growing to 256 measured the same on the H100).
 * `WEBTORCH_SUBMIT_EVERY=N` sets it; 0 submits only when the worker runs out of commands.
 */
export let submitEvery = 32;

/**
 * Work handed to the queue (submits and writes) so far, and how much of it a sync point has seen
 * finished: a `synchronize` with nothing handed over since asks the queue nothing.
 */
export let queueWork = 0, queueDone = 0;

/** Counts one more piece of work handed to the queue (a submit or a write). */
export function handOver(): void {
  queueWork++;
}

/** Notes that the queue has finished the work handed over up to `n`. */
export function sawDone(n: number): void {
  queueDone = Math.max(queueDone, n);
}
/** Marks (events' records) and dropped uploads still waiting on the device: a `synchronize` waits for them too. */
export let settling = 0;

/** Counts a mark or dropped upload starting (+1) or settling (-1). */
export function settle(delta: number): void {
  settling += delta;
}

/** An encoder made ahead, while the worker waited for the device (see `prepareEncoder`). */
let spareEncoder: GPUCommandEncoder | null = null;

const newEncoder = (): GPUCommandEncoder => {
  const e = spareEncoder ?? device.createCommandEncoder();
  spareEncoder = null;
  return e;
};

/**
 * Makes the next batch's command encoder now, where the worker waits for the device anyway (a
 * read's mapping): the next op after a sync point then does not pay for it on its way to the GPU.
 */
export function prepareEncoder(): void {
  spareEncoder ??= device.createCommandEncoder();
}

/** Ends the recorded dispatches' pass and returns the batch's encoder (created if need be). */
export function openEncoder(): GPUCommandEncoder {
  encodePending();
  return (encoder ??= newEncoder());
}

/** Adopts the device that `init` opened, and the settings read from the environment. */
export function adopt(g: GPU, a: GPUAdapter, d: GPUDevice, dev: RowDevice, variant: number, every: number): void {
  gpu = g;
  adapter = a;
  // (read back, so that a bundler keeps these otherwise write-only variables, and Dawn's instance)
  if (!gpu || !adapter) throw new Error('webtorch: no WebGPU instance or adapter to adopt');
  device = d;
  gpuErrors = [];
  // Handled here, so Dawn does not print it too; the next sync point raises it (`takeErrors`).
  d.addEventListener('uncapturederror', (e) => {
    e.preventDefault();
    gpuErrors.push(e.error);
  });
  paramAlign = d.limits.minStorageBufferOffsetAlignment;
  maxBinding = d.limits.maxStorageBufferBindingSize;
  rowDev = dev;
  matmulVariant = variant;
  submitEvery = every;
}

/** Lets the adapter and instance go (close). */
export function letGo(): void {
  adapter = null;
  gpu = null;
}

/** Submits everything recorded so far. */
export function flush(): void {
  encodePending();
  if (encoder) {
    device.queue.submit([encoder.finish()]);
    encoder = null;
    queueWork++;
  }
  for (const b of retired.splice(0)) destroyBuffer(b);
}