/**
 * Philox4x32-10 random numbers written into a tensor's storage (the `random` command).
 *
 * The reference is `ts/random.ts`; the AssemblyScript kernel (`assembly/kernels/random.ts`) is
 * its twin, and the three agree bit for bit. One invocation makes one Philox block (4 words)
 * and writes the elements of the draw that fall in it: element e of a draw takes word e % 4 of
 * the block at counter (c0, c1, c2, c3) + ⌊e / 4⌋, so a chunk starting at element `first` (a
 * tensor larger than one binding, ts/worker/split.ts) gives the same numbers as the whole draw.
 *
 * The hard part is bit-exactness of the normals: WGSL's `log`, `sin`, `cos` and `sqrt` are
 * approximate and differ between drivers, so the kernel uses only f32 add, subtract and
 * multiply, which WGSL rounds correctly, in a fixed order. Shader compilers may still fuse a
 * multiply and an add into an FMA or reassociate constants (Mesa's NIR does both for
 * "inexact" operations), so every float step goes through `B`, an XOR with a zero read from the
 * params: the compiler cannot see through it, so each step is rounded on its own.
 */
import { Dist } from '../ts/ir/ops.js';

/** Words of the kernel's params: n, output offset, first, dist, key (2), counter (4), a, b, zero. */
export const RANDOM_PARAM_WORDS = 13;
/** Invocations per workgroup. */
export const RANDOM_WG = 64;

/** The number of invocations (Philox blocks) that elements [first, first + n) span. */
export const randomBlocks = (first: number, n: number): number => Math.floor((first + n - 1) / 4) - Math.floor(first / 4) + 1;

