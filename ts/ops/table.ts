/**
 * The op table: each elementwise op is described once, and the API (`ts/ops/elementwise.ts`),
 * both kernel families (the WGSL expression here, the AssemblyScript kernel by `code`) and the
 * tests (`test/backend`, which requires a PyTorch golden for every row) come from it.
 *
 * `code` is the op's number in the AssemblyScript kernels (`assembly/kernels`); the WGSL
 * expressions read inputs `x0`, `x1` and scalars `s0..s3`, in the compute type named by the key.
 *
 * dtype rules (`dtypes`):
 * - 'float': integer and bool inputs are promoted to float32 first (torch.exp(int) is float);
 * - 'any': computes in the promoted dtype, bool included;
 * - 'number': like 'any' but bool is refused (torch.neg(bool) raises);
 * - 'bool': the result is bool, computed in the promoted dtype (comparisons, logical ops).
 */

/** How an op treats dtypes. */
export type DTypeRule = 'float' | 'any' | 'number' | 'bool';

/** One elementwise op. */
export interface ElementwiseOp {
  name: string;
  arity: 1 | 2;
  code: number;
  dtypes: DTypeRule;
  wgsl: { f32: string; i32?: string };
  /** Names of the op's scalar options, in `s0..` order (e.g. clamp's min and max). */
  scalars?: string[];
}


/**
 * WGSL functions the expressions call. NaN and Inf live in private vars: WGSL refuses them as
 * constants. Shader compilers may assume finite math and fold `x != x` to false, so NaN and
 * "nonzero" tests look at the bits instead.
 */
export const WGSL_PRELUDE = `
var<private> NAN_BITS: u32 = 0x7fc00000u;
var<private> INF_BITS: u32 = 0x7f800000u;
fn nan_f() -> f32 { return bitcast<f32>(NAN_BITS); }
fn inf_f() -> f32 { return bitcast<f32>(INF_BITS); }
fn isnan_f(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn nz_f(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) != 0u; }
fn erf_f(x: f32) -> f32 {
  let a = abs(x);
  if (a < 2.0) {
    var term = x; var sum = x; let x2 = x * x;
    for (var n = 1; n < 30; n++) { term = -term * x2 / f32(n); sum += term / f32(2 * n + 1); }
    return sum * 1.1283791670955126;
  }
  let t = 1.0 / (1.0 + 0.3275911 * a);
  let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp(-a * a);
  return select(y, -y, x < 0.0);
}
fn log_f(x: f32) -> f32 { return select(log(x), nan_f(), x < 0.0); }
fn log1p_f(x: f32) -> f32 {
  let u = 1.0 + x;
  if (u == 1.0) { return x; }
  if (x > 1e30) { return log(x); }
  return select(log(u) * x / (u - 1.0), nan_f(), x < -1.0);
}
fn expm1_f(x: f32) -> f32 {
  if (abs(x) < 0.01) { return x + x * x * (0.5 + x * (1.0 / 6.0 + x / 24.0)); }
  return exp(x) - 1.0;
}
fn tanh_f(x: f32) -> f32 { return select(tanh(clamp(x, -15.0, 15.0)), x, isnan_f(x)); }
fn sigmoid_f(x: f32) -> f32 { return 1.0 / (1.0 + exp(-x)); }
fn pow_f(a: f32, b: f32) -> f32 {
  if (b == 0.0) { return 1.0; }
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
fn maximum_f(a: f32, b: f32) -> f32 { return select(select(max(a, b), b, isnan_f(b)), a, isnan_f(a)); }
fn minimum_f(a: f32, b: f32) -> f32 { return select(select(min(a, b), b, isnan_f(b)), a, isnan_f(a)); }
`;

const u = (name: string, code: number, dtypes: DTypeRule, f32: string, i32?: string, scalars?: string[]): ElementwiseOp =>
  ({ name, arity: 1, code, dtypes, wgsl: { f32, i32 }, scalars });
const b = (name: string, code: number, dtypes: DTypeRule, f32: string, i32?: string, scalars?: string[]): ElementwiseOp =>
  ({ name, arity: 2, code, dtypes, wgsl: { f32, i32 }, scalars });
const cmp = (name: string, code: number, o: string, f32 = `x0 ${o} x1`): ElementwiseOp => b(name, code, 'bool', `select(0i, 1i, ${f32})`, `select(0i, 1i, x0 ${o} x1)`);
const logic = (name: string, code: number, o: string): ElementwiseOp =>
  b(name, code, 'bool', `select(0i, 1i, nz_f(x0) ${o} nz_f(x1))`, `select(0i, 1i, (x0 != 0i) ${o} (x1 != 0i))`);

