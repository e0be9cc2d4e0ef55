// The sliding windows of an f32 [N, C, H, W] view (im2col), padding included: the cpu device's
// `windows` command (conv and pooling; ts/ops/conv.ts `paddedWindows`; the GPU's is wgsl/window.ts).
//
// Why a kernel: composed, the windows are a pad (a new tensor, a copy) and then a rank-6 strided
// copy through the generic iterator, element by element. Here each output row is one window row:
// positions outside x get `value`, and the inside, when x's rows are contiguous and the stride is
// 1, is one memory.copy. Rows are independent, so `windowsPart` splits them across the pool.
//
// Descriptor (i32 words at p): [N, C, H, W, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw, xOffset,
// sN, sC, sH, sW, kernelLast, value (f32 bits)]. Output: [N, C, kh, kw, oh, ow] (a row is one
// (n, c, ki, kj, i): ow elements), or [N, C, oh, ow, kh, kw] with kernelLast (a row is one
// (n, c, i): ow·kh·kw elements).

// @ts-ignore: decorator
@inline function w(p: usize, i: i32): i32 {
  return load<i32>(p + (<usize>i << 2));
}

/**
 * Columns j of a window row whose input column j·sw + off lies in [0, W), clamped to the row's
 * ow: [columnsFrom, columnsTo). The fold (conv.ts) reads the same range.
 */
// @ts-ignore: decorator
@inline export function columnsTo(off: i32, W: i32, ow: i32, sw: i32): i32 {
  return min<i32>(ow, W - off <= 0 ? 0 : (W - off + sw - 1) / sw);
}
// @ts-ignore: decorator
@inline export function columnsFrom(off: i32, sw: i32, to: i32): i32 {
  return min<i32>(to, off >= 0 ? 0 : (-off + sw - 1) / sw);
}

/** Fills n f32s at o with v. */
// @ts-ignore: decorator
@inline function fillF32(o: usize, n: i32, v: f32): void {
  let i = 0;
  const vv = f32x4.splat(v);
  for (; i + 4 <= n; i += 4) v128.store(o + (<usize>i << 2), vv);
  for (; i < n; i++) store<f32>(o + (<usize>i << 2), v);
}

/** Copies n f32s from s to o, four at a time (a window row is short: a call to memory.copy costs more). */
// @ts-ignore: decorator
@inline function copyF32(o: usize, s: usize, n: i32): void {
  let i = 0;
  for (; i + 4 <= n; i += 4) v128.store(o + (<usize>i << 2), v128.load(s + (<usize>i << 2)));
  for (; i < n; i++) store<f32>(o + (<usize>i << 2), load<f32>(s + (<usize>i << 2)));
}

