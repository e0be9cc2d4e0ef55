// Batched, arbitrarily strided f32 matrix multiply, split into parts for a pool of threads.
//
// The hard part is speed without FMA (WebAssembly SIMD has none before relaxed-simd) and without
// packing A. B is packed, one KC x NC block at a time, into the calling thread's workspace as
// 8-column strips (kc rows of 8 floats, zero-padded past N), so the micro-kernel streams B with
// two v128 loads per k whatever B's strides are. (Reading a row-major B in place for small M was
// slower when every k touched another page; but with at most 16 rows, each packed strip serves at
// most 4 tiles, and a B whose rows are at most 4 KiB is read in place: its full strips are not
// packed, only a ragged last one. A convolution's product, 16 x 144 times 144 x 784, per batch:
// 493-508 -> 449-462 us on one thread, interleaved.) The 4x8 micro-kernel keeps 8 f32x4 accumulators (V8
// has 15 free SIMD registers on x64: 8 accumulators, 2 B vectors, the A broadcast and the product)
// and broadcasts A with `v128.load32_splat` (one vbroadcastss from memory; a scalar load and a
// splat cost a shuffle more per row and k: 10-30% slower). Unrolling k, even by 2, made TurboFan
// hoist the loads and spill accumulators, so the loop stays one k per trip.
// Loops follow the usual GEMM nest: N blocks, K blocks (pack), M blocks of MC rows, strips, 4 rows,
// so one strip (8 KiB) stays in L1 while MC rows of A stream over it.
// Each K block after the first accumulates into out; K = 0 writes zeros.
//
// Threads: `matmulPart(part, parts)` computes one of `parts` disjoint pieces of the output (whole
// batches and row bands, or column bands when A has few rows), so the cpu worker and its helpers
// run the same export on one shared memory, taking pieces until none is left. A part touches only
// the memory it is given: the calling thread's workspace and its own rows or columns of out.
// Nothing here allocates or keeps state, so any number of threads may run it at once.

const KC: i32 = 256;
const NC: i32 = 512;
const MC: i32 = 64;
/** Bytes at the end of each thread's workspace where a ragged 4x8 tile is spilled. */
const EDGE_BYTES: i32 = 128;

/** Workspace bytes that one part of matmul needs for these sizes (0 when nothing to pack). */
export function matmulWorkspaceBytes(M: i32, N: i32, K: i32): i32 {
  if (M <= 0 || N <= 0 || K <= 0) return 0;
  return min<i32>(K, KC) * ((min<i32>(N, NC) + 7) & ~7) * 4 + EDGE_BYTES;
}

/** Stores the transpose of the 4×4 block whose columns are c0..c3 as four rows 32 bytes apart (half of four packed strip rows). */
// @ts-ignore: decorator
@inline function transpose4(dst: usize, c0: v128, c1: v128, c2: v128, c3: v128): void {
  const t0 = v128.shuffle<f32>(c0, c1, 0, 4, 1, 5), t1 = v128.shuffle<f32>(c2, c3, 0, 4, 1, 5);
  const t2 = v128.shuffle<f32>(c0, c1, 2, 6, 3, 7), t3 = v128.shuffle<f32>(c2, c3, 2, 6, 3, 7);
  v128.store(dst, v128.shuffle<f32>(t0, t1, 0, 1, 4, 5));
  v128.store(dst, v128.shuffle<f32>(t0, t1, 2, 3, 6, 7), 32);
  v128.store(dst, v128.shuffle<f32>(t2, t3, 0, 1, 4, 5), 64);
  v128.store(dst, v128.shuffle<f32>(t2, t3, 2, 3, 6, 7), 96);
}

