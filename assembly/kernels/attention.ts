// Fused scaled dot product attention on the cpu (the `attention` and `attentionGrad` commands;
// Note [fused attention] in ts/worker/gpu/attention.ts has the plan, which this follows a row at
// a time): the forward walks each query row's keys with the online softmax (running max and
// sum, the output rescaled as the max grows) and writes the output and the row's logsumexp; the
// backward's passes recompute P = exp(s − lse) from the saved logsumexp: 'd' writes
// D = Σ dO·O per row, 'dq' a query row's dQ = scale·Σ dS·K, 'dkv' a key row's dV = Σ P·dO and
// dK = scale·Σ dS·Q, with dS = P·(dP − D) and dP = dO·v. No L×S matrix is made.
//
// With blocks enough for every thread the backward is one pass instead (4: `gradBlocks`, a block
// of bh at a time, each score computed once); the three passes keep few blocks' rows parallel.
//
// Descriptor (i32 words at p): 0 pass (0 forward, 1 d, 2 dq, 3 dkv, 4 the whole backward), 1 q, 2 key, 3 v, 4 out (the
// forward's output, the backward's o), 5 lse (0: none), 6 mask (0: none), 7 bh, 8 L, 9 S, 10 E,
// 11 Ev, 12 scale (f32 bits), 13 causal, 14 bool mask (its -inf places take no dS), 15 the mask's
// row stride, 16 its column stride, 17 its lead dims, 18 g, 19 dq, 20 dk, 21 dv, 22 D (f32 per
// row), then (size, stride) per lead dim from 23. Pointers are bytes, strides elements.
// `attentionPart` gives part `part` of `parts` of the rows (keys for 'dkv'); ws holds E + Ev f32.

// @ts-ignore: decorator
@inline function word(p: usize, i: i32): i32 {
  return load<i32>(p + (<usize>i << 2));
}

// @ts-ignore: decorator
@inline function f(base: usize, i: i32): f32 {
  return load<f32>(base + (<usize>i << 2));
}

// @ts-ignore: decorator
@inline function put(base: usize, i: i32, v: f32): void {
  store<f32>(base + (<usize>i << 2), v);
}

/** Σ a·b over n floats, four lanes at a time (unaligned loads: rows of odd length start anywhere). */
function dot(a: usize, b: usize, n: i32): f32 {
  let acc = f32x4.splat(0);
  let e = 0;
  for (; e + 4 <= n; e += 4) {
    const at = <usize>e << 2;
    acc = f32x4.add(acc, f32x4.mul(v128.load(a + at), v128.load(b + at)));
  }
  let s: f32 = f32x4.extract_lane(acc, 0) + f32x4.extract_lane(acc, 1) + f32x4.extract_lane(acc, 2) + f32x4.extract_lane(acc, 3);
  for (; e < n; e++) s += f(a, e) * f(b, e);
  return s;
}

/** y = y·c + a·x over n floats, four lanes at a time. */
function axpby(y: usize, c: f32, a: f32, x: usize, n: i32): void {
  const cv = f32x4.splat(c), av = f32x4.splat(a);
  let e = 0;
  for (; e + 4 <= n; e += 4) {
    const at = <usize>e << 2;
    v128.store(y + at, f32x4.add(f32x4.mul(v128.load(y + at), cv), f32x4.mul(v128.load(x + at), av)));
  }
  for (; e < n; e++) put(y, e, f(y, e) * c + a * f(x, e));
}

/** The mask's first element for block bh (bytes). */
function maskBase(p: usize, bh: i32): usize {
  const mask = <usize>word(p, 6);
  let rem = bh, off = 0;
  for (let d = word(p, 17) - 1; d >= 0; d--) {
    const size = word(p, 23 + 2 * d);
    off += (rem % size) * word(p, 24 + 2 * d);
    rem /= size;
  }
  return mask + (<usize>off << 2);
}

