/**
 * Sliding windows (im2col) of a strided 32-bit [N, C, H, W] view, padding included, in one kernel.
 *
 * Why a family of its own: composed, the windows were a `full` fill and a strided copy (the
 * padding), then a generic map kernel over a 6-D view, three dispatches whose index math took
 * about twelve u32 divisions and remainders per element (on lavapipe ~20 ns per element). Here
 * an invocation writes one output row: its divisions are done once per row, the positions that
 * fall in the padding are found once per row (two divisions), and the inner loop only adds a
 * stride. Values are copied as bits, so the pad value is any word (0 for zeros, -inf for max
 * pooling).
 *
 * Only CPU adapters (lavapipe) run it (`fusedWindows` in ts/ops/conv.ts). On a GPU, where
 * neighbouring invocations must write neighbouring words, this row form ran the H100's conv2d
 * rows at a quarter of the composed path's speed, and an element form (an invocation per word,
 * or per 4 words of a row) still at 0.75–0.84× of it: the composed copy is a map kernel on the
 * vec4 path, and the divisions per word cost the GPU more than the extra dispatches.
 *
 * Layouts (both contiguous): [N, C, kh, kw, oh, ow] (rows of `ow`, one invocation per
 * (n, c, i, j, oy)), or with `kernelLast` [N, C, oh, ow, kh, kw] (one invocation per (n, c, oy)
 * writing its ow·kh·kw words).
 * Params: [rows, C, H, W, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw, x offset, x strides (4),
 * output offset, pad bits], sizes and offsets in elements; ph and pw pad the top and left, and
 * any position outside x reads as the pad value (bottom and right padding are implicit).
 */
import { slotBindings } from './dtype.js';

/** Invocations per workgroup. */
export const WINDOW_WG = 64;

/** The params block's length in words. */
export const WINDOW_PARAMS = 21;

/** The kernel's cache key. */
export const windowKey = (kernelLast: boolean, xSlot: number, slots: number): string => `window|${+kernelLast}|${xSlot}|${slots}`;

/** WGSL of the windows kernel; x is read through slot `xSlot`, the output is slot 0. */
export function windowShader(kernelLast: boolean, xSlot: number, slots: number): string {
  const head = `${slotBindings(slots)}
@compute @workgroup_size(${WINDOW_WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let r = (wid.y * nwg.x + wid.x) * ${WINDOW_WG}u + li;
  if (r >= P[0]) { return; }
  let C = P[1]; let H = i32(P[2]); let W = i32(P[3]); let kh = P[4]; let kw = P[5]; let oh = P[6]; let ow = P[7];
  let pad = P[20];
  let oy = r % oh;
`;
  const body = kernelLast
    ? `  let nc = r / oh;
  let base = P[14] + (nc / C) * P[15] + (nc % C) * P[16];
  var o = P[19] + r * ow * kh * kw;
  for (var ox = 0u; ox < ow; ox++) {
    let ix0 = i32(ox * P[9]) - i32(P[13]);
    for (var i = 0u; i < kh; i++) {
      let iy = i32(oy * P[8] + i * P[10]) - i32(P[12]);
      let rowIn = iy >= 0 && iy < H;
      let rb = base + u32(max(iy, 0)) * P[17];
      for (var j = 0u; j < kw; j++) {
        let ix = ix0 + i32(j * P[11]);
        var v = pad;
        if (rowIn && ix >= 0 && ix < W) { v = rd${xSlot}(rb + u32(ix) * P[18]); }
        S0[o] = v;
        o++;
      }
    }
  }
}
`
    : `  var t = r / oh;
  let j = t % kw; t = t / kw;
  let i = t % kh; t = t / kh;
  let dst = P[19] + r * ow;
  let iy = i32(oy * P[8] + i * P[10]) - i32(P[12]);
  // outputs [lo, hi) of the row read x; the others are padding
  var lo = ow;
  var hi = ow;
  var src = 0u;
  if (iy >= 0 && iy < H) {
    let sw = i32(P[9]);
    let ix0 = i32(j * P[11]) - i32(P[13]);
    hi = min(ow, u32(max(0, (W - ix0 + sw - 1) / sw)));
    lo = min(hi, select(0u, u32((sw - 1 - ix0) / sw), ix0 < 0));
    src = P[14] + (t / C) * P[15] + (t % C) * P[16] + u32(iy) * P[17] + u32(ix0 + i32(lo) * sw) * P[18];
  }
  for (var o = 0u; o < lo; o++) { S0[dst + o] = pad; }
  let step = P[9] * P[18];
  for (var o = lo; o < hi; o++) {
    S0[dst + o] = rd${xSlot}(src);
    src += step;
  }
  for (var o = hi; o < ow; o++) { S0[dst + o] = pad; }
}
`;
  return head + body;
}
