/**
 * Fused scaled dot product attention (the `attention` and `attentionGrad` commands; the plan is
 * Note [fused attention] in ts/worker/gpu/attention.ts). Every kernel works on tiles of `B` rows:
 * a workgroup of 8·B invocations, 8 per row, each holding every eighth column of its row's
 * accumulators in registers. Operands are contiguous f32 [bh, rows, dim] blocks; E, Ev and B are
 * constants of the shader (its key).
 *
 * Params (u32 words): 0 bh, 1 L, 2 S, 3 scale (f32 bits), 4 causal, 5 q, 6 key, 7 v, 8 out (the
 * forward's output, the backward's o), 9 lse, 10 g, 11 dq, 12 dk, 13 dv, 14 the backward's
 * scratch (lse and D per row, interleaved), 15 the mask's offset, 16 its row stride, 17 its column
 * stride, 18 the number of lead dims, then (size, stride) per lead dim from 19 (offsets and
 * strides in elements).
 */

/** Lead dims of a mask the params hold at most (a mask of more dims is collapsed by the family or refused). */
export const ATTN_MAX_LEAD = 8;
/** Params words of an attention kernel. */
export const ATTN_PARAM_WORDS = 19 + 2 * ATTN_MAX_LEAD;
/** Params word indices. */
export const AP = { bh: 0, L: 1, S: 2, scale: 3, causal: 4, q: 5, key: 6, v: 7, out: 8, lse: 9, g: 10, dq: 11, dk: 12, dv: 13, ld: 14,
  mask: 15, mRow: 16, mCol: 17, nLead: 18, lead: 19 } as const;

/** Which kernel, and the binding of each operand (its slot; -1: absent). */
export interface AttnSpec {
  /** 'fwd': output and logsumexp; 'd': the backward's scratch (lse, D = rowsum(dO·O)); 'dq' over query tiles; 'dkv' over key tiles. */
  pass: 'fwd' | 'd' | 'dq' | 'dkv';
  E: number;
  Ev: number;
  /** Rows per tile (16, 8 or 4). */
  B: number;
  /** Slots of q, key, v, out/o, lse, g, dq, dk, dv, the scratch, the mask (-1: not bound). */
  slots: Record<'q' | 'key' | 'v' | 'out' | 'lse' | 'g' | 'dq' | 'dk' | 'dv' | 'ld' | 'mask', number>;
  /** Which slots are written. */
  written: number[];
  slotCount: number;
  /** The bias came from a bool mask: its -inf places take no gradient. */
  maskBool: boolean;
}

/** The shader key of a spec. */
export const attnKey = (s: AttnSpec): string =>
  `attn|${s.pass}|${s.E}|${s.Ev}|${s.B}|${Object.values(s.slots).join(',')}|${s.written.join(',')}|${s.slotCount}|${+s.maskBool}`;

/**
 * A tile's row stride in workgroup memory: odd, so that the invocations of a score's dot products,
 * which read B different rows at one column, fall in different banks (at E = 64 unpadded, 16 rows
 * landed in one bank).
 */
export const padded = (dim: number): number => dim | 1;

/** Workgroup memory (bytes) a pass needs with tiles of `B` rows. */
export function attnSharedBytes(pass: AttnSpec['pass'], E: number, Ev: number, B: number): number {
  if (pass === 'd') return 0;
  const e = padded(E), ev = padded(Ev);
  if (pass === 'fwd') return 4 * (B * (2 * e + ev) + B * B);
  return 4 * (2 * B * (e + ev) + 2 * B * B + 2 * B);
}

/** The grid of a pass: one workgroup per (bh, tile), or per 64 rows for the 'd' pass. */
export function attnGroups(pass: AttnSpec['pass'], bh: number, L: number, S: number, B: number): number {
  if (pass === 'd') return Math.ceil((bh * L) / 64);
  return bh * Math.ceil((pass === 'dkv' ? S : L) / B);
}

function bindings(s: AttnSpec): string {
  let out = '@group(0) @binding(0) var<storage, read> P: array<u32>;\n';
  for (let k = 0; k < s.slotCount; k++) out += `@group(0) @binding(${k + 1}) var<storage, ${s.written.includes(k) ? 'read_write' : 'read'}> S${k}: array<f32>;\n`;
  return out;
}