/** The `random` kernel over one output binding (binding 1, element offsets in 32-bit words). */
export function randomShader(): string {
  return `@group(0) @binding(0) var<storage, read> P: array<u32>;
@group(0) @binding(1) var<storage, read_write> S0: array<u32>;
var<private> Z: u32;
// one rounded f32 step: the XOR with a zero the compiler cannot know keeps it from fusing or reordering steps
fn B(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) ^ Z); }
fn mul(a: f32, b: f32) -> f32 { return B(a * b); }
fn add(a: f32, b: f32) -> f32 { return B(a + b); }
fn sub(a: f32, b: f32) -> f32 { return B(a - b); }
fn bf(b: u32) -> f32 { return bitcast<f32>(b); }
fn mulhi(a: u32, b: u32) -> u32 {
  let al = a & 0xffffu; let ah = a >> 16u; let bl = b & 0xffffu; let bh = b >> 16u;
  let ll = al * bl; let lh = al * bh; let hl = ah * bl;
  let cross = (ll >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
  return ah * bh + (lh >> 16u) + (hl >> 16u) + (cross >> 16u);
}
fn minusTwoLog(w: u32) -> f32 {
  let j = 0x1000000u - (w >> 8u);
  var e = firstLeadingBit(j);
  var m = mul(f32(j), bf((127u - e) << 23u));
  if (m > bf(0x3fb504f3u)) { m = mul(m, 0.5); e = e + 1u; }
  let z = sub(m, 1.0);
  let z2 = mul(z, z);
  var p = bf(0x3d9021bbu);
  p = add(mul(p, z), bf(0xbdebd1b8u));
  p = add(mul(p, z), bf(0x3def251au));
  p = add(mul(p, z), bf(0xbdfe5d4fu));
  p = add(mul(p, z), bf(0x3e11e9bfu));
  p = add(mul(p, z), bf(0xbe2aae50u));
  p = add(mul(p, z), bf(0x3e4cceacu));
  p = add(mul(p, z), bf(0xbe7ffffcu));
  p = add(mul(p, z), bf(0x3eaaaaaau));
  let y = sub(mul(mul(z, z2), p), mul(0.5, z2));
  let lnm = add(z, y);
  let q = f32(24u - e);
  return mul(2.0, add(sub(mul(q, bf(0xb95e8083u)), lnm), mul(q, bf(0x3f318000u))));
}
fn sqrtF(x: f32) -> f32 {
  if (x == 0.0) { return 0.0; }
  let h = mul(0.5, x);
  var y = bf(0x5f3759dfu - (bitcast<u32>(x) >> 1u));
  for (var i = 0; i < 3; i++) { y = mul(y, sub(1.5, mul(mul(h, y), y))); }
  return mul(x, y);
}
// the standard normals of a word pair (Box-Muller): (r cos theta, r sin theta)
fn normalPair(w0: u32, w1: u32) -> vec2<f32> {
  let r = sqrtF(minusTwoLog(w0));
  let k = w1 >> 8u; let o = k >> 21u; let odd = (o & 1u) == 1u; let rr = k & 0x1fffffu;
  let a = mul(mul(f32(select(rr, 0x200000u - rr, odd)), bf(0x35000000u)), bf(0x3f490fdbu));
  let z = mul(a, a);
  var s = mul(mul(add(mul(add(mul(bf(0xb94ca1f9u), z), bf(0x3c08839eu)), z), bf(0xbe2aaaa3u)), z), a);
  s = add(s, a);
  let pc = add(mul(add(mul(bf(0x37ccf5ceu), z), bf(0xbab6061au)), z), bf(0x3d2aaaa5u));
  let c = add(sub(mul(mul(pc, z), z), mul(0.5, z)), 1.0);
  if (odd) { s = -s; }
  switch (((o + 1u) >> 1u) & 3u) {
    case 0u: { return vec2<f32>(mul(r, c), mul(r, s)); }
    case 1u: { return vec2<f32>(mul(r, -s), mul(r, c)); }
    case 2u: { return vec2<f32>(mul(r, -c), mul(r, -s)); }
    default: { return vec2<f32>(mul(r, s), mul(r, -c)); }
  }
}
fn philox(c: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
  var x = c; var k = key;
  for (var r = 0; r < 10; r++) {
    let h0 = mulhi(0xd2511f53u, x.x); let l0 = 0xd2511f53u * x.x;
    let h1 = mulhi(0xcd9e8d57u, x.z); let l1 = 0xcd9e8d57u * x.z;
    x = vec4<u32>(h1 ^ x.y ^ k.x, l1, h0 ^ x.w ^ k.y, l0);
    k = k + vec2<u32>(0x9e3779b9u, 0xbb67ae85u);
  }
  return x;
}
@compute @workgroup_size(${RANDOM_WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  Z = P[12];
  let n = P[0]; let first = P[2]; let dist = P[3];
  let j = (wid.y * nwg.x + wid.x) * ${RANDOM_WG}u + li;
  let blk = (first >> 2u) + j;
  if (blk > ((first + n - 1u) >> 2u)) { return; }
  let c0 = P[6] + blk;
  let c1 = P[7] + select(0u, 1u, c0 < blk);
  let c2 = P[8] + select(0u, 1u, c1 < P[7] || (c1 == P[7] && c0 < blk));
  let c3 = P[9] + select(0u, 1u, c2 < P[8]);
  let w = philox(vec4<u32>(c0, c1, c2, c3), vec2<u32>(P[4], P[5]));
  let a = P[10]; let b = P[11];
  var v = w;
  if (dist == ${Dist.Uniform}u) {
    for (var l = 0u; l < 4u; l++) { v[l] = bitcast<u32>(add(mul(mul(f32(w[l] >> 8u), bf(0x33800000u)), bf(b)), bf(a))); }
  } else if (dist == ${Dist.Normal}u) {
    let z01 = normalPair(w.x, w.y); let z23 = normalPair(w.z, w.w);
    let z = vec4<f32>(z01.x, z01.y, z23.x, z23.y);
    for (var l = 0u; l < 4u; l++) { v[l] = bitcast<u32>(add(mul(z[l], bf(b)), bf(a))); }
  } else if (dist == ${Dist.Int}u) {
    for (var l = 0u; l < 4u; l++) { v[l] = a + select(mulhi(w[l], b), w[l], b == 0u); }
  } else if (dist == ${Dist.Bernoulli}u) {
    for (var l = 0u; l < 4u; l++) { v[l] = select(0u, b, mul(f32(w[l] >> 8u), bf(0x33800000u)) < bf(a)); }
  }
  for (var l = 0u; l < 4u; l++) {
    let e = blk * 4u + l;
    if (e >= first && e - first < n) { S0[P[1] + e - first] = v[l]; }
  }
}
`;
}
