// The fused negative log likelihood on the cpu (the `nll` and `nllGrad` commands of
// ts/worker/protocol.ts; wgsl/loss.ts is the GPU's): F.nll_loss and the NLL half of
// F.cross_entropy for class-index targets, one pass over the rows.
//
// x is a contiguous f32 [outer, C, inner]; a row is one of the outer·inner positions, its
// classes `inner` apart, its target one int64. A target equal to ignoreIndex counts nothing; any
// other outside [0, C) stops the kernel, which records it (index.ts `noteBad`) and returns 1, so
// the host raises PyTorch's "Target 9 is out of bounds." Row losses are f32, as PyTorch's; the
// sums of 'sum' and 'mean' accumulate in f64, as PyTorch's cpu kernel does (acc_type<float> is
// double there).
//
// Descriptor (i32 words at p): 0 x, 1 target, 2 w (0: none), 3 out, 4 outer, 5 C, 6 inner,
// 7 and 8 ignoreIndex's low and high words, 9 reduction (0 none, 1 sum, 2 mean), 10 (1 - eps)
// and 11 eps / C as f32 bits, 12 g (the gradient's), 13 total (the mean's Σ weight: written
// forward, read by the gradient).

import { noteBad } from "./index";

// @ts-ignore: decorator
@inline function word(p: usize, i: i32): i32 {
  return load<i32>(p + (<usize>i << 2));
}

// @ts-ignore: decorator
@inline function f32At(base: usize, i: i32): f32 {
  return load<f32>(base + (<usize>i << 2));
}

/** The weight of class c (1 without a weight tensor). */
// @ts-ignore: decorator
@inline function weightOf(w: usize, c: i32): f32 {
  return w ? f32At(w, c) : 1.0;
}

/** Row r's class: -1 when ignored, -2 (after noting it) when out of range. */
function targetOf(target: usize, r: i32, ignore: i64, classes: i32): i32 {
  const t = load<i64>(target + (<usize>r << 3));
  if (t == ignore) return -1;
  if (t < 0 || t >= <i64>classes) {
    noteBad(t);
    return -2;
  }
  return <i32>t;
}

/** The forward (see the file's note); returns 1 on a target out of range. */
export function nll(p: usize): i32 {
  const x = <usize>word(p, 0), target = <usize>word(p, 1), w = <usize>word(p, 2), out = <usize>word(p, 3);
  const outer = word(p, 4), classes = word(p, 5), inner = word(p, 6);
  const ignore = (<i64>word(p, 8) << 32) | <i64><u32>word(p, 7);
  const reduction = word(p, 9), keep = reinterpret<f32>(word(p, 10)), spread = reinterpret<f32>(word(p, 11));
  const smooth = spread != 0;
  let sum: f64 = 0, total: f64 = 0;
  for (let n = 0; n < outer; n++) {
    for (let k = 0; k < inner; k++) {
      const r = n * inner + k;
      const t = targetOf(target, r, ignore, classes);
      if (t == -2) return 1;
      let loss: f32 = 0, wt: f32 = 0;
      if (t >= 0) {
        const base = x + ((<usize>(n * classes) * <usize>inner + <usize>k) << 2);
        wt = weightOf(w, t);
        loss = -(load<f32>(base + (<usize>(t * inner) << 2)) * wt);
        if (smooth) {
          let all: f32 = 0;
          for (let c = 0; c < classes; c++) all += load<f32>(base + (<usize>(c * inner) << 2)) * weightOf(w, c);
          loss = keep * loss - spread * all;
        }
      }
      if (reduction == 0) store<f32>(out + (<usize>r << 2), loss);
      sum += <f64>loss;
      total += <f64>wt;
    }
  }
  if (reduction == 1) store<f32>(out, <f32>sum);
  if (reduction == 2) {
    // 0/0 when every row is ignored: NaN, as in PyTorch
    store<f32>(out, <f32>(sum / total));
    store<f32>(<usize>word(p, 13), <f32>total);
  }
  return 0;
}

/** The gradient: out[n, c, k] = -s·((1-eps)·w[t]·[c = t] + eps/C·w[c]) on rows not ignored. */
export function nllGrad(p: usize): void {
  const target = <usize>word(p, 1), w = <usize>word(p, 2), out = <usize>word(p, 3);
  const outer = word(p, 4), classes = word(p, 5), inner = word(p, 6);
  const ignore = (<i64>word(p, 8) << 32) | <i64><u32>word(p, 7);
  const reduction = word(p, 9), keep = reinterpret<f32>(word(p, 10)), spread = reinterpret<f32>(word(p, 11));
  const g = <usize>word(p, 12), tot = <usize>word(p, 13);
  memory.fill(out, 0, <usize>outer * <usize>classes * <usize>inner << 2);
  let s: f32 = reduction == 2 ? load<f32>(g) / load<f32>(tot) : load<f32>(g);
  for (let n = 0; n < outer; n++) {
    for (let k = 0; k < inner; k++) {
      const r = n * inner + k;
      const t = targetOf(target, r, ignore, classes);
      if (t < 0) continue;
      const scale = -(reduction == 0 ? f32At(g, r) : s);
      const base = out + ((<usize>(n * classes) * <usize>inner + <usize>k) << 2);
      if (spread != 0) {
        for (let c = 0; c < classes; c++) store<f32>(base + (<usize>(c * inner) << 2), spread * weightOf(w, c) * scale);
        store<f32>(base + (<usize>(t * inner) << 2), (keep * weightOf(w, t) + spread * weightOf(w, t)) * scale);
      } else {
        store<f32>(base + (<usize>(t * inner) << 2), weightOf(w, t) * scale);
      }
    }
  }
}
