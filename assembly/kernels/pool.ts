// 2-D max pooling on the cpu: the `maxPool` and `maxPoolGrad` commands of ts/worker/protocol.ts
// (ts/ops/pool.ts; wgsl/pool.ts is the GPU's); average pooling (`avgPool`) is at the end.
//
// Why a kernel: composed, max pooling copied every window out (the `windows` command, kh·kw
// times the output), reduced the copies to values and to argmaxes (two `reduce` commands), turned
// each argmax into a flat index with six int64 elementwise ops, and its gradient was a mask and a
// `where` over the windows, then the fold. Here one pass reads each window in place and writes
// the value and its index; the gradient is one pass that adds each output's gradient at its index.
//
// PyTorch's rule (aten/src/ATen/native/cpu/MaxPoolKernel.cpp): the window is clipped to the
// input, its first element inside is the start (so a window of -inf names it), and an element
// takes the place when it is greater or NaN: ties keep the first, the last NaN wins. The
// gradient adds in output order within a plane, as PyTorch's does, so the f32 sums are its sums.
//
// Planes are independent, so `maxPoolPart`, `maxPoolGradPart` and `avgPoolPart` split them across the pool.
// Descriptor (i32 words at p): [planes, H, W, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw].

// @ts-ignore: decorator
@inline function w(p: usize, i: i32): i32 {
  return load<i32>(p + (<usize>i << 2));
}

/** Whether `v` takes the place of the maximum `m` so far (PyTorch's `val > maxval || isnan(val)`). */
// @ts-ignore: decorator
@inline function takes(v: f32, m: f32): bool {
  return v > m || v != v;
}

/** Planes [q0, q1) of the forward described at p. */
function maxPlanes(x: usize, values: usize, indices: usize, p: usize, q0: i32, q1: i32): void {
  const H = w(p, 1), W = w(p, 2), oh = w(p, 3), ow = w(p, 4), kh = w(p, 5), kw = w(p, 6);
  const sh = w(p, 7), sw = w(p, 8), ph = w(p, 9), pw = w(p, 10), dh = w(p, 11), dw = w(p, 12);
  const plane = H * W, outs = oh * ow;
  // 2×2 windows at stride 2 that all lie inside the input (the common CNN pooling): no clipping
  const pairs = kh == 2 && kw == 2 && sh == 2 && sw == 2 && dh == 1 && dw == 1 && ph == 0 && pw == 0 && 2 * oh <= H && 2 * ow <= W;
  for (let q = q0; q < q1; q++) {
    const xp = x + (<usize>q * <usize>plane << 2);
    let vo = values + (<usize>q * <usize>outs << 2), io = indices + (<usize>q * <usize>outs << 3);
    for (let oy = 0; oy < oh; oy++) {
      if (pairs) {
        const i0 = 2 * oy * W;
        const r0 = xp + (<usize>i0 << 2), r1 = r0 + (<usize>W << 2);
        let ox = 0;
        // four windows at a time: the rows' even and odd columns split by shuffles, the rule as lane masks
        for (; ox + 4 <= ow; ox += 4) {
          const c = <usize>ox << 3;
          const a0 = v128.load(r0 + c), a1 = v128.load(r0 + c + 16), b0 = v128.load(r1 + c), b1 = v128.load(r1 + c + 16);
          const i = i32x4.add(i32x4.splat(i0 + 2 * ox), i32x4(0, 2, 4, 6));
          let m = f32x4.shuffle(a0, a1, 0, 2, 4, 6), mi = i;
          const tr = f32x4.shuffle(a0, a1, 1, 3, 5, 7), bl = f32x4.shuffle(b0, b1, 0, 2, 4, 6), br = f32x4.shuffle(b0, b1, 1, 3, 5, 7);
          let t = v128.or(f32x4.gt(tr, m), f32x4.ne(tr, tr));
          m = v128.bitselect(tr, m, t);
          mi = v128.bitselect(i32x4.add(i, i32x4.splat(1)), mi, t);
          t = v128.or(f32x4.gt(bl, m), f32x4.ne(bl, bl));
          m = v128.bitselect(bl, m, t);
          mi = v128.bitselect(i32x4.add(i, i32x4.splat(W)), mi, t);
          t = v128.or(f32x4.gt(br, m), f32x4.ne(br, br));
          m = v128.bitselect(br, m, t);
          mi = v128.bitselect(i32x4.add(i, i32x4.splat(W + 1)), mi, t);
          v128.store(vo, m);
          v128.store(io, i64x2.extend_low_i32x4_s(mi));
          v128.store(io + 16, i64x2.extend_high_i32x4_s(mi));
          vo += 16;
          io += 32;
        }
        for (; ox < ow; ox++) {
          const c = <usize>ox << 3, i = i0 + 2 * ox;
          let m = load<f32>(r0 + c), mi = i;
          const b = load<f32>(r0 + c + 4), d = load<f32>(r1 + c), e = load<f32>(r1 + c + 4);
          let t = takes(b, m);
          m = select(b, m, t);
          mi = select(i + 1, mi, t);
          t = takes(d, m);
          m = select(d, m, t);
          mi = select(i + W, mi, t);
          t = takes(e, m);
          m = select(e, m, t);
          mi = select(i + W + 1, mi, t);
          store<f32>(vo, m);
          store<i64>(io, <i64>mi);
          vo += 4;
          io += 8;
        }
        continue;
      }
      let h0 = oy * sh - ph;
      const h1 = min(h0 + (kh - 1) * dh + 1, H);
      while (h0 < 0) h0 += dh;
      for (let ox = 0; ox < ow; ox++) {
        let w0 = ox * sw - pw;
        const w1 = min(w0 + (kw - 1) * dw + 1, W);
        while (w0 < 0) w0 += dw;
        let m = -Infinity as f32, mi = h0 * W + w0;
        for (let h = h0; h < h1; h += dh) {
          const row = h * W;
          for (let c = w0; c < w1; c += dw) {
            const v = load<f32>(xp + (<usize>(row + c) << 2)), t = takes(v, m);
            m = select(v, m, t);
            mi = select(row + c, mi, t);
          }
        }
        store<f32>(vo, m);
        store<i64>(io, <i64>mi);
        vo += 4;
        io += 8;
      }
    }
  }
}