/** Query rows [first, end) of the forward. */
function forward(p: usize, first: i32, end: i32, ws: usize): void {
  const q = <usize>word(p, 1), k = <usize>word(p, 2), v = <usize>word(p, 3), out = <usize>word(p, 4), lse = <usize>word(p, 5);
  const L = word(p, 8), S = word(p, 9), E = word(p, 10), Ev = word(p, 11), scale = reinterpret<f32>(word(p, 12)), causal = word(p, 13);
  const masked = word(p, 6) != 0, mr = word(p, 15), mc = word(p, 16);
  for (let row = first; row < end; row++) {
    const bh = row / L, i = row % L;
    const qi = q + ((<usize>row * E) << 2), mb = masked ? maskBase(p, bh) + ((<usize>(i * mr)) << 2) : 0;
    for (let e = 0; e < Ev; e++) put(ws, e, 0);
    let m: f32 = -Infinity, l: f32 = 0;
    const keys = causal ? min(S, i + 1) : S;
    for (let j = 0; j < keys; j++) {
      let s = dot(qi, k + ((<usize>(bh * S + j) * E) << 2), E) * scale;
      if (masked) s += f(mb, j * mc);
      if (s == -Infinity) continue;
      const vj = v + ((<usize>(bh * S + j) * Ev) << 2);
      if (s > m) {
        const alpha = Mathf.exp(m - s);
        l = l * alpha + 1;
        axpby(ws, alpha, 1, vj, Ev);
        m = s;
      } else {
        const pj = Mathf.exp(s - m);
        l += pj;
        axpby(ws, 1, pj, vj, Ev);
      }
    }
    // l = 0: every score -inf; 0/0 is NaN, as the composed softmax gives
    const o = out + ((<usize>row * Ev) << 2);
    for (let e = 0; e < Ev; e++) put(o, e, l == 0 ? NaN : f(ws, e) / l);
    if (lse) put(lse, row, l == 0 ? -Infinity : m + Mathf.log(l));
  }
}

/** P and dS of (query row `row`, key j of its block), into the two results. */
let gotP: f32 = 0, gotDS: f32 = 0;
// @ts-ignore: decorator
@inline function probs(p: usize, bh: i32, i: i32, j: i32, row: i32): void {
  const q = <usize>word(p, 1), k = <usize>word(p, 2), v = <usize>word(p, 3), lse = <usize>word(p, 5), g = <usize>word(p, 18), D = <usize>word(p, 22);
  const S = word(p, 9), E = word(p, 10), Ev = word(p, 11), scale = reinterpret<f32>(word(p, 12));
  let s = dot(q + ((<usize>row * E) << 2), k + ((<usize>(bh * S + j) * E) << 2), E) * scale;
  let bias: f32 = 0;
  if (word(p, 6)) bias = f(maskBase(p, bh), i * word(p, 15) + j * word(p, 16));
  const pr = Mathf.exp(s + bias - f(lse, row));
  const dp = dot(g + ((<usize>row * Ev) << 2), v + ((<usize>(bh * S + j) * Ev) << 2), Ev);
  let ds = pr * (dp - f(D, row));
  if (word(p, 14) && bias == -Infinity) ds = 0;
  gotP = pr;
  gotDS = ds;
}

/** dQ of query rows [first, end). */
function gradQ(p: usize, first: i32, end: i32, ws: usize): void {
  const k = <usize>word(p, 2), dq = <usize>word(p, 19);
  const L = word(p, 8), S = word(p, 9), E = word(p, 10), scale = reinterpret<f32>(word(p, 12)), causal = word(p, 13);
  for (let row = first; row < end; row++) {
    const bh = row / L, i = row % L;
    for (let e = 0; e < E; e++) put(ws, e, 0);
    const keys = causal ? min(S, i + 1) : S;
    for (let j = 0; j < keys; j++) {
      probs(p, bh, i, j, row);
      const ds = gotDS;
      const kj = k + ((<usize>(bh * S + j) * E) << 2);
      axpby(ws, 1, ds, kj, E);
    }
    const o = dq + ((<usize>row * E) << 2);
    for (let e = 0; e < E; e++) put(o, e, f(ws, e) * scale);
  }
}

