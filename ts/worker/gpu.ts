/**
 * The `gpu:N` worker: one GPUDevice, WGSL kernels, one command encoder per batch.
 *
 * Kernel params of a whole batch go into one buffer (each dispatch binds its slice at an
 * aligned offset), written with `queue.writeBuffer` just before the batch's encoder is
 * submitted, so a batch costs one write and one submit however many ops it holds. Pipelines
 * are cached by their WGSL source. Memory is segments (one GPUBuffer each) that the caching
 * allocator on the calling thread carves into blocks; kernels address tensors by element
 * offsets into their segment, and bind each distinct segment once (see `slotBindings`).
 * Outputs that the 32-bit-only kernels (reduce, matmul) cannot pack are written to a scratch
 * buffer and cast by the copy kernel.
 */
import { StorageCode } from '../dtype.js';
import { env, getGpu } from '../platform.js';
import { MAX_X, WG, checksDivisor, mapInvocations, mapParams, mapShader, mapVec4Shader, scatterShader, vec4Eligible as mapVec4Eligible, type MapKernel } from '../../wgsl/elementwise.js';
import { computeType, elementsPerWord } from '../../wgsl/dtype.js';
import { reduceShader } from '../../wgsl/reduce.js';
import { TILE, TILE_V4, matmulShader, matmulVec4Shader, vec4Eligible } from '../../wgsl/matmul.js';
import { ELEMENTWISE, WGSL_PRELUDE } from '../ops/table.js';
import type { Backend } from './executor.js';
import type { Command, DeviceCheck, DeviceInfo, Place, ViewRef } from './protocol.js';
// The index family.
import { IWG, SORT_BLOCK, cumulativeShader, gatherShader, indexParams, oneHotShader, scalarWord, scatterIndexShader, sortGlobalShader,
  sortInitShader, sortLocalShader, sortOutShader, sortParams, wordDt } from '../../wgsl/index.js';
import type { IndexCommand } from './protocol.js';

const UNARY = new Map(ELEMENTWISE.filter((o) => o.arity === 1).map((o) => [o.code, o]));
const BINARY = new Map(ELEMENTWISE.filter((o) => o.arity === 2).map((o) => [o.code, o]));

/** Dawn tears its instance down once the object from `create()` is collected: keep both alive. */
let gpu: GPU | null = null;
let adapter: GPUAdapter | null = null;
let device: GPUDevice;
let paramAlign = 256;
/**
 * Which matmul kernel (`WEBTORCH_MATMUL`): 0 (default) picks by size between variant 1 (plain
 * tiles) and variant 3 (vectorised, K steps of 16); 1, 2 (vectorised, K steps of 8) and 3 force
 * one wherever it applies. The tests set 3 so that small shapes exercise the vectorised kernel.
 */
let matmulVariant = 0;
let maxBinding = 1 << 27;
const buffers = new Map<number, GPUBuffer>();
const pipelines = new Map<string, GPUComputePipeline>();
let encoder: GPUCommandEncoder | null = null;
let pass: GPUComputePassEncoder | null = null;
let params = new Uint8Array(new ArrayBuffer(1 << 16));
let paramBytes = 0;
let paramBuffer: GPUBuffer | null = null;
const pendingBinds: { pipeline: GPUComputePipeline; buffers: (GPUBuffer | 'params')[]; offset: number; size: number; grid: [number, number, number] }[] = [];
/** Buffers to destroy once the work recorded so far is submitted. */
const retired: GPUBuffer[] = [];
/** Pending validation/out-of-memory checks of submitted batches. */
const errorChecks: Promise<GPUError | null>[] = [];
let scoped = false;

/** Catches validation and out-of-memory errors of the work recorded until the next flush. */
function openScope(): void {
  if (scoped) return;
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  scoped = true;
}

/** Throws the first GPU error of the batches submitted so far. */
async function checkErrors(): Promise<void> {
  const errs = await Promise.all(errorChecks.splice(0));
  const e = errs.find((x) => x);
  if (e) {
    const err = new Error(e.message);
    if (e.constructor.name === 'GPUOutOfMemoryError') err.name = 'OutOfMemoryError';
    throw err;
  }
}

