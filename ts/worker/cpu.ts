/**
 * The `cpu` worker: AssemblyScript kernels (SIMD) over one WebAssembly memory.
 *
 * Segments (which the caching allocator on the calling thread carves into blocks) are byte
 * ranges of that memory, taken from a first-fit free list here, 16-byte aligned so SIMD loads
 * stay aligned. Kernel descriptors (shape, strides, offsets) are written as i32s into the
 * module's scratch area before each call. Pointers are bytes; strides and offsets are elements,
 * as the kernels expect. Large matmuls, elementwise ops, row normalisations, windows and random
 * draws run in chunks on the pool's threads (cpu-pool.ts: each `…Part` export computes one chunk).
 * While the device is idle the calling thread reads and writes this memory itself
 * (ts/runtime/client.ts: `idle`); `init` hands it the memory and the address table for that.
 */
import { StorageCode } from '../dtype.js';
import { canShareMemory, copyOut, loadKernelWasm, loadSharedKernelWasm } from '../platform.js';
import { poolThreads, sharedMemory, startPool, type KernelPool } from './cpu-pool.js';
import { releaseScratch, reserveScratch, scratchCounter } from './scratch.js';
import type { Backend } from './backend.js';
import type { DeviceInfo } from './protocol.js';
import type { Command, Operand, Place, ViewRef } from '../ir/commands.js';
// The index family.
import type { AvgPoolCommand, ConvCommand, DeviceCheck, IndexCommand, NllCommand, PoolCommand } from '../ir/commands.js';

/** The AssemblyScript kernels' exports (see `assembly/index.ts`). */
interface Kernels {
  memory: WebAssembly.Memory;
  heapBase(): number;
  scratch(): number;
  copy(srcDt: number, dstDt: number, src: number, dst: number, p: number): void;
  copyStrided(srcDt: number, dstDt: number, src: number, dst: number, p: number): void;
  copyChecked(srcDt: number, dstDt: number, src: number, dst: number, p: number): number;
  unary(op: number, dt: number, outDt: number, a: number, out: number, p: number, s0: number, s1: number, s2: number): void;
  /** Returns 1 when an integer division met a zero divisor. */
  binary(op: number, dt: number, outDt: number, a: number, b: number, out: number, p: number, alpha: number): number;
  where(dt: number, c: number, a: number, b: number, out: number, p: number): void;
  reduce(op: number, dt: number, outDt: number, a: number, out: number, outer: number, inner: number): void;
  matmulWorkspaceBytes(m: number, n: number, k: number): number;
  matmul(dt: number, a: number, b: number, out: number, p: number, ws: number): void;
  matmulPart(dt: number, a: number, b: number, out: number, p: number, ws: number, part: number, parts: number): void;
  fill(dt: number, out: number, n: number, value: number): void;
  arange(dt: number, out: number, n: number, start: number, step: number): void;
  rowNorm(p: number): void;
  windows(x: number, out: number, p: number): void;
  foldWindows(g: number, out: number, p: number): void;
  /** 2-D convolution and its gradients (assembly/kernels/conv.ts). */
  convWorkspaceBytes(p: number, grad: number): number;
  conv(x: number, w: number, b: number, out: number, p: number, saved: number, ws: number): void;
  convGrad(x: number, w: number, gy: number, dx: number, dw: number, db: number, p: number, saved: number, ws: number): void;
  convGradSum(src: number, out: number, n: number, parts: number): void;
  random(dist: number, out: number, n: number, first: number, k0: number, k1: number, c0: number, c1: number, c2: number, c3: number, a: number, b: number): void;
  /** The fused negative log likelihood (assembly/kernels/loss.ts): returns 1 on a target out of range (then `badIndex()` is it). */
  nll(p: number): number;
  nllGrad(p: number): void;
  /** Max pooling and its gradient (assembly/kernels/pool.ts). */
  maxPool(x: number, values: number, indices: number, p: number): void;
  maxPoolGrad(g: number, indices: number, grad: number, p: number): void;
  /** Average pooling (grad 0: src x, dst the values) or its gradient (grad 1: src g, dst the input's gradient). */
  avgPool(src: number, dst: number, p: number, grad: number): void;
  /** h/ampcheck: GradScaler's fused check (assembly/kernels/amp.ts); returns 1 when it set the flag. */
  ampUnscale(p: number, n: number, inv: number, found: number): number;
}

const ALIGN = 16;
const ELEMENT_BYTES = [4, 4, 1, 1, 2, 2, 8];

