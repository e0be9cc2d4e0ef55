// 2-D convolution of f32 on the cpu device, and its gradients, an image at a time (the cpu's
// `conv` and `convGrad` commands; ts/ops/conv.ts `directConv`).
//
// Why a kernel: composed, a convolution is its windows for the whole batch (im2col: C·kh·kw
// times the input, written out to memory and read back), a batched product, a broadcast bias add,
// and in the backward a batched product with a reduction over the batch and a fold. For a small
// CNN's layers those passes over memory cost more than the products. Here the windows of one
// image (C·kh·kw rows of oh·ow) are written into this thread's workspace, where they stay in
// cache, and the products read them there:
//   forward   out[n] = W · cols(x[n]) (+ bias per row)
//   weight    dW    += gy[n] · cols(x[n])ᵀ, from the windows the forward kept when the weight
//                      needs a gradient (written out once, as they are made), else made again
//   bias      db    += the row sums of gy[n]
//   input     dx[n]  = fold(Wᵀ · gy[n]), the fold (col2im) skipping the padding
// per group. Images are independent, so the pool splits them; each part of the gradient sums
// its images into its own dW and db, which `convGradSum` adds up in part order.
//
// Descriptor (i32 words at p): the windows' 21 words (window.ts: [N, C, H, W, kh, kw, oh, ow,
// sh, sw, dh, dw, ph, pw, xOffset, sN, sC, sH, sW, 0, 0]), then [Cout, groups]. w is a contiguous
// [Cout, C/groups, kh, kw], out and gy contiguous [N, Cout, oh, ow], dx contiguous [N, C, H, W].

import { gemm, matmulWorkspaceBytes } from "./matmul";
import { columnsFrom, columnsTo, windowRows } from "./window";

// @ts-ignore: decorator
@inline function w(p: usize, i: i32): i32 {
  return load<i32>(p + (<usize>i << 2));
}

/** Bytes rounded up to 64. */
// @ts-ignore: decorator
@inline function lines(bytes: i32): i32 {
  return (bytes + 63) & ~63;
}

/** The micro-kernel's work for an M×N product: 8-column strips (a ragged one costs a whole one) times 4-row tiles (a leftover row about half one). */
// @ts-ignore: decorator
@inline function tileCost(m: i32, n: i32): f64 {
  return <f64>((n + 7) >> 3) * (<f64>(m >> 2) + 0.5 * <f64>(m & 3));
}

/**
 * Whether the weight's gradient is cheaper as its transpose, dWᵀ = cols · gyᵀ (as the cpu's
 * matmul swaps, ts/worker/cpu/matmul.ts `swapsOperands`): a 3×3 kernel over one channel has 9 columns,
 * two strips, where the transpose's 8 output channels fill one (1→8 over 28×28, 16 images:
 * 126 → 65 µs on one thread).
 */
// @ts-ignore: decorator
@inline function swapsWeightGrad(Mg: i32, Kg: i32): bool {
  return tileCost(Kg, Mg) < 0.7 * tileCost(Mg, Kg);
}

/** Workspace bytes one thread needs: the windows of an image (twice for the gradient), the product's, and a transposed weight gradient. */
export function convWorkspaceBytes(p: usize, grad: i32): i32 {
  const K = w(p, 1) * w(p, 4) * w(p, 5), L = w(p, 6) * w(p, 7), G = w(p, 22);
  const Kg = K / G, Mg = w(p, 21) / G;
  if (!grad) return lines(K * L * 4) + lines(matmulWorkspaceBytes(Mg, L, Kg));
  return lines(K * L * 4) * 2 + gradProductBytes(Mg, Kg, L) + lines(K * Mg * 4);
}

/** Workspace bytes of the gradient's products: the weight's either way round, and the input's. */
function gradProductBytes(Mg: i32, Kg: i32, L: i32): i32 {
  return lines(max(max(matmulWorkspaceBytes(Mg, Kg, L), matmulWorkspaceBytes(Kg, Mg, L)), matmulWorkspaceBytes(Kg, L, Mg)));
}

/**
 * out[n] for images [n0, n1) (see the top of this file); b is 0 without a bias. The windows go to
 * the workspace, or with `saved` (not 0) to saved + n·K·L f32s, kept for the gradient.
 */
