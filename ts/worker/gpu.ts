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
import { MAX_X, WG, checksDivisor, mapInvocations, mapParamWords, mapParams, mapShader, mapVec4Shader, scatterShader, type MapKernel } from '../../wgsl/elementwise.js';
import { computeType, elementsPerWord, invocationsFor, valueClass, type ValueClass } from '../../wgsl/dtype.js';
import { RWG, ReduceOp, reduce64Shader, reduceShader, rowDevice, rowForm, type RowDevice } from '../../wgsl/reduce.js';
import { chooseMatmul, matmulVariantGrid, matmulVariantShader, tiledEligible } from '../../wgsl/matmul.js';
import { vec4Dtype } from '../../wgsl/half.js'; // f16: 16-bit floats on the vec4 paths
import { chooseF16Path, half } from './half.js'; // f16: which float16 path (shader-f16 or storage)
import { rowNormKey, rowNormShader } from '../../wgsl/softmax.js';
import { WINDOW_PARAMS, WINDOW_WG, windowKey, windowShader } from '../../wgsl/window.js';
import { ELEMENTWISE, WGSL_PRELUDE } from '../ops/table.js';
import type { Backend } from './executor.js';
import type { Command, DeviceCheck, DeviceInfo, Place, ViewRef } from './protocol.js';
import { chunks, tooLarge } from './split.js';
import { contextBuffer, countBuffers, createScratch, scratchCounter, setPressureHandler, settleDrop } from './scratch.js';
// The index family.
import { IWG, SORT_BLOCK, cumulativeShader, gatherShader, indexParams, oneHotShader, scalarWord, scatterIndexShader, sortGlobalShader,
  sortInitShader, sortLocalShader, sortOutShader, sortParams, wordDt } from '../../wgsl/index.js';
import type { IndexCommand } from './protocol.js';
// Random numbers.
import { RANDOM_PARAM_WORDS, RANDOM_WG, randomBlocks, randomShader } from '../../wgsl/random.js';
import type { RandomCommand } from './protocol.js';

const UNARY = new Map(ELEMENTWISE.filter((o) => o.arity === 1).map((o) => [o.code, o]));
const BINARY = new Map(ELEMENTWISE.filter((o) => o.arity === 2).map((o) => [o.code, o]));

/** Dawn tears its instance down once the object from `create()` is collected: keep both alive. */
let gpu: GPU | null = null;
let adapter: GPUAdapter | null = null;
let device: GPUDevice;
let paramAlign = 256;
/**
 * Which matmul kernel (`WEBTORCH_MATMUL`): 0 (default) lets `chooseMatmul` pick by shape
 * (variants 1, 6 and 10; bench/MATMUL-VARIANTS.md says why); a variant's number forces it
 * wherever it applies (test/backend/matmul-variants.test.ts runs the goldens under several).
 */
let matmulVariant = 0;
/**
 * The adapter as the kernel choices weigh it, read once at init: its subgroups, whether it is a
 * CPU adapter (lavapipe: row kernels, conv windows and short matmuls take their CPU forms there),
 * and `WEBTORCH_ROWS`.
 */
let rowDev: RowDevice = { subgroups: false, cpu: false, subgroupMinSize: 32 };
let maxBinding = 1 << 27;
const buffers = new Map<number, GPUBuffer>();
/** A compiled kernel; `layout` is null for a shader whose bindings `layoutOf` cannot read (bound the slow way). */
interface Kernel {
  pipeline: GPUComputePipeline;
  layout: { key: string; group: GPUBindGroupLayout } | null;
}
const kernels = new Map<string, Kernel>();
/** Bind group layouts by their bindings' access ('r' read, 'w' read_write), the params binding first. */
const layouts = new Map<string, GPUBindGroupLayout>();
/** Bind groups by (layout, params size, buffers); dropped when one of their buffers is destroyed. */
const groups = new Map<string, GPUBindGroup>();
const groupsOf = new Map<GPUBuffer, string[]>();
const bufferIds = new WeakMap<GPUBuffer, number>();
let nextBufferId = 1;
let encoder: GPUCommandEncoder | null = null;
let params = new Uint8Array(new ArrayBuffer(1 << 16));
let paramWords = new Uint32Array(params.buffer);
let paramFloats = new Float32Array(params.buffer);
let paramBytes = 0;
let paramBuffer: GPUBuffer | null = null;
/** A recorded dispatch; `label` names its command while the worker's profile times passes. */
interface PendingDispatch { kernel: Kernel; buffers: GPUBuffer[]; offset: number; size: number; grid: [number, number, number]; label: string; seq: number; at?: number[] }
/** While a launch runs in chunks (ts/worker/split.ts): the byte offset of each windowed buffer's binding. */
let windowOf: Map<GPUBuffer, number> | null = null;
/** The command being run, for the error of an op over a buffer larger than one binding. */
let currentCmd: Command | null = null;
const pendingBinds: PendingDispatch[] = [];
/** Buffers to destroy once the work recorded so far is submitted. */
const retired: GPUBuffer[] = [];
/** Pending validation/out-of-memory checks of submitted batches. */
const errorChecks: Promise<GPUError | null>[] = [];
let scoped = false;

/**
 * Catches validation and out-of-memory errors of the work recorded until the next sync point.
 * The scope stays open across submits and is popped only where the worker waits anyway: a
 * pending `popErrorScope` makes Dawn's Node binding poll the device with `setImmediate` until it
 * settles, which took a fifth of the worker's time on lavapipe when every submit popped one.
 */
function openScope(): void {
  if (scoped) return;
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  scoped = true;
}

/** Pops the open error scope, if any, into `errorChecks`. */
function closeScope(): void {
  if (!scoped) return;
  errorChecks.push(device.popErrorScope(), device.popErrorScope());
  scoped = false;
}