let K: Kernels;
/** Helper threads for large matmuls (null: single-threaded; see `cpu-pool.ts`). */
let pool: KernelPool | null = null;
/** Products with fewer multiply-adds than this run on one thread (waking helpers costs more). */
const POOL_MIN_MACS = 1 << 19;
/** Elementwise ops on fewer elements than this run on one thread (waking helpers costs about as much as 2^17 relu elements). */
const POOL_MIN_MAP = 1 << 17;
/** Row normalisations of fewer elements than this run on one thread. */
const POOL_MIN_ROWS = 1 << 15;
/** Random draws with fewer elements than this run on one thread. */
const POOL_MIN_RANDOM = 1 << 16;
/** Initial pages of the shared memory (the kernels' build asks for 16: `--initialMemory 16`). */
const SHARED_INITIAL_PAGES = 16;
let heapEnd = 0;
/** Free ranges [start, size], sorted by start. */
const freeList: [number, number][] = [];
const ranges = new Map<number, [number, number]>();

function allocRange(bytes: number): number {
  const size = Math.max(ALIGN, Math.ceil(bytes / ALIGN) * ALIGN);
  for (let i = 0; i < freeList.length; i++) {
    const [start, have] = freeList[i];
    if (have < size) continue;
    if (have === size) freeList.splice(i, 1);
    else freeList[i] = [start + size, have - size];
    return start;
  }
  const start = heapEnd;
  heapEnd += size;
  const need = heapEnd - K.memory.buffer.byteLength;
  if (need > 0) K.memory.grow(Math.ceil(need / 65536));
  return start;
}

function freeRange(start: number, bytes: number): void {
  const size = Math.max(ALIGN, Math.ceil(bytes / ALIGN) * ALIGN);
  let i = 0;
  while (i < freeList.length && freeList[i][0] < start) i++;
  freeList.splice(i, 0, [start, size]);
  for (let j = Math.min(i + 1, freeList.length - 1); j > 0; j--) {
    const [a, as] = freeList[j - 1], [b, bs] = freeList[j];
    if (a + as === b) freeList.splice(j - 1, 2, [a, as + bs]);
  }
  const last = freeList[freeList.length - 1];
  if (last && last[0] + last[1] === heapEnd) {
    heapEnd = last[0];
    freeList.pop();
  }
}

/** The shared memory (null for the plain build), and each segment's address in it, for the GPU workers' pinned copies. */
let shared: WebAssembly.Memory | null = null;
let addresses: Uint32Array | null = null;
/** Segment ids the address table covers (the allocator reuses the lowest free id, so live ids stay small). */
const HOST_SEGMENTS = 1 << 14;

function ptr(id: number): number {
  const r = ranges.get(id);
  if (!r) throw new Error(`segment ${id} does not exist on this device`);
  return r[0];
}

/** The byte address of a place holding elements of storage code `dt`. */
const at = (p: Place, dt: number): number => ptr(p.id) + p.offset * ELEMENT_BYTES[dt];

/** The scratch area as i32 words (made again after the memory grows, which detaches the old view). */
let scratchView: Int32Array | null = null;
function scratchWords(): Int32Array {
  if (scratchView?.buffer !== K.memory.buffer) scratchView = new Int32Array(K.memory.buffer, K.scratch(), 4096);
  return scratchView!;
}

/** Writes i32 words into the scratch area and returns its address. */
function desc(words: number[]): number {
  scratchWords().set(words);
  return scratchView!.byteOffset;
}

/**
 * Writes a strided kernel's descriptor, [rank, n, shape, (strides, offset) per view], into the
 * scratch area and returns its address (the launch path: no intermediate arrays).
 */
function viewDesc(shape: number[], views: ViewRef[]): number {
  const w = scratchWords(), r = shape.length;
  let n = 1, k = 2;
  for (let d = 0; d < r; d++) {
    n *= shape[d];
    w[k++] = shape[d];
  }
  w[0] = r;
  w[1] = n;
  for (const v of views) {
    for (let d = 0; d < r; d++) w[k++] = v.strides[d];
    w[k++] = v.offset;
  }
  return w.byteOffset;
}

/** Zero strides of each rank (a scalar operand's view). */
const ZEROS: number[][] = [];
const zeros = (rank: number): number[] => (ZEROS[rank] ??= new Array(rank).fill(0));

/**
 * A kernel operand's address and view: a strided view of a segment, or a scalar's storage bits
 * written to slot `j` at the end of the scratch area (descriptors use its start) and read with
 * stride 0, as a broadcast 0-dim tensor would be. An int64 scalar (`dt`) is its 32-bit value,
 * sign-extended into two words.
 */
function operand(o: Operand, j: number, rank: number, dt: number): [number, ViewRef] {
  if (typeof o !== 'number') return [ptr(o.id), o];
  const w = scratchWords(), slot = 4096 - 4 * (j + 1);
  w[slot] = o;
  if (dt === StorageCode.I64) w[slot + 1] = o < 0 ? -1 : 0;
  return [w.byteOffset + slot * 4, { id: -1, offset: 0, strides: zeros(rank) }];
}

