/**
 * Softmax and log-softmax over the rows of a contiguous f32 [outer, inner] block, one workgroup
 * per row, in one kernel: a max, a sum of exp(x - max), then the outputs. The composed form
 * (max, sub, exp, sum, div: five kernels) reads and writes the block five times. Max propagates
 * NaN (bit tests: compilers may fold `x != x`), so a row holding NaN gives NaN throughout, as in
 * PyTorch. Params are [outer, inner, input offset, output offset] in elements.
 */
import { slotBindings } from './dtype.js';
import { rowMain } from './reduce.js';

const SWG = 256;

/** WGSL of the row kernel; `log` selects log-softmax. The input is in slot `inSlot`, the output in slot 0. */
export function softmaxShader(log: boolean, inSlot: number, slots: number): string {
  const x = (k: string) => `bitcast<f32>(rd${inSlot}(base + ${k}))`;
  const out = log ? '(v - m) - logSum' : 'exp(v - m) * inv';
  return `${slotBindings(slots)}var<workgroup> SV: array<f32, ${SWG}>;
fn isnan_f(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }
fn max_f(a: f32, b: f32) -> f32 { return select(select(max(a, b), b, isnan_f(b)), a, isnan_f(a)); }
${rowMain(SWG, `  let dst = P[3] + row * inner;
  var acc = ${x('0u')};
  for (var k = li; k < inner; k += ${SWG}u) { acc = max_f(acc, ${x('k')}); }
  SV[li] = acc;
  workgroupBarrier();
  for (var s = ${SWG / 2}u; s > 0u; s = s >> 1u) {
    if (li < s) { SV[li] = max_f(SV[li], SV[li + s]); }
    workgroupBarrier();
  }
  let m = SV[0];
  workgroupBarrier();
  var sum = 0.0;
  for (var k = li; k < inner; k += ${SWG}u) { sum += exp(${x('k')} - m); }
  SV[li] = sum;
  workgroupBarrier();
  for (var s = ${SWG / 2}u; s > 0u; s = s >> 1u) {
    if (li < s) { SV[li] = SV[li] + SV[li + s]; }
    workgroupBarrier();
  }
  let inv = 1.0 / SV[0];
  let logSum = log(SV[0]);
  for (var k = li; k < inner; k += ${SWG}u) {
    let v = ${x('k')};
    S0[dst + k] = bitcast<u32>(${out});
  }`)}`;
}
