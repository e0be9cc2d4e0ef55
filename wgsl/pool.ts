/**
 * 2-D max pooling and its gradient (the `maxPool` and `maxPoolGrad` commands,
 * ts/worker/protocol.ts; assembly/kernels/pool.ts is the cpu's), one dispatch each way.
 *
 * Composed, a GPU's max pooling was the windows (a pad and a strided copy, or the windows
 * kernel), two reductions, six int64 elementwise ops for the flat indices, and a mask, a `where`
 * and the fold backward. Here the forward is an invocation per output: it walks its window in
 * place, clipped to the input, and writes the value (its bits, as read) and the index h·W + w as
 * int64. The rule is PyTorch's: a greater value or a NaN takes the place, so ties keep the first
 * element, the last NaN wins, and a window of -inf names its first element inside the input.
 *
 * The gradient is a gather, an invocation per input element, so no two invocations write one
 * word and no atomics are needed even where windows overlap (stride < kernel): the element walks
 * the windows that contain it (at most kh·kw: one per kernel offset whose position divides by the
 * stride) in output order and adds the gradient of each whose index names it. Output order is
 * the order of PyTorch's scatter, so the f32 sums are its sums.
 *
 * Params (u32 words): 0 invocations, 1 H, 2 W, 3 oh, 4 ow, 5 kh, 6 kw, 7 sh, 8 sw, 9 ph, 10 pw,
 * 11 dh, 12 dw, 13 x's (forward) or g's (gradient) offset, 14 the indices' offset (int64
 * elements), 15 the output's offset (the values' or the gradient's).
 */

/** Invocations per workgroup. */
export const POOL_WG = 64;

/** The params block's length in words. */
export const POOL_PARAMS = 16;

/**
 * One binding per distinct segment (slot 0 the output's: wgsl/dtype.ts `slotBindings`'s rule, a
 * buffer bound once per dispatch); slot 0 and `written` are read_write.
 */
function bindings(slots: number, written: number): string {
  let out = '@group(0) @binding(0) var<storage, read> P: array<u32>;\n';
  for (let k = 0; k < slots; k++) {
    out += `@group(0) @binding(${k + 1}) var<storage, ${k === 0 || k === written ? 'read_write' : 'read'}> S${k}: array<u32>;\n`;
  }
  return out;
}

const HEAD = `fn isnan_f(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }
var<private> NEG_INF_BITS: u32 = 0xff800000u;
`;

/** The kernel's cache key. */
export const poolKey = (grad: boolean, a: number, idx: number, slots: number): string => `maxpool|${+grad}|${a}|${idx}|${slots}`;

/** The forward: x in slot `xSlot`, values in slot 0, indices in slot `idxSlot`. */
export function maxPoolShader(xSlot: number, idxSlot: number, slots: number): string {
  return `${bindings(slots, idxSlot)}${HEAD}
@compute @workgroup_size(${POOL_WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let o = (wid.y * nwg.x + wid.x) * ${POOL_WG}u + li;
  if (o >= P[0]) { return; }
  let H = i32(P[1]); let W = i32(P[2]); let oh = P[3]; let ow = P[4];
  let dh = i32(P[11]); let dw = i32(P[12]);
  let ox = o % ow;
  let t = o / ow;
  let oy = t % oh;
  let q = t / oh;
  var h0 = i32(oy * P[7]) - i32(P[9]);
  let h1 = min(h0 + (i32(P[5]) - 1) * dh + 1, H);
  while (h0 < 0) { h0 += dh; }
  var w0 = i32(ox * P[8]) - i32(P[10]);
  let w1 = min(w0 + (i32(P[6]) - 1) * dw + 1, W);
  while (w0 < 0) { w0 += dw; }
  let base = P[13] + q * u32(H * W);
  var mb = NEG_INF_BITS;
  var mi = h0 * W + w0;
  for (var h = h0; h < h1; h += dh) {
    for (var c = w0; c < w1; c += dw) {
      let b = S${xSlot}[base + u32(h * W + c)];
      let v = bitcast<f32>(b);
      if (v > bitcast<f32>(mb) || isnan_f(v)) { mb = b; mi = h * W + c; }
    }
  }
  S0[P[15] + o] = mb;
  let at = 2u * (P[14] + o);
  S${idxSlot}[at] = u32(mi);
  S${idxSlot}[at + 1u] = 0u;
}
`;
}

/** The gradient: g in slot `gSlot`, the indices in slot `idxSlot`, the input's gradient in slot 0. */
export function maxPoolGradShader(gSlot: number, idxSlot: number, slots: number): string {
  return `${bindings(slots, -1)}
@compute @workgroup_size(${POOL_WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let e = (wid.y * nwg.x + wid.x) * ${POOL_WG}u + li;
  if (e >= P[0]) { return; }
  let plane = P[1] * P[2];
  let q = e / plane;
  let r = e % plane;
  let h = i32(r / P[2]); let c = i32(r % P[2]);
  let oh = i32(P[3]); let ow = i32(P[4]); let sh = i32(P[7]); let sw = i32(P[8]);
  let kh = i32(P[5]); let kw = i32(P[6]); let dh = i32(P[11]); let dw = i32(P[12]);
  let first = q * P[3] * P[4];
  var acc = 0.0;
  // kernel offsets from the last: the windows come in output order (oy, then ox, ascending)
  for (var a = kh - 1; a >= 0; a--) {
    let ty = h + i32(P[9]) - a * dh;
    if (ty < 0 || ty % sh != 0 || ty / sh >= oh) { continue; }
    let row = first + u32((ty / sh) * ow);
    for (var b = kw - 1; b >= 0; b--) {
      let tx = c + i32(P[10]) - b * dw;
      if (tx < 0 || tx % sw != 0 || tx / sw >= ow) { continue; }
      let o = row + u32(tx / sw);
      let at = 2u * (P[14] + o);
      if (S${idxSlot}[at] == r && S${idxSlot}[at + 1u] == 0u) { acc += bitcast<f32>(S${gSlot}[P[13] + o]); }
    }
  }
  S0[P[15] + e] = bitcast<u32>(acc);
}
`;
}