function run(cmd: Command): void {
  switch (cmd.k) {
    case 'segment': {
      const start = allocRange(cmd.bytes);
      ranges.set(cmd.id, [start, cmd.bytes]);
      if (addresses && cmd.id < addresses.length) addresses[cmd.id] = start;
      return;
    }
    case 'release': {
      const [start, bytes] = ranges.get(cmd.id)!;
      ranges.delete(cmd.id);
      if (addresses && cmd.id < addresses.length) addresses[cmd.id] = 0;
      freeRange(start, bytes);
      return;
    }
    case 'write':
      write(cmd.id, cmd.byteOffset, cmd.data);
      return;
    case 'fill':
      return K.fill(cmd.dt, at(cmd.out, cmd.dt), cmd.n, cmd.value);
    case 'arange':
      return K.arange(cmd.dt, at(cmd.out, cmd.dt), cmd.n, cmd.start, cmd.step);
    case 'random': { // Philox (assembly/kernels/random.ts); large draws in chunks on the pool's threads
      const out = at(cmd.out, StorageCode.F32);
      if (!pool || cmd.n < POOL_MIN_RANDOM) return K.random(cmd.dist, out, cmd.n, 0, ...cmd.key, ...cmd.counter, cmd.a, cmd.b);
      return pool.run('randomPart', [desc([cmd.dist, out, cmd.n, 0, ...cmd.key, ...cmd.counter, cmd.a, cmd.b])], 4 * pool.threads, 0, 0);
    }
    case 'copy':
      if (cmd.check) {
        if (K.copyChecked(cmd.srcDt, cmd.dt, ptr(cmd.src.id), at(cmd.out, cmd.dt), viewDesc(cmd.shape, [cmd.src]))) throw new Error(cmd.check.message);
        return;
      }
      return K.copy(cmd.srcDt, cmd.dt, ptr(cmd.src.id), at(cmd.out, cmd.dt), viewDesc(cmd.shape, [cmd.src]));
    case 'copyInto':
      return K.copyStrided(cmd.srcDt, cmd.dt, ptr(cmd.src.id), ptr(cmd.dst.id), viewDesc(cmd.shape, [cmd.src, cmd.dst]));
    case 'unary': {
      const a = ptr(cmd.a.id), out = at(cmd.out, cmd.outDt), p = viewDesc(cmd.shape, [cmd.a]);
      if (!pooled(cmd.shape)) return K.unary(cmd.op, cmd.dt, cmd.outDt, a, out, p, ...cmd.s);
      return mapOnPool('unaryPart', [cmd.op, cmd.dt, cmd.outDt, a, out, p], cmd.s);
    }
    case 'binary': {
      const [a, av] = operand(cmd.a, 0, cmd.shape.length, cmd.dt), [b, bv] = operand(cmd.b, 1, cmd.shape.length, cmd.dt);
      const out = at(cmd.out, cmd.outDt), p = viewDesc(cmd.shape, [av, bv]);
      // Float ops only on the pool: integer division's zero-divisor flag is per thread.
      if (pooled(cmd.shape) && isFloatCode(cmd.dt)) return mapOnPool('binaryPart', [cmd.op, cmd.dt, cmd.outDt, a, b, out, p], [cmd.alpha]);
      // the cpu computes int64 in i64, so `check.overflow` (the GPU's 32-bit fallback) never applies here
      const failed = K.binary(cmd.op, cmd.dt, cmd.outDt, a, b, out, p, cmd.alpha);
      if (failed && cmd.check) throw new Error(cmd.check.message);
      return;
    }
    case 'where':
      return K.where(cmd.dt, ptr(cmd.c.id), ptr(cmd.a.id), ptr(cmd.b.id), at(cmd.out, cmd.dt), viewDesc(cmd.shape, [cmd.c, cmd.a, cmd.b]));
    case 'reduce':
      return K.reduce(cmd.op, cmd.dt, cmd.outDt, at(cmd.a, cmd.dt), at(cmd.out, cmd.outDt), cmd.outer, cmd.inner);
    case 'softmax': case 'rowGrad':
      return runRowNorm(cmd);
    case 'windows': {
      const [N, C] = cmd.shape, [kh, kw] = cmd.kernel, [oh, ow] = cmd.size;
      const n = N * C * kh * kw * oh * ow;
      if (!n) return;
      const value = new Int32Array(new Float32Array([cmd.value]).buffer)[0];
      const p = desc([...cmd.shape, kh, kw, oh, ow, ...cmd.stride, ...cmd.dilation, ...cmd.padding, cmd.x.offset, ...cmd.x.strides, +cmd.kernelLast, value]);
      const x = ptr(cmd.x.id), out = at(cmd.out, StorageCode.F32);
      if (!pool || n < POOL_MIN_MAP) return K.windows(x, out, p);
      return pool.run('windowsPart', [x, out, p], 4 * pool.threads, 0, 0);
    }
    case 'foldWindows': {
      const [N, C, H, W] = cmd.shape, n = N * C * H * W;
      if (!n) return;
      const p = desc([...cmd.shape, ...cmd.kernel, ...cmd.size, ...cmd.stride, ...cmd.dilation, cmd.g.offset, ...cmd.g.strides]);
      const g = ptr(cmd.g.id), out = at(cmd.out, StorageCode.F32);
      if (!pool || n < POOL_MIN_MAP || N * C < 2) return K.foldWindows(g, out, p);
      return pool.run('foldWindowsPart', [g, out, p], Math.min(N * C, 4 * pool.threads), 0, 0);
    }
    case 'conv': case 'convGrad':
      return runConv(cmd);
    case 'matmul': {
      if (cmd.dt === StorageCode.F32 && swapsOperands(cmd.m, cmd.n, cmd.kk)) return runMatmulTransposed(cmd);
      const p = [cmd.batch, cmd.m, cmd.n, cmd.kk, ...cmd.aStrides, cmd.a.offset, ...cmd.bStrides, cmd.b.offset];
      // Large products run on the pool's threads in chunks (up to 4 per thread, of at least 2^18
      // multiply-adds), each thread with its own workspace slice.
      const macs = cmd.batch * cmd.m * cmd.n * cmd.kk, threads = pool && macs >= POOL_MIN_MACS ? pool.threads : 1;
      const chunks = Math.min(4 * threads, Math.max(threads, Math.floor(macs / 2 ** 18)));
      const wsPart = K.matmulWorkspaceBytes(cmd.m, cmd.n, cmd.kk), wsBytes = wsPart * threads;
      const extent = (v: ViewRef, s: number[], rows: number, cols: number) => v.offset + (cmd.batch - 1) * s[0] + (rows - 1) * s[1] + (cols - 1) * s[2] + 1;
      const aN = extent(cmd.a, cmd.aStrides, cmd.m, cmd.kk), bN = extent(cmd.b, cmd.bStrides, cmd.kk, cmd.n), n = cmd.batch * cmd.m * cmd.n;
      // The workspace and the 16-bit path's f32 copies are the device's scratch (ts/worker/scratch.ts).
      const scratch = wsBytes + (cmd.dt === StorageCode.F32 ? 0 : (n + aN + bN) * 4);
      reserveScratch(scratch, 'matmul');
      const ws = wsBytes > 0 ? allocRange(wsBytes) : 0;
      const out = at(cmd.out, cmd.dt), a = ptr(cmd.a.id), b = ptr(cmd.b.id);
      const f32 = (a: number, b: number, out: number) =>
        threads > 1 ? pool!.run('matmulPart', [StorageCode.F32, a, b, out, desc(p)], chunks, ws, wsPart) : K.matmul(StorageCode.F32, a, b, out, desc(p), ws);
      if (cmd.dt === StorageCode.F32) f32(a, b, out);
      else {
        // 16-bit floats: multiply in f32, then round into the output once.
        const tmp = allocRange(n * 4);
        const conv = (src: number, dt: number, count: number) => {
          const dst = allocRange(count * 4);
          K.copy(dt, StorageCode.F32, src, dst, desc([1, count, count, 1, 0]));
          return dst;
        };
        const a32 = conv(a, cmd.dt, aN), b32 = conv(b, cmd.dt, bN);
        f32(a32, b32, tmp);
        K.copy(StorageCode.F32, cmd.dt, tmp, out, desc([1, n, n, 1, 0]));
        freeRange(a32, aN * 4);
        freeRange(b32, bN * 4);
        freeRange(tmp, n * 4);
      }
      if (ws) freeRange(ws, wsBytes);
      releaseScratch(scratch);
      return;
    }
    // The index family.
    case 'gather': case 'scatter': case 'cumulative': case 'sort': case 'oneHot':
      return runIndex(cmd);
    case 'nll': case 'nllGrad':
      return runNll(cmd);
    case 'maxPool': case 'maxPoolGrad':
      return runMaxPool(cmd);
    case 'avgPool': case 'avgPoolGrad':
      return runAvgPool(cmd);
    case 'ampUnscale': { // h/ampcheck: GradScaler's fused check (assembly/kernels/amp.ts), one call for every gradient
      const words: number[] = [];
      for (const g of cmd.grads) words.push(at(g.at, g.dt), g.dt, g.n);
      // the table may outgrow the scratch area's 4096 words (1365 gradients): then in parts
      for (let i = 0; i < words.length; i += 4095) K.ampUnscale(desc(words.slice(i, i + 4095)), Math.min(words.length - i, 4095) / 3, at(cmd.invScale, StorageCode.F32), at(cmd.found, StorageCode.F32));
      return;
    }
    case 'dropScratch': // the GPU worker's cached scratch (ts/worker/scratch.ts); none here
      return;
    default:
      throw new Error(`unknown command ${cmd.k}`);
  }
}

