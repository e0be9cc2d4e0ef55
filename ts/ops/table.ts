/**
 * The op table: each elementwise op is described once, and the API (`ts/ops/elementwise.ts`),
 * both kernel families (the WGSL expression here, the AssemblyScript kernel by `code`) and the
 * tests (`test/backend`, which requires a PyTorch golden for every row) come from it.
 *
 * `code` is the op's number in the AssemblyScript kernels (`assembly/kernels`); the WGSL
 * expressions read inputs `x0`, `x1` and scalars `s0..s3`, in the compute type named by the key.
 * Integer divisions pass their divisor through `divisor_i`, which reports a zero divisor as
 * PyTorch's ZeroDivisionError at the next sync point (see wgsl/elementwise.ts).
 *
 * dtype rules (`dtypes`):
 * - 'float': integer and bool inputs are promoted to float32 first (torch.exp(int) is float);
 * - 'floating': float inputs only (torch.nn.functional.gelu(int) raises);
 * - 'any': computes in the promoted dtype, bool included;
 * - 'number': like 'any' but bool is refused (torch.neg(bool) raises), unless the op names a
 *   `boolResult`: then bool computes as int64 and returns that dtype (torch.sign(bool) is bool,
 *   torch.square(bool) is int64);
 * - 'bool': the result is bool, computed in the promoted dtype (comparisons, logical ops);
 * - 'integral': bool and integer dtypes only, computed in the promoted dtype (the bitwise ops);
 *   a float raises PyTorch's `"bitwise_and_cpu" not implemented for 'Float'`, the kernel named
 *   by the device type (`_gpu` on a GPU, as PyTorch's `_cuda`). They have no f32 expression.
 */

import { MATH_WGSL } from '../../wgsl/math.js';
import type { Tensor } from '../tensor.js';

/** How an op treats dtypes. */
export type DTypeRule = 'float' | 'floating' | 'any' | 'number' | 'bool' | 'integral';

type T = Tensor;
type TS = Tensor | number;

/** The ops gradient rules are written in (injected by `ts/ops/elementwise.ts`). */
export interface GradMath {
  add(a: TS, b: TS): T; sub(a: TS, b: TS): T; mul(a: TS, b: TS): T; div(a: TS, b: TS): T; pow(a: TS, b: TS): T;
  neg(a: T): T; exp(a: T): T; log(a: T): T; sin(a: T): T; cos(a: T): T; erf(a: T): T; sign(a: T): T; abs(a: T): T;
  sigmoid(a: T): T; tanh(a: T): T; square(a: T): T; floorDivide(a: TS, b: TS): T;
  gt(a: TS, b: TS): T; ge(a: TS, b: TS): T; lt(a: TS, b: TS): T; le(a: TS, b: TS): T; eq(a: TS, b: TS): T;
  where(c: T, a: TS, b: TS): T; zerosLike(a: T): T;
  /**
   * gelu's gradient `g·gelu'(x)` in one kernel (the `gelu_backward` rows), or null when the
   * gradient must itself be differentiable (`createGraph`): the rule then composes it.
   */
  geluBackward(g: T, x: T, tanh: boolean): T | null;
}

/** What a gradient rule sees: inputs, output, the output's gradient, and the scalar options. */
export interface GradArgs {
  x: T;
  y: T;
  out: T;
  g: T;
  s: number[];
  /** Which inputs want a gradient ([x, y]); a rule may skip the others (and return null for them). */
  need: readonly boolean[];
}

/** A rule: the gradient of each input (for binary ops, before reducing broadcast dims). */
export type ElementwiseGrad = (m: GradMath, a: GradArgs) => (T | null)[];

/** One elementwise op. */
export interface ElementwiseOp {
  name: string;
  arity: 1 | 2;
  code: number;
  dtypes: DTypeRule;
  /**
   * `i64`: the int64 expression, over `vec2<u32>` values (the helpers of wgsl/int64.ts); it
   * yields a `vec2<u32>`, or an i32 for the 'bool' ops.
   */
  wgsl: { f32: string; i32?: string; i64?: string };
  /**
   * The op that runs instead on a bool input: PyTorch's bitwise_not kernel is `!a` on bool (the
   * complement of the 0/1 byte would be a nonzero byte, true, where false is wanted).
   */
  onBool?: string;
  /** For a 'number' op that takes bool: the dtype of its result (see the dtype rules above). */
  boolResult?: 'bool' | 'int64';
  /** Names of the op's scalar options, in `s0..` order (e.g. clamp's min and max). */
  scalars?: string[];
  /** The gradient rule; absent for ops whose output is not differentiable (bool, integer-valued). */
  grad?: ElementwiseGrad;
  /** Which tensors the rule reads (saved for backward): inputs `x`, `y`, output `out`. */
  saves?: ('x' | 'y' | 'out')[];
  /**
   * Where the rule reads fewer tensors for one input's gradient than for the other's: what each
   * needs. Only what the inputs that want a gradient need is saved, as PyTorch's derivatives save
   * per input: `x / 2` saves nothing of its output, so writing into it later is allowed.
   */
  savesFor?: { x: ('x' | 'y' | 'out')[]; y: ('x' | 'y' | 'out')[] };
}