/** dK and dV of key rows [first, end) (over bh·S). */
function gradKV(p: usize, first: i32, end: i32, ws: usize): void {
  const q = <usize>word(p, 1), g = <usize>word(p, 18), dk = <usize>word(p, 20), dv = <usize>word(p, 21);
  const L = word(p, 8), S = word(p, 9), E = word(p, 10), Ev = word(p, 11), scale = reinterpret<f32>(word(p, 12)), causal = word(p, 13);
  const wv = ws + ((<usize>E) << 2);
  for (let key = first; key < end; key++) {
    const bh = key / S, j = key % S;
    for (let e = 0; e < E; e++) put(ws, e, 0);
    for (let e = 0; e < Ev; e++) put(wv, e, 0);
    for (let i = causal ? j : 0; i < L; i++) {
      const row = bh * L + i;
      probs(p, bh, i, j, row);
      const pr = gotP, ds = gotDS;
      const qi = q + ((<usize>row * E) << 2), gi = g + ((<usize>row * Ev) << 2);
      axpby(wv, 1, pr, gi, Ev);
      axpby(ws, 1, ds, qi, E);
    }
    const ko = dk + ((<usize>key * E) << 2), vo = dv + ((<usize>key * Ev) << 2);
    for (let e = 0; e < E; e++) put(ko, e, f(ws, e) * scale);
    for (let e = 0; e < Ev; e++) put(vo, e, f(wv, e));
  }
}

/**
 * The whole backward of blocks [first, end) of bh in one walk (pass 4: no score is computed
 * twice): per query row D = Σ dO·O, then per key P, dS, dQ += dS·k, dK += dS·q, dV += P·dO,
 * the block's dK and dV zeroed first. Parts own whole blocks, so no two write one row.
 */
function gradBlocks(p: usize, first: i32, end: i32, ws: usize): void {
  const q = <usize>word(p, 1), k = <usize>word(p, 2), o = <usize>word(p, 4), g = <usize>word(p, 18);
  const dq = <usize>word(p, 19), dk = <usize>word(p, 20), dv = <usize>word(p, 21), D = <usize>word(p, 22);
  const L = word(p, 8), S = word(p, 9), E = word(p, 10), Ev = word(p, 11), scale = reinterpret<f32>(word(p, 12)), causal = word(p, 13);
  for (let bh = first; bh < end; bh++) {
    const kb = dk + ((<usize>(bh * S) * E) << 2), vb = dv + ((<usize>(bh * S) * Ev) << 2);
    memory.fill(kb, 0, (<usize>(S * E)) << 2);
    memory.fill(vb, 0, (<usize>(S * Ev)) << 2);
    for (let i = 0; i < L; i++) {
      const row = bh * L + i;
      const qi = q + ((<usize>row * E) << 2), gi = g + ((<usize>row * Ev) << 2);
      put(D, row, dot(gi, o + ((<usize>row * Ev) << 2), Ev));
      for (let e = 0; e < E; e++) put(ws, e, 0);
      const keys = causal ? min(S, i + 1) : S;
      for (let j = 0; j < keys; j++) {
        probs(p, bh, i, j, row);
        const pr = gotP, ds = gotDS;
        axpby(ws, 1, ds, k + ((<usize>(bh * S + j) * E) << 2), E);
        axpby(kb + ((<usize>(j * E)) << 2), 1, ds, qi, E);
        axpby(vb + ((<usize>(j * Ev)) << 2), 1, pr, gi, Ev);
      }
      const out = dq + ((<usize>row * E) << 2);
      for (let e = 0; e < E; e++) put(out, e, f(ws, e) * scale);
    }
    for (let e = 0; e < S * E; e++) put(kb, e, f(kb, e) * scale);
  }
}

/** D = Σ dO·O of every row. */
function rowDots(p: usize): void {
  const o = <usize>word(p, 4), g = <usize>word(p, 18), D = <usize>word(p, 22), Ev = word(p, 11), rows = word(p, 7) * word(p, 8);
  for (let row = 0; row < rows; row++) put(D, row, dot(g + ((<usize>row * Ev) << 2), o + ((<usize>row * Ev) << 2), Ev));
}

/** Part `part` of `parts` of a pass (the cpu pool's form; see the file's note). */
export function attentionPart(p: usize, ws: usize, part: i32, parts: i32): void {
  const pass = word(p, 0);
  if (pass == 1) {
    if (part == 0) rowDots(p);
    return;
  }
  const n = pass == 4 ? word(p, 7) : word(p, 7) * (pass == 3 ? word(p, 9) : word(p, 8));
  const per = (n + parts - 1) / parts, first = part * per, end = min(n, first + per);
  if (first >= end) return;
  if (pass == 0) forward(p, first, end, ws);
  else if (pass == 2) gradQ(p, first, end, ws);
  else if (pass == 3) gradKV(p, first, end, ws);
  else gradBlocks(p, first, end, ws);
}
