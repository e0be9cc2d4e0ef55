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
// Operands are f32 [bh, rows, dim] views: strided lead dims and rows, contiguous columns (the
// mask's columns strided too); a block's first element comes from `base`, a row from its stride.
//
// Descriptor (i32 words at p): 0 pass (0 forward, 1 d, 2 dq, 3 dkv, 4 the whole backward), 1 lse
// (0: none; contiguous [bh, L]), 2 D (f32 per row, contiguous), 3 bh, 4 L, 5 S, 6 E, 7 Ev, 8 scale
// (f32 bits), 9 causal, 10 bool mask (its -inf places take no dS), 11 the mask's column stride,
// 12 the number of lead dims, 13..20 their sizes, then per operand (q, key, v, o (the forward's
// output, the backward's o), g, dq, dk, dv, mask; 0..8) from word 21 a block of 10 words: its
// pointer (0: none), its row stride, its lead dims' strides. Pointers are bytes, strides elements.
// `attentionPart` gives part `part` of `parts` of the rows (keys for 'dkv'); ws holds E + Ev f32.

const Q = 0, KEY = 1, V = 2, O = 3, G = 4, DQ = 5, DK = 6, DV = 7, MASK = 8;

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

/** Operand `o`'s first element of block bh (bytes; 0 for an operand not given). */
function base(p: usize, o: i32, bh: i32): usize {
  const at = 21 + 10 * o, ptr = <usize>word(p, at);
  if (!ptr) return 0;
  let rem = bh, off = 0;
  for (let d = word(p, 12) - 1; d >= 0; d--) {
    const size = word(p, 13 + d);
    off += (rem % size) * word(p, at + 2 + d);
    rem /= size;
  }
  return ptr + (<usize>off << 2);
}

/** Operand `o`'s row `i` of block bh (bytes). */
// @ts-ignore: decorator
@inline function rowOf(p: usize, o: i32, bh: i32, i: i32): usize {
  return base(p, o, bh) + (<usize>(i * word(p, 22 + 10 * o)) << 2);
}

// @ts-ignore: decorator
@inline function stride(p: usize, o: i32): usize {
  return <usize>word(p, 22 + 10 * o) << 2;
}