/**
 * WGSL functions the expressions call: wgsl/math.ts's (the transcendentals, nan_f and inf_f, the
 * bit tests), then the ops' own. Shader compilers may assume finite math and fold `x != x` to
 * false, so NaN and "nonzero" tests look at the bits.
 */
export const WGSL_PRELUDE = `${MATH_WGSL}// relu by the bits: x < 0 strictly (not -0, not a NaN), since a compiler that assumes no NaN turns
// select(x, 0, x < 0) into max(x, 0), which drops a NaN (NVIDIA's did)
fn relu_f(x: f32) -> f32 { let u = bitcast<u32>(x); return select(x, 0.0, u > 0x80000000u && u <= 0xff800000u); }
fn erf_f(x: f32) -> f32 {
  // NaN by the bits; past 8 erf is ±1 in f32, so the tail's argument stays finite (inf included)
  if (isnan_f(x)) { return x; }
  let a = abs(x);
  if (a < 2.0) {
    var term = x; var sum = x; let x2 = x * x;
    for (var n = 1; n < 30; n++) { term = -term * x2 / f32(n); sum += term / f32(2 * n + 1); }
    return sum * 1.1283791670955126;
  }
  let ac = min(a, 8.0);
  let t = 1.0 / (1.0 + 0.3275911 * ac);
  let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp_f(-ac * ac);
  return select(y, -y, neg_bit(x));
}
// gelu's input gradients, PyTorch's gelu_backward: g·(Φ(x) + x·φ(x)), and the tanh form's
fn gelu_grad_f(g: f32, x: f32) -> f32 {
  return g * (0.5 * (1.0 + erf_f(x * 0.7071067811865476)) + x * exp_f(-0.5 * x * x) * 0.3989422804014327);
}
// with s = sigmoid(2u) = (1 + tanh u) / 2 and 1 - tanh² u = 4s(1 - s): no 1 + tanh u that cancels in the left tail
fn gelu_tanh_grad_f(g: f32, x: f32) -> f32 {
  let s = sigmoid_f(1.5957691216057308 * (x + 0.044715 * x * x * x));
  return g * (s + 2.0 * x * s * (1.0 - s) * 0.7978845608028654 * (1.0 + 0.134145 * x * x));
}
fn pow_f(a: f32, b: f32) -> f32 {
  if (b == 0.0) { return 1.0; }
  if (isnan_f(a) || isnan_f(b)) { return nan_f(); }
  if (abs(a) == inf_f()) {
    let odd = floor(b) == b && (abs(b) % 2.0) == 1.0;
    let m = select(0.0, inf_f(), b > 0.0);
    return select(m, -m, a < 0.0 && odd);
  }
  if (a < 0.0) {
    if (floor(b) != b) { return nan_f(); }
    let m = pow(-a, b);
    return select(m, -m, (abs(b) % 2.0) == 1.0);
  }
  if (a == 0.0) { return select(0.0, inf_f(), b < 0.0); }
  return pow(a, b);
}
fn pow_i(a: i32, b: i32) -> i32 {
  if (b < 0) { return select(select(0, 1, a == 1), select(-1, 1, (b & 1) == 0), a == -1); }
  var r = 1; var base = a; var e = b;
  loop { if (e == 0) { break; } if ((e & 1) == 1) { r *= base; } base *= base; e = e >> 1u; }
  return r;
}
fn floordiv_i(a: i32, b: i32) -> i32 {
  if (b == 0) { return 0; }
  let q = a / b;
  return select(q, q - 1, (a % b != 0) && ((a < 0) != (b < 0)));
}
fn rem_i(a: i32, b: i32) -> i32 {
  if (b == 0) { return 0; }
  let r = a % b;
  return select(r, r + b, r != 0 && ((r < 0) != (b < 0)));
}
fn rem_f(a: f32, b: f32) -> f32 {
  let r = a - b * trunc(a / b);
  return select(r, r + b, r != 0.0 && ((r < 0.0) != (b < 0.0)));
}
fn floordiv_f(a: f32, b: f32) -> f32 {
  // PyTorch's div_floor, with its special values decided by the bits first (compilers that assume
  // finite math fold the NaN and inf cases of the arithmetic below: NVIDIA's gave inf for inf // 2)
  if (isnan_f(a) || isnan_f(b)) { return nan_f(); }
  if (!nz_f(b)) { if (!nz_f(a)) { return nan_f(); } return select(inf_f(), -inf_f(), neg_bit(a) != neg_bit(b)); }
  if (isinf_f(a)) { return nan_f(); }
  if (isinf_f(b)) {
    if (!nz_f(a)) { return select(0.0, -0.0, neg_bit(a) != neg_bit(b)); }
    return select(0.0, -1.0, neg_bit(a) != neg_bit(b));
  }
  let m = a - b * trunc(a / b);
  var d = (a - m) / b;
  if (m != 0.0 && ((b < 0.0) != (m < 0.0))) { d -= 1.0; }
  if (d == 0.0) { return select(0.0, -0.0, a / b < 0.0); }
  var q = floor(d);
  if (d - q > 0.5) { q += 1.0; }
  return q;
}
fn clamp_f(x: f32, lo: f32, hi: f32) -> f32 {
  // NaN by the bits first: a compiler that assumes no NaN makes the compares below a min/max, which drop it
  if (isnan_f(x)) { return x; }
  var y = x;
  if (y < lo) { y = lo; }
  if (y > hi) { y = hi; }
  return y;
}
fn clamp_i(x: i32, lo: f32, hi: f32) -> i32 {
  var y = x;
  if (f32(y) < lo) { y = i32(lo); }
  if (f32(y) > hi) { y = i32(hi); }
  return y;
}
fn atan2_f(y: f32, x: f32) -> f32 {
  if (y == 0.0 && x == 0.0) {
    let pi = select(0.0, 3.141592653589793, (bitcast<u32>(x) >> 31u) == 1u);
    return select(pi, -pi, (bitcast<u32>(y) >> 31u) == 1u);
  }
  return atan2(y, x);
}
fn maximum_f(a: f32, b: f32) -> f32 { return select(select(max(a, b), b, isnan_f(b)), a, isnan_f(a)); }
fn minimum_f(a: f32, b: f32) -> f32 { return select(select(min(a, b), b, isnan_f(b)), a, isnan_f(a)); }
`;