/**
 * The micro-kernel's work for an M×N output: 8-column strips (a ragged last strip costs a whole
 * one) times 4-row tiles, a leftover row costing about half a tile (assembly/kernels/matmul.ts).
 */
const tileCost = (m: number, n: number) => Math.ceil(n / 8) * (Math.floor(m / 4) + 0.5 * (m % 4));

/**
 * Whether an f32 product is cheaper as its transpose, Cᵀ = Bᵀ·Aᵀ, then copied into place: when
 * N's strips are mostly padding and M fits them better (a 3×3 convolution's weight gradient,
 * 8 channels × 9 taps: 2 strips for 9 columns, 1 for 8: 284 → 144 µs in the small CNN's step).
 * The same sums in the same k order, so the same bits. K of at least 16 repays the transposing
 * copy (M·N elements). A 10-way linear layer's x·Wᵀ (16 rows: 0.75 of the cost) measured no
 * gain, so only clearer cases swap.
 */
function swapsOperands(m: number, n: number, k: number): boolean {
  return k >= 16 && tileCost(n, m) < 0.7 * tileCost(m, n);
}

/** An f32 product computed as Cᵀ = Bᵀ·Aᵀ into scratch, then copied into out transposed (see `swapsOperands`). */
function runMatmulTransposed(cmd: Extract<Command, { k: 'matmul' }>): void {
  const { batch, m, n, kk } = cmd, a = cmd.aStrides, b = cmd.bStrides, count = batch * m * n;
  const macs = count * kk, threads = pool && macs >= POOL_MIN_MACS ? pool.threads : 1;
  const chunks = Math.min(4 * threads, Math.max(threads, Math.floor(macs / 2 ** 18)));
  const wsPart = K.matmulWorkspaceBytes(n, m, kk), wsBytes = wsPart * threads;
  const scratch = wsBytes + count * 4;
  reserveScratch(scratch, 'matmul');
  const ws = wsBytes > 0 ? allocRange(wsBytes) : 0, tmp = allocRange(count * 4);
  const p = desc([batch, n, m, kk, b[0], b[2], b[1], cmd.b.offset, a[0], a[2], a[1], cmd.a.offset]);
  const A = ptr(cmd.b.id), B = ptr(cmd.a.id);
  if (threads > 1) pool!.run('matmulPart', [StorageCode.F32, A, B, tmp, p], chunks, ws, wsPart);
  else K.matmul(StorageCode.F32, A, B, tmp, p, ws);
  // tmp is [batch, n, m]: read it as [batch, m, n]
  K.copy(StorageCode.F32, StorageCode.F32, tmp, at(cmd.out, StorageCode.F32), viewDesc([batch, m, n], [{ id: -1, offset: 0, strides: [m * n, 1, m] }]));
  freeRange(tmp, count * 4);
  if (ws) freeRange(ws, wsBytes);
  releaseScratch(scratch);
}

