/**
 * 2-D max pooling and its gradient (the `maxPool` and `maxPoolGrad` commands,
 * ts/worker/protocol.ts; assembly/kernels/pool.ts is the cpu's), one dispatch each way; average
 * pooling (`avgPool`, `avgPoolGrad`) at the end.
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
 * the windows that contain it (at most kh·kw; their range from two divisions a dim, as division
 * is dear on a CPU adapter: a loop testing each kernel offset took 6.5 ms for 16×8×28×28 on
 * lavapipe) in output order and adds the gradient of each whose index names it. Output order is
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
export const poolKey = (kind: 'forward' | 'gather' | 'tiles' | 'avg' | 'avgGrad', a: number, idx: number, slots: number): string => `maxpool|${kind}|${a}|${idx}|${slots}`;

/** The forward: x in slot `xSlot`, values in slot 0, indices in slot `idxSlot`. */
export function maxPoolShader(xSlot: number, idxSlot: number, slots: number): string {
  return `${bindings(slots, idxSlot)}${HEAD}
@compute @workgroup_size(${POOL_WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let o = (wid.y * nwg.x + wid.x) * ${POOL_WG}u + li;
  if (o >= P[0]) { return; }
  let H = i32(P[1]); let W = i32(P[2]); let oh = P[3]; let ow = P[4];
  let dh = i32(P[11]); let dw = i32(P[12]);
  let t = o / ow;
  let ox = o - t * ow;
  let q = t / oh;
  let oy = t - q * oh;
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

/**
 * The gradient of windows that tile the input (stride = kernel, no padding or dilation, oh·kh = H,
 * ow·kw = W: the CNN's 2×2 pooling): an invocation per window writes its kh·kw words, the
 * gradient at its index and zeros elsewhere; no element is in two windows or in none. On lavapipe
 * it took a quarter of the gather's time, whose divisions per element (six) are the cost there.
 */
export function maxPoolTileGradShader(gSlot: number, idxSlot: number, slots: number): string {
  return `${bindings(slots, -1)}
@compute @workgroup_size(${POOL_WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let o = (wid.y * nwg.x + wid.x) * ${POOL_WG}u + li;
  if (o >= P[0]) { return; }
  let W = P[2]; let oh = P[3]; let ow = P[4]; let kh = P[5]; let kw = P[6];
  let t = o / ow;
  let ox = o - t * ow;
  let q = t / oh;
  let oy = t - q * oh;
  let at = 2u * (P[14] + o);
  let i = S${idxSlot}[at];
  let g = S${gSlot}[P[13] + o];
  let base = P[15] + q * P[1] * W;
  for (var a = 0u; a < kh; a++) {
    let row = (oy * kh + a) * W + ox * kw;
    for (var b = 0u; b < kw; b++) { S0[base + row + b] = select(0u, g, row + b == i && S${idxSlot}[at + 1u] == 0u); }
  }
}
`;
}

/**
 * The head of a gradient's gather: an invocation per input element e of P[0], in plane q at row h,
 * column c (planes of P[1] × P[2]).
 */
const GATHER_MAIN = `fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let e = (wid.y * nwg.x + wid.x) * ${POOL_WG}u + li;
  if (e >= P[0]) { return; }
  let plane = P[1] * P[2];
  let q = e / plane;
  let r = e - q * plane;
  let h = i32(r / P[2]);
  let c = i32(r) - h * i32(P[2]);
`;

/** The gradient: g in slot `gSlot`, the indices in slot `idxSlot`, the input's gradient in slot 0. */
export function maxPoolGradShader(gSlot: number, idxSlot: number, slots: number): string {
  return `${bindings(slots, -1)}
@compute @workgroup_size(${POOL_WG})
${GATHER_MAIN}  let oh = i32(P[3]); let ow = i32(P[4]); let sh = i32(P[7]); let sw = i32(P[8]);
  let dh = i32(P[11]); let dw = i32(P[12]);
  // the windows whose span reaches (h, c): oy·sh − ph ≤ h ≤ oy·sh − ph + (kh − 1)·dh, and the same
  // for ox; with dilation, only those whose kernel offset lands on it. Two divisions a dim, none in the loop.
  let th = h + i32(P[9]); let tc = c + i32(P[10]);
  let y0 = max(0, (th - (i32(P[5]) - 1) * dh + sh - 1) / sh); let y1 = min(oh - 1, th / sh);
  let x0 = max(0, (tc - (i32(P[6]) - 1) * dw + sw - 1) / sw); let x1 = min(ow - 1, tc / sw);
  let first = q * P[3] * P[4];
  var acc = 0.0;
  // in output order (oy, then ox, ascending): the order of PyTorch's scatter
  for (var oy = y0; oy <= y1; oy++) {
    if (dh > 1 && (th - oy * sh) % dh != 0) { continue; }
    for (var ox = x0; ox <= x1; ox++) {
      if (dw > 1 && (tc - ox * sw) % dw != 0) { continue; }
      let o = first + u32(oy * ow + ox);
      let at = 2u * (P[14] + o);
      if (S${idxSlot}[at] == r && S${idxSlot}[at + 1u] == 0u) { acc += bitcast<f32>(S${gSlot}[P[13] + o]); }
    }
  }
  S0[P[15] + e] = bitcast<u32>(acc);
}
`;
}

/**
 * Average pooling (the `avgPool` and `avgPoolGrad` commands; no dilation), params as above but
 * 11 includePad and 12 the divisor's f32 bits (0: none). `fn window(oy, ox)`: the window's
 * bounds clipped to the input and its divisor (PyTorch's: `divisor_override`, else its size
 * clipped to the padded input with `includePad`, else to the input; a window with no element
 * inside has divisor 0 and counts nothing).
 */
const AVG_WINDOW = `struct Win { h0: i32, h1: i32, w0: i32, w1: i32, div: f32 }
fn window(oy: i32, ox: i32) -> Win {
  let H = i32(P[1]); let W = i32(P[2]);
  var h0 = oy * i32(P[7]) - i32(P[9]); var h1 = min(h0 + i32(P[5]), H + i32(P[9]));
  var w0 = ox * i32(P[8]) - i32(P[10]); var w1 = min(w0 + i32(P[6]), W + i32(P[10]));
  let padded = (h1 - h0) * (w1 - w0);
  h0 = max(h0, 0); h1 = min(h1, H); w0 = max(w0, 0); w1 = min(w1, W);
  if (h0 >= h1 || w0 >= w1) { return Win(h0, h1, w0, w1, 0.0); }
  var div = f32(select((h1 - h0) * (w1 - w0), padded, P[11] != 0u));
  if (P[12] != 0u) { div = bitcast<f32>(P[12]); }
  return Win(h0, h1, w0, w1, div);
}
`;

/** The average pooling forward: x in slot `xSlot`, an invocation per output. */
export function avgPoolShader(xSlot: number, slots: number): string {
  return `${bindings(slots, -1)}${AVG_WINDOW}
@compute @workgroup_size(${POOL_WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let o = (wid.y * nwg.x + wid.x) * ${POOL_WG}u + li;
  if (o >= P[0]) { return; }
  let t = o / P[4];
  let ox = o - t * P[4];
  let q = t / P[3];
  let oy = t - q * P[3];
  let win = window(i32(oy), i32(ox));
  let base = P[13] + q * P[1] * P[2];
  var sum = 0.0;
  for (var h = win.h0; h < win.h1; h++) {
    for (var c = win.w0; c < win.w1; c++) { sum += bitcast<f32>(S${xSlot}[base + u32(h) * P[2] + u32(c)]); }
  }
  S0[P[15] + o] = bitcast<u32>(select(0.0, sum / win.div, win.div != 0.0));
}
`;
}

/**
 * The average pooling gradient: a gather, an invocation per input element adding g / divisor of
 * each window that covers it, in output order (the order of PyTorch's scatter).
 */
export function avgPoolGradShader(gSlot: number, slots: number): string {
  return `${bindings(slots, -1)}${AVG_WINDOW}
@compute @workgroup_size(${POOL_WG})
${GATHER_MAIN}  let sh = i32(P[7]); let sw = i32(P[8]);
  // the windows whose rows reach h: oy·sh − ph ≤ h ≤ oy·sh − ph + kh − 1 (and the same for c)
  let th = h + i32(P[9]); let tc = c + i32(P[10]);
  let y0 = max(0, (th - i32(P[5]) + sh) / sh); let y1 = min(i32(P[3]) - 1, th / sh);
  let x0 = max(0, (tc - i32(P[6]) + sw) / sw); let x1 = min(i32(P[4]) - 1, tc / sw);
  let first = P[13] + q * P[3] * P[4];
  var acc = 0.0;
  for (var oy = y0; oy <= y1; oy++) {
    for (var ox = x0; ox <= x1; ox++) {
      let win = window(oy, ox);
      acc += bitcast<f32>(S${gSlot}[first + u32(oy) * P[4] + u32(ox)]) / win.div;
    }
  }
  S0[P[15] + e] = bitcast<u32>(acc);
}
`;
}
