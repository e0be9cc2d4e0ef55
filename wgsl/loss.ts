/**
 * The fused negative log likelihood (the `nll` and `nllGrad` commands, ts/worker/protocol.ts):
 * `F.nll_loss` and the NLL half of `F.cross_entropy` for class-index targets, in one kernel
 * forward and one backward, where composing it took about 15 kernels each way.
 *
 * The input x is a contiguous f32 [outer, C, inner]; a row is one of the outer·inner positions,
 * its classes `inner` apart. Each row reads its int64 target once: equal to ignoreIndex (both
 * words compared) the row counts nothing; outside [0, C) it records the device check (E, as
 * the index family does: wgsl/index.ts `errorBinding`) and counts nothing.
 *
 * The hard part is the weighted mean in one dispatch: Σ loss / Σ weight needs both sums over
 * every row. With 'sum' or 'mean' one workgroup walks all the rows (each invocation a strided
 * run of them, then a tree in workgroup memory), so the loss is written by the kernel that
 * computes it, with no second pass and no atomics; a training batch is a few hundred rows. The
 * 0/0 (every row ignored) is
 * NaN, as in PyTorch, decided here rather than left to the driver's division. The mean's Σ
 * weight is written to a tensor of its own (`total`, for the gradient), which may share a
 * segment with the loss or with an input: its slot is writable too.
 *
 * Params (u32 words): 0 rows, 1 C, 2 inner, 3 x offset, 4 target offset, 5 w offset, 6 out
 * offset, 7 and 8 ignoreIndex's low and high words, 9 (1 - eps) and 10 eps / C as f32 bits,
 * 11 the check's code (forward) or g's offset (backward), 12 the total's offset.
 */
import { errorBinding } from './index.js';

/** Workgroup size of the loss kernels (the reduction's tree assumes a power of two). */
export const LWG = 256;

/** The slots of a loss kernel's storages (slot 0 is the output's segment); -1: absent. */
export interface LossSlots { x: number; target: number; w: number; g: number; total: number; slots: number }

/** Options a loss kernel is generated for (its shader key). */
export interface LossKernel { reduction: 'none' | 'sum' | 'mean'; smooth: boolean }

/**
 * One binding per distinct segment (wgsl/dtype.ts `slotBindings`, whose rule this keeps: a
 * buffer bound once per dispatch), slot 0 the output's; slot 0 and `written` are read_write.
 */
function lossBindings(slots: number, written: number): string {
  let out = '@group(0) @binding(0) var<storage, read> P: array<u32>;\n';
  for (let k = 0; k < slots; k++) {
    out += `@group(0) @binding(${k + 1}) var<storage, ${k === 0 || k === written ? 'read_write' : 'read'}> S${k}: array<u32>;\nfn rd${k}(i: u32) -> u32 { return S${k}[i]; }\n`;
  }
  return out;
}

/** The params block of a loss kernel (see the file's note). */
export function lossParams(words: { rows: number; classes: number; inner: number; x: number; target: number; w: number; out: number; ignore: [number, number];
  eps: number; last: number; total?: number }): ArrayBuffer {
  const p = new Uint32Array(13), f = new Float32Array(p.buffer);
  p.set([words.rows, words.classes, words.inner, words.x, words.target, words.w, words.out, words.ignore[0], words.ignore[1]]);
  f[9] = 1 - words.eps;
  f[10] = words.classes ? words.eps / words.classes : 0;
  p[11] = words.last;
  p[12] = words.total ?? 0;
  return p.buffer;
}

/**
 * `fn class_of(r)`: row r's class, -1 when the row is ignored, -2 (after recording the check when
 * `code`) when it is out of range; and `fn weight(t)`, the class weight (1 without a weight).
 */
function targetFns(s: LossSlots, check: boolean): string {
  return `fn class_of(r: u32) -> i32 {
  let at = 2u * (P[4] + r);
  let lo = rd${s.target}(at);
  let hi = rd${s.target}(at + 1u);
  if (lo == P[7] && hi == P[8]) { return -1; }
  let t = bitcast<i32>(lo);
  if (hi != select(0u, 0xffffffffu, t < 0i) || t < 0 || u32(t) >= P[1]) {${check ? ' fail64(P[11], lo, hi);' : ''} return -2; }
  return t;
}
fn weight(c: u32) -> f32 { return ${s.w >= 0 ? `bitcast<f32>(rd${s.w}(P[5] + c))` : '1.0'}; }
var<private> NAN_BITS: u32 = 0x7fc00000u;
`;
}