/** Rows [r0, r1) of the descriptor at p, row r0 written at `dst` and the rest after it. */
export function windowRows(x: usize, dst: usize, p: usize, r0: i32, r1: i32): void {
  const C = w(p, 1), H = w(p, 2), W = w(p, 3), kh = w(p, 4), kw = w(p, 5), oh = w(p, 6), ow = w(p, 7);
  const sh = w(p, 8), sw = w(p, 9), dh = w(p, 10), dw = w(p, 11), ph = w(p, 12), pw = w(p, 13);
  const xo = w(p, 14), sN = w(p, 15), sC = w(p, 16), sH = w(p, 17), sW = w(p, 18), last = w(p, 19) != 0;
  const value = load<f32>(p, 80);
  if (!last) {
    // row = (((n·C + c)·kh + ki)·kw + kj)·oh + i: split r0 once, then a block of rows (one
    // (n, c, ki, kj), its i's) at a time, whose columns inside x are worked out once. Where the
    // windows move one element a step and cover x's rows whole (stride 1, output width = W,
    // contiguous rows: a "same" convolution), a whole block is x's plane shifted: one memory.copy
    // of its rows inside x, then the few columns that fell outside set to `value` (an image of a
    // 8×14×14 3×3 conv: 8.0 → 6.5 µs with the columns once per block, 6.5 → 2.1 with the copy)
    let t = r0;
    let i0 = t % oh; t /= oh;
    let kj = t % kw; t /= kw;
    let ki = t % kh; t /= kh;
    let c = t % C;
    let n = t / C;
    let o = dst;
    const unit = sw == 1 && sW == 1;
    const shifted = unit && sh == 1 && ow == W && sH == W;
    for (let r = r0; r < r1;) {
      const iEnd = min<i32>(oh, i0 + (r1 - r));
      // j's with w = j·sw + kj·dw − pw inside [0, W): [jLo, jHi)
      const off = kj * dw - pw;
      const jHi = columnsTo(off, W, ow, sw), jLo = columnsFrom(off, sw, jHi);
      const plane = xo + n * sN + c * sC;
      if (shifted && i0 == 0 && iEnd == oh && jLo < jHi) {
        // rows inside x: i + ki·dh − ph in [0, H)
        const top = ki * dh - ph;
        const iLo = max<i32>(0, -top), iHi = max<i32>(iLo, min<i32>(oh, H - top));
        fillF32(o, iLo * ow, value);
        if (iHi > iLo) {
          // out[i·W + j] = x[(i + top)·W + j + off]: one run, less its first jLo and last
          // W − jHi elements (read from outside the block's rows; set below), so nothing
          // outside x's rows is read
          const first = iLo * W + jLo, count = (iHi - iLo) * W - jLo - (W - jHi);
          memory.copy(o + (<usize>first << 2), x + (<usize>(plane + top * W + off + first) << 2), <usize>count << 2);
          for (let i = iLo; i < iHi; i++) {
            const row = o + (<usize>(i * W) << 2);
            for (let j = 0; j < jLo; j++) store<f32>(row + (<usize>j << 2), value);
            for (let j = jHi; j < W; j++) store<f32>(row + (<usize>j << 2), value);
          }
        }
        fillF32(o + (<usize>(iHi * W) << 2), (oh - iHi) * W, value);
        o += <usize>(oh * ow) << 2;
      } else for (let i = i0; i < iEnd; i++) {
        const h = i * sh + ki * dh - ph;
        if (h < 0 || h >= H) {
          fillF32(o, ow, value);
        } else {
          const base = plane + h * sH;
          fillF32(o, jLo, value);
          if (unit) {
            copyF32(o + (<usize>jLo << 2), x + (<usize>(base + jLo + off) << 2), jHi - jLo);
          } else {
            for (let j = jLo; j < jHi; j++) store<f32>(o + (<usize>j << 2), load<f32>(x + (<usize>(base + (j * sw + off) * sW) << 2)));
          }
          fillF32(o + (<usize>jHi << 2), ow - jHi, value);
        }
        o += <usize>ow << 2;
      }
      r += iEnd - i0;
      i0 = 0;
      if (++kj < kw) continue;
      kj = 0;
      if (++ki < kh) continue;
      ki = 0;
      if (++c < C) continue;
      c = 0;
      n++;
    }
    return;
  }
  // kernelLast: row = (n·C + c)·oh + i, holding [ow, kh, kw]
  const len = ow * kh * kw;
  for (let r = r0; r < r1; r++) {
    const i = r % oh, c = (r / oh) % C, n = r / oh / C;
    let o = dst + (<usize>(r - r0) * <usize>len << 2);
    const base = xo + n * sN + c * sC;
    for (let j = 0; j < ow; j++) {
      for (let ki = 0; ki < kh; ki++) {
        const h = i * sh + ki * dh - ph;
        const inH = h >= 0 && h < H;
        for (let kj = 0; kj < kw; kj++) {
          const ww = j * sw + kj * dw - pw;
          store<f32>(o, inH && ww >= 0 && ww < W ? load<f32>(x + (<usize>(base + h * sH + ww * sW) << 2)) : value);
          o += 4;
        }
      }
    }
  }
}

