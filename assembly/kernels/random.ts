// Philox4x32-10 random numbers written straight into a tensor's storage.
//
// The reference is ts/random.ts: element e of a draw takes word e % 4 of the
// block at counter (c0, c1, c2, c3) + floor(e / 4), so a chunk starting at
// element `first` gives the same numbers as the whole draw. Every float step
// is one f32 add, subtract or multiply, which WebAssembly rounds exactly as
// the TypeScript reference (Math.fround) and the WGSL kernel do; the constants
// are given by their bits so no decimal parsing can differ.

/** Distributions: raw words, uniform, normal, integers, Bernoulli. */
const BITS: i32 = 0;
const UNIFORM: i32 = 1;
const NORMAL: i32 = 2;
const INT: i32 = 3;
const BERNOULLI: i32 = 4;

// @ts-ignore: decorator
@inline function mulhi(a: u32, b: u32): u32 {
  return <u32>((<u64>a * <u64>b) >> 32);
}

// @ts-ignore: decorator
@inline function bf(bits: u32): f32 {
  return reinterpret<f32>(bits);
}

/** -2 ln(1 - u) for u = (w >> 8) 2^-24 (ts/random.ts: minusTwoLog). */
function minusTwoLog(w: u32): f32 {
  const j: u32 = 0x1000000 - (w >> 8);
  let e: i32 = 31 - <i32>clz(j);
  let m: f32 = <f32>j * bf(<u32>(127 - e) << 23);
  if (m > bf(0x3fb504f3)) {
    m = m * <f32>0.5;
    e += 1;
  }
  const z: f32 = m - <f32>1.0;
  const z2: f32 = z * z;
  let p: f32 = bf(0x3d9021bb);
  p = p * z + bf(0xbdebd1b8);
  p = p * z + bf(0x3def251a);
  p = p * z + bf(0xbdfe5d4f);
  p = p * z + bf(0x3e11e9bf);
  p = p * z + bf(0xbe2aae50);
  p = p * z + bf(0x3e4cceac);
  p = p * z + bf(0xbe7ffffc);
  p = p * z + bf(0x3eaaaaaa);
  const y: f32 = (z * z2) * p - <f32>0.5 * z2;
  const lnm: f32 = z + y;
  const q: f32 = <f32>(<i32>24 - e);
  return <f32>2.0 * ((q * bf(0xb95e8083) - lnm) + q * bf(0x3f318000));
}

/** sqrt by three Newton steps on 1/sqrt (ts/random.ts: sqrtF). */
function sqrtF(x: f32): f32 {
  if (x == <f32>0.0) return <f32>0.0;
  const h: f32 = <f32>0.5 * x;
  let y: f32 = bf(<u32>0x5f3759df - (reinterpret<u32>(x) >> 1));
  y = y * (<f32>1.5 - (h * y) * y);
  y = y * (<f32>1.5 - (h * y) * y);
  y = y * (<f32>1.5 - (h * y) * y);
  return x * y;
}

// The pair of normals of the last normalPair call (r cos theta, r sin theta).
let nz0: f32 = 0;
let nz1: f32 = 0;

/** The standard normals of a word pair, into nz0 and nz1 (ts/random.ts: normalPair). */
function normalPair(w0: u32, w1: u32): void {
  const r = sqrtF(minusTwoLog(w0));
  const k: u32 = w1 >> 8, o: u32 = k >> 21, odd: u32 = o & 1, rr: u32 = k & 0x1fffff;
  const a: f32 = (<f32>(odd ? <u32>0x200000 - rr : rr) * bf(0x35000000)) * bf(0x3f490fdb);
  const z: f32 = a * a;
  let s: f32 = ((((bf(0xb94ca1f9) * z) + bf(0x3c08839e)) * z + bf(0xbe2aaaa3)) * z) * a;
  s = s + a;
  const pc: f32 = ((bf(0x37ccf5ce) * z) + bf(0xbab6061a)) * z + bf(0x3d2aaaa5);
  const c: f32 = (((pc * z) * z) - <f32>0.5 * z) + <f32>1.0;
  if (odd) s = -s;
  const quadrant = ((o + 1) >> 1) & 3;
  let sn: f32, cs: f32;
  if (quadrant == 0) { sn = s; cs = c; }
  else if (quadrant == 1) { sn = c; cs = -s; }
  else if (quadrant == 2) { sn = -s; cs = -c; }
  else { sn = -c; cs = s; }
  nz0 = r * cs;
  nz1 = r * sn;
}