const common = `var<private> NEG_INF_U: u32 = 0xff800000u;
var<private> NAN_U: u32 = 0x7fc00000u;
fn is_neg_inf(v: f32) -> bool { return bitcast<u32>(v) == 0xff800000u; }
fn pf(i: u32) -> f32 { return bitcast<f32>(P[i]); }
fn mask_base(bh: u32) -> i32 {
  var rem = bh;
  var off = i32(P[${AP.mask}]);
  for (var d = i32(P[${AP.nLead}]) - 1; d >= 0; d--) {
    let size = P[${AP.lead} + 2u * u32(d)];
    off += i32(rem % size) * bitcast<i32>(P[${AP.lead} + 2u * u32(d) + 1u]);
    rem /= size;
  }
  return off;
}
`;

/** The WGSL of one pass. */
export function attentionShader(s: AttnSpec): string {
  if (s.pass === 'd') return dShader(s);
  const { E, Ev, B } = s, T = 8 * B, NE = Math.ceil(E / 8), NV = Math.ceil(Ev / 8);
  const sl = s.slots;
  const rd = (name: keyof AttnSpec['slots'], i: string) => `S${sl[name]}[${i}]`;
  // the score of row r (query i) and column c (key j): the bias, or -inf where masked; `valid` says whether it takes part
  const bias = sl.mask >= 0
    ? `let bias = ${rd('mask', 'u32(mb + i32(i) * mr + i32(j) * mc)')};`
    : 'let bias = 0.0;';
  const boolZero = s.maskBool ? 'if (is_neg_inf(bias)) { ds = 0.0; }' : '';
  const head = `${bindings(s)}${common}
const E: u32 = ${E}u;
const EV: u32 = ${Ev}u;
const EP: u32 = ${padded(E)}u;
const EVP: u32 = ${padded(Ev)}u;
const B: u32 = ${B}u;
const T: u32 = ${T}u;
`;
  const start = `  let tiles_q = (P[${AP.L}] + B - 1u) / B;
  let tiles_k = (P[${AP.S}] + B - 1u) / B;
  let gid = wid.x + wid.y * nwg.x;
  let L = P[${AP.L}];
  let S = P[${AP.S}];
  let scale = pf(${AP.scale});
  let causal = P[${AP.causal}] != 0u;
  let r = li / 8u;
  let lane = li % 8u;
  let mr = bitcast<i32>(P[${AP.mRow}]);
  let mc = bitcast<i32>(P[${AP.mCol}]);
`;
  // cooperative loads of `rows` rows of `dim` floats from `src` (row `first` of block bh) into `dst`
  const load = (dst: string, src: keyof AttnSpec['slots'], off: string, first: string, limit: string, dim: string) =>
    `  for (var x = li; x < B * ${dim}; x += T) {
    let row = ${first} + x / ${dim};
    ${dst}[(x / ${dim}) * ${dim === 'E' ? 'EP' : 'EVP'} + x % ${dim}] = select(0.0, ${rd(src, `${off} + (bh * ${limit} + row) * ${dim} + x % ${dim}`)}, row < ${limit});
  }
`;
  if (s.pass === 'fwd') {
    return `${head}var<workgroup> QS: array<f32, ${B * padded(E)}>;
var<workgroup> KS: array<f32, ${B * padded(E)}>;
var<workgroup> VS: array<f32, ${B * padded(Ev)}>;
var<workgroup> SS: array<f32, ${B * B}>;
@compute @workgroup_size(${T})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
${start}  if (gid >= P[${AP.bh}] * tiles_q) { return; }
  let bh = gid / tiles_q;
  let i0 = (gid % tiles_q) * B;
  let mb = ${sl.mask >= 0 ? 'mask_base(bh)' : '0'};
  let neg_inf = bitcast<f32>(NEG_INF_U);
${load('QS', 'q', `P[${AP.q}]`, 'i0', 'L', 'E')}  var acc: array<f32, ${NV}>;
  var m = neg_inf;
  var l = 0.0;
  var key_end = S;
  if (causal) { key_end = min(S, i0 + B); }
  let tiles = (key_end + B - 1u) / B;
  for (var t = 0u; t < tiles; t++) {
    let j0 = t * B;
    workgroupBarrier();
${load('KS', 'key', `P[${AP.key}]`, 'j0', 'S', 'E')}${load('VS', 'v', `P[${AP.v}]`, 'j0', 'S', 'EV')}    workgroupBarrier();
    for (var x = li; x < B * B; x += T) {
      let rr = x / B;
      let c = x % B;
      let i = i0 + rr;
      let j = j0 + c;
      var sc = neg_inf;
      if (j < S && !(causal && j > i)) {
        var dot = 0.0;
        for (var e = 0u; e < E; e++) { dot += QS[rr * EP + e] * KS[c * EP + e]; }
        ${bias}
        sc = dot * scale + bias;
      }
      SS[x] = sc;
    }
    workgroupBarrier();
    var mt = m;
    for (var c = 0u; c < B; c++) { mt = max(mt, SS[r * B + c]); }
    let ms = select(mt, 0.0, is_neg_inf(mt));
    let alpha = exp(m - ms);
    l *= alpha;
    for (var k = 0u; k < ${NV}u; k++) { acc[k] *= alpha; }
    for (var c = 0u; c < B; c++) {
      let p = exp(SS[r * B + c] - ms);
      l += p;
      for (var k = 0u; k < ${NV}u; k++) {
        let col = lane + 8u * k;
        if (col < EV) { acc[k] += p * VS[c * EVP + col]; }
      }
    }
    m = mt;
  }
  let i = i0 + r;
  if (i >= L) { return; }
  let inv = 1.0 / l;
  let nan = bitcast<f32>(NAN_U);
  let row = bh * L + i;
  for (var k = 0u; k < ${NV}u; k++) {
    let col = lane + 8u * k;
    if (col < EV) { ${rd('out', `P[${AP.out}] + row * EV + col`)} = select(acc[k] * inv, nan, l == 0.0); }
  }
  ${sl.lse >= 0 ? `if (lane == 0u) { ${rd('lse', `P[${AP.lse}] + row`)} = select(m + log(l), neg_inf, l == 0.0); }` : ''}
}
`;
  }
  // the backward's tiles: scores, probabilities from the saved logsumexp, dP = dO·Vᵀ, dS = P·(dP − D)
  const score = (pOut: string) => `      var p = 0.0;
      var ds = 0.0;
      if (i < L && j < S && !(causal && j > i)) {
        var dot = 0.0;
        for (var e = 0u; e < E; e++) { dot += QS[rr * EP + e] * KS[c * EP + e]; }
        ${bias}
        p = exp(dot * scale + bias - LD[2u * rr]);
        var dp = 0.0;
        for (var e = 0u; e < EV; e++) { dp += GS[rr * EVP + e] * VS[c * EVP + e]; }
        ds = p * (dp - LD[2u * rr + 1u]);
        ${boolZero}
      }
${pOut}      DS[x] = ds;
`;
  const shared = `var<workgroup> QS: array<f32, ${B * padded(E)}>;
var<workgroup> KS: array<f32, ${B * padded(E)}>;
var<workgroup> VS: array<f32, ${B * padded(Ev)}>;
var<workgroup> GS: array<f32, ${B * padded(Ev)}>;
var<workgroup> PS: array<f32, ${B * B}>;
var<workgroup> DS: array<f32, ${B * B}>;
var<workgroup> LD: array<f32, ${2 * B}>;
`;
  const loadLD = (first: string) => `  for (var x = li; x < 2u * B; x += T) {
    let row = ${first} + x / 2u;
    LD[x] = select(0.0, ${rd('ld', `P[${AP.ld}] + 2u * (bh * L + row) + x % 2u`)}, row < L);
  }
`;
  if (s.pass === 'dq') {
    return `${head}${shared}@compute @workgroup_size(${T})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
${start}  if (gid >= P[${AP.bh}] * tiles_q) { return; }
  let bh = gid / tiles_q;
  let i0 = (gid % tiles_q) * B;
  let mb = ${sl.mask >= 0 ? 'mask_base(bh)' : '0'};
${load('QS', 'q', `P[${AP.q}]`, 'i0', 'L', 'E')}${load('GS', 'g', `P[${AP.g}]`, 'i0', 'L', 'EV')}${loadLD('i0')}  var acc: array<f32, ${NE}>;
  var key_end = S;
  if (causal) { key_end = min(S, i0 + B); }
  let tiles = (key_end + B - 1u) / B;
  for (var t = 0u; t < tiles; t++) {
    let j0 = t * B;
    workgroupBarrier();
${load('KS', 'key', `P[${AP.key}]`, 'j0', 'S', 'E')}${load('VS', 'v', `P[${AP.v}]`, 'j0', 'S', 'EV')}    workgroupBarrier();
    for (var x = li; x < B * B; x += T) {
      let rr = x / B;
      let c = x % B;
      let i = i0 + rr;
      let j = j0 + c;
${score('')}    }
    workgroupBarrier();
    for (var c = 0u; c < B; c++) {
      let ds = DS[r * B + c];
      for (var k = 0u; k < ${NE}u; k++) {
        let col = lane + 8u * k;
        if (col < E) { acc[k] += ds * KS[c * EP + col]; }
      }
    }
  }
  let i = i0 + r;
  if (i >= L) { return; }
  for (var k = 0u; k < ${NE}u; k++) {
    let col = lane + 8u * k;
    if (col < E) { ${rd('dq', `P[${AP.dq}] + (bh * L + i) * E + col`)} = acc[k] * scale; }
  }
}
`;
  }
  // 'dkv': a workgroup per key tile, over the query tiles that see it
  const wantK = sl.dk >= 0, wantV = sl.dv >= 0;
  return `${head}${shared}@compute @workgroup_size(${T})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
${start}  if (gid >= P[${AP.bh}] * tiles_k) { return; }
  let bh = gid / tiles_k;
  let j0 = (gid % tiles_k) * B;
  let mb = ${sl.mask >= 0 ? 'mask_base(bh)' : '0'};
${load('KS', 'key', `P[${AP.key}]`, 'j0', 'S', 'E')}${load('VS', 'v', `P[${AP.v}]`, 'j0', 'S', 'EV')}  var dk: array<f32, ${NE}>;
  var dv: array<f32, ${NV}>;
  var first = 0u;
  if (causal) { first = j0 / B; }
  for (var t = first; t < tiles_q; t++) {
    let i0 = t * B;
    workgroupBarrier();
${load('QS', 'q', `P[${AP.q}]`, 'i0', 'L', 'E')}${load('GS', 'g', `P[${AP.g}]`, 'i0', 'L', 'EV')}${loadLD('i0')}    workgroupBarrier();
    for (var x = li; x < B * B; x += T) {
      let rr = x / B;
      let c = x % B;
      let i = i0 + rr;
      let j = j0 + c;
${score('      PS[x] = p;\n')}    }
    workgroupBarrier();
    for (var rr = 0u; rr < B; rr++) {
      let p = PS[rr * B + r];
      let ds = DS[rr * B + r];
${wantV ? `      for (var k = 0u; k < ${NV}u; k++) {
        let col = lane + 8u * k;
        if (col < EV) { dv[k] += p * GS[rr * EVP + col]; }
      }
` : ''}${wantK ? `      for (var k = 0u; k < ${NE}u; k++) {
        let col = lane + 8u * k;
        if (col < E) { dk[k] += ds * QS[rr * EP + col]; }
      }
` : ''}    }
  }
  let j = j0 + r;
  if (j >= S) { return; }
  let row = bh * S + j;
${wantK ? `  for (var k = 0u; k < ${NE}u; k++) {
    let col = lane + 8u * k;
    if (col < E) { ${rd('dk', `P[${AP.dk}] + row * E + col`)} = dk[k] * scale; }
  }
` : ''}${wantV ? `  for (var k = 0u; k < ${NV}u; k++) {
    let col = lane + 8u * k;
    if (col < EV) { ${rd('dv', `P[${AP.dv}] + row * EV + col`)} = dv[k]; }
  }
` : ''}}
`;
}

/** The backward's first pass: per row, its logsumexp and D = Σ dO·O into the scratch, interleaved. */
function dShader(s: AttnSpec): string {
  const sl = s.slots;
  return `${bindings(s)}
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let row = (wid.x + wid.y * nwg.x) * 64u + li;
  if (row >= P[${AP.bh}] * P[${AP.L}]) { return; }
  var d = 0.0;
  for (var e = 0u; e < ${s.Ev}u; e++) {
    d += S${sl.g}[P[${AP.g}] + row * ${s.Ev}u + e] * S${sl.out}[P[${AP.out}] + row * ${s.Ev}u + e];
  }
  S${sl.ld}[P[${AP.ld}] + 2u * row] = S${sl.lse}[P[${AP.lse}] + row];
  S${sl.ld}[P[${AP.ld}] + 2u * row + 1u] = d;
}
`;
}