/** Planes [q0, q1) of the gradient described at p: grad (zeroed here) += g at each index. */
function gradPlanes(g: usize, indices: usize, grad: usize, p: usize, q0: i32, q1: i32): void {
  const plane = w(p, 1) * w(p, 2), outs = w(p, 3) * w(p, 4);
  for (let q = q0; q < q1; q++) {
    const gp = grad + (<usize>q * <usize>plane << 2);
    memory.fill(gp, 0, <usize>plane << 2);
    const go = g + (<usize>q * <usize>outs << 2), io = indices + (<usize>q * <usize>outs << 3);
    for (let o = 0; o < outs; o++) {
      // the low word: indices come from the forward, in [0, H·W) (checked, so a bad one writes nothing)
      const i = load<i32>(io + (<usize>o << 3));
      if (<u32>i >= <u32>plane) continue;
      const at = gp + (<usize>i << 2);
      store<f32>(at, load<f32>(at) + load<f32>(go + (<usize>o << 2)));
    }
  }
}

/** The whole forward (see the file's note). */
export function maxPool(x: usize, values: usize, indices: usize, p: usize): void {
  maxPlanes(x, values, indices, p, 0, w(p, 0));
}

/** The whole gradient (see the file's note). */
export function maxPoolGrad(g: usize, indices: usize, grad: usize, p: usize): void {
  gradPlanes(g, indices, grad, p, 0, w(p, 0));
}

/** Part `part` of `parts` of the forward's planes (the cpu pool's form; ws is unused). */
export function maxPoolPart(x: usize, values: usize, indices: usize, p: usize, ws: usize, part: i32, parts: i32): void {
  const n = w(p, 0), per = (n + parts - 1) / parts, first = part * per;
  if (first < n) maxPlanes(x, values, indices, p, first, min(n, first + per));
}