// ---- Four blocks at a time (SIMD): lane i of word vector j is word j of block b + i ----

// @ts-ignore: decorator
@inline function fs(x: u32): v128 {
  return f32x4.splat(reinterpret<f32>(x));
}

/** The high words of the lanes' 32 x 32-bit products. */
// @ts-ignore: decorator
@inline function mulhi4(a: v128, b: v128): v128 {
  return i32x4.shuffle(i64x2.extmul_low_i32x4_u(a, b), i64x2.extmul_high_i32x4_u(a, b), 1, 3, 5, 7);
}

/** -2 ln(1 - u) per lane (minusTwoLog); e from the exponent of f32(j), which is exact. */
function minusTwoLog4(w: v128): v128 {
  const j = i32x4.sub(i32x4.splat(0x1000000), i32x4.shr_u(w, 8));
  const jb = f32x4.convert_i32x4_u(j);
  let e = i32x4.sub(i32x4.shr_u(jb, 23), i32x4.splat(127));
  let m = v128.or(v128.and(jb, i32x4.splat(0x7fffff)), i32x4.splat(0x3f800000));
  const big = f32x4.gt(m, fs(0x3fb504f3));
  m = v128.bitselect(f32x4.mul(m, f32x4.splat(0.5)), m, big);
  e = i32x4.sub(e, big);
  const z = f32x4.sub(m, f32x4.splat(1.0));
  const z2 = f32x4.mul(z, z);
  let p = fs(0x3d9021bb);
  p = f32x4.add(f32x4.mul(p, z), fs(0xbdebd1b8));
  p = f32x4.add(f32x4.mul(p, z), fs(0x3def251a));
  p = f32x4.add(f32x4.mul(p, z), fs(0xbdfe5d4f));
  p = f32x4.add(f32x4.mul(p, z), fs(0x3e11e9bf));
  p = f32x4.add(f32x4.mul(p, z), fs(0xbe2aae50));
  p = f32x4.add(f32x4.mul(p, z), fs(0x3e4cceac));
  p = f32x4.add(f32x4.mul(p, z), fs(0xbe7ffffc));
  p = f32x4.add(f32x4.mul(p, z), fs(0x3eaaaaaa));
  const y = f32x4.sub(f32x4.mul(f32x4.mul(z, z2), p), f32x4.mul(f32x4.splat(0.5), z2));
  const lnm = f32x4.add(z, y);
  const q = f32x4.convert_i32x4_s(i32x4.sub(i32x4.splat(24), e));
  return f32x4.mul(f32x4.splat(2.0), f32x4.add(f32x4.sub(f32x4.mul(q, fs(0xb95e8083)), lnm), f32x4.mul(q, fs(0x3f318000))));
}

/** sqrt per lane (sqrtF: zero stays zero, as 0 times the finite estimate). */
function sqrt4(x: v128): v128 {
  const h = f32x4.mul(f32x4.splat(0.5), x);
  let y = i32x4.sub(i32x4.splat(0x5f3759df), i32x4.shr_u(x, 1));
  y = f32x4.mul(y, f32x4.sub(f32x4.splat(1.5), f32x4.mul(f32x4.mul(h, y), y)));
  y = f32x4.mul(y, f32x4.sub(f32x4.splat(1.5), f32x4.mul(f32x4.mul(h, y), y)));
  y = f32x4.mul(y, f32x4.sub(f32x4.splat(1.5), f32x4.mul(f32x4.mul(h, y), y)));
  return f32x4.mul(x, y);
}