const u = (name: string, code: number, dtypes: DTypeRule, f32: string, i32?: string, scalars?: string[]): ElementwiseOp =>
  ({ name, arity: 1, code, dtypes, wgsl: { f32, i32 }, scalars });
const b = (name: string, code: number, dtypes: DTypeRule, f32: string, i32?: string, scalars?: string[]): ElementwiseOp =>
  ({ name, arity: 2, code, dtypes, wgsl: { f32, i32 }, scalars });
/** Attaches a gradient rule and what it saves. */
const d = (op: ElementwiseOp, saves: ('x' | 'y' | 'out')[], grad: ElementwiseGrad): ElementwiseOp => ({ ...op, saves, grad });
/** Adds the int64 expression (see `wgsl.i64`). */
const wide = (i64: string, op: ElementwiseOp): ElementwiseOp => ({ ...op, wgsl: { ...op.wgsl, i64 } });
/** Lets a 'number' op take bool, returning `r`. */
const boolAs = (r: 'bool' | 'int64', op: ElementwiseOp): ElementwiseOp => ({ ...op, boolResult: r });
const zero: ElementwiseGrad = (m, { g }) => [m.zerosLike(g), m.zerosLike(g)];
const SQRT_2PI = Math.sqrt(2 * Math.PI), TWO_OVER_SQRT_PI = 2 / Math.sqrt(Math.PI), K_TANH = Math.sqrt(2 / Math.PI);
const I64_CMP: Record<string, string> = { '==': 'i64_eq(x0, x1)', '!=': '!i64_eq(x0, x1)', '<': 'i64_lt(x0, x1)', '<=': '!i64_lt(x1, x0)', '>': 'i64_lt(x1, x0)', '>=': '!i64_lt(x0, x1)' };
const cmp = (name: string, code: number, o: string, f32 = `x0 ${o} x1`): ElementwiseOp =>
  wide(`select(0i, 1i, ${I64_CMP[o]})`, b(name, code, 'bool', `select(0i, 1i, ${f32})`, `select(0i, 1i, x0 ${o} x1)`));
