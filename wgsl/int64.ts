/**
 * int64 in WGSL, which has no 64-bit integers: an element is two u32 words of its storage
 * (low word first) and a value is a `vec2<u32>` (lo, hi) in two's complement.
 *
 * The hard parts are the ones a 32-bit ALU does not give for free: the carry of an add, the
 * high half of a 32×32 product (four 16-bit partial products), division (a 64-step shift and
 * subtract, taken only when an operand leaves 32 bits), and the conversions to and from f32,
 * which must round to nearest even (int64 → f32) and truncate (f32 → int64) exactly as
 * PyTorch's CPU does: a two-step `f32(hi) * 2^32 + f32(lo)` would round twice.
 *
 * `I64_PRELUDE` is added to every kernel that computes in int64 (map kernels, the 64-bit
 * reduction, the cumulative kernel); gather, scatter and sort move or compare the two words
 * themselves (wgsl/index.ts). The checks of `i64Checks` record a device-side error through the
 * kernel's `fail` (wgsl/index.ts): they exist only where the kernel binds the error buffer.
 */
import type { ReduceOp as ReduceOpT } from '../ts/ir/ops.js';

/** The pure int64 helpers (no bindings needed). */
export const I64_PRELUDE = `
struct DivMod64 { q: vec2<u32>, r: vec2<u32> }
fn i64_from_i32(v: i32) -> vec2<u32> { return vec2<u32>(bitcast<u32>(v), select(0u, 0xffffffffu, v < 0i)); }
fn i64_fits32(a: vec2<u32>) -> bool { return a.y == select(0u, 0xffffffffu, bitcast<i32>(a.x) < 0i); }
fn i64_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let lo = a.x + b.x;
  return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
fn i64_neg(a: vec2<u32>) -> vec2<u32> { return i64_add(~a, vec2<u32>(1u, 0u)); }
fn i64_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { return i64_add(a, i64_neg(b)); }
fn u32_mul_wide(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu; let a1 = a >> 16u; let b0 = b & 0xffffu; let b1 = b >> 16u;
  let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0; let p11 = a1 * b1;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2<u32>((p00 & 0xffffu) | (mid << 16u), p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}
fn i64_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let p = u32_mul_wide(a.x, b.x);
  return vec2<u32>(p.x, p.y + a.x * b.y + a.y * b.x);
}
fn i64_isneg(a: vec2<u32>) -> bool { return bitcast<i32>(a.y) < 0i; }
fn i64_nz(a: vec2<u32>) -> bool { return (a.x | a.y) != 0u; }
fn i64_eq(a: vec2<u32>, b: vec2<u32>) -> bool { return a.x == b.x && a.y == b.y; }
fn i64_lt(a: vec2<u32>, b: vec2<u32>) -> bool {
  let ah = bitcast<i32>(a.y); let bh = bitcast<i32>(b.y);
  return ah < bh || (ah == bh && a.x < b.x);
}
fn u64_lt(a: vec2<u32>, b: vec2<u32>) -> bool { return a.y < b.y || (a.y == b.y && a.x < b.x); }
fn i64_abs(a: vec2<u32>) -> vec2<u32> { return select(a, i64_neg(a), i64_isneg(a)); }
fn i64_max(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { return select(a, b, i64_lt(a, b)); }
fn i64_min(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { return select(a, b, i64_lt(b, a)); }
fn i64_sign(a: vec2<u32>) -> vec2<u32> { return i64_from_i32(select(select(0i, 1i, i64_nz(a)), -1i, i64_isneg(a))); }
fn u64_divmod(n: vec2<u32>, d: vec2<u32>) -> DivMod64 {
  if (n.y == 0u && d.y == 0u) { return DivMod64(vec2<u32>(n.x / d.x, 0u), vec2<u32>(n.x % d.x, 0u)); }
  var q = vec2<u32>(0u, 0u);
  var r = vec2<u32>(0u, 0u);
  for (var i = 63u; ; i--) {
    r = vec2<u32>(r.x << 1u, (r.y << 1u) | (r.x >> 31u));
    if (i >= 32u) { r.x |= (n.y >> (i - 32u)) & 1u; } else { r.x |= (n.x >> i) & 1u; }
    if (!u64_lt(r, d)) {
      r = i64_sub(r, d);
      if (i >= 32u) { q.y |= 1u << (i - 32u); } else { q.x |= 1u << i; }
    }
    if (i == 0u) { break; }
  }
  return DivMod64(q, r);
}
fn i64_divmod_t(a: vec2<u32>, b: vec2<u32>) -> DivMod64 {
  if (!i64_nz(b)) { return DivMod64(vec2<u32>(0u, 0u), vec2<u32>(0u, 0u)); }
  let m = u64_divmod(i64_abs(a), i64_abs(b));
  return DivMod64(select(m.q, i64_neg(m.q), i64_isneg(a) != i64_isneg(b)), select(m.r, i64_neg(m.r), i64_isneg(a)));
}
fn i64_truncdiv(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { return i64_divmod_t(a, b).q; }
fn i64_floordiv(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let t = i64_divmod_t(a, b);
  return select(t.q, i64_sub(t.q, vec2<u32>(1u, 0u)), i64_nz(t.r) && i64_isneg(t.r) != i64_isneg(b));
}
fn i64_rem(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let r = i64_divmod_t(a, b).r;
  return select(r, i64_add(r, b), i64_nz(r) && i64_isneg(r) != i64_isneg(b));
}
fn i64_pow(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  if (i64_isneg(b)) {
    let one = i64_eq(a, vec2<u32>(1u, 0u));
    let mone = i64_eq(a, vec2<u32>(0xffffffffu, 0xffffffffu));
    return select(select(vec2<u32>(0u, 0u), vec2<u32>(1u, 0u), one), select(vec2<u32>(0xffffffffu, 0xffffffffu), vec2<u32>(1u, 0u), (b.x & 1u) == 0u), mone);
  }
  var r = vec2<u32>(1u, 0u);
  var base = a;
  var e = b;
  loop {
    if (!i64_nz(e)) { break; }
    if ((e.x & 1u) == 1u) { r = i64_mul(r, base); }
    base = i64_mul(base, base);
    e = vec2<u32>((e.x >> 1u) | (e.y << 31u), e.y >> 1u);
  }
  return r;
}
fn i64_to_f32(a: vec2<u32>) -> f32 {
  let neg = i64_isneg(a);
  let m = select(a, i64_neg(a), neg);
  if (m.y == 0u && m.x < 0x1000000u) { let f = f32(m.x); return select(f, -f, neg); }
  let lz = select(countLeadingZeros(m.y), 32u + countLeadingZeros(m.x), m.y == 0u);
  var hi = m.y; var lo = m.x;
  if (lz >= 32u) { hi = m.x << (lz - 32u); lo = 0u; }
  else if (lz > 0u) { hi = (m.y << lz) | (m.x >> (32u - lz)); lo = m.x << lz; }
  var mant = hi >> 8u;
  let rest = hi & 0xffu;
  if (rest > 0x80u || (rest == 0x80u && (lo != 0u || (mant & 1u) == 1u))) { mant += 1u; }
  var e = 63u - lz;
  if (mant == 0x1000000u) { mant = mant >> 1u; e += 1u; }
  let f = bitcast<f32>(((e + 127u) << 23u) | (mant & 0x7fffffu));
  return select(f, -f, neg);
}
fn f32_to_i64(x: f32) -> vec2<u32> {
  let b = bitcast<u32>(x);
  let e = i32((b >> 23u) & 0xffu) - 127i;
  if (e < 0i) { return vec2<u32>(0u, 0u); }
  if (e >= 63i) { return vec2<u32>(0u, 0x80000000u); }
  let m = (b & 0x7fffffu) | 0x800000u;
  var r = vec2<u32>(0u, 0u);
  if (e <= 23i) { r = vec2<u32>(m >> u32(23i - e), 0u); }
  else {
    let s = u32(e - 23i);
    if (s >= 32u) { r = vec2<u32>(0u, m << (s - 32u)); } else { r = vec2<u32>(m << s, m >> (32u - s)); }
  }
  return select(r, i64_neg(r), (b >> 31u) == 1u);
}
fn clamp_i64(x: vec2<u32>, lo: f32, hi: f32) -> vec2<u32> {
  var y = x;
  if ((bitcast<u32>(lo) & 0x7fffffffu) <= 0x7f800000u) { let l = f32_to_i64(ceil(lo)); if (i64_lt(y, l)) { y = l; } }
  if ((bitcast<u32>(hi) & 0x7fffffffu) <= 0x7f800000u) { let h = f32_to_i64(floor(hi)); if (i64_lt(h, y)) { y = h; } }
  return y;
}
`;