/**
 * A convolution or its gradients (assembly/kernels/conv.ts), images split across the pool when
 * there are products enough. Each thread's workspace holds an image's windows; the gradient's
 * parts each sum dw and db over their images into scratch, added up in part order afterwards.
 */
function runConv(cmd: ConvCommand): void {
  const [N, C] = cmd.shape, [kh, kw] = cmd.kernel, [oh, ow] = cmd.size, { cout, groups } = cmd;
  if (!N || !cout || !oh || !ow) return;
  const grad = cmd.k === 'convGrad';
  const p = desc([...cmd.shape, kh, kw, oh, ow, ...cmd.stride, ...cmd.dilation, ...cmd.padding, cmd.x.offset, ...cmd.x.strides, 0, 0, cout, groups]);
  const wn = cout * (C / groups) * kh * kw;
  const products = grad ? (cmd.dx ? 1 : 0) + (cmd.dw ? 1 : 0) : 1;
  const threads = pool && N >= 2 && N * oh * ow * wn * products >= POOL_MIN_MACS ? Math.min(pool.threads, N) : 1;
  const wsPart = K.convWorkspaceBytes(p, +grad), wsBytes = wsPart * threads;
  const f32 = (q: Place | null) => (q ? at(q, StorageCode.F32) : 0);
  const x = ptr(cmd.x.id), w = f32(cmd.w), saved = f32(cmd.saved);
  if (!grad) {
    reserveScratch(wsBytes, 'conv');
    const ws = allocRange(wsBytes), out = f32(cmd.out), b = f32(cmd.b);
    if (threads > 1) pool!.run('convPart', [x, w, b, out, p, saved], Math.min(N, 4 * threads), ws, wsPart);
    else K.conv(x, w, b, out, p, saved, ws);
    freeRange(ws, wsBytes);
    releaseScratch(wsBytes);
    return;
  }
  // one part per thread (threads ≤ N: each has an image), its sums in scratch
  const sums = threads > 1 ? threads * ((cmd.dw ? wn : 0) + (cmd.db ? cout : 0)) * 4 : 0;
  reserveScratch(wsBytes + sums, 'conv');
  const ws = allocRange(wsBytes), gy = f32(cmd.gy), dx = f32(cmd.dx), dw = f32(cmd.dw), db = f32(cmd.db);
  if (threads > 1) {
    const part = sums ? allocRange(sums) : 0, dwParts = dw ? part : 0, dbParts = db ? part + (dw ? threads * wn * 4 : 0) : 0;
    pool!.run('convGradPart', [x, w, gy, dx, dwParts, dbParts, p, saved], threads, ws, wsPart);
    if (dw) K.convGradSum(dwParts, dw, wn, threads);
    if (db) K.convGradSum(dbParts, db, cout, threads);
    if (part) freeRange(part, sums);
  } else {
    K.convGrad(x, w, gy, dx, dw, db, p, saved, ws);
  }
  freeRange(ws, wsBytes);
  releaseScratch(wsBytes + sums);
}