/** Every elementwise op. */
export const ELEMENTWISE: readonly ElementwiseOp[] = [
  u('neg', 0, 'number', '-x0', '-x0'),
  u('abs', 1, 'number', 'abs(x0)', 'abs(x0)'),
  u('exp', 2, 'float', 'exp(x0)'),
  u('expm1', 3, 'float', 'expm1_f(x0)'),
  u('log', 4, 'float', 'log_f(x0)'),
  u('log1p', 5, 'float', 'log1p_f(x0)'),
  u('sqrt', 6, 'float', 'select(sqrt(x0), nan_f(), x0 < 0.0)'),
  u('rsqrt', 7, 'float', 'select(1.0 / sqrt(x0), nan_f(), x0 < 0.0)'),
  u('sin', 8, 'float', 'sin(x0)'),
  u('cos', 9, 'float', 'cos(x0)'),
  u('tanh', 10, 'float', 'tanh_f(x0)'),
  u('sigmoid', 11, 'float', 'sigmoid_f(x0)'),
  u('relu', 12, 'number', 'select(x0, 0.0, x0 < 0.0)', 'max(x0, 0i)'),
  u('gelu', 13, 'float', '0.5 * x0 * (1.0 + erf_f(x0 * 0.7071067811865476))'),
  u('gelu_tanh', 14, 'float', '0.5 * x0 * (1.0 + tanh_f(0.7978845608028654 * (x0 + 0.044715 * x0 * x0 * x0)))'),
  u('silu', 15, 'float', 'x0 * sigmoid_f(x0)'),
  u('softplus', 16, 'float', 'select(log1p_f(exp(s0 * x0)) / s0, x0, s0 * x0 > s1)', undefined, ['beta', 'threshold']),
  u('erf', 17, 'float', 'erf_f(x0)'),
  u('floor', 18, 'number', 'floor(x0)', 'x0'),
  u('ceil', 19, 'number', 'ceil(x0)', 'x0'),
  u('round', 20, 'number', 'round(x0)', 'x0'),
  u('sign', 21, 'number', 'select(sign(x0), 0.0, isnan_f(x0))', 'sign(x0)'),
  u('reciprocal', 22, 'float', '1.0 / x0'),
  u('clamp', 23, 'number', 'select(select(x0, s0, x0 < s0), s1, x0 > s1)', 'select(select(x0, i32(s0), f32(x0) < s0), i32(s1), f32(x0) > s1)', ['min', 'max']),
  u('nan_to_num', 24, 'float', 'select(select(select(x0, s2, x0 == -inf_f()), s1, x0 == inf_f()), s0, isnan_f(x0))', undefined, ['nan', 'posinf', 'neginf']),
  u('logical_not', 25, 'bool', 'select(1i, 0i, nz_f(x0))', 'select(0i, 1i, x0 == 0i)'),
  u('isnan', 26, 'bool', 'select(0i, 1i, isnan_f(x0))', '0i'),
  u('square', 28, 'number', 'x0 * x0', 'x0 * x0'),
  u('trunc', 30, 'number', 'trunc(x0)', 'x0'),
  b('add', 0, 'any', 'x0 + s0 * x1', 'x0 + i32(s0) * x1', ['alpha']),
  b('sub', 1, 'number', 'x0 - s0 * x1', 'x0 - i32(s0) * x1', ['alpha']),
  b('mul', 2, 'any', 'x0 * x1', 'x0 * x1'),
  b('div', 3, 'float', 'x0 / x1'),
  b('floor_divide', 4, 'number', 'floor(x0 / x1)', 'floordiv_i(x0, x1)'),
  b('trunc_divide', 5, 'number', 'trunc(x0 / x1)', 'select(x0 / x1, 0i, x1 == 0i)'),
  b('pow', 6, 'number', 'pow_f(x0, x1)', 'pow_i(x0, x1)'),
  b('maximum', 7, 'any', 'maximum_f(x0, x1)', 'max(x0, x1)'),
  b('minimum', 8, 'any', 'minimum_f(x0, x1)', 'min(x0, x1)'),
  b('remainder', 9, 'number', 'rem_f(x0, x1)', 'rem_i(x0, x1)'),
  b('atan2', 10, 'float', 'atan2(x0, x1)'),
  cmp('eq', 11, '==', 'x0 == x1 && !isnan_f(x0)'),
  cmp('ne', 12, '!=', 'x0 != x1 || isnan_f(x0) || isnan_f(x1)'),
  cmp('lt', 13, '<'),
  cmp('le', 14, '<='),
  cmp('gt', 15, '>'),
  cmp('ge', 16, '>='),
  logic('logical_and', 17, '&&'),
  logic('logical_or', 18, '||'),
  logic('logical_xor', 19, '!='),
];

/** Looks an op up by name. */
export function elementwiseOp(name: string): ElementwiseOp {
  const op = ELEMENTWISE.find((o) => o.name === name);
  if (!op) throw new Error(`webtorch: unknown op ${name}`);
  return op;
}