/**
 * The checking helpers: `divisor_i64` (a zero divisor records code word `codeWord`),
 * `f2i64_ck` (a float -> int64 cast of NaN, ±Inf or a value outside [-2^63, 2^63) records the
 * next one) and `narrow_ck` (an int64 read into 32-bit arithmetic must fit it).
 */
export function i64Checks(codeWord: string, overflowWord: string): string {
  return `fn divisor_i64(b: vec2<u32>) -> vec2<u32> {
  if (!i64_nz(b)) { fail(${codeWord}, 0i); }
  return b;
}
fn f2i64_ck(x: f32) -> vec2<u32> {
  let b = bitcast<u32>(x);
  if (((b >> 23u) & 0xffu) >= 190u && b != 0xdf000000u) { fail(${overflowWord}, 0i); }
  return f32_to_i64(x);
}
fn narrow_ck(v: vec2<u32>) -> i32 {
  if (!i64_fits32(v)) { fail(${overflowWord}, 0i); }
  return bitcast<i32>(v.x);
}
`;
}

/** An expression loading int64 element `e` through reader `read` as a `vec2<u32>`. */
export const loadI64 = (read: string, e: string): string => `ld64_${read}(${e})`;

/** `fn ld64_<read>(e)`: int64 element `e` through reader `read` (one offset computation for both words). */
export const loadI64Fn = (read: string): string => `fn ld64_${read}(e: u32) -> vec2<u32> { return vec2<u32>(${read}(2u * e), ${read}(2u * e + 1u)); }\n`;