const ROW_KINDS = { softmax: 0, log_softmax: 1, layer_norm: 2 } as const;

/** Softmax, log-softmax, layer norm and their input gradients, a row at a time (assembly/kernels/rownorm.ts). */
function runRowNorm(cmd: Extract<Command, { k: 'softmax' | 'rowGrad' }>): void {
  const n = cmd.outer * cmd.inner;
  if (n === 0) return;
  const f32 = (p: Place | null | undefined) => (p ? at(p, StorageCode.F32) : 0);
  let kind: number, x: number, g = 0, w = 0, b = 0;
  if (cmd.k === 'softmax') {
    kind = cmd.norm ? ROW_KINDS.layer_norm : cmd.log ? ROW_KINDS.log_softmax : ROW_KINDS.softmax;
    (x = f32(cmd.a)), (w = f32(cmd.norm?.w)), (b = f32(cmd.norm?.b));
  } else {
    kind = 3 + ROW_KINDS[cmd.kind];
    (x = f32(cmd.x)), (g = f32(cmd.g)), (w = f32(cmd.norm?.w));
  }
  const eps = new Int32Array(new Float32Array([cmd.norm?.eps ?? 0]).buffer)[0];
  const p = desc([kind, x, f32(cmd.out), cmd.outer, cmd.inner, w, b, eps, g]);
  if (!pool || n < POOL_MIN_ROWS || cmd.outer < 2) return K.rowNorm(p);
  pool.run('rowNormPart', [p], Math.min(cmd.outer, 4 * pool.threads), 0, 0);
}

/** Whether an elementwise op over `shape` is large enough for the pool. */
function pooled(shape: number[]): boolean {
  if (!pool) return false;
  let n = 1;
  for (const s of shape) n *= s;
  return n >= POOL_MIN_MAP;
}

/** Storage codes of floating dtypes (f32, f16, bf16). */
const isFloatCode = (dt: number) => dt === StorageCode.F32 || dt === StorageCode.F16 || dt === StorageCode.BF16;

/**
 * Runs an elementwise kernel's `…Part` export on the pool: its i32 arguments (8 words) then its
 * f64 parameters, written after the descriptor in the scratch area (the kernels read them by
 * pointer; the control block carries i32s only). Each thread takes chunks of rows, or of the
 * one row of a contiguous operand (assembly/kernels/iter.ts: chunkOf).
 */
function mapOnPool(job: 'unaryPart' | 'binaryPart', words: number[], params: number[]): void {
  const w = scratchWords(), q = MAP_ARGS;
  for (let i = 0; i < 8; i++) w[q + i] = words[i] ?? 0;
  const f = new Float64Array(K.memory.buffer, w.byteOffset + (q + 8) * 4, params.length);
  f.set(params);
  pool!.run(job, [w.byteOffset + q * 4], 4 * pool!.threads, 0, 0);
}
/** Where `mapOnPool`'s arguments go, in scratch words: past any descriptor (rank ≤ 8, 3 views) and before the scalar slots at the end. */
const MAP_ARGS = 2048;

function write(id: number, byteOffset: number, data: ArrayBuffer | Uint8Array): void {
  const src = data instanceof Uint8Array ? data : new Uint8Array(data);
  new Uint8Array(K.memory.buffer, ptr(id) + byteOffset, src.byteLength).set(src);
}

// ---- The index family (assembly/kernels/index.ts) ----