/** The number of rows of the descriptor at p. */
function rowCount(p: usize): i32 {
  const nc = w(p, 0) * w(p, 1);
  return w(p, 19) != 0 ? nc * w(p, 6) : nc * w(p, 4) * w(p, 5) * w(p, 6);
}

/** Every window of x into out (see the top of this file). */
export function windows(x: usize, out: usize, p: usize): void {
  windowRows(x, out, p, 0, rowCount(p));
}

/** Part `part` of `parts` of the rows (the cpu pool's form; ws is unused). */
export function windowsPart(x: usize, out: usize, p: usize, ws: usize, part: i32, parts: i32): void {
  const n = rowCount(p);
  const per = (n + parts - 1) / parts;
  const first = part * per;
  if (first >= n) return;
  const len = w(p, 19) != 0 ? w(p, 7) * w(p, 4) * w(p, 5) : w(p, 7);
  windowRows(x, out + (<usize>first * <usize>len << 2), p, first, min(n, first + per));
}

// ---- The fold (col2im): the windows' gradient ----
//
// out [N, C, H, W] (contiguous, zeroed here) += each window's values at the positions they were
// read from: g is a [N, C, kh, kw, oh, ow] view with any strides. Composed, this is a strided
// read-add-write per kernel offset over the whole input; here a plane (n, c) at a time, the
// offsets in the same order, so the sums are the same f32 sums. Planes are independent, so
// `foldWindowsPart` splits them across the pool. Descriptor (i32 words): [N, C, H, W, kh, kw, oh,
// ow, sh, sw, dh, dw, gOffset, gStrides (6)].

/** Planes [q0, q1) of the fold described at p. */
function foldPlanes(g: usize, out: usize, p: usize, q0: i32, q1: i32): void {
  const C = w(p, 1), H = w(p, 2), W = w(p, 3), kh = w(p, 4), kw = w(p, 5), oh = w(p, 6), ow = w(p, 7);
  const sh = w(p, 8), sw = w(p, 9), dh = w(p, 10), dw = w(p, 11), go = w(p, 12);
  const g0 = w(p, 13), g1 = w(p, 14), g2 = w(p, 15), g3 = w(p, 16), g4 = w(p, 17), g5 = w(p, 18);
  const plane = H * W;
  for (let q = q0; q < q1; q++) {
    const n = q / C, c = q % C;
    const o = out + (<usize>q * <usize>plane << 2);
    fillF32(o, plane, 0);
    for (let ki = 0; ki < kh; ki++) {
      for (let kj = 0; kj < kw; kj++) {
        const gb = go + n * g0 + c * g1 + ki * g2 + kj * g3;
        for (let i = 0; i < oh; i++) {
          const row = o + (<usize>((i * sh + ki * dh) * W + kj * dw) << 2);
          const src = g + (<usize>(gb + i * g4) << 2);
          let j = 0;
          if (sw == 1 && g5 == 1) {
            for (; j + 4 <= ow; j += 4) {
              const at = <usize>j << 2;
              v128.store(row + at, f32x4.add(v128.load(row + at), v128.load(src + at)));
            }
          }
          for (; j < ow; j++) {
            const d = row + (<usize>(j * sw) << 2);
            store<f32>(d, load<f32>(d) + load<f32>(src + (<usize>(j * g5) << 2)));
          }
        }
      }
    }
  }
}

/** The whole fold (see above). */
export function foldWindows(g: usize, out: usize, p: usize): void {
  foldPlanes(g, out, p, 0, w(p, 0) * w(p, 1));
}

/** Part `part` of `parts` of the planes (the cpu pool's form; ws is unused). */
export function foldWindowsPart(g: usize, out: usize, p: usize, ws: usize, part: i32, parts: i32): void {
  const n = w(p, 0) * w(p, 1);
  const per = (n + parts - 1) / parts;
  const first = part * per;
  if (first < n) foldPlanes(g, out, p, first, min(n, first + per));
}