/** Throws the first GPU error of the batches submitted so far. */
async function checkErrors(): Promise<void> {
  closeScope();
  const errs = await Promise.all(errorChecks.splice(0));
  const e = errs.find((x) => x);
  if (e) {
    const err = new Error(e.message);
    if (e.constructor.name === 'GPUOutOfMemoryError') err.name = 'OutOfMemoryError';
    throw err;
  }
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

/** Compiles a kernel: its pipeline, with the bind group layout read from its WGSL where it can be. */
function compile(code: string): Kernel {
  const layout = layoutOf(code);
  const module = device.createShaderModule({ code });
  return {
    pipeline: device.createComputePipeline({
      layout: layout ? device.createPipelineLayout({ bindGroupLayouts: [layout.group] }) : 'auto', compute: { module, entryPoint: 'main' },
    }),
    layout,
  };
}

/** The kernel for a shader key; `make` writes the WGSL only on a cache miss. */
function kernel(key: string, make: () => string): Kernel {
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
function bindGroup(layout: NonNullable<Kernel['layout']>, bind: GPUBuffer[], size: number, at?: number[]): GPUBindGroup {
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

/** Destroys a buffer and forgets the bind groups that use it. */
function destroyBuffer(b: GPUBuffer): void {
  for (const key of groupsOf.get(b) ?? []) groups.delete(key);
  groupsOf.delete(b);
  lastGroup = null;
  b.destroy();
}

function buf(id: number): GPUBuffer {
  const b = buffers.get(id);
  if (!b) throw new Error(`segment ${id} does not exist on this device`);
  return b;
}

/**
 * Reserves `words` params words for the next dispatch, aligned for a dynamic offset; returns the
 * first word's index in `paramWords`/`paramFloats` (views of the batch's params block).
 */
function reserveParams(words: number): number {
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
function dispatchAt(key: string, make: () => string, bind: GPUBuffer[], at: number, words: number, grid: [number, number, number]): void {
  queueDispatch(kernel(key, make), bind, at, words, grid);
}

/** Queues one dispatch of a compiled kernel (see `dispatchAt`). */
function queueDispatch(k: Kernel, bind: GPUBuffer[], at: number, words: number, grid: [number, number, number]): void {
  openScope();
  let windows: number[] | undefined;
  for (let i = 0; i < bind.length; i++) {
    const w = windowOf?.get(bind[i]);
    if (w !== undefined) (windows ??= bind.map(() => 0))[i] = w;
    else if (bind[i].size > maxBinding) throw tooLarge(currentCmd ? labelOf(currentCmd) : 'a kernel', bind[i].size, maxBinding);
  }
  pendingBinds.push({ kernel: k, buffers: bind, offset: at * 4, size: words * 4, grid, label, seq: traceSeq, at: windows });
}

/** Queues one dispatch with its params block `p`. */
function dispatch(key: string, make: () => string, bind: GPUBuffer[], p: ArrayBuffer, grid: [number, number, number]): void {
  const at = reserveParams(p.byteLength / 4);
  params.set(new Uint8Array(p), at * 4);
  dispatchAt(key, make, bind, at, p.byteLength / 4, grid);
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

/** An input of a map kernel: a strided view (of `b`, or of segment `r.id`), or a JS scalar's storage bits. */
interface MapOperand {
  r: ViewRef | number;
  dt: StorageCode;
  b?: GPUBuffer;
}

/** Short ids of map expressions, for shader keys (the table's strings hash once). */
const exprIds = new Map<string, number>();
const NO_SCALARS: number[] = [];
/**
 * Map kernels by a numeric key: the elementwise launch path runs once per op, and hashing a
 * freshly built string key cost about 1 µs per op in the H100 worker's profile.
 */
const mapKernels = new Map<number, Kernel>();

/**
 * Runs a map kernel `expr` over strided inputs into `out` (a buffer and an element offset).
 * An expression with a device check (see wgsl/elementwise.ts) reports `check` at the next sync point.
 * This is the launch path of every elementwise op, so it keys the shader by a number (see
 * `mapKey`) and writes the params straight into the batch's params block; the kernel's
 * description is built only when its WGSL is.
 */
function runMap(
  inputs: MapOperand[], shape: number[], out: GPUBuffer, outOffset: number, outDt: StorageCode,
  expr: string, exprType: ValueClass, scalars: number[] = NO_SCALARS, check?: DeviceCheck,
): void {
  let n = 1;
  for (const d of shape) n *= d;
  if (n === 0) return;
  if (!windowOf) {
    let large = out.size > maxBinding;
    for (let j = 0; !large && j < inputs.length; j++) {
      const r = inputs[j].r;
      large = typeof r !== 'number' && (inputs[j].b ?? buf(r.id)).size > maxBinding;
    }
    if (large) return runMapChunks(inputs, shape, n, out, outOffset, outDt, expr, exprType, scalars, check);
  }
  let exprId = exprIds.get(expr);
  if (exprId === undefined) exprIds.set(expr, (exprId = exprIds.size));
  const bind = [out];
  // The vec4 path (wgsl/elementwise.ts): strided inputs need the 4 lanes of a word in one row.
  const rowsOf4 = shape.length <= 1 || shape[shape.length - 1] % 4 === 0;
  let vec4 = vec4Dtype(outDt) && outOffset % 4 === 0 && out.size >= 16; // f16: 16-bit floats too (wgsl/half.ts); a binding holds a whole vec4
  // per input: 1 + dt + 16 × (0 scalar, 1 contiguous, 2 strided) + 48 × slot, in 9 bits each;
  // on the vec4 path, contiguous means 16-byte words (offset a multiple of 4)
  let inputKey = 0, vec4Key = 0;
  for (const inp of inputs) {
    const wide = vec4Dtype(inp.dt); // f16: 16-bit floats too
    if (typeof inp.r === 'number') {
      inputKey = inputKey * 512 + 1 + inp.dt;
      vec4Key = vec4Key * 512 + 1 + inp.dt;
      vec4 &&= wide;
      continue;
    }
    const b = inp.b ?? buf(inp.r.id);
    let slot = bind.indexOf(b);
    if (slot < 0) slot = bind.push(b) - 1;
    if (b.size < 16) vec4 = false; // f16: a binding holds a whole vec4
    const contiguous = contiguousIn(inp.r, shape), words = contiguous && inp.r.offset % 4 === 0;
    inputKey = inputKey * 512 + 1 + inp.dt + 16 * (contiguous ? 1 : 2) + 48 * slot;
    vec4Key = vec4Key * 512 + 1 + inp.dt + 16 * (words ? 1 : 2) + 48 * slot;
    vec4 &&= wide && (words || rowsOf4);
  }
  if (vec4) inputKey = vec4Key;
  const code = checksDivisor(expr) ? checkCode('binary', check?.message ?? 'ZeroDivisionError: integer division by zero') : 0;
  if (code) bind.push(deviceErrors!);
  // The params block (see wgsl/elementwise.ts): n, shape, output offset, views (a scalar's bits in its offset word), scalars, check code.
  const words = mapParamWords(inputs.length), at = reserveParams(words);
  paramWords[at] = n;
  for (let d = 0; d < shape.length; d++) paramWords[at + 1 + d] = shape[d];
  paramWords[at + 9] = outOffset;
  for (let j = 0; j < inputs.length; j++) {
    const r = inputs[j].r, base = at + 10 + j * 9;
    if (typeof r === 'number') {
      paramWords[base] = r;
      continue;
    }
    paramWords[base] = r.offset;
    for (let d = 0; d < r.strides.length; d++) paramWords[base + 1 + d] = r.strides[d];
  }
  const sBase = at + 10 + inputs.length * 9;
  for (let j = 0; j < scalars.length; j++) paramFloats[sBase + j] = scalars[j];
  paramWords[sBase + 4] = code;
  paramWords[sBase + 5] = code && check?.overflow ? checkCode('binary', check.overflow) : 0;
  // exprId (10 bits), rank (4), bound buffers (3), output dtype (3), expression class (2), vec4 (1), inputs (9 each, at most 3)
  if (exprId >= 1024 || inputs.length > 3) throw new Error(`map kernel key overflow (${inputs.length} inputs, expression ${exprId})`);
  const cls = exprType === 'f32' ? 2 : exprType === 'i64' ? 1 : 0;
  const key = ((((exprId * 16 + shape.length) * 8 + bind.length) * 8 + outDt) * 8 + cls * 2 + (vec4 ? 1 : 0)) * 2 ** 27 + inputKey;
  let kernel = mapKernels.get(key);
  if (!kernel) {
    const k: MapKernel = { rank: shape.length, slots: code ? bind.length - 1 : bind.length, outDt, expr, exprType, prelude: WGSL_PRELUDE, inputs: mapInputs(inputs, bind, shape, vec4), nativeF16: half.native };
    kernel = compile(vec4 ? mapVec4Shader(k) : mapShader(k));
    mapKernels.set(key, kernel);
  }
  queueDispatch(kernel, bind, at, words, grid1d(vec4 ? Math.ceil(n / 4) : mapInvocations(n, outDt)));
}

/** `runMap` over buffers larger than one binding: contiguous 32-bit operands, in chunks (ts/worker/split.ts). */
function runMapChunks(
  inputs: MapOperand[], shape: number[], n: number, out: GPUBuffer, outOffset: number, outDt: StorageCode,
  expr: string, exprType: ValueClass, scalars: number[], check?: DeviceCheck,
): void {
  const views = inputs.filter((i): i is MapOperand & { r: ViewRef } => typeof i.r !== 'number');
  const biggest = Math.max(out.size, ...views.map((i) => (i.b ?? buf(i.r.id)).size));
  const label = currentCmd ? labelOf(currentCmd) : 'a map kernel';
  if (elementsPerWord(outDt) !== 1 || views.some((i) => elementsPerWord(i.dt) !== 1 || !contiguousIn(i.r, shape))) throw tooLarge(label, biggest, maxBinding, 'it has strided, 16/8-bit or int64 operands');
  const spans = [{ b: out, start: outOffset }, ...views.map((i) => ({ b: i.b ?? buf(i.r.id), start: i.r.offset }))];
  for (const c of chunks(n, spans, maxBinding, paramAlign)) {
    windowOf = c.window;
    try {
      const rel = (b: GPUBuffer, start: number) => start + c.first - c.window.get(b)! / 4;
      const part = inputs.map((i) => (typeof i.r === 'number' ? i : { ...i, b: i.b ?? buf(i.r.id), r: { id: -1, offset: rel(i.b ?? buf(i.r.id), i.r.offset), strides: [1] } }));
      runMap(part, [c.count], out, rel(out, outOffset), outDt, expr, exprType, scalars, check);
    } finally {
      windowOf = null;
    }
  }
}

/**
 * The inputs of a map kernel's description: dtype, contiguity and slot among the bound buffers.
 * On the vec4 path an input is contiguous only if it loads 16-byte words (its offset a multiple of 4).
 */
function mapInputs(inputs: MapOperand[], bind: GPUBuffer[], shape: number[], vec4: boolean): MapKernel['inputs'] {
  return inputs.map((inp) => (typeof inp.r === 'number'
    ? { dt: inp.dt, contiguous: false, slot: -1, scalar: true }
    : { dt: inp.dt, contiguous: contiguousIn(inp.r, shape) && (!vec4 || inp.r.offset % 4 === 0), slot: bind.indexOf(inp.b ?? buf(inp.r.id)) }));
}

/** Runs `write` into a 32-bit target (the output itself, or a scratch buffer cast into a packed output). */
function viaScratch(out: Place, outDt: StorageCode, n: number, srcDt: StorageCode, write: (target: GPUBuffer, offset: number) => void): void {
  if (elementsPerWord(outDt) === 1 || (outDt === StorageCode.I64 && srcDt === StorageCode.I64)) return write(buf(out.id), out.offset);
  const tmp = createScratch(device, Math.ceil(n / 4) * 16, GPUBufferUsage.STORAGE, false, 'a packed output'); // f16: whole vec4s, the cast's vec4 path reads them
  retired.push(tmp);
  write(tmp, 0);
  runMap([{ r: { id: -1, strides: [1], offset: 0 }, dt: srcDt, b: tmp }], [n], buf(out.id), out.offset, outDt, 'x0', computeType(srcDt));
}

/** An operand of a matmul: a buffer, its element offset and (batch, row, column) strides. */
interface MatmulOperand { b: GPUBuffer; offset: number; strides: [number, number, number] }

/** Products of at least this many multiply-adds copy a transposed operand to run a tiled variant. */
const COPY_FOR_TILED = 1 << 22;

/**
 * `batch` products of m×kk · kk×n. The tiled variants need rows that are contiguous in memory;
 * an operand whose rows are not (a transposed weight, as `x @ W.T` has) is copied row-major
 * into a scratch buffer first when the product is large enough for the tiled kernel to repay
 * the copy: each element of B is read m times, of A n times, and the copy reads it once.
 */
function runMatmul(cmd: Extract<Command, { k: 'matmul' }>): void {
  const { m, n, kk, batch } = cmd;
  if (batch * m * n === 0) return;
  let a: MatmulOperand = { b: buf(cmd.a.id), offset: cmd.a.offset, strides: cmd.aStrides };
  let b: MatmulOperand = { b: buf(cmd.b.id), offset: cmd.b.offset, strides: cmd.bStrides };
  // f16: f32 and 16-bit floats run the vec4 tiles (16-bit ones unpack at the tile load, wgsl/half.ts)
  const vecFloat = vec4Dtype(cmd.dt) && computeType(cmd.dt) === 'f32', storage = device.limits.maxComputeWorkgroupStorageSize;
  if (vecFloat && !matmulVariant && kk % 4 === 0 && n % 4 === 0 && batch * m * n * kk >= COPY_FOR_TILED && chooseMatmul(m, n, kk, batch, true, 0, storage, rowDev.cpu) !== 1) {
    if (a.strides[2] !== 1 && n >= 64) a = rowMajorCopy(a, batch, m, kk, 0, cmd.dt);
    if (b.strides[2] !== 1 && m >= 64) b = rowMajorCopy(b, batch, kk, n, 1, cmd.dt);
  }
  const launch = (v: number, target: GPUBuffer, offset: number, pack = false) => {
    const { bind, slot } = slotsOf(target, [a.b, b.b]);
    const p = new Uint32Array([m, n, kk, a.offset, ...a.strides, b.offset, ...b.strides, offset]).buffer;
    dispatch(`mm${v}|${cmd.dt}|${slot[0]}|${slot[1]}|${bind.length}|${+pack}`, () => matmulVariantShader(v, cmd.dt, slot[0], slot[1], bind.length, half.native, pack), bind, p,
      matmulVariantGrid(v, m, n, batch, pack));
  };
  // f16: a 16-bit product writes its output itself where words hold whole column pairs (N, offset even); else f32 scratch, cast after
  if (vecFloat && cmd.dt !== StorageCode.F32 && n % 2 === 0 && cmd.out.offset % 2 === 0) {
    return launch(chooseMatmul(m, n, kk, batch, tiledEligible(kk, n, a, b, cmd.out.offset), matmulVariant, storage, rowDev.cpu), buf(cmd.out.id), cmd.out.offset, true);
  }
  viaScratch(cmd.out, cmd.dt, batch * m * n, StorageCode.F32, (target, offset) => {
    const tiled = cmd.dt === StorageCode.F32 && tiledEligible(kk, n, a, b, offset);
    launch(chooseMatmul(m, n, kk, batch, tiled, matmulVariant, storage, rowDev.cpu), target, offset);
  });
}

/**
 * The scratch buffers of `rowMajorCopy`, one per operand, kept and grown: dispatches on one queue
 * run in order, so the next product may overwrite what the last one read, and a fresh buffer per
 * product cost a buffer and a bind group each time.
 */
const operandScratch: (GPUBuffer | null)[] = [null, null];
/** Operands up to this size use the kept scratch buffers. */
const KEPT_SCRATCH = 64 << 20;

/** A row-major copy (in its dtype `dt`) of a (batch, rows, cols) operand in scratch buffer `slot` (one copy of a broadcast batch). */
function rowMajorCopy(x: MatmulOperand, batch: number, rows: number, cols: number, slot: 0 | 1, dt: StorageCode): MatmulOperand {
  const copies = x.strides[0] === 0 ? 1 : batch, bytes = copies * rows * cols * (4 / elementsPerWord(dt)); // f16: dt
  let tmp = operandScratch[slot];
  if (bytes > KEPT_SCRATCH) {
    // a one-off for a large operand, not kept outside the allocator's accounting
    tmp = createScratch(device, bytes, GPUBufferUsage.STORAGE, false, 'a matmul operand copy');
    retired.push(tmp);
  } else if (!tmp || tmp.size < bytes) {
    if (tmp) retired.push(tmp);
    tmp = operandScratch[slot] = createScratch(device, Math.ceil(bytes / (1 << 20)) << 20, GPUBufferUsage.STORAGE, true, 'a matmul operand copy');
  }
  runMap([{ r: { id: -1, offset: x.offset, strides: [x.strides[0], x.strides[1], x.strides[2]] }, dt, b: x.b }],
    [copies, rows, cols], tmp, 0, dt, 'x0', 'f32'); // f16: dt
  return { b: tmp, offset: 0, strides: [copies === 1 ? 0 : rows * cols, cols, 1] };
}

/** Sliding windows with their padding in one dispatch (wgsl/window.ts); the output is f32 words. */
function runWindows(cmd: Extract<Command, { k: 'windows' }>): void {
  const [N, C, H, W] = cmd.shape, [kh, kw] = cmd.kernel, [oh, ow] = cmd.size;
  const rows = cmd.kernelLast ? N * C * oh : N * C * kh * kw * oh;
  if (!rows || !ow) return;
  const { bind, slot } = slotsOf(buf(cmd.out.id), [buf(cmd.x.id)]);
  const p = new Uint32Array(WINDOW_PARAMS);
  p.set([rows, C, H, W, kh, kw, oh, ow, ...cmd.stride, ...cmd.dilation, ...cmd.padding, cmd.x.offset, ...cmd.x.strides, cmd.out.offset]);
  new Float32Array(p.buffer, 80, 1)[0] = cmd.value;
  dispatch(windowKey(cmd.kernelLast, slot[0], bind.length), () => windowShader(cmd.kernelLast, slot[0], bind.length), bind, p.buffer,
    grid1d(rows, WINDOW_WG));
}

function run(cmd: Command): void {
  currentCmd = cmd;
  if (timer) label = labelOf(cmd);
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
      dropReadStaging();
      return;
    case 'dropScratch': {
      // emptyCache: the calling thread took `accounted` bytes of cached scratch off already (scratch.ts)
      dropReadStaging();
      for (const [i, b] of operandScratch.entries()) if (b) retired.push(b), (operandScratch[i] = null);
      dropUploads();
      settleDrop(cmd.accounted);
      return;
    }
    case 'write':
      throw new Error('webtorch: a write reaches the GPU backend through Backend.write, not run');
    case 'fill': {
      if (cmd.dt === StorageCode.I64) {
        // the exact 64-bit value, as two 32-bit scalar operands (a number holds any int64 fill value exactly)
        const [lo, hi] = words64(cmd.value);
        runMap([{ r: lo, dt: StorageCode.I32 }, { r: hi, dt: StorageCode.I32 }], [cmd.n], buf(cmd.out.id), cmd.out.offset, cmd.dt,
          'vec2<u32>(bitcast<u32>(x0), bitcast<u32>(x1))', 'i64');
        return;
      }
      if (cmd.dt === StorageCode.I32) {
        // exact: an f32 scalar option would round values beyond 2^24
        runMap([{ r: cmd.value | 0, dt: StorageCode.I32 }], [cmd.n], buf(cmd.out.id), cmd.out.offset, cmd.dt, 'x0', 'i32');
        return;
      }
      const e = computeType(cmd.dt) === 'f32' ? 's0' : 'i32(s0)';
      runMap([], [cmd.n], buf(cmd.out.id), cmd.out.offset, cmd.dt, e, computeType(cmd.dt), [cmd.value]);
      return;
    }
    case 'arange': {
      if (cmd.dt === StorageCode.I64) {
        // the facade sends other int64 ranges as data (ts/ops/creation.ts, arange)
        if (!Number.isInteger(cmd.start) || cmd.step !== (cmd.step | 0)) throw new Error(`arange: an int64 arange takes an integer start and a 32-bit step here (got ${cmd.start}, ${cmd.step})`);
        const [lo, hi] = words64(cmd.start);
        runMap([{ r: lo, dt: StorageCode.I32 }, { r: hi, dt: StorageCode.I32 }, { r: cmd.step, dt: StorageCode.I32 }], [cmd.n], buf(cmd.out.id), cmd.out.offset, cmd.dt,
          'i64_add(vec2<u32>(bitcast<u32>(x0), bitcast<u32>(x1)), i64_mul(vec2<u32>(i, 0u), i64_from_i32(x2)))', 'i64');
        return;
      }
      if (cmd.dt === StorageCode.I32 && Number.isInteger(cmd.start) && Number.isInteger(cmd.step)) {
        runMap([{ r: cmd.start | 0, dt: StorageCode.I32 }, { r: cmd.step | 0, dt: StorageCode.I32 }], [cmd.n], buf(cmd.out.id), cmd.out.offset, cmd.dt, 'x0 + i32(i) * x1', 'i32');
        return;
      }
      const e = computeType(cmd.dt) === 'f32' ? 's0 + f32(i) * s1' : 'i32(s0) + i32(i) * i32(s1)';
      runMap([], [cmd.n], buf(cmd.out.id), cmd.out.offset, cmd.dt, e, computeType(cmd.dt), [cmd.start, cmd.step]);
      return;
    }
    case 'random':
      runRandom(cmd);
      return;
    case 'copy':
      // A checked float -> int64 cast goes through f2i64_ck (wgsl/int64.ts).
      if (cmd.check) runMap([{ r: cmd.src, dt: cmd.srcDt }], cmd.shape, buf(cmd.out.id), cmd.out.offset, cmd.dt, 'f2i64_ck(x0)', 'i64', NO_SCALARS, cmd.check);
      else runMap([{ r: cmd.src, dt: cmd.srcDt }], cmd.shape, buf(cmd.out.id), cmd.out.offset, cmd.dt, 'x0', valueClass(cmd.srcDt));
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
      const t = valueClass(cmd.dt);
      const expr = t === 'f32' ? op.wgsl.f32 : t === 'i64' ? op.wgsl.i64 : op.wgsl.i32;
      if (!expr) throw new Error(`${op.name} has no ${t} kernel`);
      const ins: MapOperand[] = cmd.k === 'unary' ? [{ r: cmd.a, dt: cmd.dt }] : [{ r: cmd.a, dt: cmd.dt }, { r: cmd.b, dt: cmd.dt }];
      const scalars = cmd.k === 'unary' ? cmd.s : [cmd.alpha];
      runMap(ins, cmd.shape, buf(cmd.out.id), cmd.out.offset, cmd.outDt, expr, op.dtypes === 'bool' ? 'i32' : t, scalars, cmd.check);
      return;
    }
    case 'where':
      runMap([{ r: cmd.c, dt: StorageCode.Bool }, { r: cmd.a, dt: cmd.dt }, { r: cmd.b, dt: cmd.dt }], cmd.shape, buf(cmd.out.id), cmd.out.offset,
        cmd.dt, `select(x2, x1, x0 != 0i)`, valueClass(cmd.dt));
      return;
    case 'reduce': {
      if (cmd.outer === 0) return;
      const indexOut = cmd.op === 4 || cmd.op === 5 || cmd.op === 6 || cmd.op === 7;
      // 64 bits (wgsl/reduce.ts, reduce64Shader): every reduction of int64, and integer sums and products (int64 out)
      const wide = cmd.dt === StorageCode.I64 || (computeType(cmd.dt) === 'i32' && cmd.outDt === StorageCode.I64 && !indexOut);
      const kernelOut = wide && !indexOut ? StorageCode.I64 : indexOut || computeType(cmd.dt) === 'i32' ? StorageCode.I32 : StorageCode.F32;
      const reduceRows = (outer: number, aOffset: number, target: GPUBuffer, offset: number) => {
        const { bind, slot } = slotsOf(target, [buf(cmd.a.id)]);
        const { form, rows } = wide ? { form: 'tree' as const, rows: 1 } : rowForm(outer, cmd.inner, rowDev, true);
        const p = new Uint32Array([outer, cmd.inner, aOffset, offset, rows]).buffer;
        dispatch(`reduce|${cmd.op}|${cmd.dt}|${slot[0]}|${bind.length}|${form}|${wide ? 64 : 32}`,
          () => (wide ? reduce64Shader(cmd.op, cmd.dt, slot[0], bind.length) : reduceShader(cmd.op, cmd.dt, slot[0], bind.length, form)), bind, p,
          form === 'short' ? grid1d(outer, RWG) : grid1d(form === 'subgroup' ? Math.ceil(outer / rows) : outer, 1));
      };
      const a = buf(cmd.a.id);
      if (a.size > maxBinding || buf(cmd.out.id).size > maxBinding) {
        // rows in chunks, each binding a window of the input (ts/worker/split.ts)
        // an int64 output: arg-reductions write i32 positions into a scratch widened afterwards, integer sums two words a row
        const wideOut = cmd.outDt === StorageCode.I64;
        if (elementsPerWord(cmd.dt) !== 1 || (elementsPerWord(cmd.outDt) !== 1 && !wideOut)) throw tooLarge(labelOf(cmd), a.size, maxBinding, 'it has 16/8-bit or int64 inputs');
        const rowsInto = (out: GPUBuffer, outOffset: number, outWords: number) => {
          for (const c of chunks(cmd.outer, [{ b: out, start: outOffset * outWords }, { b: a, start: cmd.a.offset }], maxBinding, paramAlign, cmd.inner, [outWords, cmd.inner])) {
            windowOf = c.window;
            try {
              reduceRows(c.count, cmd.a.offset + c.first * cmd.inner - c.window.get(a)! / 4, out, outOffset + c.first - c.window.get(out)! / (4 * outWords));
            } finally {
              windowOf = null;
            }
          }
        };
        if (wideOut && indexOut) viaScratch(cmd.out, StorageCode.I64, cmd.outer, StorageCode.I32, (target, offset) => rowsInto(target, offset, 1));
        else rowsInto(buf(cmd.out.id), cmd.out.offset, wideOut ? 2 : 1);
        return;
      }
      viaScratch(cmd.out, cmd.outDt, cmd.outer, kernelOut, (target, offset) => reduceRows(cmd.outer, cmd.a.offset, target, offset));
      return;
    }
    case 'softmax': {
      const n = cmd.outer * cmd.inner;
      if (n === 0) return;
      const norm = cmd.norm;
      const { form, rows } = rowForm(cmd.outer, cmd.inner, rowDev, false);
      viaScratch(cmd.out, StorageCode.F32, n, StorageCode.F32, (target, offset) => {
        const extra = [norm?.w, norm?.b].filter((t): t is Place => !!t);
        const { bind, slot } = slotsOf(target, [buf(cmd.a.id), ...extra.map((t) => buf(t.id))]);
        const kind = norm ? 'layer_norm' : cmd.log ? 'log_softmax' : 'softmax';
        const spec = { kind, x: slot[0], w: norm?.w ? slot[1] : undefined, b: norm?.b ? slot[extra.length] : undefined } as const;
        const p = new Uint32Array([cmd.outer, cmd.inner, cmd.a.offset, offset, rows, norm?.w?.offset ?? 0, norm?.b?.offset ?? 0, 0]);
        new Float32Array(p.buffer, 28, 1)[0] = norm?.eps ?? 0;
        dispatch(rowNormKey(spec, bind.length, form), () => rowNormShader(spec, bind.length, form), bind, p.buffer,
          grid1d(form === 'subgroup' ? Math.ceil(cmd.outer / rows) : cmd.outer, 1));
      });
      return;
    }
    case 'matmul':
      runMatmul(cmd);
      return;
    case 'windows':
      runWindows(cmd);
      return;
    // The index family.
    case 'gather': case 'scatter': case 'cumulative': case 'sort': case 'oneHot':
      runIndex(cmd);
      return;
    default:
      throw new Error(`unknown command ${cmd.k}`);
  }
}

/** Philox numbers (wgsl/random.ts) into a contiguous 32-bit output; in chunks over a buffer larger than one binding. */
function runRandom(cmd: RandomCommand): void {
  if (!cmd.n) return;
  const out = buf(cmd.out.id);
  const one = (first: number, n: number, offset: number) => {
    const at = reserveParams(RANDOM_PARAM_WORDS);
    paramWords.set([n, offset, first, cmd.dist, ...cmd.key, ...cmd.counter, cmd.a, cmd.b, 0], at);
    dispatchAt('random', randomShader, [out], at, RANDOM_PARAM_WORDS, grid1d(randomBlocks(first, n), RANDOM_WG));
  };
  if (out.size <= maxBinding) return one(0, cmd.n, cmd.out.offset);
  for (const c of chunks(cmd.n, [{ b: out, start: cmd.out.offset }], maxBinding, paramAlign)) {
    windowOf = c.window;
    try {
      one(c.first, c.count, cmd.out.offset + c.first - c.window.get(out)! / 4);
    } finally {
      windowOf = null;
    }
  }
}

/** Records pending dispatches into a pass of the current encoder. */
function encodePending(): void {
  if (!pendingBinds.length) return;
  if (!paramBuffer || paramBuffer.size < paramBytes) {
    if (paramBuffer) destroyBuffer(paramBuffer);
    paramBuffer = contextBuffer(device.createBuffer({ size: Math.max(1 << 16, Math.ceil(paramBytes / 4096) * 4096 * 2), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST }));
  }
  device.queue.writeBuffer(paramBuffer, 0, params, 0, Math.ceil(paramBytes / 4) * 4);
  encoder ??= device.createCommandEncoder();
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

// ---- Pass timing (the worker's profile, WorkerApi.profile): timestamps around every pass ----

/** Timestamp pairs per query set; a full set is resolved and copied out, and a new one begun. */
const TIMED_PASSES = 1024;

/** Writes a timestamp pair around each pass, and sums what the device measured once it is done. */
class PassTimer {
  private set = device.createQuerySet({ type: 'timestamp', count: 2 * TIMED_PASSES });
  private used = 0;
  /** Staging buffers holding resolved timestamp pairs, with how many pairs each holds. */
  private readonly resolved: { staging: GPUBuffer; labels: string[]; seqs: number[] }[] = [];
  private labels: string[] = [];
  /** Each pass's entry in the profile's trace (-1: none). */
  private seqs: number[] = [];
  private readonly full: GPUQuerySet[] = [];

  /** The timestamp writes of the next pass of `enc` (resolving the set into `enc` when it fills). */
  next(enc: GPUCommandEncoder, label: string, seq: number): GPUComputePassTimestampWrites {
    if (this.used === TIMED_PASSES) this.resolve(enc);
    this.labels.push(label);
    this.seqs.push(seq);
    const i = 2 * this.used++;
    return { querySet: this.set, beginningOfPassWriteIndex: i, endOfPassWriteIndex: i + 1 };
  }

  /** Records the copy of the used pairs out of the set, and starts a new set. */
  private resolve(enc: GPUCommandEncoder): void {
    const bytes = this.used * 16;
    const target = contextBuffer(device.createBuffer({ size: bytes, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC }));
    const staging = contextBuffer(device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }));
    enc.resolveQuerySet(this.set, 0, 2 * this.used, target, 0);
    enc.copyBufferToBuffer(target, 0, staging, 0, bytes);
    retired.push(target);
    this.full.push(this.set);
    this.resolved.push({ staging, labels: this.labels, seqs: this.seqs });
    this.labels = [];
    this.seqs = [];
    this.set = device.createQuerySet({ type: 'timestamp', count: 2 * TIMED_PASSES });
    this.used = 0;
  }

  /** The GPU's first timestamp: passes are told in ms after it. */
  private base: bigint | null = null;

  /**
   * Each pass timed so far and not yet drained (start and end in ms after the timer's first
   * timestamp), once they have run; `release` also frees the timer's query sets (it is done).
   */
  async drain(release: boolean): Promise<{ seq: number; label: string; start: number; end: number }[]> {
    if (this.used) {
      const enc = device.createCommandEncoder();
      this.resolve(enc);
      device.queue.submit([enc.finish()]);
      queueWork++;
    }
    flush();
    const passes: { seq: number; label: string; start: number; end: number }[] = [];
    const full = this.full.splice(0);
    for (const { staging, labels, seqs } of this.resolved.splice(0)) {
      await staging.mapAsync(GPUMapMode.READ);
      const t = new BigUint64Array(staging.getMappedRange());
      labels.forEach((l, i) => {
        const t0 = t[2 * i], t1 = t[2 * i + 1];
        // A pass the device did not time (zeros) has no place on the timeline.
        if (t0 === 0n || t1 < t0) return;
        this.base ??= t0;
        passes.push({ seq: seqs[i], label: l, start: Number(t0 - this.base) / 1e6, end: Number(t1 - this.base) / 1e6 });
      });
      staging.destroy();
    }
    for (const q of full) q.destroy();
    if (release) this.set.destroy();
    return passes;
  }
}

let timer: PassTimer | null = null;
/** The profile's trace entry of the command being run (executor's `traceSeq`), for its passes. */
let traceSeq = -1;
/** The command whose dispatches are being recorded, while the profile is on. */
let label = '';

/** A command's name in the profile: its kind, and the op for elementwise and reduce commands. */
function labelOf(cmd: Command): string {
  if (cmd.k === 'unary') return `unary:${UNARY.get(cmd.op)?.name ?? cmd.op}`;
  if (cmd.k === 'binary') return `binary:${BINARY.get(cmd.op)?.name ?? cmd.op}`;
  if (cmd.k === 'reduce') return `reduce:${ReduceOp[cmd.op] ?? cmd.op} ${cmd.outer}x${cmd.inner}`;
  if (cmd.k === 'matmul') return `matmul:${cmd.batch}x${cmd.m}x${cmd.kk}x${cmd.n}`;
  return cmd.k;
}
/** The timer that `timePasses(false)` stopped, until `passTimes` reads it. */
let stopped: PassTimer | null = null;

/** Records one dispatch into `p`, whose current pipeline is `current`; returns the dispatch's pipeline. */
function record(p: GPUComputePassEncoder, d: PendingDispatch, current: GPUComputePipeline | null): GPUComputePipeline {
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
let submitEvery = 32;

/**
 * Work handed to the queue (submits and writes) so far, and how much of it a sync point has seen
 * finished: a `synchronize` with nothing handed over since asks the queue nothing.
 */
let queueWork = 0, queueDone = 0;
/** Marks (events' records) and dropped uploads still waiting on the device: a `synchronize` waits for them too. */
let settling = 0;

/** Submits everything recorded so far. */
function flush(): void {
  encodePending();
  if (encoder) {
    device.queue.submit([encoder.finish()]);
    encoder = null;
    queueWork++;
  }
  for (const b of retired.splice(0)) destroyBuffer(b);
}

/**
 * Writes host bytes into a storage, after the work recorded so far. Small writes go through
 * `queue.writeBuffer`; from `STAGED_WRITE` bytes up they go through the upload ring, since
 * Dawn's `writeBuffer` moved about 1.1 GB/s on the H100 where a mapped staging buffer and a
 * copy moved five times that (`bench/probe-upload.mjs`, BENCHMARKS.md). `data` may be a view of
 * shared memory (a pinned tensor), which `writeBuffer` cannot take but a mapped range can.
 */
function write(id: number, byteOffset: number, data: ArrayBuffer | Uint8Array): Promise<void> | void {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  if (bytes.byteLength >= STAGED_WRITE) return writeStaged(id, byteOffset, bytes);
  flush();
  const shared = typeof SharedArrayBuffer !== 'undefined' && bytes.buffer instanceof SharedArrayBuffer; // undefined without isolation
  const aligned = bytes.byteLength % 4 === 0 && !shared;
  const padded = aligned ? bytes : new Uint8Array(Math.ceil(bytes.byteLength / 4) * 4);
  if (padded !== bytes) padded.set(bytes);
  device.queue.writeBuffer(buf(id), byteOffset, padded as Uint8Array<ArrayBuffer>); // never a shared view (copied above)
  queueWork++;
}

// ---- The upload ring: mapped staging buffers for large writes ----

const STAGED_WRITE = 1 << 20;
const UPLOAD_CHUNK = 8 << 20;
const UPLOAD_BUFFERS = 2;
/** Staging buffers mapped for writing, ready to fill. */
let uploadReady: GPUBuffer[] = [];
/** Staging buffers being mapped again after their copy (null if the mapping failed: dropped). */
let uploadMapping: Promise<GPUBuffer | null>[] = [];
let uploadCount = 0;

/** A staging buffer mapped for writing: a ready one, a new one while the ring is short, else the next to be mapped again. */
async function takeUpload(): Promise<GPUBuffer> {
  for (;;) {
    const ready = uploadReady.pop();
    if (ready) return ready;
    if (uploadCount < UPLOAD_BUFFERS || !uploadMapping.length) {
      uploadCount++;
      return createScratch(device, UPLOAD_CHUNK, GPUBufferUsage.MAP_WRITE | GPUBufferUsage.COPY_SRC, true, 'an upload', true);
    }
    const again = await uploadMapping.shift()!;
    if (again) return again;
  }
}

/** Copies `data` into storage `id` chunk by chunk through the ring: fill a mapped buffer, unmap, copy, submit. */
async function writeStaged(id: number, byteOffset: number, data: Uint8Array): Promise<void> {
  const target = buf(id);
  for (let off = 0; off < data.byteLength; off += UPLOAD_CHUNK) {
    const n = Math.min(UPLOAD_CHUNK, data.byteLength - off), n4 = Math.ceil(n / 4) * 4;
    const staging = await takeUpload();
    const range = new Uint8Array(staging.getMappedRange(0, n4));
    range.set(data.subarray(off, off + n));
    if (n4 > n) range.fill(0, n);
    staging.unmap();
    encodePending();
    encoder ??= device.createCommandEncoder();
    encoder.copyBufferToBuffer(staging, 0, target, byteOffset + off, n4);
    flush();
    const ring = uploadMapping;
    ring.push(staging.mapAsync(GPUMapMode.WRITE).then(() => {
      if (ring !== uploadMapping) return null; // dropped meanwhile
      return staging;
    }, () => null));
  }
}

/** Destroys the upload ring (emptyCache, memory pressure, close). */
function dropUploads(): void {
  for (const b of uploadReady) destroyBuffer(b);
  const mapping = uploadMapping;
  uploadReady = [];
  uploadMapping = [];
  uploadCount = 0;
  for (const p of mapping) {
    settling++;
    void p.then((b) => {
      settling--;
      if (b) destroyBuffer(b);
    });
  }
}

/**
 * The largest read staging buffer so far, up to `KEEP_STAGING` bytes, kept for the next read:
 * a new mappable buffer per read made a 16 MiB read about twice as slow to map on lavapipe.
 * Reads run one at a time (the executor chains them). Dropped when a segment is released
 * (`emptyCache`) and at close.
 */
let readStaging: GPUBuffer | null = null;
const KEEP_STAGING = 64 << 20;

function dropReadStaging(): void {
  readStaging?.destroy();
  readStaging = null;
}

async function read(id: number, byteOffset: number, bytes: number): Promise<ArrayBuffer> {
  if (bytes === 0) {
    flush();
    return new ArrayBuffer(0);
  }
  const start = byteOffset & ~3, size = Math.ceil((byteOffset + bytes) / 4) * 4 - start;
  const reuse = readStaging !== null && readStaging.size >= size;
  const staging = reuse ? readStaging! : createScratch(device, size, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, true, 'a read');
  // The copy, and the device checks' copy, ride in the same submit as the work still recorded:
  // one submit per read, then the mapping and the error scopes are awaited together.
  encodePending();
  encoder ??= device.createCommandEncoder();
  encoder.copyBufferToBuffer(buf(id), start, staging, 0, size);
  const deviceCheck = recordDeviceCheck(encoder);
  flush();
  closeScope();
  const handedOver = queueWork;
  if (reuse) readStaging = null;
  const mapped = staging.mapAsync(GPUMapMode.READ, 0, size).then(
    () => {
      const out = staging.getMappedRange(0, size).slice(byteOffset - start, byteOffset - start + bytes);
      staging.unmap();
      if (staging.size <= KEEP_STAGING && staging.size >= (readStaging?.size ?? 0)) {
        dropReadStaging();
        readStaging = staging;
      } else {
        staging.destroy();
      }
      // The copy was the queue's last work when it was submitted: everything before it has finished.
      queueDone = Math.max(queueDone, handedOver);
      return out;
    },
    (e: unknown) => {
      staging.destroy();
      throw e;
    },
  );
  return settleSyncPoint(mapped, deviceCheck);
}

/**
 * Waits for a sync point's parts together: `done` (the read's mapping, or the queue's end), the
 * error scopes and the device checks. Throws the first error in that order of blame: a GPU
 * error (validation, out of memory), then a failed device check, then `done`'s own failure.
 */
async function settleSyncPoint<T>(done: Promise<T>, deviceCheck: Promise<void> | null): Promise<T> {
  const [value, scopes, checks] = await Promise.allSettled([done, checkErrors(), deviceCheck]);
  if (scopes.status === 'rejected') throw scopes.reason;
  if (checks.status === 'rejected') throw checks.reason;
  if (value.status === 'rejected') throw value.reason;
  return value.value;
}

// ---- Event marks (Backend.mark): the point of the queue an event's record stands for ----

/** The first GPU timestamp seen: event times are milliseconds after it (a double holds them exactly). */
let timeBase: bigint | null = null;

/**
 * Resolves once the work submitted so far has finished, with its time: with `timing` on an
 * adapter with `timestamp-query`, the GPU's own timestamp, written by an empty pass at this
 * point of the queue (its mapping also tells that the work before it has finished); otherwise
 * the worker's clock when `onSubmittedWorkDone` resolves.
 */
async function mark(timing: boolean): Promise<number> {
  settling++;
  try {
    return await markNow(timing);
  } finally {
    settling--;
  }
}

async function markNow(timing: boolean): Promise<number> {
  if (!timing || !device.features.has('timestamp-query')) {
    flush();
    await device.queue.onSubmittedWorkDone();
    return performance.now();
  }
  encodePending();
  encoder ??= device.createCommandEncoder();
  const set = device.createQuerySet({ type: 'timestamp', count: 2 });
  encoder.beginComputePass({ timestampWrites: { querySet: set, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } }).end();
  const resolved = contextBuffer(device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC }));
  const staging = contextBuffer(device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }));
  encoder.resolveQuerySet(set, 0, 2, resolved, 0);
  encoder.copyBufferToBuffer(resolved, 0, staging, 0, 16);
  retired.push(resolved);
  flush();
  try {
    await staging.mapAsync(GPUMapMode.READ);
    const t = new BigUint64Array(staging.getMappedRange())[1];
    timeBase ??= t;
    return Number(t - timeBase) / 1e6;
  } finally {
    staging.destroy();
    set.destroy();
  }
}