/** Query rows [first, end) of the forward. */
function forward(p: usize, first: i32, end: i32, ws: usize): void {
  const lse = <usize>word(p, 1);
  const L = word(p, 4), S = word(p, 5), E = word(p, 6), Ev = word(p, 7), scale = reinterpret<f32>(word(p, 8)), causal = word(p, 9);
  const mc = word(p, 11), kr = stride(p, KEY), vr = stride(p, V);
  for (let row = first; row < end; row++) {
    const bh = row / L, i = row % L;
    const qi = rowOf(p, Q, bh, i), mb = rowOf(p, MASK, bh, i), masked = word(p, 21 + 10 * MASK) != 0;
    const kb = base(p, KEY, bh), vb = base(p, V, bh);
    for (let e = 0; e < Ev; e++) put(ws, e, 0);
    let m: f32 = -Infinity, l: f32 = 0;
    const keys = causal ? min(S, i + 1) : S;
    for (let j = 0; j < keys; j++) {
      let s = dot(qi, kb + <usize>j * kr, E) * scale;
      if (masked) s += f(mb, j * mc);
      if (s == -Infinity) continue;
      const vj = vb + <usize>j * vr;
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
    const o = rowOf(p, O, bh, i);
    for (let e = 0; e < Ev; e++) put(o, e, l == 0 ? NaN : f(ws, e) / l);
    if (lse) put(lse, row, l == 0 ? -Infinity : m + Mathf.log(l));
  }
}

/** P and dS of (query row `row` = (bh, i), key j), from the rows' pointers, into the two results (`mrow`: the mask's row i, or 0). */
let gotP: f32 = 0, gotDS: f32 = 0;
// @ts-ignore: decorator
@inline function probs(p: usize, qi: usize, gi: usize, mrow: usize, kj: usize, vj: usize, j: i32, row: i32): void {
  const lse = <usize>word(p, 1), D = <usize>word(p, 2);
  const E = word(p, 6), Ev = word(p, 7), scale = reinterpret<f32>(word(p, 8));
  let s = dot(qi, kj, E) * scale;
  let bias: f32 = 0;
  if (mrow) bias = f(mrow, j * word(p, 11));
  const pr = Mathf.exp(s + bias - f(lse, row));
  const dp = dot(gi, vj, Ev);
  let ds = pr * (dp - f(D, row));
  if (word(p, 10) && bias == -Infinity) ds = 0;
  gotP = pr;
  gotDS = ds;
}

/** dQ of query rows [first, end). */
function gradQ(p: usize, first: i32, end: i32, ws: usize): void {
  const L = word(p, 4), S = word(p, 5), E = word(p, 6), scale = reinterpret<f32>(word(p, 8)), causal = word(p, 9);
  const kr = stride(p, KEY), vr = stride(p, V);
  for (let row = first; row < end; row++) {
    const bh = row / L, i = row % L;
    const qi = rowOf(p, Q, bh, i), gi = rowOf(p, G, bh, i), mrow = rowOf(p, MASK, bh, i), kb = base(p, KEY, bh), vb = base(p, V, bh);
    for (let e = 0; e < E; e++) put(ws, e, 0);
    const keys = causal ? min(S, i + 1) : S;
    for (let j = 0; j < keys; j++) {
      const kj = kb + <usize>j * kr;
      probs(p, qi, gi, mrow, kj, vb + <usize>j * vr, j, row);
      axpby(ws, 1, gotDS, kj, E);
    }
    const o = rowOf(p, DQ, bh, i);
    for (let e = 0; e < E; e++) put(o, e, f(ws, e) * scale);
  }
}

/** dK and dV of key rows [first, end) (over bh·S). */
function gradKV(p: usize, first: i32, end: i32, ws: usize): void {
  const L = word(p, 4), S = word(p, 5), E = word(p, 6), Ev = word(p, 7), scale = reinterpret<f32>(word(p, 8)), causal = word(p, 9);
  const qr = stride(p, Q), gr = stride(p, G), mr = stride(p, MASK);
  const wv = ws + ((<usize>E) << 2);
  for (let key = first; key < end; key++) {
    const bh = key / S, j = key % S;
    const kj = rowOf(p, KEY, bh, j), vj = rowOf(p, V, bh, j), qb = base(p, Q, bh), gb = base(p, G, bh), mb = base(p, MASK, bh);
    for (let e = 0; e < E; e++) put(ws, e, 0);
    for (let e = 0; e < Ev; e++) put(wv, e, 0);
    for (let i = causal ? j : 0; i < L; i++) {
      const qi = qb + <usize>i * qr, gi = gb + <usize>i * gr;
      probs(p, qi, gi, mb ? mb + <usize>i * mr : 0, kj, vj, j, bh * L + i);
      axpby(wv, 1, gotP, gi, Ev);
      axpby(ws, 1, gotDS, qi, E);
    }
    const ko = rowOf(p, DK, bh, j), vo = rowOf(p, DV, bh, j);
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
  const D = <usize>word(p, 2);
  const L = word(p, 4), S = word(p, 5), E = word(p, 6), Ev = word(p, 7), scale = reinterpret<f32>(word(p, 8)), causal = word(p, 9);
  const kr = stride(p, KEY), vr = stride(p, V), dkr = stride(p, DK), dvr = stride(p, DV);
  for (let bh = first; bh < end; bh++) {
    const kb = base(p, KEY, bh), vb = base(p, V, bh), dkb = base(p, DK, bh), dvb = base(p, DV, bh);
    for (let j = 0; j < S; j++) {
      memory.fill(dkb + <usize>j * dkr, 0, (<usize>E) << 2);
      memory.fill(dvb + <usize>j * dvr, 0, (<usize>Ev) << 2);
    }
    for (let i = 0; i < L; i++) {
      const row = bh * L + i;
      const qi = rowOf(p, Q, bh, i), gi = rowOf(p, G, bh, i), mrow = rowOf(p, MASK, bh, i);
      put(D, row, dot(gi, rowOf(p, O, bh, i), Ev));
      for (let e = 0; e < E; e++) put(ws, e, 0);
      const keys = causal ? min(S, i + 1) : S;
      for (let j = 0; j < keys; j++) {
        const kj = kb + <usize>j * kr;
        probs(p, qi, gi, mrow, kj, vb + <usize>j * vr, j, row);
        const pr = gotP, ds = gotDS;
        axpby(ws, 1, ds, kj, E);
        axpby(dkb + <usize>j * dkr, 1, ds, qi, E);
        axpby(dvb + <usize>j * dvr, 1, pr, gi, Ev);
      }
      const out = rowOf(p, DQ, bh, i);
      for (let e = 0; e < E; e++) put(out, e, f(ws, e) * scale);
    }
    for (let j = 0; j < S; j++) {
      const kj = dkb + <usize>j * dkr;
      for (let e = 0; e < E; e++) put(kj, e, f(kj, e) * scale);
    }
  }
}

/** D = Σ dO·O of every row. */
function rowDots(p: usize): void {
  const D = <usize>word(p, 2), L = word(p, 4), Ev = word(p, 7), rows = word(p, 3) * L;
  for (let row = 0; row < rows; row++) {
    const bh = row / L, i = row % L;
    put(D, row, dot(rowOf(p, G, bh, i), rowOf(p, O, bh, i), Ev));
  }
}

/** Part `part` of `parts` of a pass (the cpu pool's form; see the file's note). */
export function attentionPart(p: usize, ws: usize, part: i32, parts: i32): void {
  const pass = word(p, 0);
  if (pass == 1) {
    if (part == 0) rowDots(p);
    return;
  }
  const n = pass == 4 ? word(p, 3) : word(p, 3) * (pass == 3 ? word(p, 5) : word(p, 4));
  const per = (n + parts - 1) / parts, first = part * per, end = min(n, first + per);
  if (first >= end) return;
  if (pass == 0) forward(p, first, end, ws);
  else if (pass == 2) gradQ(p, first, end, ws);
  else if (pass == 3) gradKV(p, first, end, ws);
  else gradBlocks(p, first, end, ws);
}