function convImages(x: usize, wt: usize, b: usize, out: usize, p: usize, saved: usize, ws: usize, n0: i32, n1: i32): void {
  const C = w(p, 1), kh = w(p, 4), kw = w(p, 5), oh = w(p, 6), ow = w(p, 7), Cout = w(p, 21), G = w(p, 22);
  const K = C * kh * kw, L = oh * ow, Kg = K / G, Mg = Cout / G, rowsPer = K * oh;
  const gw = ws + <usize>lines(K * L * 4);
  const lb = <usize>L << 2;
  for (let n = n0; n < n1; n++) {
    const cols = saved ? saved + <usize>n * <usize>K * lb : ws;
    windowRows(x, cols, p, n * rowsPer, (n + 1) * rowsPer);
    const o = out + <usize>n * <usize>Cout * lb;
    for (let g = 0; g < G; g++) {
      gemm(wt + (<usize>(g * Mg * Kg) << 2), <usize>Kg << 2, 4, cols + <usize>(g * Kg) * lb, lb, 4,
        o + <usize>(g * Mg) * lb, lb, Mg, L, Kg, gw);
    }
    if (b) {
      for (let co = 0; co < Cout; co++) addScalar(o + <usize>co * lb, L, load<f32>(b + (<usize>co << 2)));
    }
  }
}

/** row[0, n) += v. */
function addScalar(row: usize, n: i32, v: f32): void {
  const vv = f32x4.splat(v);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const at = row + (<usize>i << 2);
    v128.store(at, f32x4.add(v128.load(at), vv));
  }
  for (; i < n; i++) {
    const at = row + (<usize>i << 2);
    store<f32>(at, load<f32>(at) + v);
  }
}

/** The sum of row[0, n): four vectors of lanes (one chain of adds waits on each add), then across them. */
function rowSum(row: usize, n: i32): f32 {
  let a0 = f32x4.splat(0), a1 = f32x4.splat(0), a2 = f32x4.splat(0), a3 = f32x4.splat(0);
  let i = 0;
  for (; i + 16 <= n; i += 16) {
    const at = row + (<usize>i << 2);
    a0 = f32x4.add(a0, v128.load(at));
    a1 = f32x4.add(a1, v128.load(at, 16));
    a2 = f32x4.add(a2, v128.load(at, 32));
    a3 = f32x4.add(a3, v128.load(at, 48));
  }
  for (; i + 4 <= n; i += 4) a0 = f32x4.add(a0, v128.load(row + (<usize>i << 2)));
  const acc = f32x4.add(f32x4.add(a0, a1), f32x4.add(a2, a3));
  let s = (f32x4.extract_lane(acc, 0) + f32x4.extract_lane(acc, 1)) + (f32x4.extract_lane(acc, 2) + f32x4.extract_lane(acc, 3));
  for (; i < n; i++) s += load<f32>(row + (<usize>i << 2));
  return s;
}

/** The whole forward on the calling thread. */
export function conv(x: usize, wt: usize, b: usize, out: usize, p: usize, saved: usize, ws: usize): void {
  convImages(x, wt, b, out, p, saved, ws, 0, w(p, 0));
}

/** Part `part` of `parts` of the images (the cpu pool's form). */
export function convPart(x: usize, wt: usize, b: usize, out: usize, p: usize, saved: usize, ws: usize, part: i32, parts: i32): void {
  const N = w(p, 0);
  convImages(x, wt, b, out, p, saved, ws, <i32>(<i64>N * part / parts), <i32>(<i64>N * (part + 1) / parts));
}

/**
 * The fold of one image: dx[c, h, w] = the sum of dcols[(c, ki, kj), (i, j)] over the windows
 * that read (h, w); positions in the padding are dropped. dx (C planes of H·W) is written whole.
 */