// The second normal of the last normalPair4 call.
let nzv: v128 = i32x4.splat(0);

/** The normals of word pairs per lane (normalPair): returns r cos theta; r sin theta goes to nzv. */
function normalPair4(w0: v128, w1: v128): v128 {
  const r = sqrt4(minusTwoLog4(w0));
  const k = i32x4.shr_u(w1, 8), o = i32x4.shr_u(k, 21), rr = v128.and(k, i32x4.splat(0x1fffff));
  const odd = i32x4.shl(v128.and(o, i32x4.splat(1)), 31); // the sign bit where the octant is odd
  const oddMask = i32x4.shr_s(odd, 31);
  const t = v128.bitselect(i32x4.sub(i32x4.splat(0x200000), rr), rr, oddMask);
  const a = f32x4.mul(f32x4.mul(f32x4.convert_i32x4_u(t), fs(0x35000000)), fs(0x3f490fdb));
  const z = f32x4.mul(a, a);
  let s = f32x4.mul(f32x4.mul(f32x4.add(f32x4.mul(f32x4.add(f32x4.mul(fs(0xb94ca1f9), z), fs(0x3c08839e)), z), fs(0xbe2aaaa3)), z), a);
  s = v128.xor(f32x4.add(s, a), odd);
  const pc = f32x4.add(f32x4.mul(f32x4.add(f32x4.mul(fs(0x37ccf5ce), z), fs(0xbab6061a)), z), fs(0x3d2aaaa5));
  const c = f32x4.add(f32x4.sub(f32x4.mul(f32x4.mul(pc, z), z), f32x4.mul(f32x4.splat(0.5), z)), f32x4.splat(1.0));
  const quad = v128.and(i32x4.shr_u(i32x4.add(o, i32x4.splat(1)), 1), i32x4.splat(3));
  const swap = i32x4.shr_s(i32x4.shl(quad, 31), 31);
  const negCos = i32x4.shl(i32x4.shr_u(i32x4.add(quad, i32x4.splat(1)), 1), 31);
  const negSin = i32x4.shl(i32x4.shr_u(quad, 1), 31);
  const cs = v128.xor(v128.bitselect(s, c, swap), negCos);
  const sn = v128.xor(v128.bitselect(c, s, swap), negSin);
  nzv = f32x4.mul(r, sn);
  return f32x4.mul(r, cs);
}

/** A distribution's values of one word vector (`z` for normals, computed by the caller). */
// @ts-ignore: decorator
@inline function values4(dist: i32, w: v128, z: v128, a: u32, b: u32): v128 {
  if (dist == UNIFORM) return f32x4.add(f32x4.mul(f32x4.mul(f32x4.convert_i32x4_u(i32x4.shr_u(w, 8)), fs(0x33800000)), fs(b)), fs(a));
  if (dist == NORMAL) return f32x4.add(f32x4.mul(z, fs(b)), fs(a));
  if (dist == INT) return i32x4.add(i32x4.splat(a), b == 0 ? w : mulhi4(w, i32x4.splat(b)));
  if (dist == BERNOULLI) return v128.and(f32x4.lt(f32x4.mul(f32x4.convert_i32x4_u(i32x4.shr_u(w, 8)), fs(0x33800000)), fs(a)), i32x4.splat(b));
  return w;
}