/** The pipeline for a shader key; `make` writes the WGSL only on a cache miss. */
function pipeline(key: string, make: () => string): GPUComputePipeline {
  let p = pipelines.get(key);
  if (!p) {
    const code = make();
    p = device.createComputePipeline({ layout: 'auto', compute: { module: device.createShaderModule({ code }), entryPoint: 'main' } });
    pipelines.set(key, p);
  }
  return p;
}

function buf(id: number): GPUBuffer {
  const b = buffers.get(id);
  if (!b) throw new Error(`segment ${id} does not exist on this device`);
  return b;
}

/**
 * Queues one dispatch; its params are appended to the batch's params block. `key` names the
 * shader (everything its WGSL depends on), so the WGSL is generated once per key.
 */
function dispatch(key: string, make: () => string, bind: GPUBuffer[], p: ArrayBuffer, grid: [number, number, number]): void {
  openScope();
  const offset = Math.ceil(paramBytes / paramAlign) * paramAlign;
  if (offset + p.byteLength > params.length) {
    const grown = new Uint8Array(new ArrayBuffer(Math.max(params.length * 2, offset + p.byteLength)));
    grown.set(params.subarray(0, paramBytes));
    params = grown;
  }
  params.set(new Uint8Array(p), offset);
  paramBytes = offset + p.byteLength;
  pendingBinds.push({ pipeline: pipeline(key, make), buffers: ['params', ...bind], offset, size: p.byteLength, grid });
}

/** `dispatch` for a shader whose WGSL is its own key. */
function dispatchCode(code: string, bind: GPUBuffer[], p: ArrayBuffer, grid: [number, number, number]): void {
  dispatch(code, () => code, bind, p, grid);
}

function grid1d(invocations: number, wg = WG): [number, number, number] {
  const groups = Math.max(1, Math.ceil(invocations / wg));
  return groups <= MAX_X ? [groups, 1, 1] : [MAX_X, Math.ceil(groups / MAX_X), 1];
}

/** The distinct buffers of a dispatch (the output's first) and each input's slot among them. */
function slotsOf(out: GPUBuffer, inputs: GPUBuffer[]): { bind: GPUBuffer[]; slot: number[] } {
  const bind = [out];
  const slot = inputs.map((b) => {
    const i = bind.indexOf(b);
    return i >= 0 ? i : bind.push(b) - 1;
  });
  return { bind, slot };
}

const contiguousIn = (r: ViewRef, shape: number[]): boolean => {
  let acc = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    if (shape[d] !== 1 && r.strides[d] !== acc) return false;
    acc *= shape[d];
  }
  return true;
};

/**
 * Runs a map kernel `expr` over strided inputs into `out` (a buffer and an element offset).
 * An expression with a device check (see wgsl/elementwise.ts) reports `check` at the next sync point.
 */
function runMap(
  inputs: { r: ViewRef; dt: StorageCode; b?: GPUBuffer }[], shape: number[], out: GPUBuffer, outOffset: number, outDt: StorageCode,
  expr: string, exprType: 'f32' | 'i32', scalars: number[] = [], check?: DeviceCheck,
): void {
  const n = shape.reduce((a, b) => a * b, 1);
  if (n === 0) return;
  const { bind, slot } = slotsOf(out, inputs.map((i) => i.b ?? buf(i.r.id)));
  const code = checksDivisor(expr) ? checkCode('binary', check?.message ?? 'ZeroDivisionError: integer division by zero') : 0;
  const k: MapKernel = {
    rank: shape.length, slots: bind.length, outDt, expr, exprType, prelude: WGSL_PRELUDE,
    inputs: inputs.map(({ r, dt }, j) => ({ dt, contiguous: contiguousIn(r, shape), slot: slot[j] })),
  };
  const params = mapParams(n, shape, outOffset, inputs.map((i) => i.r), scalars, code);
  if (code) bind.push(deviceErrors!);
  const base = `${k.rank}|${k.slots}|${outDt}|${exprType}|${k.inputs.map((i) => `${i.dt}${i.contiguous ? 'c' : 's'}${i.slot}`).join(',')}|${expr}`;
  if (mapVec4Eligible(k, outOffset, inputs.map((i) => i.r))) {
    dispatch(`map4|${base}`, () => mapVec4Shader(k), bind, params, grid1d(Math.ceil(n / 4)));
  } else {
    dispatch(`map|${base}`, () => mapShader(k), bind, params, grid1d(mapInvocations(n, outDt)));
  }
}