// ---- Device checks (see DeviceCheck in protocol.ts; `errorBinding` in wgsl/index.ts) ----

/** The device's error words, and the messages of checking dispatches since the last check, with their codes. */
let deviceErrors: GPUBuffer | null = null;
/** The mappable copy of `deviceErrors` that sync points read, kept between them. */
let errorStaging: GPUBuffer | null = null;
/** Whether a sync point has recorded a copy into `errorStaging` and not yet read it. */
let errorStagingTaken = false;
const checkCodes = new Map<string, number>();

/**
 * Registers a checking dispatch of command `k` (and creates the error buffer, which the caller
 * binds after its storages); returns the code its kernel records on bad data, one per message.
 */
function checkCode(k: string, message: string): number {
  deviceErrors ??= contextBuffer(device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST }));
  const key = `${k} failed on device: ${message}`;
  const code = checkCodes.get(key) ?? checkCodes.size + 1;
  checkCodes.set(key, code);
  return code;
}

/**
 * For a sync point: records in `enc` the copy of the error words to a mappable buffer (and
 * their clear), to go in the sync point's own submit. Returns null when no checking dispatch
 * ran since the last check, else the check, which maps the copy once `enc` has been submitted
 * (`flush`) and throws the first failed check with its message.
 */
function recordDeviceCheck(enc: GPUCommandEncoder): Promise<void> | null {
  if (!checkCodes.size) return null;
  const messages = [...checkCodes.keys()];
  checkCodes.clear();
  // A kept staging buffer: creating a mappable buffer per check cost about 0.7 ms on the H100's
  // Vulkan driver, a tenth of that to reuse one (BENCHMARKS.md, "The sync point").
  errorStaging ??= contextBuffer(device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }));
  const staging = errorStaging.mapState === 'unmapped' && !errorStagingTaken ? errorStaging : device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  if (staging === errorStaging) errorStagingTaken = true;
  enc.copyBufferToBuffer(deviceErrors!, 0, staging, 0, 16);
  enc.clearBuffer(deviceErrors!);
  // Mapped after the submit (a buffer pending a map cannot be used in one); the caller flushes first.
  return Promise.resolve().then(async () => {
    try {
      await staging.mapAsync(GPUMapMode.READ);
      const [code, lo, hi] = new Uint32Array(staging.getMappedRange().slice(0));
      staging.unmap();
      // the bad value's two words (wgsl/index.ts `fail64`): an int64
      if (code) throw new Error(messages[code - 1].replace('%d', String(BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo)))));
    } finally {
      if (staging === errorStaging) errorStagingTaken = false;
      else staging.destroy();
    }
  });
}