function packB(src: usize, rs: usize, cs: usize, kc: i32, nc: i32, ws: usize): void {
  const strips = (nc + 7) >> 3;
  let dst = ws;
  for (let s = 0; s < strips; s++) {
    const cols = min<i32>(8, nc - (s << 3));
    let row = src + <usize>(s << 3) * cs;
    if (cols == 8 && cs == 4) {
      for (let k = 0; k < kc; k++) {
        v128.store(dst, v128.load(row));
        v128.store(dst, v128.load(row, 16), 16);
        row += rs;
        dst += 32;
      }
    } else if (rs == 4 && cols == 8) {
      // Column-major B (a transposed view: a weight gradient's windows, x·Wᵀ's W): four k of
      // each of the 8 columns, two 4×4 transposes in registers, four packed rows (the scalar
      // path below took a third of a convolution's weight-gradient product)
      let k = 0;
      for (; k + 4 <= kc; k += 4) {
        const at = row + (<usize>k << 2);
        transpose4(dst, v128.load(at), v128.load(at + cs), v128.load(at + 2 * cs), v128.load(at + 3 * cs));
        const hi = at + 4 * cs;
        transpose4(dst + 16, v128.load(hi), v128.load(hi + cs), v128.load(hi + 2 * cs), v128.load(hi + 3 * cs));
        dst += 128;
      }
      for (; k < kc; k++) {
        for (let j = 0; j < 8; j++) store<f32>(dst + (<usize>j << 2), load<f32>(row + <usize>j * cs + (<usize>k << 2)));
        dst += 32;
      }
    } else if (rs == 4) {
      // Column-major B, a partial strip: read each column contiguously.
      for (let j = 0; j < 8; j++) {
        let at = dst + (<usize>j << 2);
        if (j < cols) {
          let colp = row + <usize>j * cs;
          for (let k = 0; k < kc; k++) { store<f32>(at, load<f32>(colp)); colp += 4; at += 32; }
        } else {
          for (let k = 0; k < kc; k++) { store<f32>(at, 0); at += 32; }
        }
      }
      dst += <usize>kc << 5;
    } else {
      for (let k = 0; k < kc; k++) {
        for (let j = 0; j < 8; j++) {
          store<f32>(dst + (<usize>j << 2), j < cols ? load<f32>(row + <usize>j * cs) : 0);
        }
        row += rs;
        dst += 32;
      }
    }
  }
}

// @ts-ignore: decorator
@inline function put(pc: usize, off: usize, v: v128, first: bool): void {
  v128.store(pc + off, first ? v : f32x4.add(v128.load(pc + off), v));
}

function edgeStore(edge: usize, pc: usize, crs: usize, rows: i32, cols: i32, first: bool): void {
  for (let r = 0; r < rows; r++) {
    for (let j = 0; j < cols; j++) {
      const v = load<f32>(edge + (<usize>(r * 8 + j) << 2));
      const at = pc + <usize>r * crs + (<usize>j << 2);
      store<f32>(at, first ? v : load<f32>(at) + v);
    }
  }
}

/** C[4, cols] (+)= A[4, kc] B[kc, 8] (a packed strip, rows `pbs` = 32 bytes apart, or 8 columns of B in place). */
function kernel4x8(pa: usize, ars: usize, acs: usize, pb: usize, pbs: usize, kc: i32, pc: usize, crs: usize, cols: i32, first: bool, edge: usize): void {
  let c00 = f32x4.splat(0), c01 = f32x4.splat(0);
  let c10 = f32x4.splat(0), c11 = f32x4.splat(0);
  let c20 = f32x4.splat(0), c21 = f32x4.splat(0);
  let c30 = f32x4.splat(0), c31 = f32x4.splat(0);
  let a0 = pa;
  let a1 = pa + ars;
  let a2 = a1 + ars;
  let a3 = a2 + ars;
  let k = 0;
  for (; k < kc; k++) {
    const b0 = v128.load(pb);
    const b1 = v128.load(pb, 16);
    let av = v128.load32_splat(a0);
    c00 = f32x4.add(c00, f32x4.mul(av, b0));
    c01 = f32x4.add(c01, f32x4.mul(av, b1));
    av = v128.load32_splat(a1);
    c10 = f32x4.add(c10, f32x4.mul(av, b0));
    c11 = f32x4.add(c11, f32x4.mul(av, b1));
    av = v128.load32_splat(a2);
    c20 = f32x4.add(c20, f32x4.mul(av, b0));
    c21 = f32x4.add(c21, f32x4.mul(av, b1));
    av = v128.load32_splat(a3);
    c30 = f32x4.add(c30, f32x4.mul(av, b0));
    c31 = f32x4.add(c31, f32x4.mul(av, b1));
    a0 += acs; a1 += acs; a2 += acs; a3 += acs;
    pb += pbs;
  }
  if (cols == 8) {
    put(pc, 0, c00, first); put(pc, 16, c01, first); pc += crs;
    put(pc, 0, c10, first); put(pc, 16, c11, first); pc += crs;
    put(pc, 0, c20, first); put(pc, 16, c21, first); pc += crs;
    put(pc, 0, c30, first); put(pc, 16, c31, first);
    return;
  }
  v128.store(edge, c00); v128.store(edge, c01, 16);
  v128.store(edge, c10, 32); v128.store(edge, c11, 48);
  v128.store(edge, c20, 64); v128.store(edge, c21, 80);
  v128.store(edge, c30, 96); v128.store(edge, c31, 112);
  edgeStore(edge, pc, crs, 4, cols, first);
}