/** The index kernels' exports; each checking kernel returns 1 on a bad index (then `badIndex()` is it). */
interface IndexKernels {
  gather(dt: number, x: number, idx: number, out: number, p: number, dimStride: number, size: number, wrap: number): number;
  scatter(dt: number, add: number, out: number, idx: number, src: number, p: number, dimStride: number, size: number, value: number): number;
  cumulative(prod: number, dt: number, outDt: number, x: number, out: number, p: number, len: number, dimStride: number, inner: number): void;
  sortWorkspaceBytes(len: number): number;
  sortIndices(dt: number, descending: number, x: number, out: number, outer: number, len: number, inner: number, ws: number): void;
  oneHot(idx: number, out: number, n: number, classes: number): number;
  badIndex(): bigint;
}

/** Raises a kernel's bad index as the op's message; the executor reports it at the next sync point. */
function checked(status: number, check: DeviceCheck): void {
  if (status) throw new Error(check.message.replace('%d', String((K as unknown as IndexKernels).badIndex())));
}

function runIndex(cmd: IndexCommand): void {
  const I = K as unknown as IndexKernels;
  switch (cmd.k) {
    case 'gather':
      return checked(I.gather(cmd.dt, ptr(cmd.x.id), ptr(cmd.idx.id), at(cmd.out, cmd.dt), viewDesc(cmd.shape, [cmd.x, cmd.idx]),
        cmd.dimStride, cmd.check.size, +cmd.check.wrap), cmd.check);
    case 'scatter': {
      if (!cmd.shape.every((s) => s > 0)) return;
      K.copy(cmd.dt, cmd.dt, ptr(cmd.x.id), at(cmd.out, cmd.dt), viewDesc(cmd.shape, [cmd.x]));
      const views = [{ id: cmd.out.id, offset: cmd.out.offset, strides: cmd.dstStrides }, cmd.idx, ...(cmd.src ? [cmd.src] : [])];
      return checked(I.scatter(cmd.dt, +cmd.add, ptr(cmd.out.id), ptr(cmd.idx.id), cmd.src ? ptr(cmd.src.id) : 0, viewDesc(cmd.idxShape, views),
        cmd.dimStride, cmd.check.size, cmd.value), cmd.check);
    }
    case 'cumulative':
      return I.cumulative(+cmd.prod, cmd.dt, cmd.outDt, ptr(cmd.x.id), at(cmd.out, cmd.outDt), viewDesc(cmd.lines, [cmd.x]), cmd.len, cmd.dimStride, cmd.inner);
    case 'sort': {
      if (!cmd.outer || !cmd.len || !cmd.inner) return;
      const bytes = I.sortWorkspaceBytes(cmd.len), ws = allocRange(bytes);
      I.sortIndices(cmd.dt, +cmd.descending, at(cmd.x, cmd.dt), at(cmd.out, StorageCode.I64), cmd.outer, cmd.len, cmd.inner, ws);
      return freeRange(ws, bytes);
    }
    case 'oneHot':
      return checked(I.oneHot(at(cmd.idx, StorageCode.I64), at(cmd.out, StorageCode.I64), cmd.n, cmd.classes), cmd.check);
  }
}

const REDUCTIONS = { none: 0, sum: 1, mean: 2 } as const;
const F32_WORD = new Float32Array(1), I32_WORD = new Int32Array(F32_WORD.buffer);
const f32Word = (v: number) => ((F32_WORD[0] = v), I32_WORD[0]);

/** The fused negative log likelihood and its gradient (assembly/kernels/loss.ts; the descriptor is its note's). */
function runNll(cmd: NllCommand): void {
  const rows = cmd.outer * cmd.inner;
  if (!(rows && cmd.classes) && (cmd.k === 'nllGrad' || cmd.reduction === 'none')) return;
  const f32 = (p: Place | null) => (p ? at(p, StorageCode.F32) : 0);
  const ignore = BigInt.asUintN(64, BigInt(cmd.ignore));
  const words = [cmd.k === 'nll' ? f32(cmd.x) : 0, at(cmd.target, StorageCode.I64), f32(cmd.w), f32(cmd.out), cmd.outer, cmd.classes, cmd.inner,
    Number(ignore & 0xffffffffn) | 0, Number(ignore >> 32n) | 0, REDUCTIONS[cmd.reduction], f32Word(1 - cmd.eps), f32Word(cmd.classes ? cmd.eps / cmd.classes : 0)];
  words.push(cmd.k === 'nllGrad' ? f32(cmd.g) : 0, f32(cmd.total));
  if (cmd.k === 'nll') return checked(K.nll(desc(words)), cmd.check);
  K.nllGrad(desc(words));
}

/**
 * Max pooling and its gradient (assembly/kernels/pool.ts; the descriptor is its note's), a plane
 * at a time: on the pool's threads when the planes are large enough to pay for waking them.
 */