/** Runs `write` into a 32-bit target (the output itself, or a scratch buffer cast into a packed output). */
function viaScratch(out: Place, outDt: StorageCode, n: number, srcDt: StorageCode, write: (target: GPUBuffer, offset: number) => void): void {
  if (elementsPerWord(outDt) === 1) return write(buf(out.id), out.offset);
  const tmp = device.createBuffer({ size: Math.max(4, n * 4), usage: GPUBufferUsage.STORAGE });
  retired.push(tmp);
  write(tmp, 0);
  runMap([{ r: { id: -1, strides: [1], offset: 0 }, dt: srcDt, b: tmp }], [n], buf(out.id), out.offset, outDt, 'x0', computeType(srcDt));
}

function run(cmd: Command): void {
  switch (cmd.k) {
    case 'segment':
      openScope();
      buffers.set(cmd.id, device.createBuffer({
        size: Math.max(4, Math.ceil(cmd.bytes / 4) * 4),
        usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
      }));
      return;
    case 'release':
      retired.push(buf(cmd.id));
      buffers.delete(cmd.id);
      return;
    case 'write':
      write(cmd.id, cmd.byteOffset, cmd.data);
      return;
    case 'fill': {
      const e = computeType(cmd.dt) === 'f32' ? 's0' : 'i32(s0)';
      runMap([], [cmd.n], buf(cmd.out.id), cmd.out.offset, cmd.dt, e, computeType(cmd.dt), [cmd.value]);
      return;
    }
    case 'arange': {
      const e = computeType(cmd.dt) === 'f32' ? 's0 + f32(i) * s1' : 'i32(s0) + i32(i) * i32(s1)';
      runMap([], [cmd.n], buf(cmd.out.id), cmd.out.offset, cmd.dt, e, computeType(cmd.dt), [cmd.start, cmd.step]);
      return;
    }
    case 'copy':
      runMap([{ r: cmd.src, dt: cmd.srcDt }], cmd.shape, buf(cmd.out.id), cmd.out.offset, cmd.dt, 'x0', computeType(cmd.srcDt));
      return;
    case 'copyInto': {
      const n = cmd.shape.reduce((a, b) => a * b, 1);
      if (n === 0) return;
      const { bind, slot } = slotsOf(buf(cmd.dst.id), [buf(cmd.src.id)]);
      dispatch(`scatter|${cmd.shape.length}|${cmd.srcDt}|${cmd.dt}|${slot[0]}|${bind.length}`, () => scatterShader(cmd.shape.length, cmd.srcDt, cmd.dt, slot[0], bind.length), bind,
        mapParams(n, cmd.shape, 0, [cmd.src, cmd.dst]), grid1d(n));
      return;
    }
    case 'unary':
    case 'binary': {
      const op = (cmd.k === 'unary' ? UNARY : BINARY).get(cmd.op)!;
      const t = computeType(cmd.dt);
      const expr = t === 'f32' ? op.wgsl.f32 : op.wgsl.i32;
      if (!expr) throw new Error(`${op.name} has no ${t} kernel`);
      const ins = cmd.k === 'unary' ? [{ r: cmd.a, dt: cmd.dt }] : [{ r: cmd.a, dt: cmd.dt }, { r: cmd.b, dt: cmd.dt }];
      const scalars = cmd.k === 'unary' ? cmd.s : [cmd.alpha];
      runMap(ins, cmd.shape, buf(cmd.out.id), cmd.out.offset, cmd.outDt, expr, op.dtypes === 'bool' ? 'i32' : t, scalars, cmd.k === 'binary' ? cmd.check : undefined);
      return;
    }
    case 'where':
      runMap([{ r: cmd.c, dt: StorageCode.Bool }, { r: cmd.a, dt: cmd.dt }, { r: cmd.b, dt: cmd.dt }], cmd.shape, buf(cmd.out.id), cmd.out.offset,
        cmd.dt, `select(x2, x1, x0 != 0i)`, computeType(cmd.dt));
      return;
    case 'reduce': {
      if (cmd.outer === 0) return;
      const indexOut = cmd.op === 4 || cmd.op === 5 || cmd.op === 6 || cmd.op === 7;
      const kernelOut = indexOut || computeType(cmd.dt) === 'i32' ? StorageCode.I32 : StorageCode.F32;
      viaScratch(cmd.out, cmd.outDt, cmd.outer, kernelOut, (target, offset) => {
        const { bind, slot } = slotsOf(target, [buf(cmd.a.id)]);
        const p = new Uint32Array([cmd.outer, cmd.inner, cmd.a.offset, offset]).buffer;
        dispatch(`reduce|${cmd.op}|${cmd.dt}|${slot[0]}|${bind.length}`, () => reduceShader(cmd.op, cmd.dt, slot[0], bind.length), bind, p, grid1d(cmd.outer, 1));
      });
      return;
    }
    case 'matmul': {
      const { m, n, kk, batch } = cmd;
      if (batch * m * n === 0) return;
      viaScratch(cmd.out, cmd.dt, batch * m * n, StorageCode.F32, (target, offset) => {
        const { bind, slot } = slotsOf(target, [buf(cmd.a.id), buf(cmd.b.id)]);
        const p = new Uint32Array([m, n, kk, cmd.a.offset, ...cmd.aStrides, cmd.b.offset, ...cmd.bStrides, offset]).buffer;
        // Variant 2 wins from about 2048² outputs on an H200 (26.8 vs 22.2 TFLOP/s at 4096³); below,
        // variant 1's smaller tiles keep more of the GPU busy (9.5 vs 8.3 TFLOP/s at 1024³).
        const vec4 = cmd.dt === StorageCode.F32 && matmulVariant !== 1 && (matmulVariant >= 2 || m * n >= 1536 * 1024) &&
          vec4Eligible(m, n, kk, { offset: cmd.a.offset, strides: cmd.aStrides }, { offset: cmd.b.offset, strides: cmd.bStrides }, offset);
        const slots = `${slot[0]}|${slot[1]}|${bind.length}`;
        const bk = matmulVariant === 2 ? 8 : 16;
        if (vec4) dispatch(`mm4|${bk}|${slots}`, () => matmulVec4Shader(slot[0], slot[1], bind.length, bk), bind, p, [Math.ceil(n / TILE_V4), Math.ceil(m / TILE_V4), batch]);
        else dispatch(`mm|${cmd.dt}|${slots}`, () => matmulShader(cmd.dt, slot[0], slot[1], bind.length), bind, p, [Math.ceil(n / TILE), Math.ceil(m / TILE), batch]);
      });
      return;
    }
    // The index family.
    case 'gather': case 'scatter': case 'cumulative': case 'sort': case 'oneHot':
      runIndex(cmd);
      return;
    default:
      throw new Error(`unknown command ${cmd.k}`);
  }
}