/** C[1, cols] (+)= A[1, kc] B[kc, 8] (rows `pbs` bytes apart). */
function kernel1x8(pa: usize, acs: usize, pb: usize, pbs: usize, kc: i32, pc: usize, cols: i32, first: bool, edge: usize): void {
  let c0 = f32x4.splat(0), c1 = f32x4.splat(0);
  for (let k = 0; k < kc; k++) {
    const av = v128.load32_splat(pa);
    c0 = f32x4.add(c0, f32x4.mul(av, v128.load(pb)));
    c1 = f32x4.add(c1, f32x4.mul(av, v128.load(pb, 16)));
    pa += acs;
    pb += pbs;
  }
  if (cols == 8) {
    put(pc, 0, c0, first); put(pc, 16, c1, first);
    return;
  }
  v128.store(edge, c0); v128.store(edge, c1, 16);
  edgeStore(edge, pc, 0, 1, cols, first);
}

/** Runs the 4x8 and 1x8 kernels over rows [m0, mEnd) of one strip (B's rows `pbs` bytes apart). */
function rows(pa: usize, ars: usize, acs: usize, pb: usize, pbs: usize, kc: i32, pc: usize, crs: usize, m0: i32, mEnd: i32, cols: i32, first: bool, edge: usize): void {
  let i = m0;
  for (; i + 4 <= mEnd; i += 4) {
    kernel4x8(pa + <usize>i * ars, ars, acs, pb, pbs, kc, pc + <usize>i * crs, crs, cols, first, edge);
  }
  for (; i < mEnd; i++) {
    kernel1x8(pa + <usize>i * ars, acs, pb, pbs, kc, pc + <usize>i * crs, cols, first, edge);
  }
}

/**
 * C[M, N] = A[M, K] B[K, N] for one matrix (K > 0), or C += A B with `acc`; A and B are strided
 * (bytes), C has rows `crs` bytes apart. `ws` holds matmulWorkspaceBytes(M, N, K).
 */
export function gemm(pa: usize, ars: usize, acs: usize, pb: usize, brs: usize, bcs: usize, pc: usize, crs: usize, M: i32, N: i32, K: i32, ws: usize, acc: bool = false): void {
  const edge = ws + <usize>(min<i32>(K, KC) * ((min<i32>(N, NC) + 7) & ~7) * 4);
  for (let n0 = 0; n0 < N; n0 += NC) {
    const nc = min<i32>(NC, N - n0);
    const strips = (nc + 7) >> 3;
    for (let k0 = 0; k0 < K; k0 += KC) {
      const kc = min<i32>(KC, K - k0);
      const first = k0 == 0 && !acc;
      const a = pa + <usize>k0 * acs;
      const b = pb + <usize>k0 * brs + <usize>n0 * bcs;
      // Few rows (M ≤ 16: each packed strip would serve at most 4 tiles) and short contiguous B
      // rows: the full strips are read in place, only a ragged last strip is packed.
      const inPlace = M <= 16 && bcs == 4 && brs <= 4096;
      const full = inPlace ? nc >> 3 : 0;
      if (full < strips) packB(b + <usize>(full << 3) * bcs, brs, bcs, kc, nc - (full << 3), ws);
      for (let m0 = 0; m0 < M; m0 += MC) {
        const mEnd = min<i32>(M, m0 + MC);
        for (let s = 0; s < strips; s++) {
          const cols = min<i32>(8, nc - (s << 3));
          const c = pc + (<usize>(n0 + (s << 3)) << 2);
          if (s < full) rows(a, ars, acs, b + (<usize>(s << 3) << 2), brs, kc, c, crs, m0, mEnd, cols, first, edge);
          else rows(a, ars, acs, ws + <usize>((s - full) * kc) * 32, 32, kc, c, crs, m0, mEnd, cols, first, edge);
        }
      }
    }
  }
}