function foldImage(dcols: usize, dx: usize, p: usize): void {
  const C = w(p, 1), H = w(p, 2), W = w(p, 3), kh = w(p, 4), kw = w(p, 5), oh = w(p, 6), ow = w(p, 7);
  const sh = w(p, 8), sw = w(p, 9), dh = w(p, 10), dw = w(p, 11), ph = w(p, 12), pw = w(p, 13);
  const plane = H * W, L = oh * ow;
  // as window.ts: a stride-1 "same" convolution's block is x's plane shifted, added as one run
  const shifted = sh == 1 && sw == 1 && ow == W;
  memory.fill(dx, 0, <usize>(C * plane) << 2);
  let src = dcols;
  for (let c = 0; c < C; c++) {
    const o = dx + (<usize>(c * plane) << 2);
    for (let ki = 0; ki < kh; ki++) {
      for (let kj = 0; kj < kw; kj++) {
        // j's with w = j·sw + kj·dw − pw inside [0, W): [jLo, jHi)
        const off = kj * dw - pw;
        const jHi = columnsTo(off, W, ow, sw), jLo = columnsFrom(off, sw, jHi);
        if (shifted && jLo < jHi) {
          const top = ki * dh - ph;
          const iLo = max<i32>(0, -top), iHi = max<i32>(iLo, min<i32>(oh, H - top));
          if (iHi > iLo) {
            // the block's columns outside x add nothing: zero them in dcols (this image's
            // scratch), then dx[(i + top)·W + j + off] += dcols[i·W + j] over one run
            for (let i = iLo; i < iHi; i++) {
              const row = src + (<usize>(i * W) << 2);
              for (let j = 0; j < jLo; j++) store<f32>(row + (<usize>j << 2), 0);
              for (let j = jHi; j < W; j++) store<f32>(row + (<usize>j << 2), 0);
            }
            const first = iLo * W + jLo, count = (iHi - iLo) * W - jLo - (W - jHi);
            const s = src + (<usize>first << 2), d = o + (<usize>(top * W + off + first) << 2);
            let j = 0;
            for (; j + 4 <= count; j += 4) {
              const at = <usize>j << 2;
              v128.store(d + at, f32x4.add(v128.load(d + at), v128.load(s + at)));
            }
            for (; j < count; j++) store<f32>(d + (<usize>j << 2), load<f32>(d + (<usize>j << 2)) + load<f32>(s + (<usize>j << 2)));
          }
          src += <usize>L << 2;
          continue;
        }
        for (let i = 0; i < oh; i++) {
          const h = i * sh + ki * dh - ph;
          if (h < 0 || h >= H) continue;
          const s = src + (<usize>(i * ow) << 2);
          const d = o + (<usize>(h * W + off) << 2);
          let j = jLo;
          if (sw == 1) {
            for (; j + 4 <= jHi; j += 4) {
              const at = <usize>j << 2;
              v128.store(d + at, f32x4.add(v128.load(d + at), v128.load(s + at)));
            }
          }
          for (; j < jHi; j++) {
            const at = d + (<usize>(j * sw) << 2);
            store<f32>(at, load<f32>(at) + load<f32>(s + (<usize>j << 2)));
          }
        }
        src += <usize>L << 2;
      }
    }
  }
}

/**
 * The gradients for images [n0, n1): dw (or 0) and db (or 0) are this part's sums, written by its
 * first image and added to by the rest; dx (or 0) is written for each image. The weight's reads
 * the windows the forward saved (`saved`), or makes them again from x when saved is 0.
 */