/** Records pending dispatches into a pass of the current encoder. */
function encodePending(): void {
  if (!pendingBinds.length) return;
  if (!paramBuffer || paramBuffer.size < paramBytes) {
    paramBuffer?.destroy();
    paramBuffer = device.createBuffer({ size: Math.max(1 << 16, Math.ceil(paramBytes / 4096) * 4096 * 2), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  }
  device.queue.writeBuffer(paramBuffer, 0, params, 0, Math.ceil(paramBytes / 4) * 4);
  encoder ??= device.createCommandEncoder();
  pass = encoder.beginComputePass();
  for (const d of pendingBinds) {
    const entries = d.buffers.map((b, i) => ({
      binding: i,
      resource: b === 'params' ? { buffer: paramBuffer!, offset: d.offset, size: d.size } : { buffer: b, size: Math.min(b.size, maxBinding) },
    }));
    pass.setPipeline(d.pipeline);
    pass.setBindGroup(0, device.createBindGroup({ layout: d.pipeline.getBindGroupLayout(0), entries }));
    pass.dispatchWorkgroups(...d.grid);
  }
  pass.end();
  pass = null;
  pendingBinds.length = 0;
  paramBytes = 0;
}

/** Submits everything recorded so far. */
function flush(): void {
  encodePending();
  if (encoder) {
    device.queue.submit([encoder.finish()]);
    encoder = null;
  }
  for (const b of retired.splice(0)) b.destroy();
  if (scoped) {
    errorChecks.push(device.popErrorScope(), device.popErrorScope());
    scoped = false;
  }
}

function write(id: number, byteOffset: number, data: ArrayBuffer): void {
  flush();
  const padded = data.byteLength % 4 ? new Uint8Array(Math.ceil(data.byteLength / 4) * 4) : new Uint8Array(data);
  if (padded.buffer !== data) padded.set(new Uint8Array(data));
  device.queue.writeBuffer(buf(id), byteOffset, padded);
}

async function read(id: number, byteOffset: number, bytes: number): Promise<ArrayBuffer> {
  flush();
  if (bytes === 0) return new ArrayBuffer(0);
  const start = byteOffset & ~3, size = Math.ceil((byteOffset + bytes) / 4) * 4 - start;
  const staging = device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(buf(id), start, staging, 0, size);
  device.queue.submit([enc.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const out = staging.getMappedRange().slice(byteOffset - start, byteOffset - start + bytes);
  staging.unmap();
  staging.destroy();
  await checkErrors();
  await checkDeviceErrors();
  return out;
}

// ---- Device checks (see DeviceCheck in protocol.ts; `errorBinding` in wgsl/index.ts) ----

/** The device's error words, and the messages of checking dispatches since the last check, with their codes. */
let deviceErrors: GPUBuffer | null = null;
const checkCodes = new Map<string, number>();

/**
 * Registers a checking dispatch of command `k` (and creates the error buffer, which the caller
 * binds after its storages); returns the code its kernel records on bad data, one per message.
 */
function checkCode(k: string, message: string): number {
  deviceErrors ??= device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  const key = `${k} failed on device: ${message}`;
  const code = checkCodes.get(key) ?? checkCodes.size + 1;
  checkCodes.set(key, code);
  return code;
}

/** Throws the first failed check recorded since the last one (the sync points call it), and clears it. */
async function checkDeviceErrors(): Promise<void> {
  if (!checkCodes.size) return;
  flush();
  const messages = [...checkCodes.keys()];
  checkCodes.clear();
  const staging = device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(deviceErrors!, 0, staging, 0, 16);
  enc.clearBuffer(deviceErrors!);
  device.queue.submit([enc.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const [code, bad] = new Int32Array(staging.getMappedRange().slice(0));
  staging.unmap();
  staging.destroy();
  if (code) throw new Error(messages[code - 1].replace('%d', String(bad)));
}

// ---- The index family (wgsl/index.ts): gather, scatter, cumulative, sort, one_hot ----

const count = (shape: number[]) => shape.reduce((a, b) => a * b, 1);

function runIndex(cmd: IndexCommand): void {
  switch (cmd.k) {
    case 'gather': {
      const n = count(cmd.shape);
      if (!n) return;
      const { bind, slot } = slotsOf(buf(cmd.out.id), [buf(cmd.x.id), buf(cmd.idx.id)]);
      const p = indexParams(n, cmd.shape, cmd.out.offset, [cmd.x, cmd.idx], [cmd.dimStride, cmd.check.size, +cmd.check.wrap, checkCode(cmd.k, cmd.check.message)]);
      dispatchCode(gatherShader(cmd.shape.length, cmd.dt, slot[0], slot[1], bind.length), [...bind, deviceErrors!], p, grid1d(Math.ceil(n / elementsPerWord(cmd.dt))));
      return;
    }
    case 'scatter': {
      const n = count(cmd.shape), m = count(cmd.idxShape), wdt = wordDt(cmd.dt);
      if (!n) return;
      viaScratch(cmd.out, cmd.dt, n, wdt, (target, offset) => {
        runMap([{ r: cmd.x, dt: cmd.dt }], cmd.shape, target, offset, wdt, 'x0', computeType(cmd.dt));
        if (!m) return;
        const { bind, slot } = slotsOf(target, [buf(cmd.idx.id), ...(cmd.src ? [buf(cmd.src.id)] : [])]);
        const views = [{ offset, strides: cmd.dstStrides }, cmd.idx, cmd.src ?? { offset: 0, strides: [] }];
        const extra = [cmd.dimStride, cmd.check.size, +cmd.check.wrap, checkCode(cmd.k, cmd.check.message), scalarWord(cmd.value, computeType(cmd.dt))];
        dispatchCode(scatterIndexShader(cmd.idxShape.length, cmd.dt, cmd.add, slot[0], cmd.src ? slot[1] : -1, bind.length), [...bind, deviceErrors!],
          indexParams(m, cmd.idxShape, 0, views, extra), grid1d(m));
      });
      return;
    }
    case 'cumulative': {
      const lines = count(cmd.lines);
      if (!lines || !cmd.len) return;
      viaScratch(cmd.out, cmd.outDt, lines * cmd.len, wordDt(cmd.dt), (target, offset) => {
        const { bind, slot } = slotsOf(target, [buf(cmd.x.id)]);
        dispatchCode(cumulativeShader(cmd.lines.length, cmd.dt, cmd.prod, slot[0], bind.length), bind,
          indexParams(lines, cmd.lines, offset, [cmd.x], [cmd.len, cmd.dimStride, cmd.inner]), grid1d(lines));
      });
      return;
    }
    case 'sort': {
      const { len, inner } = cmd, n = cmd.outer * len * inner;
      if (!n) return;
      const padded = 2 ** Math.ceil(Math.log2(len)), total = (n / len) * padded, blocks = Math.ceil(total / SORT_BLOCK);
      const tmp = device.createBuffer({ size: total * 8, usage: GPUBufferUsage.STORAGE });
      retired.push(tmp);
      const params = (k = 0, j = 0) => sortParams(total, padded, len, inner, cmd.x.offset, k, j, cmd.out.offset, n);
      const init = slotsOf(tmp, [buf(cmd.x.id)]);
      dispatchCode(sortInitShader(cmd.dt, cmd.descending, init.slot[0], init.bind.length), init.bind, params(), grid1d(total));
      dispatchCode(sortLocalShader(false), [tmp], params(), grid1d(blocks * IWG));
      for (let k = 2 * SORT_BLOCK; k <= padded; k *= 2) {
        for (let j = k / 2; j >= SORT_BLOCK; j /= 2) dispatchCode(sortGlobalShader(), [tmp], params(k, j), grid1d(total / 2));
        dispatchCode(sortLocalShader(true), [tmp], params(k), grid1d(blocks * IWG));
      }
      dispatchCode(sortOutShader(), [buf(cmd.out.id), tmp], params(), grid1d(n));
      return;
    }
    case 'oneHot': {
      const n = cmd.n * cmd.classes;
      if (!n) return;
      const { bind, slot } = slotsOf(buf(cmd.out.id), [buf(cmd.idx.id)]);
      const p = new Uint32Array([n, cmd.classes, cmd.idx.offset, cmd.out.offset, checkCode(cmd.k, cmd.check.message)]).buffer;
      dispatchCode(oneHotShader(slot[0], bind.length), [...bind, deviceErrors!], p, grid1d(n));
      return;
    }
  }
}

/** The gpu device backend. */
export const gpuBackend: Backend = {
  async init({ name }): Promise<DeviceInfo> {
    matmulVariant = Number(env('WEBTORCH_MATMUL') ?? 0);
    gpu = await getGpu();
    if (!gpu) throw new Error('WebGPU is not available on this platform (no navigator.gpu)');
    const found = await gpu.requestAdapter({ powerPreference: 'high-performance' });
    if (!found) throw new Error('no WebGPU adapter was found');
    adapter = found;
    const want: GPUFeatureName[] = ['shader-f16', 'timestamp-query', 'subgroups'];
    const features = want.filter((f) => found.features.has(f));
    const limitNames = ['maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize', 'maxComputeInvocationsPerWorkgroup', 'minStorageBufferOffsetAlignment', 'maxStorageBuffersPerShaderStage'] as const;
    const requiredLimits: Record<string, number> = {};
    for (const l of limitNames) requiredLimits[l] = found.limits[l];
    device = await found.requestDevice({ requiredFeatures: features, requiredLimits });
    paramAlign = device.limits.minStorageBufferOffsetAlignment;
    maxBinding = device.limits.maxStorageBufferBindingSize;
    const info = found.info;
    const limits: Record<string, number> = {};
    for (const l of limitNames) limits[l] = device.limits[l];
    return {
      name, kind: 'gpu', vendor: info.vendor, architecture: info.architecture, description: info.description || info.device,
      features: [...found.features].map(String).sort(), limits, nativeF16: features.includes('shader-f16'),
    };
  },
  run,
  flush,
  read,
  write,
  async idle() {
    flush();
    await device.queue.onSubmittedWorkDone();
    await checkErrors();
    await checkDeviceErrors();
  },
  async close() {
    flush();
    // Dawn aborts if a device dies with popErrorScope promises pending: settle them first.
    await device?.queue.onSubmittedWorkDone();
    await Promise.allSettled(errorChecks.splice(0));
    for (const b of buffers.values()) b.destroy();
    buffers.clear();
    device?.destroy();
    adapter = null;
    gpu = null;
  },
};