/**
 * Computes part `part` of `parts` of out[bi, i, j] = sum_k A[bi, i, k] * B[bi, k, j] in f32
 * (dt must be 0). p: [B, M, N, K, aBatchStride, aRowStride, aColStride, aOffset, bBatchStride,
 * bRowStride, bColStride, bOffset] (elements); out is contiguous [B, M, N]; ws must hold
 * matmulWorkspaceBytes(M, N, K) bytes, and no other thread may use it meanwhile.
 *
 * The parts split the columns (multiples of 8) of a product with fewer batches than parts, when
 * there are columns enough; otherwise the batches' row bands (multiples of 4 rows). Row bands
 * cost each part a packing of all of B, column bands none (every part reads all of A, unpacked),
 * which matters when A has few rows and K is long (a convolution's weight gradient). The split
 * depends only on the sizes and `parts`.
 */
export function matmulPart(dt: i32, a: usize, b: usize, out: usize, p: usize, ws: usize, part: i32, parts: i32): void {
  const batches = load<i32>(p);
  const M = load<i32>(p, 4);
  const N = load<i32>(p, 8);
  const K = load<i32>(p, 12);
  if (batches <= 0 || M <= 0 || N <= 0 || part >= parts) return;
  const crs = <usize>N << 2;
  const cbs = <usize>M * crs;
  if (K <= 0) {
    // Zeros, split by whole batches.
    const b0 = <i32>(<i64>batches * part / parts), b1 = <i32>(<i64>batches * (part + 1) / parts);
    memory.fill(out + <usize>b0 * cbs, 0, <usize>(b1 - b0) * cbs);
    return;
  }
  const aBS = <usize>load<i32>(p, 16) << 2;
  const aRS = <usize>load<i32>(p, 20) << 2;
  const aCS = <usize>load<i32>(p, 24) << 2;
  const aOff = <usize>load<i32>(p, 28) << 2;
  const bBS = <usize>load<i32>(p, 32) << 2;
  const bRS = <usize>load<i32>(p, 36) << 2;
  const bCS = <usize>load<i32>(p, 40) << 2;
  const bOff = <usize>load<i32>(p, 44) << 2;
  const tiles = (M + 3) >> 2;
  const strips = (N + 7) >> 3;
  if (parts == 1 || batches >= parts || strips < parts) {
    // Row bands: units are 4-row tiles of every batch, numbered batch-major.
    const total = <i64>batches * tiles;
    const u0 = total * part / parts, u1 = total * (part + 1) / parts;
    for (let u = u0; u < u1;) {
      const bi = <i32>(u / tiles), t0 = <i32>(u % tiles);
      const t1 = <i32>min<i64>(<i64>tiles, <i64>t0 + (u1 - u));
      const r0 = t0 << 2, r1 = min<i32>(M, t1 << 2);
      gemm(a + aOff + <usize>bi * aBS + <usize>r0 * aRS, aRS, aCS, b + bOff + <usize>bi * bBS, bRS, bCS,
        out + <usize>bi * cbs + <usize>r0 * crs, crs, r1 - r0, N, K, ws);
      u += t1 - t0;
    }
  } else {
    // Column bands of 8-column strips, every batch.
    const s0 = <i32>(<i64>strips * part / parts), s1 = <i32>(<i64>strips * (part + 1) / parts);
    const c0 = s0 << 3, c1 = min<i32>(N, s1 << 3);
    if (c1 <= c0) return;
    for (let bi = 0; bi < batches; bi++) {
      gemm(a + aOff + <usize>bi * aBS, aRS, aCS, b + bOff + <usize>bi * bBS + <usize>c0 * bCS, bRS, bCS,
        out + <usize>bi * cbs + (<usize>c0 << 2), crs, M, c1 - c0, K, ws);
    }
  }
}

/** The whole product on the calling thread: `matmulPart(.., 0, 1)`; see there for `p` and `ws`. */
export function matmul(dt: i32, a: usize, b: usize, out: usize, p: usize, ws: usize): void {
  matmulPart(dt, a, b, out, p, ws, 0, 1);
}