/**
 * The 64-bit reduction (one workgroup of `wg` invocations per row, a tree in workgroup memory)
 * over a contiguous [outer, inner] block of an integer dtype: sum, prod, max and min write an
 * int64 (two words at element P[3] + row), argmax/argmin the i32 index, all/any 0 or 1 (one word
 * each; the worker widens or packs those). `elem` loads element `k` of the row as a vec2<u32>.
 * Params: [outer, inner, input offset, output offset].
 */
export function reduce64Body(op: ReduceOpT, elem: (k: string) => string, wg: number): { decls: string; body: string } {
  const ARG = op === 4 || op === 5, LOGIC = op === 6 || op === 7;
  const comb = ({ 0: 'i64_add(a, b)', 1: 'i64_mul(a, b)', 2: 'i64_max(a, b)', 3: 'i64_min(a, b)', 6: 'select(vec2<u32>(0u, 0u), vec2<u32>(1u, 0u), i64_nz(a) && i64_nz(b))', 7: 'select(vec2<u32>(0u, 0u), vec2<u32>(1u, 0u), i64_nz(a) || i64_nz(b))' } as Record<number, string>)[op];
  const init = op === 1 || op === 6 ? 'vec2<u32>(1u, 0u)' : op === 2 || op === 3 ? elem('0u') : 'vec2<u32>(0u, 0u)';
  const better = `fn better(va: vec2<u32>, ia: i32, vb: vec2<u32>, ib: i32) -> bool { return ${op === 4 ? 'i64_lt(vb, va)' : 'i64_lt(va, vb)'} || (i64_eq(va, vb) && ia < ib); }\n`;
  if (ARG) {
    return {
      decls: `var<workgroup> SV: array<vec2<u32>, ${wg}>;\nvar<workgroup> SI: array<i32, ${wg}>;\n${better}`,
      body: `  var acc = ${elem('0u')};
  var idx = 0i;
  if (li < inner) { acc = ${elem('li')}; idx = i32(li); }
  for (var k = li + ${wg}u; k < inner; k += ${wg}u) {
    let x = ${elem('k')};
    if (better(x, i32(k), acc, idx)) { acc = x; idx = i32(k); }
  }
  SV[li] = acc; SI[li] = idx;
  workgroupBarrier();
  for (var s = ${wg / 2}u; s > 0u; s = s >> 1u) {
    if (li < s && better(SV[li + s], SI[li + s], SV[li], SI[li])) { SV[li] = SV[li + s]; SI[li] = SI[li + s]; }
    workgroupBarrier();
  }
  if (li == 0u) { S0[P[3] + row] = bitcast<u32>(SI[0]); }`,
    };
  }
  const store = LOGIC ? `S0[P[3] + row] = SV[0].x;` : `S0[2u * (P[3] + row)] = SV[0].x; S0[2u * (P[3] + row) + 1u] = SV[0].y;`;
  return {
    decls: `var<workgroup> SV: array<vec2<u32>, ${wg}>;\n`,
    body: `  var acc = ${init};
  for (var k = li; k < inner; k += ${wg}u) {
    let a = acc;
    let b = ${LOGIC ? `select(vec2<u32>(0u, 0u), vec2<u32>(1u, 0u), i64_nz(${elem('k')}))` : elem('k')};
    acc = ${comb};
  }
  SV[li] = acc;
  workgroupBarrier();
  for (var s = ${wg / 2}u; s > 0u; s = s >> 1u) {
    if (li < s) { let a = SV[li]; let b = SV[li + s]; SV[li] = ${comb}; }
    workgroupBarrier();
  }
  if (li == 0u) { ${store} }`,
  };
}
