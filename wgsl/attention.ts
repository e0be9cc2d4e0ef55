/**
 * Fused scaled dot product attention (the `attention` and `attentionGrad` commands; the plan is
 * Note [fused attention] in ts/worker/gpu/attention.ts). Every kernel works on tiles of `B` rows:
 * a workgroup of 8·B invocations, 8 per row, each holding every eighth column of its row's
 * accumulators in registers. Operands are f32 [bh, rows, dim] views with strided lead dims and
 * rows and contiguous columns (the mask's columns strided too): a workgroup finds its block's
 * first element once (`base`); E, Ev and B are constants of the shader (its key).
 *
 * Params (u32 words): 0 bh, 1 L, 2 S, 3 scale (f32 bits), 4 causal, 5 lse, 6 the backward's
 * scratch (lse and D per row, interleaved; both contiguous [bh, L]), 7 the number of lead dims,
 * 8 the mask's column stride, the lead dims' sizes from 9, then per operand (q, key, v, out (the
 * forward's output, the backward's o), g, dq, dk, dv, mask; `OP`) from 9 + ATTN_MAX_LEAD a block
 * of its offset, its row stride and its lead dims' strides (offsets and strides in elements).
 */

/** Lead dims the params hold at most (more are refused by ts/ops/attention.ts). */
export const ATTN_MAX_LEAD = 8;
/** Params word indices. */
export const AP = { bh: 0, L: 1, S: 2, scale: 3, causal: 4, lse: 5, ld: 6, nLead: 7, mCol: 8, lead: 9 } as const;
/** The operands' blocks of params, in this order, from word `OPS`, each `OPW` words: offset, row stride, lead strides. */
export const OP = { q: 0, key: 1, v: 2, out: 3, g: 4, dq: 5, dk: 6, dv: 7, mask: 8 } as const;
export const OPS = AP.lead + ATTN_MAX_LEAD;
export const OPW = 2 + ATTN_MAX_LEAD;
/** Params words of an attention kernel. */
export const ATTN_PARAM_WORDS = OPS + 9 * OPW;

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
// operand o's first element of block bh
fn base(o: u32, bh: u32) -> u32 {
  let at = ${OPS}u + o * ${OPW}u;
  var rem = bh;
  var off = P[at];
  for (var d = i32(P[${AP.nLead}]) - 1; d >= 0; d--) {
    let size = P[${AP.lead} + u32(d)];
    off += (rem % size) * P[at + 2u + u32(d)];
    rem /= size;
  }
  return off;
}
fn row_stride(o: u32) -> u32 { return P[${OPS}u + o * ${OPW}u + 1u]; }
`;

/** The WGSL of one pass. */
export function attentionShader(s: AttnSpec): string {
  if (s.pass === 'd') return dShader(s);
  const { E, Ev, B } = s, T = 8 * B, NE = Math.ceil(E / 8), NV = Math.ceil(Ev / 8);
  const sl = s.slots;
  const rd = (name: keyof AttnSpec['slots'], i: string) => `S${sl[name]}[${i}]`;
  // the score of row r (query i) and column c (key j): the bias, or -inf where masked; `valid` says whether it takes part
  const bias = sl.mask >= 0
    ? `let bias = ${rd('mask', 'mb + i * mr + j * mc')};`
    : 'let bias = 0.0;';
  const boolZero = s.maskBool ? 'if (is_neg_inf(bias)) { ds = 0.0; }' : '';
  // each bound operand's first element of this workgroup's block (`name_b`) and row stride (`name_r`)
  const bases = (['q', 'key', 'v', 'out', 'g', 'dq', 'dk', 'dv'] as const).filter((n) => sl[n] >= 0)
    .map((n) => `  let ${n}_b = base(${OP[n]}u, bh);\n  let ${n}_r = row_stride(${OP[n]}u);\n`).join('');
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
  let mr = row_stride(${OP.mask}u);
  let mc = P[${AP.mCol}];
`;
  // cooperative loads of `rows` rows of `dim` floats from `src` (row `first` of block bh) into `dst`
  const load = (dst: string, src: keyof AttnSpec['slots'], first: string, limit: string, dim: string) =>
    `  for (var x = li; x < B * ${dim}; x += T) {
    let row = ${first} + x / ${dim};
    ${dst}[(x / ${dim}) * ${dim === 'E' ? 'EP' : 'EVP'} + x % ${dim}] = select(0.0, ${rd(src, `${src}_b + row * ${src}_r + x % ${dim}`)}, row < ${limit});
  }
`;
  // what every pass opens with: its tile `own` (i0 a query tile, j0 a key tile) of block bh, the mask's base, the operands'
  const entry = (tiles: string, own: string) => `@compute @workgroup_size(${T})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
${start}  if (gid >= P[${AP.bh}] * ${tiles}) { return; }
  let bh = gid / ${tiles};
  let ${own} = (gid % ${tiles}) * B;
  let mb = ${sl.mask >= 0 ? `base(${OP.mask}u, bh)` : '0u'};
${bases}`;
  // the key tiles a query tile sees (up to its diagonal when causal), each loaded into KS and VS
  const keyTiles = `  var key_end = S;
  if (causal) { key_end = min(S, i0 + B); }
  let tiles = (key_end + B - 1u) / B;
  for (var t = 0u; t < tiles; t++) {
    let j0 = t * B;
    workgroupBarrier();
${load('KS', 'key', 'j0', 'S', 'E')}${load('VS', 'v', 'j0', 'S', 'EV')}    workgroupBarrier();
`;
  // the B×B (query i, key j) pairs of the two tiles, among the workgroup's invocations
  const pairs = `    for (var x = li; x < B * B; x += T) {
      let rr = x / B;
      let c = x % B;
      let i = i0 + rr;
      let j = j0 + c;
`;
  if (s.pass === 'fwd') {
    return `${head}var<workgroup> QS: array<f32, ${B * padded(E)}>;
var<workgroup> KS: array<f32, ${B * padded(E)}>;
var<workgroup> VS: array<f32, ${B * padded(Ev)}>;
var<workgroup> SS: array<f32, ${B * B}>;
${entry('tiles_q', 'i0')}  let neg_inf = bitcast<f32>(NEG_INF_U);
${load('QS', 'q', 'i0', 'L', 'E')}  var acc: array<f32, ${NV}>;
  var m = neg_inf;
  var l = 0.0;
${keyTiles}${pairs}      var sc = neg_inf;
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
    if (col < EV) { ${rd('out', 'out_b + i * out_r + col')} = select(acc[k] * inv, nan, l == 0.0); }
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
    return `${head}${shared}${entry('tiles_q', 'i0')}${load('QS', 'q', 'i0', 'L', 'E')}${load('GS', 'g', 'i0', 'L', 'EV')}${loadLD('i0')}  var acc: array<f32, ${NE}>;
${keyTiles}${pairs}${score('')}    }
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
    if (col < E) { ${rd('dq', 'dq_b + i * dq_r + col')} = acc[k] * scale; }
  }
}
`;
  }
  // 'dkv': a workgroup per key tile, over the query tiles that see it
  const wantK = sl.dk >= 0, wantV = sl.dv >= 0;
  return `${head}${shared}${entry('tiles_k', 'j0')}${load('KS', 'key', 'j0', 'S', 'E')}${load('VS', 'v', 'j0', 'S', 'EV')}  var dk: array<f32, ${NE}>;
  var dv: array<f32, ${NV}>;
  var first = 0u;
  if (causal) { first = j0 / B; }
  for (var t = first; t < tiles_q; t++) {
    let i0 = t * B;
    workgroupBarrier();
${load('QS', 'q', 'i0', 'L', 'E')}${load('GS', 'g', 'i0', 'L', 'EV')}${loadLD('i0')}    workgroupBarrier();
${pairs}${score('      PS[x] = p;\n')}    }
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
${wantK ? `  for (var k = 0u; k < ${NE}u; k++) {
    let col = lane + 8u * k;
    if (col < E) { ${rd('dk', 'dk_b + j * dk_r + col')} = dk[k] * scale; }
  }
` : ''}${wantV ? `  for (var k = 0u; k < ${NV}u; k++) {
    let col = lane + 8u * k;
    if (col < EV) { ${rd('dv', 'dv_b + j * dv_r + col')} = dv[k]; }
  }
` : ''}}
`;
}

/** The backward's first pass: per row, its logsumexp and D = Σ dO·O into the scratch, interleaved. */
function dShader(s: AttnSpec): string {
  const sl = s.slots;
  return `${bindings(s)}${common}
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let row = (wid.x + wid.y * nwg.x) * 64u + li;
  if (row >= P[${AP.bh}] * P[${AP.L}]) { return; }
  let bh = row / P[${AP.L}];
  let i = row % P[${AP.L}];
  let g_at = base(${OP.g}u, bh) + i * row_stride(${OP.g}u);
  let o_at = base(${OP.out}u, bh) + i * row_stride(${OP.out}u);
  var d = 0.0;
  for (var e = 0u; e < ${s.Ev}u; e++) {
    d += S${sl.g}[g_at + e] * S${sl.out}[o_at + e];
  }
  S${sl.ld}[P[${AP.ld}] + 2u * row] = S${sl.lse}[P[${AP.lse}] + row];
  S${sl.ld}[P[${AP.ld}] + 2u * row + 1u] = d;
}
`;
}
