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
  for (let blk: u64 = start >> 2; (blk << 2) < end; blk++) {
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