/** Blocks blk .. blk + 3, whole, into out (16 words). */
function fourBlocks(dist: i32, out: usize, blk: u64, k0: u32, k1: u32, c0: u32, c1: u32, c2: u32, c3: u32, a: u32, b: u32): void {
  let x0 = i32x4.splat(0), x1 = i32x4.splat(0), x2 = i32x4.splat(0), x3 = i32x4.splat(0);
  for (let i = 0; i < 4; i++) {
    const bi = blk + <u64>i;
    const lo: u64 = <u64>c0 + (bi & 0xffffffff);
    const mid: u64 = <u64>c1 + (bi >> 32) + (lo >> 32);
    const top: u64 = <u64>c2 + (mid >> 32);
    const w3 = c3 + <u32>(top >> 32);
    if (i == 0) { x0 = i32x4.replace_lane(x0, 0, <i32>lo); x1 = i32x4.replace_lane(x1, 0, <i32>mid); x2 = i32x4.replace_lane(x2, 0, <i32>top); x3 = i32x4.replace_lane(x3, 0, w3); }
    else if (i == 1) { x0 = i32x4.replace_lane(x0, 1, <i32>lo); x1 = i32x4.replace_lane(x1, 1, <i32>mid); x2 = i32x4.replace_lane(x2, 1, <i32>top); x3 = i32x4.replace_lane(x3, 1, w3); }
    else if (i == 2) { x0 = i32x4.replace_lane(x0, 2, <i32>lo); x1 = i32x4.replace_lane(x1, 2, <i32>mid); x2 = i32x4.replace_lane(x2, 2, <i32>top); x3 = i32x4.replace_lane(x3, 2, w3); }
    else { x0 = i32x4.replace_lane(x0, 3, <i32>lo); x1 = i32x4.replace_lane(x1, 3, <i32>mid); x2 = i32x4.replace_lane(x2, 3, <i32>top); x3 = i32x4.replace_lane(x3, 3, w3); }
  }
  let y0 = k0, y1 = k1;
  const m0 = i32x4.splat(0xd2511f53), m1 = i32x4.splat(0xcd9e8d57);
  for (let r = 0; r < 10; r++) {
    const h0 = mulhi4(m0, x0), l0 = i32x4.mul(m0, x0), h1 = mulhi4(m1, x2), l1 = i32x4.mul(m1, x2);
    x0 = v128.xor(v128.xor(h1, x1), i32x4.splat(y0));
    x2 = v128.xor(v128.xor(h0, x3), i32x4.splat(y1));
    x1 = l1;
    x3 = l0;
    y0 += 0x9e3779b9;
    y1 += 0xbb67ae85;
  }
  let z0 = x0, z1 = x1, z2 = x2, z3 = x3;
  if (dist == NORMAL) {
    z0 = normalPair4(x0, x1);
    z1 = nzv;
    z2 = normalPair4(x2, x3);
    z3 = nzv;
  }
  const v0 = values4(dist, x0, z0, a, b), v1 = values4(dist, x1, z1, a, b), v2 = values4(dist, x2, z2, a, b), v3 = values4(dist, x3, z3, a, b);
  // transpose: block b + i's four words are lane i of v0 .. v3
  const t0 = i32x4.shuffle(v0, v1, 0, 4, 1, 5), t1 = i32x4.shuffle(v2, v3, 0, 4, 1, 5);
  const t2 = i32x4.shuffle(v0, v1, 2, 6, 3, 7), t3 = i32x4.shuffle(v2, v3, 2, 6, 3, 7);
  v128.store(out, i32x4.shuffle(t0, t1, 0, 1, 4, 5));
  v128.store(out, i32x4.shuffle(t0, t1, 2, 3, 6, 7), 16);
  v128.store(out, i32x4.shuffle(t2, t3, 0, 1, 4, 5), 32);
  v128.store(out, i32x4.shuffle(t2, t3, 2, 3, 6, 7), 48);
}

/**
 * out[0..n) (32-bit words) = elements first .. first + n of a draw with key
 * (k0, k1) from counter (c0, c1, c2, c3). `a` and `b` are 32-bit words:
 * uniform and normal, from + u * scale and mean + z * std (f32 bits);
 * integers, low + floor(w * range / 2^32) (range 0 means 2^32); Bernoulli,
 * u < p ? value : 0 with p = a, value = b (f32 bits); raw words otherwise.
 */