/** The low and high 32-bit words (as int32 bit patterns) of an integer-valued number in int64's range. */
function words64(v: number): [number, number] {
  const b = BigInt.asUintN(64, BigInt(Math.trunc(v)));
  return [Number(b & 0xffffffffn) | 0, Number(b >> 32n) | 0];
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
      dispatchCode(gatherShader(cmd.shape.length, cmd.dt, slot[0], slot[1], bind.length), [...bind, deviceErrors!], p, grid1d(invocationsFor(n, cmd.dt)));
      return;
    }
    case 'scatter': {
      const n = count(cmd.shape), m = count(cmd.idxShape), wdt = wordDt(cmd.dt);
      if (!n) return;
      viaScratch(cmd.out, cmd.dt, n, wdt, (target, offset) => {
        runMap([{ r: cmd.x, dt: cmd.dt }], cmd.shape, target, offset, wdt, 'x0', valueClass(cmd.dt));
        if (!m) return;
        const { bind, slot } = slotsOf(target, [buf(cmd.idx.id), ...(cmd.src ? [buf(cmd.src.id)] : [])]);
        const views = [{ offset, strides: cmd.dstStrides }, cmd.idx, cmd.src ?? { offset: 0, strides: [] }];
        const extra = [cmd.dimStride, cmd.check.size, +cmd.check.wrap, checkCode(cmd.k, cmd.check.message),
          ...(cmd.dt === StorageCode.I64 ? words64(cmd.value) : [scalarWord(cmd.value, computeType(cmd.dt))])];
        dispatchCode(scatterIndexShader(cmd.idxShape.length, cmd.dt, cmd.add, slot[0], cmd.src ? slot[1] : -1, bind.length), [...bind, deviceErrors!],
          indexParams(m, cmd.idxShape, 0, views, extra), grid1d(m));
      });
      return;
    }
    case 'cumulative': {
      const lines = count(cmd.lines);
      if (!lines || !cmd.len) return;
      // integers run in 64 bits into the int64 output; floats in f32 (wgsl/index.ts)
      viaScratch(cmd.out, cmd.outDt, lines * cmd.len, cmd.outDt === StorageCode.I64 ? StorageCode.I64 : wordDt(cmd.dt), (target, offset) => {
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
      // int64 keys take two words (a third array of the scratch: wgsl/index.ts)
      const wide = cmd.dt === StorageCode.I64;
      const tmp = createScratch(device, total * (wide ? 12 : 8), GPUBufferUsage.STORAGE, false, 'sort');
      retired.push(tmp);
      const params = (k = 0, j = 0, outOffset = 0) => sortParams(total, padded, len, inner, cmd.x.offset, k, j, outOffset, n);
      const init = slotsOf(tmp, [buf(cmd.x.id)]);
      dispatchCode(sortInitShader(cmd.dt, cmd.descending, init.slot[0], init.bind.length), init.bind, params(), grid1d(total));
      dispatchCode(sortLocalShader(false, wide), [tmp], params(), grid1d(blocks * IWG));
      for (let k = 2 * SORT_BLOCK; k <= padded; k *= 2) {
        for (let j = k / 2; j >= SORT_BLOCK; j /= 2) dispatchCode(sortGlobalShader(wide), [tmp], params(k, j), grid1d(total / 2));
        dispatchCode(sortLocalShader(true, wide), [tmp], params(k), grid1d(blocks * IWG));
      }
      // positions as i32 words, widened into the int64 output
      viaScratch(cmd.out, StorageCode.I64, n, StorageCode.I32, (target, offset) => dispatchCode(sortOutShader(), [target, tmp], params(0, 0, offset), grid1d(n)));
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
    submitEvery = Number(env('WEBTORCH_SUBMIT_EVERY') ?? submitEvery);
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
    countBuffers(device);
    setPressureHandler(() => {
      dropReadStaging();
      dropUploads();
    });
    paramAlign = device.limits.minStorageBufferOffsetAlignment;
    maxBinding = device.limits.maxStorageBufferBindingSize;
    rowDev = rowDevice(device.features, found.info, env('WEBTORCH_ROWS'));
    const info = found.info;
    const limits: Record<string, number> = {};
    for (const l of limitNames) limits[l] = device.limits[l];
    return {
      name, kind: 'gpu', cpuAdapter: rowDev.cpu, vendor: info.vendor, architecture: info.architecture, device: info.device, description: info.description || info.device,
      features: [...found.features].map(String).sort(), limits, scratch: scratchCounter(),
      nativeF16: chooseF16Path(features.includes('shader-f16'), env('WEBTORCH_F16')), // f16: the float16 path (ts/worker/half.ts)
      eventTiming: features.includes('timestamp-query') ? 'gpu-timestamp' : 'host',
    };
  },
  run(cmd) {
    run(cmd);
    // Between commands (a command's scratch buffers die at the flush), so the GPU starts early.
    if (submitEvery && pendingBinds.length >= submitEvery) flush();
  },
  flush,
  read,
  write,
  mark,
  timePasses(on) {
    flush();
    if (on) {
      if (!timer && device.features.has('timestamp-query')) timer = new PassTimer();
    } else if (timer) {
      stopped = timer;
      timer = null;
    }
  },
  traceSeq(seq) {
    traceSeq = seq;
  },
  async passTimes() {
    if (timer) return timer.drain(false);
    const t = stopped;
    stopped = null;
    return t ? t.drain(true) : null;
  },
  async idle() {
    encodePending();
    // Nothing recorded, handed over, waited on or left to check since a sync point saw the queue
    // finish: nothing to ask the queue (the flush only destroys the buffers retired since).
    if (!encoder && !scoped && !checkCodes.size && !errorChecks.length && !settling && queueWork === queueDone) return flush();
    const deviceCheck = checkCodes.size ? recordDeviceCheck((encoder ??= device.createCommandEncoder())) : null;
    flush();
    closeScope();
    const handedOver = queueWork;
    await settleSyncPoint(device.queue.onSubmittedWorkDone(), deviceCheck);
    queueDone = Math.max(queueDone, handedOver);
  },
  async close() {
    flush();
    // Dawn aborts if a device dies with popErrorScope promises pending: settle them first.
    closeScope();
    await device?.queue.onSubmittedWorkDone();
    await Promise.allSettled(errorChecks.splice(0));
    for (const b of buffers.values()) b.destroy();
    buffers.clear();
    dropReadStaging();
    dropUploads();
    device?.destroy();
    adapter = null;
    gpu = null;
  },
};