/** Part `part` of `parts` of the gradient's planes (the cpu pool's form; ws is unused). */
export function maxPoolGradPart(g: usize, indices: usize, grad: usize, p: usize, ws: usize, part: i32, parts: i32): void {
  const n = w(p, 0), per = (n + parts - 1) / parts, first = part * per;
  if (first < n) gradPlanes(g, indices, grad, p, first, min(n, first + per));
}

// ---- Average pooling: the `avgPool` and `avgPoolGrad` commands ----
//
// PyTorch's loop (aten/src/ATen/native/cpu/AvgPoolKernel.cpp): the window clipped to the padded
// input gives the size counted with padding, clipped to the input the elements summed (in f32, in
// row order); the divisor is `divisor_override`, else one of those two sizes, and a window with
// no element inside is 0. The gradient adds g / divisor to each element of a window, windows in
// output order. Descriptor (i32 words at p): [planes, H, W, oh, ow, kh, kw, sh, sw, ph, pw,
// includePad, divisor (f32 bits; 0: none)].

/** Planes [q0, q1) of the average pooling (or, with `grad`, its gradient) described at p. */
function avgPlanes(src: usize, dst: usize, p: usize, q0: i32, q1: i32, grad: bool): void {
  const H = w(p, 1), W = w(p, 2), oh = w(p, 3), ow = w(p, 4), kh = w(p, 5), kw = w(p, 6);
  const sh = w(p, 7), sw = w(p, 8), ph = w(p, 9), pw = w(p, 10), includePad = w(p, 11) != 0, divisor = reinterpret<f32>(w(p, 12));
  const plane = H * W, outs = oh * ow;
  for (let q = q0; q < q1; q++) {
    const xp = (grad ? dst : src) + (<usize>q * <usize>plane << 2);
    const op = (grad ? src : dst) + (<usize>q * <usize>outs << 2);
    if (grad) memory.fill(xp, 0, <usize>plane << 2);
    for (let oy = 0; oy < oh; oy++) {
      let h0 = oy * sh - ph, h1 = min(h0 + kh, H + ph);
      const hp = h1 - h0;
      h0 = max(h0, 0);
      h1 = min(h1, H);
      for (let ox = 0; ox < ow; ox++) {
        let w0 = ox * sw - pw, w1 = min(w0 + kw, W + pw);
        const wp = w1 - w0;
        w0 = max(w0, 0);
        w1 = min(w1, W);
        const o = op + (<usize>(oy * ow + ox) << 2);
        if (h0 >= h1 || w0 >= w1) {
          if (!grad) store<f32>(o, 0);
          continue;
        }
        const div: f32 = divisor != 0 ? divisor : <f32>(includePad ? hp * wp : (h1 - h0) * (w1 - w0));
        if (grad) {
          const d = load<f32>(o) / div;
          for (let h = h0; h < h1; h++) {
            for (let c = w0; c < w1; c++) {
              const at = xp + (<usize>(h * W + c) << 2);
              store<f32>(at, load<f32>(at) + d);
            }
          }
        } else {
          let sum: f32 = 0;
          for (let h = h0; h < h1; h++) for (let c = w0; c < w1; c++) sum += load<f32>(xp + (<usize>(h * W + c) << 2));
          store<f32>(o, sum / div);
        }
      }
    }
  }
}

/** The whole average pooling (grad 0) or its gradient (grad 1): src is x or g, dst the values or the input's gradient. */
export function avgPool(src: usize, dst: usize, p: usize, grad: i32): void {
  avgPlanes(src, dst, p, 0, w(p, 0), grad != 0);
}

/** Part `part` of `parts` of the planes of `avgPool` (the cpu pool's form; ws is unused). */
export function avgPoolPart(src: usize, dst: usize, p: usize, grad: i32, ws: usize, part: i32, parts: i32): void {
  const n = w(p, 0), per = (n + parts - 1) / parts, first = part * per;
  if (first < n) avgPlanes(src, dst, p, first, min(n, first + per), grad != 0);
}