/** A bitwise op: the same operator on i32 and on int64's two words (wgsl/int64.ts: `vec2<u32>`). */
const bitwise = (name: string, code: number, o: string): ElementwiseOp => wide(`x0 ${o} x1`, b(name, code, 'integral', '', `x0 ${o} x1`));
const logic = (name: string, code: number, o: string): ElementwiseOp =>
  wide(`select(0i, 1i, i64_nz(x0) ${o} i64_nz(x1))`, b(name, code, 'bool', `select(0i, 1i, nz_f(x0) ${o} nz_f(x1))`, `select(0i, 1i, (x0 != 0i) ${o} (x1 != 0i))`));

/** Every elementwise op. */
export const ELEMENTWISE: readonly ElementwiseOp[] = [
  d(wide('i64_neg(x0)', u('neg', 0, 'number', '-x0', '-x0')), [], (m, { g }) => [m.neg(g)]),
  d(wide('i64_abs(x0)', u('abs', 1, 'number', 'abs(x0)', 'abs(x0)')), ['x'], (m, { x, g }) => [m.mul(g, m.sign(x))]),
  d(u('exp', 2, 'float', 'exp_f(x0)'), ['out'], (m, { out, g }) => [m.mul(g, out)]),
  d(u('expm1', 3, 'float', 'expm1_f(x0)'), ['out'], (m, { out, g }) => [m.mul(g, m.add(out, 1))]),
  d(u('log', 4, 'float', 'log_f(x0)'), ['x'], (m, { x, g }) => [m.div(g, x)]),
  d(u('log1p', 5, 'float', 'log1p_f(x0)'), ['x'], (m, { x, g }) => [m.div(g, m.add(x, 1))]),
  d(u('sqrt', 6, 'float', 'select(sqrt(x0), nan_f(), x0 < 0.0)'), ['out'], (m, { out, g }) => [m.div(g, m.mul(out, 2))]),
  d(u('rsqrt', 7, 'float', 'select(1.0 / sqrt(x0), nan_f(), x0 < 0.0)'), ['out'], (m, { out, g }) => [m.mul(g, m.mul(m.pow(out, 3), -0.5))]),
  d(u('sin', 8, 'float', 'sin_f(x0)'), ['x'], (m, { x, g }) => [m.mul(g, m.cos(x))]),
  d(u('cos', 9, 'float', 'cos_f(x0)'), ['x'], (m, { x, g }) => [m.neg(m.mul(g, m.sin(x)))]),
  d(u('tanh', 10, 'float', 'tanh_f(x0)'), ['out'], (m, { out, g }) => [m.mul(g, m.sub(1, m.square(out)))]),
  d(u('sigmoid', 11, 'float', 'sigmoid_f(x0)'), ['out'], (m, { out, g }) => [m.mul(g, m.mul(out, m.sub(1, out)))]),
  d(wide('i64_max(x0, vec2<u32>(0u, 0u))', u('relu', 12, 'number', 'relu_f(x0)', 'max(x0, 0i)')), ['out'], (m, { out, g }) => [m.mul(g, m.sign(out))]), // out ≥ 0: sign(out) is relu's slope (0 at 0 and at NaN), two float ops where gt made a bool to cast
  d(u('gelu', 13, 'floating', '0.5 * x0 * (1.0 + erf_f(x0 * 0.7071067811865476))'), ['x'], (m, { x, g }) => {
    const fused = m.geluBackward(g, x, false);
    if (fused) return [fused];
    const cdf = m.mul(m.add(m.erf(m.mul(x, Math.SQRT1_2)), 1), 0.5), pdf = m.div(m.exp(m.mul(m.square(x), -0.5)), SQRT_2PI);
    return [m.mul(g, m.add(cdf, m.mul(x, pdf)))];
  }),
  d(u('gelu_tanh', 14, 'floating', '0.5 * x0 * (1.0 + tanh_f(0.7978845608028654 * (x0 + 0.044715 * x0 * x0 * x0)))'), ['x'], (m, { x, g }) => {
    const fused = m.geluBackward(g, x, true);
    if (fused) return [fused];
    const x2 = m.square(x), t = m.tanh(m.mul(m.add(x, m.mul(m.mul(x2, x), 0.044715)), K_TANH));
    const dt = m.mul(m.mul(m.sub(1, m.square(t)), m.add(m.mul(x2, 3 * 0.044715), 1)), K_TANH);
    return [m.mul(g, m.add(m.mul(m.add(t, 1), 0.5), m.mul(m.mul(x, dt), 0.5)))];
  }),
  d(u('silu', 15, 'floating', 'x0 * sigmoid_f(x0)'), ['x'], (m, { x, g }) => {
    const sg = m.sigmoid(x);
    return [m.mul(g, m.mul(sg, m.add(m.mul(x, m.sub(1, sg)), 1)))];
  }),
  d(u('softplus', 16, 'floating', 'select(log1p_f(exp_f(s0 * x0)) / s0, x0, s0 * x0 > s1)', undefined, ['beta', 'threshold']), ['x'], (m, { x, g, s }) => {
    const z = m.mul(x, s[0]);
    return [m.mul(g, m.where(m.gt(z, s[1]), 1, m.sigmoid(z)))];
  }),
  d(u('erf', 17, 'float', 'erf_f(x0)'), ['x'], (m, { x, g }) => [m.mul(g, m.mul(m.exp(m.neg(m.square(x))), TWO_OVER_SQRT_PI))]),
  d(wide('x0', u('floor', 18, 'number', 'floor(x0)', 'x0')), [], zero),
  d(wide('x0', u('ceil', 19, 'number', 'ceil(x0)', 'x0')), [], zero),
  d(wide('x0', u('round', 20, 'number', 'round(x0)', 'x0')), [], zero),
  d(boolAs('bool', wide('i64_sign(x0)', u('sign', 21, 'number', 'select(sign(x0), 0.0, isnan_f(x0))', 'sign(x0)'))), [], zero),
  d(u('reciprocal', 22, 'float', '1.0 / x0'), ['out'], (m, { out, g }) => [m.neg(m.mul(g, m.square(out)))]),
  d(boolAs('int64', wide('clamp_i64(x0, s0, s1)', u('clamp', 23, 'number', 'clamp_f(x0, s0, s1)', 'clamp_i(x0, s0, s1)', ['min', 'max']))), ['x'], (m, { x, g, s }) => {
    let r = g;
    if (!Number.isNaN(s[0])) r = m.mul(r, m.ge(x, s[0]));
    if (!Number.isNaN(s[1])) r = m.mul(r, m.le(x, s[1]));
    return [r === g ? m.mul(g, 1) : r];
  }),
  d(u('nan_to_num', 24, 'float', 'select(select(select(x0, s2, x0 == -inf_f()), s1, x0 == inf_f()), s0, isnan_f(x0))', undefined, ['nan', 'posinf', 'neginf']), ['x'], (m, { x, g }) => [m.mul(g, m.lt(m.abs(x), Infinity))]),
  wide('select(0i, 1i, !i64_nz(x0))', u('logical_not', 25, 'bool', 'select(1i, 0i, nz_f(x0))', 'select(0i, 1i, x0 == 0i)')),
  wide('0i', u('isnan', 26, 'bool', 'select(0i, 1i, isnan_f(x0))', '0i')),
  d(boolAs('int64', wide('i64_mul(x0, x0)', u('square', 28, 'number', 'x0 * x0', 'x0 * x0'))), ['x'], (m, { x, g }) => [m.mul(g, m.mul(x, 2))]),
  d(wide('x0', u('trunc', 30, 'number', 'trunc(x0)', 'x0')), [], zero),
  d(wide('i64_add(x0, i64_mul(i64_from_i32(i32(s0)), x1))', b('add', 0, 'any', 'x0 + s0 * x1', 'x0 + i32(s0) * x1', ['alpha'])), [], (m, { g, s }) => [g, s[0] === 1 ? g : m.mul(g, s[0])]),
  d(wide('i64_sub(x0, i64_mul(i64_from_i32(i32(s0)), x1))', b('sub', 1, 'number', 'x0 - s0 * x1', 'x0 - i32(s0) * x1', ['alpha'])), [], (m, { g, s }) => [g, m.mul(g, -s[0])]),
  d(wide('i64_mul(x0, x1)', b('mul', 2, 'any', 'x0 * x1', 'x0 * x1')), ['x', 'y'], (m, { x, y, g }) => [m.mul(g, y), m.mul(g, x)]),
  { ...d(b('div', 3, 'float', 'x0 / x1'), ['y', 'out'], (m, { y, out, g, need }) => [need[0] ? m.div(g, y) : null, need[1] ? m.neg(m.div(m.mul(g, out), y)) : null]), savesFor: { x: ['y'], y: ['y', 'out'] } },
  d(wide('i64_floordiv(x0, divisor_i64(x1))', b('floor_divide', 4, 'number', 'floordiv_f(x0, x1)', 'floordiv_i(x0, divisor_i(x1))')), [], zero),
  d(wide('i64_truncdiv(x0, divisor_i64(x1))', b('trunc_divide', 5, 'number', 'trunc(x0 / x1)', 'select(x0 / divisor_i(x1), 0i, x1 == 0i)')), [], zero),
  d(wide('i64_pow(x0, x1)', b('pow', 6, 'number', 'pow_f(x0, x1)', 'pow_i(x0, x1)')), ['x', 'y', 'out'], (m, { x, y, out, g }) => [
    m.mul(g, m.mul(y, m.pow(x, m.sub(y, 1)))),
    m.mul(g, m.where(m.mul(m.eq(x, 0), m.ge(y, 0)), 0, m.mul(out, m.log(x)))),
  ]),
  d(wide('i64_max(x0, x1)', b('maximum', 7, 'any', 'maximum_f(x0, x1)', 'max(x0, x1)')), ['x', 'y'], (m, { x, y, g }) => {
    const half = m.mul(m.mul(g, m.eq(x, y)), 0.5);
    return [m.add(m.mul(g, m.gt(x, y)), half), m.add(m.mul(g, m.lt(x, y)), half)];
  }),
  d(wide('i64_min(x0, x1)', b('minimum', 8, 'any', 'minimum_f(x0, x1)', 'min(x0, x1)')), ['x', 'y'], (m, { x, y, g }) => {
    const half = m.mul(m.mul(g, m.eq(x, y)), 0.5);
    return [m.add(m.mul(g, m.lt(x, y)), half), m.add(m.mul(g, m.gt(x, y)), half)];
  }),
  d(wide('i64_rem(x0, divisor_i64(x1))', b('remainder', 9, 'number', 'rem_f(x0, x1)', 'rem_i(x0, divisor_i(x1))')), ['x', 'y'], (m, { x, y, g }) => [m.mul(g, 1), m.neg(m.mul(g, m.floorDivide(x, y)))]),
  d(b('atan2', 10, 'float', 'atan2_f(x0, x1)'), ['x', 'y'], (m, { x, y, g }) => {
    const r = m.add(m.square(x), m.square(y));
    return [m.div(m.mul(g, y), r), m.neg(m.div(m.mul(g, x), r))];
  }),
  cmp('eq', 11, '==', 'x0 == x1 && !isnan_f(x0)'),
  cmp('ne', 12, '!=', 'x0 != x1 || isnan_f(x0) || isnan_f(x1)'),
  cmp('lt', 13, '<'),
  cmp('le', 14, '<='),
  cmp('gt', 15, '>'),
  cmp('ge', 16, '>='),
  logic('logical_and', 17, '&&'),
  logic('logical_or', 18, '||'),
  logic('logical_xor', 19, '!='),
  bitwise('bitwise_and', 20, '&'),
  bitwise('bitwise_or', 21, '|'),
  bitwise('bitwise_xor', 22, '^'),
  { ...wide('~x0', u('bitwise_not', 33, 'integral', '', '~x0')), onBool: 'logical_not' },
  // gelu's gradients (g, x) as one kernel each, PyTorch's gelu_backward; gelu's rules use them
  // (ts/ops/elementwise.ts `geluBackward`), and `torch._geluBackward` reaches them. Not
  // differentiable: under createGraph gelu's rule composes its gradient instead.
  b('gelu_backward', 23, 'floating', 'gelu_grad_f(x0, x1)'),
  b('gelu_tanh_backward', 24, 'floating', 'gelu_tanh_grad_f(x0, x1)'),
];

const BY_NAME = new Map(ELEMENTWISE.map((o) => [o.name, o]));

/** Looks an op up by name. */
export function elementwiseOp(name: string): ElementwiseOp {
  const op = BY_NAME.get(name);
  if (!op) throw new Error(`webtorch: unknown op ${name}`);
  return op;
}
