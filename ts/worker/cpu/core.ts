/**
 * The cpu worker's state: the kernels' instance over one WebAssembly memory, the pool of helper
 * threads, the segments, and the scratch area where kernel descriptors are written.
 *
 * Segments (which the caching allocator on the calling thread carves into blocks) are byte
 * ranges of that memory, taken from a first-fit free list here, 16-byte aligned so SIMD loads
 * stay aligned. Kernel descriptors (shape, strides, offsets) are written as i32s into the
 * module's scratch area before each call. Pointers are bytes; strides and offsets are elements,
 * as the kernels expect. Large matmuls, elementwise ops, row normalisations, windows and random
 * draws run in chunks on the pool's threads (cpu-pool.ts: each `…Part` export computes one chunk);
 * each family decides when a command is large enough for them.
 *
 * The families (map.ts, matmul.ts, rows.ts, ...) read this module's `let` exports as live
 * bindings and change them only through its functions.
 */
import type { KernelPool } from '../cpu-pool.js';
import type { DeviceCheck, Place, ViewRef } from '../../ir/commands.js';

/** The AssemblyScript kernels' exports (see `assembly/index.ts`; the index family's are in index-family.ts). */
export interface Kernels {
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
  /** GradScaler's fused check (assembly/kernels/amp.ts); returns 1 when it set the flag. */
  ampUnscale(p: number, n: number, inv: number, found: number): number;
  /** The optimizers' fused step (assembly/kernels/optim.ts): `n` parameters of the table at `p`, the group's scalars at `h`. */
  optimStep(p: number, n: number, h: number): void;
  /** `_foreach_norm` (assembly/kernels/foreach.ts): the norms of `n` f32, f16 or bf16 tensors of the table at `p` (address, count, storage code) into `out`; `kind` 0 any p, 1, 2, 3 inf. */
  foreachNorm(p: number, n: number, kind: number, ord: number, out: number): void;
  /** `_foreach_mul_` (assembly/kernels/foreach.ts): `n` f32 tensors of the table at `p` (address, count) times the f32 at `s`, in place. */
  foreachMul(p: number, n: number, s: number): void;
  /** `_foreach_clamp_min_`/`_max_` (assembly/kernels/foreach.ts): `n` f32 tensors of the table at `p` clamped to [lo, hi] in place, NaN kept. */
  foreachClamp(p: number, n: number, lo: number, hi: number): void;
  /** Fused attention's passes (assembly/kernels/attention.ts): part `part` of `parts` of the rows, E + Ev f32 of workspace at `ws`. */
  attentionPart(p: number, ws: number, part: number, parts: number): void;
  /** The index a checking kernel (index family, nll) last found out of range. */
  badIndex(): bigint;
}

const ALIGN = 16;
const ELEMENT_BYTES = [4, 4, 1, 1, 2, 2, 8];

export let K: Kernels;
/** Helper threads for large kernels (null: single-threaded; see `cpu-pool.ts`). */
export let pool: KernelPool | null = null;
/** Products with fewer multiply-adds than this run on one thread (waking helpers costs more). */
export const POOL_MIN_MACS = 1 << 19;
/** Elementwise ops (and windows, pooling) on fewer elements than this run on one thread (waking helpers costs about as much as 2^17 relu elements). */
export const POOL_MIN_MAP = 1 << 17;
let heapEnd = 0;
/** Free ranges [start, size], sorted by start. */
const freeList: [number, number][] = [];
/** Each segment's [start, bytes]. */
const ranges = new Map<number, [number, number]>();

/** The shared memory (null for the plain build), and each segment's address in it, for the GPU workers' pinned copies. */
export let shared: WebAssembly.Memory | null = null;
export let addresses: Uint32Array | null = null;
/** Segment ids the address table covers (the allocator reuses the lowest free id, so live ids stay small). */
const HOST_SEGMENTS = 1 << 14;

/**
 * Takes the kernels' instance (on `memory` when it is shared: the shared build exports the memory
 * it imports, so `K.memory` is that one) and the pool started on it, at init.
 */
export function adopt(kernels: Kernels, memory: WebAssembly.Memory | null, helpers: KernelPool | null): void {
  K = kernels;
  shared = memory;
  addresses = memory ? new Uint32Array(new SharedArrayBuffer(4 * HOST_SEGMENTS)) : null;
  pool = helpers;
  heapEnd = K.heapBase();
}

/** Stops the pool's helpers (at close). */
export async function closePool(): Promise<void> {
  await pool?.close();
  pool = null;
}

/** Takes `bytes` (rounded up to the alignment) from the free list, or from the end of the heap, growing the memory. */
export function allocRange(bytes: number): number {
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

/** Gives a range back, merging it with its neighbours (and into the heap's end when it is last). */
export function freeRange(start: number, bytes: number): void {
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

/** The `segment` command: a range for segment `id`, entered in the address table. */
export function allocSegment(id: number, bytes: number): void {
  const start = allocRange(bytes);
  ranges.set(id, [start, bytes]);
  if (addresses && id < addresses.length) addresses[id] = start;
}

/** The `release` command: segment `id`'s range back to the free list. */
export function releaseSegment(id: number): void {
  const [start, bytes] = ranges.get(id)!;
  ranges.delete(id);
  if (addresses && id < addresses.length) addresses[id] = 0;
  freeRange(start, bytes);
}

/** Segment `id`'s byte address. */
export function ptr(id: number): number {
  const r = ranges.get(id);
  if (!r) throw new Error(`segment ${id} does not exist on this device`);
  return r[0];
}

/** The byte address of a place holding elements of storage code `dt`. */
export const at = (p: Place, dt: number): number => ptr(p.id) + p.offset * ELEMENT_BYTES[dt];

/** The scratch area as i32 words (made again after the memory grows, which detaches the old view). */
let scratchView: Int32Array | null = null;
export function scratchWords(): Int32Array {
  if (scratchView?.buffer !== K.memory.buffer) scratchView = new Int32Array(K.memory.buffer, K.scratch(), 4096);
  return scratchView!;
}

/** Writes i32 words into the scratch area and returns its address. */
export function desc(words: number[]): number {
  scratchWords().set(words);
  return scratchView!.byteOffset;
}

/**
 * Writes a strided kernel's descriptor, [rank, n, shape, (strides, offset) per view], into the
 * scratch area and returns its address (the launch path: no intermediate arrays).
 */
export function viewDesc(shape: number[], views: ViewRef[]): number {
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

const F32_WORD = new Float32Array(1), I32_WORD = new Int32Array(F32_WORD.buffer);
/** An f32's bits as an i32 descriptor word. */
export const f32Word = (v: number) => ((F32_WORD[0] = v), I32_WORD[0]);

/** Raises a kernel's bad index as the op's message; the executor reports it at the next sync point. */
export function checked(status: number, check: DeviceCheck): void {
  if (status) throw new Error(check.message.replace('%d', String(K.badIndex())));
}
