// Batched, arbitrarily strided f32 matrix multiply.
//
// The hard part is speed without packing A or relaxed SIMD. B is packed, one
// KC x NC block at a time, into host-provided workspace as 8-column strips
// (kc rows of 8 floats, zero-padded past N), so the micro-kernel streams B
// with two aligned-size v128 loads per k whatever B's strides are. The 4x8
// micro-kernel keeps 8 f32x4 accumulators (fits the 16 SIMD registers V8 has
// on x64 alongside the B vectors and the A broadcast). Loops follow the usual
// GEMM nest: N blocks, K blocks (pack), M blocks of MC rows, strips, 4 rows,
// so one strip (8 KiB) stays in L1 while MC rows of A stream over it.
// Each K block after the first accumulates into out; K = 0 writes zeros.

const KC: i32 = 256;
const NC: i32 = 512;
const MC: i32 = 64;
const EDGE = memory.data(128, 16);

/** Workspace bytes that matmul needs for these sizes (0 when nothing to pack). */
export function matmulWorkspaceBytes(M: i32, N: i32, K: i32): i32 {
  if (M <= 0 || N <= 0 || K <= 0) return 0;
  return min<i32>(K, KC) * ((min<i32>(N, NC) + 7) & ~7) * 4;
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
    } else if (rs == 4) {
      // Column-major B (e.g. a transposed view): read each column contiguously.
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

function edgeStore(pc: usize, crs: usize, rows: i32, cols: i32, first: bool): void {
  for (let r = 0; r < rows; r++) {
    for (let j = 0; j < cols; j++) {
      const v = load<f32>(EDGE + (<usize>(r * 8 + j) << 2));
      const at = pc + <usize>r * crs + (<usize>j << 2);
      store<f32>(at, first ? v : load<f32>(at) + v);
    }
  }
}

function kernel4x8(pa: usize, ars: usize, acs: usize, pb: usize, kc: i32, pc: usize, crs: usize, cols: i32, first: bool): void {
  let c00 = f32x4.splat(0), c01 = f32x4.splat(0);
  let c10 = f32x4.splat(0), c11 = f32x4.splat(0);
  let c20 = f32x4.splat(0), c21 = f32x4.splat(0);
  let c30 = f32x4.splat(0), c31 = f32x4.splat(0);
  let a0 = pa;
  let a1 = pa + ars;
  let a2 = a1 + ars;
  let a3 = a2 + ars;
  for (let k = 0; k < kc; k++) {
    const b0 = v128.load(pb);
    const b1 = v128.load(pb, 16);
    let av = f32x4.splat(load<f32>(a0));
    c00 = f32x4.add(c00, f32x4.mul(av, b0));
    c01 = f32x4.add(c01, f32x4.mul(av, b1));
    av = f32x4.splat(load<f32>(a1));
    c10 = f32x4.add(c10, f32x4.mul(av, b0));
    c11 = f32x4.add(c11, f32x4.mul(av, b1));
    av = f32x4.splat(load<f32>(a2));
    c20 = f32x4.add(c20, f32x4.mul(av, b0));
    c21 = f32x4.add(c21, f32x4.mul(av, b1));
    av = f32x4.splat(load<f32>(a3));
    c30 = f32x4.add(c30, f32x4.mul(av, b0));
    c31 = f32x4.add(c31, f32x4.mul(av, b1));
    a0 += acs; a1 += acs; a2 += acs; a3 += acs;
    pb += 32;
  }
  if (cols == 8) {
    put(pc, 0, c00, first); put(pc, 16, c01, first); pc += crs;
    put(pc, 0, c10, first); put(pc, 16, c11, first); pc += crs;
    put(pc, 0, c20, first); put(pc, 16, c21, first); pc += crs;
    put(pc, 0, c30, first); put(pc, 16, c31, first);
    return;
  }
  v128.store(EDGE, c00); v128.store(EDGE, c01, 16);
  v128.store(EDGE, c10, 32); v128.store(EDGE, c11, 48);
  v128.store(EDGE, c20, 64); v128.store(EDGE, c21, 80);
  v128.store(EDGE, c30, 96); v128.store(EDGE, c31, 112);
  edgeStore(pc, crs, 4, cols, first);
}

function kernel1x8(pa: usize, acs: usize, pb: usize, kc: i32, pc: usize, cols: i32, first: bool): void {
  let c0 = f32x4.splat(0), c1 = f32x4.splat(0);
  for (let k = 0; k < kc; k++) {
    const av = f32x4.splat(load<f32>(pa));
    c0 = f32x4.add(c0, f32x4.mul(av, v128.load(pb)));
    c1 = f32x4.add(c1, f32x4.mul(av, v128.load(pb, 16)));
    pa += acs;
    pb += 32;
  }
  if (cols == 8) {
    put(pc, 0, c0, first); put(pc, 16, c1, first);
    return;
  }
  v128.store(EDGE, c0); v128.store(EDGE, c1, 16);
  edgeStore(pc, 0, 1, cols, first);
}

/**
 * out[bi, i, j] = sum_k A[bi, i, k] * B[bi, k, j] in f32 (dt must be 0).
 * p: [B, M, N, K, aBatchStride, aRowStride, aColStride, aOffset,
 *     bBatchStride, bRowStride, bColStride, bOffset] (elements);
 * out is contiguous [B, M, N]; ws must hold matmulWorkspaceBytes(M, N, K).
 */
export function matmul(dt: i32, a: usize, b: usize, out: usize, p: usize, ws: usize): void {
  const batches = load<i32>(p);
  const M = load<i32>(p, 4);
  const N = load<i32>(p, 8);
  const K = load<i32>(p, 12);
  if (batches <= 0 || M <= 0 || N <= 0) return;
  if (K <= 0) {
    memory.fill(out, 0, <usize>batches * <usize>M * <usize>N << 2);
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
  const crs = <usize>N << 2;
  for (let bi = 0; bi < batches; bi++) {
    const aBase = a + aOff + <usize>bi * aBS;
    const bBase = b + bOff + <usize>bi * bBS;
    const cBase = out + <usize>bi * <usize>M * crs;
    for (let n0 = 0; n0 < N; n0 += NC) {
      const nc = min<i32>(NC, N - n0);
      const strips = (nc + 7) >> 3;
      for (let k0 = 0; k0 < K; k0 += KC) {
        const kc = min<i32>(KC, K - k0);
        const first = k0 == 0;
        packB(bBase + <usize>k0 * bRS + <usize>n0 * bCS, bRS, bCS, kc, nc, ws);
        for (let m0 = 0; m0 < M; m0 += MC) {
          const mEnd = min<i32>(M, m0 + MC);
          for (let s = 0; s < strips; s++) {
            const cols = min<i32>(8, nc - (s << 3));
            const pb = ws + <usize>(s * kc) * 32;
            const col = <usize>(n0 + (s << 3)) << 2;
            let i = m0;
            for (; i + 4 <= mEnd; i += 4) {
              kernel4x8(aBase + <usize>i * aRS + <usize>k0 * aCS, aRS, aCS, pb, kc, cBase + <usize>i * crs + col, crs, cols, first);
            }
            for (; i < mEnd; i++) {
              kernel1x8(aBase + <usize>i * aRS + <usize>k0 * aCS, aCS, pb, kc, cBase + <usize>i * crs + col, cols, first);
            }
          }
        }
      }
    }
  }
}