/** The forward kernel: per row (loss, weight), reduced as `k.reduction` says. */
export function nllShader(k: LossKernel, s: LossSlots): string {
  const smooth = k.smooth
    ? `  var all = 0.0;
  for (var c = 0u; c < P[1]; c++) { all += bitcast<f32>(rd${s.x}(base + c * P[2])) * weight(c); }
  loss = bitcast<f32>(P[9]) * loss - bitcast<f32>(P[10]) * all;
`
    : '';
  const head = `${lossBindings(s.slots, s.total)}${errorBinding(s.slots)}${targetFns(s, true)}
fn row(r: u32) -> vec2<f32> {
  let t = class_of(r);
  if (t < 0) { return vec2<f32>(0.0, 0.0); }
  let n = r / P[2];
  let base = P[3] + n * P[1] * P[2] + (r - n * P[2]);
  let wt = weight(u32(t));
  var loss = -(bitcast<f32>(rd${s.x}(base + u32(t) * P[2])) * wt);
${smooth}  return vec2<f32>(loss, wt);
}
`;
  if (k.reduction === 'none') {
    return `${head}@compute @workgroup_size(${LWG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let r = (wid.y * nwg.x + wid.x) * ${LWG}u + li;
  if (r >= P[0]) { return; }
  S0[P[6] + r] = bitcast<u32>(row(r).x);
}
`;
  }
  const write = k.reduction === 'sum'
    ? '    S0[P[6]] = bitcast<u32>(L[0]);'
    : `    let total = W[0];
    S0[P[6]] = bitcast<u32>(select(L[0] / total, bitcast<f32>(NAN_BITS), total == 0.0 && L[0] == 0.0));
    S${s.total}[P[12]] = bitcast<u32>(total);`;
  return `${head}var<workgroup> L: array<f32, ${LWG}>;
var<workgroup> W: array<f32, ${LWG}>;
@compute @workgroup_size(${LWG})
fn main(@builtin(local_invocation_index) li: u32) {
  var l = 0.0;
  var w = 0.0;
  for (var r = li; r < P[0]; r += ${LWG}u) {
    let v = row(r);
    l += v.x;
    w += v.y;
  }
  L[li] = l;
  W[li] = w;
  workgroupBarrier();
  for (var h = ${LWG / 2}u; h > 0u; h = h >> 1u) {
    if (li < h) {
      L[li] += L[li + h];
      W[li] += W[li + h];
    }
    workgroupBarrier();
  }
  if (li == 0u) {
${write}
  }
}
`;
}

/** The backward kernel: one invocation per element of the [outer, C, inner] gradient. */
export function nllGradShader(k: LossKernel, s: LossSlots): string {
  const scale = k.reduction === 'none' ? `bitcast<f32>(rd${s.g}(P[11] + r))`
    : k.reduction === 'sum' ? `bitcast<f32>(rd${s.g}(P[11]))`
      : `bitcast<f32>(rd${s.g}(P[11])) / bitcast<f32>(rd${s.total}(P[12]))`;
  const value = k.smooth
    ? `select(0.0, bitcast<f32>(P[9]) * weight(c), i32(c) == t) + bitcast<f32>(P[10]) * weight(c)`
    : 'select(0.0, weight(c), i32(c) == t)';
  return `${lossBindings(s.slots, -1)}${targetFns(s, false)}
@compute @workgroup_size(${LWG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let e = (wid.y * nwg.x + wid.x) * ${LWG}u + li;
  let plane = P[1] * P[2];
  if (e >= P[0] * P[1]) { return; }
  let n = e / plane;
  let c = (e - n * plane) / P[2];
  let r = n * P[2] + (e - n * plane - c * P[2]);
  let t = class_of(r);
  var v = 0.0;
  if (t >= 0) {
    let s = -(${scale});
    v = (${value}) * s;
  }
  S0[P[6] + e] = bitcast<u32>(v);
}
`;
}