export function random(dist: i32, out: usize, n: i32, first: u32, k0: u32, k1: u32, c0: u32, c1: u32, c2: u32, c3: u32, a: u32, b: u32): void {
  if (n <= 0) return;
  const start: u64 = <u64>first, end: u64 = start + <u64>n;
  // whole blocks four at a time, from the first block that lies inside the draw
  const whole: u64 = (start + 3) >> 2;
  let simdEnd = whole;
  while (((simdEnd + 4) << 2) <= end) {
    fourBlocks(dist, out + (<usize>((simdEnd << 2) - start) << 2), simdEnd, k0, k1, c0, c1, c2, c3, a, b);
    simdEnd += 4;
  }
  for (let blk: u64 = start >> 2; (blk << 2) < end; blk++) {
    if (blk == whole && simdEnd > whole) {
      blk = simdEnd - 1; // those were drawn four at a time
      continue;
    }
    // the counter: (c0, c1, c2, c3) + blk, with carries
    const lo: u64 = <u64>c0 + (blk & 0xffffffff);
    const mid: u64 = <u64>c1 + (blk >> 32) + (lo >> 32);
    const top: u64 = <u64>c2 + (mid >> 32);
    let x0 = <u32>lo, x1 = <u32>mid, x2 = <u32>top, x3 = c3 + <u32>(top >> 32);
    let y0 = k0, y1 = k1;
    for (let r = 0; r < 10; r++) {
      const p0: u64 = <u64>0xd2511f53 * <u64>x0, p1: u64 = <u64>0xcd9e8d57 * <u64>x2;
      const n0 = <u32>(p1 >> 32) ^ x1 ^ y0, n2 = <u32>(p0 >> 32) ^ x3 ^ y1;
      x1 = <u32>p1;
      x3 = <u32>p0;
      x0 = n0;
      x2 = n2;
      y0 += 0x9e3779b9;
      y1 += 0xbb67ae85;
    }
    let z0: f32 = 0, z1: f32 = 0, z2: f32 = 0, z3: f32 = 0;
    if (dist == NORMAL) {
      normalPair(x0, x1);
      z0 = nz0;
      z1 = nz1;
      normalPair(x2, x3);
      z2 = nz0;
      z3 = nz1;
    }
    for (let l = 0; l < 4; l++) {
      const e: u64 = (blk << 2) + <u64>l;
      if (e < start || e >= end) continue;
      const w: u32 = l == 0 ? x0 : l == 1 ? x1 : l == 2 ? x2 : x3;
      let v: u32 = w;
      if (dist == UNIFORM) {
        v = reinterpret<u32>((<f32>(w >> 8) * bf(0x33800000)) * bf(b) + bf(a));
      } else if (dist == NORMAL) {
        const z = l == 0 ? z0 : l == 1 ? z1 : l == 2 ? z2 : z3;
        v = reinterpret<u32>(z * bf(b) + bf(a));
      } else if (dist == INT) {
        v = a + (b == 0 ? w : mulhi(w, b));
      } else if (dist == BERNOULLI) {
        v = <f32>(w >> 8) * bf(0x33800000) < bf(a) ? b : 0;
      }
      store<u32>(out + (<usize>(e - start) << 2), v);
    }
  }
}

/**
 * One chunk of a draw on the cpu's helper threads (ts/worker/cpu-pool.ts): `p` holds the 12
 * arguments of `random` as i32 words (dist, out, n, first, key, counter, a, b); chunk `part` of
 * `parts` draws its own run of whole Philox blocks. `ws` is unused (the pool's calling form).
 */
export function randomPart(p: usize, ws: usize, part: i32, parts: i32): void {
  const n = load<i32>(p, 8);
  const blocks = (n + 3) >> 2;
  const per = ((blocks + parts - 1) / parts) << 2;
  const first = part * per;
  if (first >= n) return;
  const count = min(per, n - first);
  random(load<i32>(p), <usize>load<u32>(p, 4) + (<usize>first << 2), count, load<u32>(p, 12) + <u32>first,
    load<u32>(p, 16), load<u32>(p, 20), load<u32>(p, 24), load<u32>(p, 28), load<u32>(p, 32), load<u32>(p, 36), load<u32>(p, 40), load<u32>(p, 44));
}