function runMaxPool(cmd: Exclude<PoolCommand, AvgPoolCommand>): void {
  const [H, W] = cmd.size, [oh, ow] = cmd.outSize, n = cmd.planes * H * W;
  if (!cmd.planes || !oh || !ow) return;
  const p = desc([cmd.planes, H, W, oh, ow, ...cmd.kernel, ...cmd.stride, ...cmd.padding, ...cmd.dilation]);
  const args = cmd.k === 'maxPool'
    ? [at(cmd.x, StorageCode.F32), at(cmd.values, StorageCode.F32), at(cmd.indices, StorageCode.I64), p]
    : [at(cmd.g, StorageCode.F32), at(cmd.indices, StorageCode.I64), at(cmd.grad, StorageCode.F32), p];
  if (pool && n >= POOL_MIN_MAP && cmd.planes > 1) return pool.run(cmd.k === 'maxPool' ? 'maxPoolPart' : 'maxPoolGradPart', args, Math.min(cmd.planes, 4 * pool.threads), 0, 0);
  if (cmd.k === 'maxPool') K.maxPool(args[0], args[1], args[2], p);
  else K.maxPoolGrad(args[0], args[1], args[2], p);
}

/** Average pooling and its gradient (assembly/kernels/pool.ts), a plane at a time, as `runMaxPool`. */
function runAvgPool(cmd: AvgPoolCommand): void {
  const [H, W] = cmd.size, [oh, ow] = cmd.outSize, n = cmd.planes * H * W;
  if (!cmd.planes || !oh || !ow) return;
  const p = desc([cmd.planes, H, W, oh, ow, ...cmd.kernel, ...cmd.stride, ...cmd.padding, +cmd.includePad, f32Word(cmd.divisor)]);
  const grad = cmd.k === 'avgPoolGrad' ? 1 : 0;
  const [src, dst] = cmd.k === 'avgPool' ? [at(cmd.x, StorageCode.F32), at(cmd.values, StorageCode.F32)] : [at(cmd.g, StorageCode.F32), at(cmd.grad, StorageCode.F32)];
  if (pool && n >= POOL_MIN_MAP && cmd.planes > 1) return pool.run('avgPoolPart', [src, dst, p, grad], Math.min(cmd.planes, 4 * pool.threads), 0, 0);
  K.avgPool(src, dst, p, grad);
}

/** The cpu device backend. */
export const cpuBackend: Backend = {
  async init({ name }): Promise<DeviceInfo> {
    // Memory: shared (the kernels' shared build, helper threads on it) where the platform allows
    // it and there is more than one core; otherwise the plain build, which owns its memory.
    const threads = await poolThreads();
    // Shared wherever the platform allows it (pinned tensors live here, read by the GPU workers), even single-threaded.
    const memory = canShareMemory() ? sharedMemory(SHARED_INITIAL_PAGES) : null;
    shared = memory;
    addresses = memory ? new Uint32Array(new SharedArrayBuffer(4 * HOST_SEGMENTS)) : null;
    const module = await (memory ? loadSharedKernelWasm() : loadKernelWasm());
    const abort = (_msg: number, _file: number, line: number, col: number) => {
      throw new Error(`wasm kernel aborted at ${line}:${col}`);
    };
    const instance = await WebAssembly.instantiate(module, { env: memory ? { memory, abort } : { abort } });
    K = instance.exports as unknown as Kernels;
    // The shared build exports the memory it imports, so K.memory is that one; a pool that
    // cannot start leaves the device single-threaded.
    if (memory && threads > 1) pool = await startPool(module, memory, instance.exports, threads).catch(() => null);
    heapEnd = K.heapBase();
    return {
      name, kind: 'cpu', cpuAdapter: false, vendor: 'webassembly', architecture: 'wasm32+simd128', description: 'AssemblyScript kernels on WebAssembly',
      features: pool ? ['simd128', 'threads'] : ['simd128'], limits: { threads: pool?.threads ?? 1 }, nativeF16: false, scratch: scratchCounter(),
      eventTiming: 'host', pinnable: memory !== null,
    };
  },
  run,
  flush() {},
  // A copy in a fresh ArrayBuffer (a SharedArrayBuffer, as slicing the memory's own buffer gives, cannot be transferred)
  read: (id, byteOffset, bytes) => copyOut(new Uint8Array(K.memory.buffer, ptr(id) + byteOffset, bytes)),
  write,
  async idle() {},
  pollMs: 0.3,
  hostMemory: () => (shared && addresses ? { memory: shared, addresses } : null),
  // Commands run synchronously here: work recorded so far has finished.
  mark: async () => performance.now(),
  async close() {
    await pool?.close();
    pool = null;
  },
};