function convGradImages(x: usize, wt: usize, gy: usize, dx: usize, dwt: usize, db: usize, p: usize, saved: usize, ws: usize, n0: i32, n1: i32): void {
  const C = w(p, 1), H = w(p, 2), W = w(p, 3), kh = w(p, 4), kw = w(p, 5), oh = w(p, 6), ow = w(p, 7), Cout = w(p, 21), G = w(p, 22);
  const K = C * kh * kw, L = oh * ow, Kg = K / G, Mg = Cout / G, rowsPer = K * oh;
  const colsBytes = <usize>lines(K * L * 4);
  const dcols = ws + colsBytes, gw = ws + 2 * colsBytes;
  const dwT = gw + <usize>gradProductBytes(Mg, Kg, L);
  const swap = swapsWeightGrad(Mg, Kg);
  const lb = <usize>L << 2;
  for (let n = n0; n < n1; n++) {
    const first = n == n0;
    const g = gy + <usize>n * <usize>Cout * lb;
    if (dwt) {
      const cols = saved ? saved + <usize>n * <usize>K * lb : ws;
      if (!saved) windowRows(x, cols, p, n * rowsPer, (n + 1) * rowsPer);
      for (let q = 0; q < G; q++) {
        const gq = g + <usize>(q * Mg) * lb, cq = cols + <usize>(q * Kg) * lb;
        if (swap) {
          // dW_gᵀ [Kg, Mg] (+)= cols_g [Kg, L] · gy_gᵀ [L, Mg], transposed into dW below
          gemm(cq, lb, 4, gq, 4, lb, dwT + (<usize>(q * Kg * Mg) << 2), <usize>Mg << 2, Kg, Mg, L, gw, !first);
        } else {
          // dW_g [Mg, Kg] (+)= gy_g [Mg, L] · cols_gᵀ [L, Kg] (cols_g read column-major)
          gemm(gq, lb, 4, cq, 4, lb, dwt + (<usize>(q * Mg * Kg) << 2), <usize>Kg << 2, Mg, Kg, L, gw, !first);
        }
      }
    }
    if (db) {
      for (let co = 0; co < Cout; co++) {
        const s = rowSum(g + <usize>co * lb, L), at = db + (<usize>co << 2);
        store<f32>(at, first ? s : load<f32>(at) + s);
      }
    }
    if (dx) {
      // dcols_g [Kg, L] = W_gᵀ [Kg, Mg] · gy_g [Mg, L]
      for (let q = 0; q < G; q++) {
        gemm(wt + (<usize>(q * Mg * Kg) << 2), 4, <usize>Kg << 2, g + <usize>(q * Mg) * lb, lb, 4,
          dcols + <usize>(q * Kg) * lb, lb, Kg, L, Mg, gw);
      }
      foldImage(dcols, dx + (<usize>(n * C * H * W) << 2), p);
    }
  }
  if (dwt && swap && n1 > n0) {
    for (let q = 0; q < G; q++) {
      const src = dwT + (<usize>(q * Kg * Mg) << 2), dst = dwt + (<usize>(q * Mg * Kg) << 2);
      for (let m = 0; m < Mg; m++) for (let kk = 0; kk < Kg; kk++) store<f32>(dst + (<usize>(m * Kg + kk) << 2), load<f32>(src + (<usize>(kk * Mg + m) << 2)));
    }
  }
}

/** The whole gradient on the calling thread (dw and db are the gradients themselves). */
export function convGrad(x: usize, wt: usize, gy: usize, dx: usize, dwt: usize, db: usize, p: usize, saved: usize, ws: usize): void {
  convGradImages(x, wt, gy, dx, dwt, db, p, saved, ws, 0, w(p, 0));
}

/**
 * Part `part` of `parts` of the images (the cpu pool's form): its dw and db sums go to
 * dwt + part·|w| and db + part·Cout (f32s), for `convGradSum`; zeros when it has no image.
 */
export function convGradPart(x: usize, wt: usize, gy: usize, dx: usize, dwt: usize, db: usize, p: usize, saved: usize, ws: usize, part: i32, parts: i32): void {
  const N = w(p, 0), n0 = <i32>(<i64>N * part / parts), n1 = <i32>(<i64>N * (part + 1) / parts);
  const Cout = w(p, 21), wn = Cout * (w(p, 1) / w(p, 22)) * w(p, 4) * w(p, 5);
  if (n0 >= n1) {
    // a part without images (more parts than images) adds zeros
    if (dwt) memory.fill(dwt + (<usize>(part * wn) << 2), 0, <usize>wn << 2);
    if (db) memory.fill(db + (<usize>(part * Cout) << 2), 0, <usize>Cout << 2);
    return;
  }
  convGradImages(x, wt, gy, dx, dwt ? dwt + (<usize>(part * wn) << 2) : 0, db ? db + (<usize>(part * Cout) << 2) : 0, p, saved, ws, n0, n1);
}

/** out[i] = the sum over k in order of src[k·n + i]: the parts' sums. */
export function convGradSum(src: usize, out: usize, n: i32, parts: i32): void {
  const nb = <usize>n << 2;
  memory.copy(out, src, nb);
  for (let k = 1; k < parts; k++) {
    const s = src + <usize>k * nb;
    let i = 0;
    for (; i + 4 <= n; i += 4) {
      const at = <usize>i << 2;
      v128.store(out + at, f32x4.add(v128.load(out + at), v128.load(s + at)));
    }
    for (; i < n; i++) store<f32>(out + (<usize>i << 2), load<f32>(out + (<usize>i << 2)) + load<f32>(s + (<usize>i << 2)));
  }
}
