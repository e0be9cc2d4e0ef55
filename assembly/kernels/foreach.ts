// The clipping functions' multi-tensor kernels on the cpu: PyTorch's `_foreach_norm` (the
// `foreachNorm` command), `_foreach_mul_` by a device scalar (`foreachMul`) and the clamps of
// `clip_grad_value_` (`foreachClamp`), each one call over a table of
// tensors: i32 words per tensor, its byte address and its element count (and the norm's, its
// storage code: float32, float16 or bfloat16).
// A norm accumulates in f64 (a sum of 32-bit terms keeps full precision whatever the length) and
// is stored as f32; the max propagates NaN.

import { F16, F32, bf16ToF32, f16ToF32 } from "./dtype";

// norm kinds (ts/worker/cpu/foreach.ts)
const L1 = 1, L2 = 2, INF = 3; // 0: any other p

/** Element i of a float32, float16 or bfloat16 run at `base`, as f64. */
@inline function elem(base: usize, i: i32, dt: i32): f64 {
  if (dt == F32) return <f64>load<f32>(base + (<usize>i << 2));
  const h = <u32>load<u16>(base + (<usize>i << 1));
  return <f64>(dt == F16 ? f16ToF32(h) : bf16ToF32(h));
}

/** The norm of order `ord` (of `kind`) of each of the `n` tensors of the table at `p` (address, count, storage code), into the f32s at `out`. */
export function foreachNorm(p: usize, n: i32, kind: i32, ord: f64, out: usize): void {
  for (let t = 0; t < n; t++) {
    const e = p + <usize>t * 12;
    const base = <usize>load<i32>(e), count = load<i32>(e + 4), dt = load<i32>(e + 8);
    let s: f64 = 0;
    if (kind == INF) {
      for (let i = 0; i < count; i++) {
        const a = Math.abs(elem(base, i, dt));
        if (a != a) { s = a; break; }
        if (a > s) s = a;
      }
    } else if (kind == L2) {
      for (let i = 0; i < count; i++) {
        const x = elem(base, i, dt);
        s += x * x;
      }
      s = Math.sqrt(s);
    } else if (kind == L1) {
      for (let i = 0; i < count; i++) s += Math.abs(elem(base, i, dt));
    } else {
      for (let i = 0; i < count; i++) {
        const a = Math.abs(elem(base, i, dt));
        if (a != 0) s += Math.pow(a, ord);
      }
      if (s != 0) s = Math.pow(s, 1 / ord);
    }
    store<f32>(out + (<usize>t << 2), <f32>s);
  }
}

/** Multiplies each of the `n` tensors of the table at `p` by the f32 at `s`, in place. */
export function foreachMul(p: usize, n: i32, s: usize): void {
  const c = load<f32>(s), c4 = f32x4.splat(c);
  for (let t = 0; t < n; t++) {
    const base = <usize>load<i32>(p + (<usize>t << 3));
    const count = load<i32>(p + (<usize>t << 3) + 4);
    const n4 = count & ~3;
    let i = 0;
    for (; i < n4; i += 4) {
      const a = base + (<usize>i << 2);
      v128.store(a, f32x4.mul(v128.load(a), c4));
    }
    for (; i < count; i++) {
      const a = base + (<usize>i << 2);
      store<f32>(a, load<f32>(a) * c);
    }
  }
}

/** Clamps each of the `n` tensors of the table at `p` to [lo, hi] in place (NaN stays: f32x4.min/max propagate it). */
export function foreachClamp(p: usize, n: i32, lo: f32, hi: f32): void {
  const lo4 = f32x4.splat(lo), hi4 = f32x4.splat(hi);
  for (let t = 0; t < n; t++) {
    const base = <usize>load<i32>(p + (<usize>t << 3));
    const count = load<i32>(p + (<usize>t << 3) + 4);
    const n4 = count & ~3;
    let i = 0;
    for (; i < n4; i += 4) {
      const a = base + (<usize>i << 2);
      v128.store(a, f32x4.min(f32x4.max(v128.load(a), lo4), hi4));
    }
    for (; i < count; i++) {
      const a = base + (<usize>i << 2);
      store<f32>(a, min<f32>(max<f32>(load<f32>(a), lo), hi));
    }
  }
}
