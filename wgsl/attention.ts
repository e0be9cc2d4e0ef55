/**
 * Fused scaled dot product attention (the `attention` and `attentionGrad` commands; the plan is
 * Note [fused attention] in ts/worker/gpu/attention.ts). Every kernel but 'd' works on a tile of
 * R own rows against C other rows per step: a workgroup of LANES·R invocations, LANES per row,
 * each holding every LANES-th pair's score and every LANES-th unit of its row's accumulators in
 * registers (`attentionShader` says how the phases read workgroup memory). Operands are f32
 * [bh, rows, dim] views with strided lead dims and rows and contiguous columns (the mask's columns
 * strided too): a workgroup finds its block's first element once (`base`); E, Ev, R and C are
 * constants of the shader (its key).
 *
 * Params (u32 words): 0 bh, 1 L, 2 S, 3 scale (f32 bits), 4 causal, 5 lse, 6 the backward's
 * scratch (lse and D per row, interleaved; both contiguous [bh, L]), 7 the number of lead dims,
 * 8 the mask's column stride, 9 and 10 the units of a row of E and Ev floats (`attnUnits`), 11 the
 * pass's other rows per step (C), the lead dims' sizes from 12, then per operand (q, key, v, out
 * (the forward's output, the backward's o), g, dq, dk, dv, mask; `OP`) from 12 + ATTN_MAX_LEAD a block
 * of its offset, its row stride and its lead dims' strides (offsets and strides in elements).
 */

/** Lead dims the params hold at most (more are refused by ts/ops/attention.ts). */
export const ATTN_MAX_LEAD = 8;
/** Params word indices. */
export const AP = { bh: 0, L: 1, S: 2, scale: 3, causal: 4, lse: 5, ld: 6, nLead: 7, mCol: 8, eu: 9, evu: 10, other: 11, lead: 12 } as const;
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
  /** The workgroup's own rows (query rows for 'fwd' and 'dq', key rows for 'dkv'). */
  R: number;
  /** The rows of the other side it walks per step (keys for 'fwd' and 'dq', query rows for 'dkv'). */
  C: number;
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
  `attn|${s.pass}|${s.E}|${s.Ev}|${s.R}|${s.C}|${Object.values(s.slots).join(',')}|${s.written.join(',')}|${s.slotCount}|${+s.maskBool}`;

/** Invocations per own row: each holds every LANES-th column of its row's scores and accumulators. */
export const LANES = 4;

/** The (own rows, other rows) tiles a pass may take, largest first; `tileOf` picks the first that fits. */
export const ATTN_TILES: readonly (readonly [number, number])[] = [[32, 32], [32, 16], [16, 16], [16, 8], [8, 8], [8, 4], [4, 4]];

/** A head dim in workgroup memory: vec4 units when it is a multiple of 4, else f32 ones. */
interface Dim { w: number; units: number; padded: number; ty: string }
/** The units of a row of `dim` floats (vec4 ones when `dim` is a multiple of 4). */
export const attnUnits = (dim: number): number => (dim % 4 === 0 ? dim / 4 : dim);
function dimOf(dim: number): Dim {
  const w = dim % 4 === 0 ? 4 : 1;
  // a tile's row stride, in units, is odd: the invocations of a dot product read different rows at one
  // unit, and an odd stride puts those rows in different banks (an even one stacked them in a few)
  return { w, units: dim / w, padded: (dim / w) | 1, ty: w === 4 ? 'vec4<f32>' : 'f32' };
}

/** Workgroup memory (bytes) a pass needs with `R` own rows and `C` other rows. */
export function attnSharedBytes(pass: AttnSpec['pass'], E: number, Ev: number, R: number, C: number): number {
  if (pass === 'd') return 0;
  const e = dimOf(E), ev = dimOf(Ev);
  const ep = e.padded * e.w, evp = ev.padded * ev.w, cp = C + 1;
  if (pass === 'fwd') return 4 * (R * ep + C * (ep + evp) + R * cp + R * LANES);
  if (pass === 'dq') return 4 * ((R + C) * (ep + evp) + R * cp);
  return 4 * ((R + C) * (ep + evp) + 2 * R * cp + 2 * C);
}

/** The grid of a pass: one workgroup per (bh, tile of R own rows), or per 64 rows for the 'd' pass. */
export function attnGroups(pass: AttnSpec['pass'], bh: number, L: number, S: number, R: number): number {
  if (pass === 'd') return Math.ceil((bh * L) / 64);
  return bh * Math.ceil((pass === 'dkv' ? S : L) / R);
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

/**
 * The WGSL of one pass. A workgroup of LANES·R invocations owns R rows (invocation `li`: row
 * r = li / LANES, lane = li % LANES) and steps over the other side C rows at a time. Each step has
 * two phases between barriers:
 * - pairs: an invocation takes the C / LANES pairs (its row, other row lane + LANES·k), its dot
 *   products run over the head dim, each unit of its own row read once for all of them;
 * - accumulate: an invocation adds, for each other row c, coefficient (c) × that row's units
 *   lane + LANES·k into its accumulators (its own row's output, or dQ, dK, dV), each coefficient
 *   read once for its units.
 * Head dims that are multiples of 4 are vec4 units (a load, four multiply-adds), others f32.
 */
export function attentionShader(s: AttnSpec): string {
  if (s.pass === 'd') return dShader(s);
  const { E, Ev, R, C } = s, T = LANES * R, NC = C / LANES, CP = C + 1;
  const e = dimOf(E), ev = dimOf(Ev);
  const sl = s.slots;
  const rd = (name: keyof AttnSpec['slots'], i: string) => `S${sl[name]}[${i}]`;
  const dimName = (d: Dim) => (d === e ? 'E' : 'EV');
  const bias = (i: string, j: string) => (sl.mask >= 0 ? `let bias = ${rd('mask', `mb + ${i} * mr + ${j} * mc`)};` : 'let bias = 0.0;');
  const boolZero = s.maskBool ? 'if (is_neg_inf(bias)) { ds = 0.0; }' : '';
  // each bound operand's first element of this workgroup's block (`name_b`) and row stride (`name_r`)
  const bases = (['q', 'key', 'v', 'out', 'g', 'dq', 'dk', 'dv'] as const).filter((n) => sl[n] >= 0)
    .map((n) => `  let ${n}_b = base(${OP[n]}u, bh);\n  let ${n}_r = row_stride(${OP[n]}u);\n`).join('');
  const head = `${bindings(s)}${common}
const EU: u32 = ${e.units}u;
const EUP: u32 = ${e.padded}u;
const EVU: u32 = ${ev.units}u;
const EVUP: u32 = ${ev.padded}u;
const R: u32 = ${R}u;
const C: u32 = ${C}u;
const CP: u32 = ${CP}u;
const LANES: u32 = ${LANES}u;
const NC: u32 = ${NC}u;
const T: u32 = ${T}u;
`;
  const tile = (name: string, rows: number, d: Dim) => `var<workgroup> ${name}: array<${d.ty}, ${rows * d.padded}>;\n`;
  // cooperative loads of `rows` rows of `src` (from row `first` of block bh; zeros from `limit` on) into `dst`, a unit each
  const load = (dst: string, src: keyof AttnSpec['slots'], first: string, limit: string, rows: string, d: Dim) => {
    const U = `${dimName(d)}U`;
    const read = d.w === 4 ? `vec4<f32>(${[0, 1, 2, 3].map((k) => rd(src, k ? `at + ${k}u` : 'at')).join(', ')})` : rd(src, 'at');
    return `  for (var x = li; x < ${rows} * ${U}; x += T) {
    let row = ${first} + x / ${U};
    var unit = ${d.ty}(0.0);
    if (row < ${limit}) {
      let at = ${src}_b + row * ${src}_r + (x % ${U}) * ${d.w}u;
      unit = ${read};
    }
    ${dst}[(x / ${U}) * ${U}P + x % ${U}] = unit;
  }
`;
  };
  // the pairs phase's dot products: out[k] = own row r of `own` · row lane + LANES·k of `other`
  const dots = (out: string, own: string, other: string, d: Dim) => {
    const U = `${dimName(d)}U`;
    const mul = d.w === 4 ? `dot(a, ${other}[(lane + LANES * k) * ${U}P + u])` : `a * ${other}[(lane + LANES * k) * ${U}P + u]`;
    return `    var ${out} = array<f32, NC>();
    for (var u = 0u; u < ${U.toLowerCase()}; u++) {
      let a = ${own}[r * ${U}P + u];
      for (var k = 0u; k < NC; k++) { ${out}[k] += ${mul}; }
    }
`;
  };
  // an invocation's accumulators: units lane + LANES·k of a row of dim `d`
  const nUnits = (d: Dim) => Math.ceil(d.units / LANES);
  const accs = (name: string, d: Dim) => `  var ${name}: array<${d.ty}, ${nUnits(d)}>;\n`;
  const guard = (d: Dim, body: string) => (d.units % LANES === 0 ? body : `if (u < ${dimName(d)}U) { ${body} }`);
  // the accumulate phase, for other row c: acc += coef × row c of `src`
  const accumulate = (acc: string, coef: string, src: string, d: Dim) => `      for (var k = 0u; k < ${nUnits(d)}u; k++) {
        let u = lane + LANES * k;
        ${guard(d, `${acc}[k] += ${coef} * ${src}[c * ${dimName(d)}UP + u];`)}
      }
`;
  // writes value(acc[k]) of the accumulators to row `row` of operand `dst`
  const store = (dst: keyof AttnSpec['slots'], row: string, value: string, d: Dim) => {
    const at = `${dst}_b + ${row} * ${dst}_r + u * ${d.w}u`;
    const write = d.w === 4 ? [0, 1, 2, 3].map((k) => `${rd(dst, k ? `at + ${k}u` : 'at')} = v.${'xyzw'[k]};`).join(' ') : `${rd(dst, 'at')} = v;`;
    return `  for (var k = 0u; k < ${nUnits(d)}u; k++) {
    let u = lane + LANES * k;
    ${guard(d, `let v = ${value}; let at = ${at}; ${write}`)}
  }
`;
  };
  const start = `  let tiles_q = (P[${AP.L}] + R - 1u) / R;
  let tiles_k = (P[${AP.S}] + R - 1u) / R;
  let gid = wid.x + wid.y * nwg.x;
  let L = P[${AP.L}];
  let S = P[${AP.S}];
  let scale = pf(${AP.scale});
  let causal = P[${AP.causal}] != 0u;
  let r = li / LANES;
  let lane = li % LANES;
  let mr = row_stride(${OP.mask}u);
  let mc = P[${AP.mCol}];
  let neg_inf = bitcast<f32>(NEG_INF_U);
  // the dot products' and the accumulate phase's loops run to these bounds from the params rather
  // than the constants EU, EVU and C: lavapipe's compiler, unrolling them in full, took minutes on
  // some shaders (the inner loops over an invocation's pairs and units stay constant, unrolled)
  let eu = P[${AP.eu}];
  let evu = P[${AP.evu}];
  let c_end = P[${AP.other}];
`;
  // what every pass opens with: its tile `own` (i0 a query tile, j0 a key tile) of block bh, the mask's base, the operands'
  const entry = (tiles: string, own: string) => `@compute @workgroup_size(${T})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
${start}  if (gid >= P[${AP.bh}] * ${tiles}) { return; }
  let bh = gid / ${tiles};
  let ${own} = (gid % ${tiles}) * R;
  let mb = ${sl.mask >= 0 ? `base(${OP.mask}u, bh)` : '0u'};
${bases}`;
  // the key tiles a query tile sees (up to its diagonal when causal), each loaded into KS and VS
  const keySteps = `  var key_end = S;
  if (causal) { key_end = min(S, i0 + R); }
  let steps = (key_end + C - 1u) / C;
  for (var t = 0u; t < steps; t++) {
    let j0 = t * C;
    workgroupBarrier();
${load('KS', 'key', 'j0', 'S', 'C', e)}${load('VS', 'v', 'j0', 'S', 'C', ev)}    workgroupBarrier();
`;
  // pair k of the invocation's row and the other row: query i, key j, its place in PS and DS
  const pairOf = (other: 'i' | 'j') => `      let c = lane + LANES * k;
      let ${other} = ${other}0 + c;
      let takes = i < L && j < S && !(causal && j > i);
`;
  if (s.pass === 'fwd') {
    return `${head}${tile('QS', R, e)}${tile('KS', C, e)}${tile('VS', C, ev)}var<workgroup> PS: array<f32, ${R * CP}>;
var<workgroup> RED: array<f32, ${R * LANES}>;
${entry('tiles_q', 'i0')}${load('QS', 'q', 'i0', 'L', 'R', e)}  let i = i0 + r;
${accs('acc', ev)}  var m = neg_inf;
  // this lane's share of the row's sum (its columns'), added up at the end
  var l = 0.0;
${keySteps}${dots('sc', 'QS', 'KS', e)}    var mx = neg_inf;
    for (var k = 0u; k < NC; k++) {
${pairOf('j')}      var v = neg_inf;
      if (takes) {
        ${bias('i', 'j')}
        v = sc[k] * scale + bias;
      }
      sc[k] = v;
      mx = max(mx, v);
    }
    RED[r * LANES + lane] = mx;
    workgroupBarrier();
    var mt = m;
    for (var x = 0u; x < LANES; x++) { mt = max(mt, RED[r * LANES + x]); }
    let ms = select(mt, 0.0, is_neg_inf(mt));
    let alpha = exp(m - ms);
    l *= alpha;
    for (var k = 0u; k < NC; k++) {
      let p = exp(sc[k] - ms);
      l += p;
      PS[r * CP + lane + LANES * k] = p;
    }
    for (var k = 0u; k < ${nUnits(ev)}u; k++) { acc[k] *= alpha; }
    m = mt;
    workgroupBarrier();
    for (var c = 0u; c < c_end; c++) {
      let p = PS[r * CP + c];
${accumulate('acc', 'p', 'VS', ev)}    }
  }
  RED[r * LANES + lane] = l;
  workgroupBarrier();
  var sum = 0.0;
  for (var x = 0u; x < LANES; x++) { sum += RED[r * LANES + x]; }
  if (i >= L) { return; }
  let inv = 1.0 / sum;
  let nan = bitcast<f32>(NAN_U);
${store('out', 'i', `select(acc[k] * inv, ${ev.ty}(nan), sum == 0.0)`, ev)}  ${sl.lse >= 0 ? `if (lane == 0u) { ${rd('lse', `P[${AP.lse}] + bh * L + i`)} = select(m + log(sum), neg_inf, sum == 0.0); }` : ''}
}
`;
  }
  // the backward's pairs: probabilities from the saved logsumexp, dP = dO·Vᵀ, dS = P·(dP − D)
  const grad = (lse: string, d: string) => `        ${bias('i', 'j')}
        p = exp(sc[k] * scale + bias - ${lse});
        ds = p * (dp[k] - ${d});
        ${boolZero}
`;
  if (s.pass === 'dq') {
    return `${head}${tile('QS', R, e)}${tile('GS', R, ev)}${tile('KS', C, e)}${tile('VS', C, ev)}var<workgroup> DS: array<f32, ${R * CP}>;
${entry('tiles_q', 'i0')}${load('QS', 'q', 'i0', 'L', 'R', e)}${load('GS', 'g', 'i0', 'L', 'R', ev)}  let i = i0 + r;
  var lse = 0.0;
  var d_row = 0.0;
  if (i < L) {
    let at = P[${AP.ld}] + 2u * (bh * L + i);
    lse = ${rd('ld', 'at')};
    d_row = ${rd('ld', 'at + 1u')};
  }
${accs('acc', e)}${keySteps}${dots('sc', 'QS', 'KS', e)}${dots('dp', 'GS', 'VS', ev)}    for (var k = 0u; k < NC; k++) {
${pairOf('j')}      var p = 0.0;
      var ds = 0.0;
      if (takes) {
${grad('lse', 'd_row')}      }
      DS[r * CP + c] = ds;
    }
    workgroupBarrier();
    for (var c = 0u; c < c_end; c++) {
      let ds = DS[r * CP + c];
${accumulate('acc', 'ds', 'KS', e)}    }
  }
  if (i >= L) { return; }
${store('dq', 'i', 'acc[k] * scale', e)}}
`;
  }
  // 'dkv': a workgroup per key tile, over the query rows that see it
  const wantK = sl.dk >= 0, wantV = sl.dv >= 0;
  return `${head}${tile('KS', R, e)}${tile('VS', R, ev)}${tile('QS', C, e)}${tile('GS', C, ev)}var<workgroup> PS: array<f32, ${R * CP}>;
var<workgroup> DS: array<f32, ${R * CP}>;
var<workgroup> LD: array<f32, ${2 * C}>;
${entry('tiles_k', 'j0')}${load('KS', 'key', 'j0', 'S', 'R', e)}${load('VS', 'v', 'j0', 'S', 'R', ev)}  let j = j0 + r;
${wantK ? accs('dk', e) : ''}${wantV ? accs('dv', ev) : ''}  var first = 0u;
  if (causal) { first = j0 / C; }
  let steps = (L + C - 1u) / C;
  for (var t = first; t < steps; t++) {
    let i0 = t * C;
    workgroupBarrier();
${load('QS', 'q', 'i0', 'L', 'C', e)}${load('GS', 'g', 'i0', 'L', 'C', ev)}    for (var x = li; x < 2u * C; x += T) {
      let row = i0 + x / 2u;
      LD[x] = select(0.0, ${rd('ld', `P[${AP.ld}] + 2u * (bh * L + row) + x % 2u`)}, row < L);
    }
    workgroupBarrier();
${dots('sc', 'KS', 'QS', e)}${wantK ? dots('dp', 'VS', 'GS', ev) : '    var dp = array<f32, NC>();\n'}    for (var k = 0u; k < NC; k++) {
${pairOf('i')}      var p = 0.0;
      var ds = 0.0;
      if (takes) {
${grad('LD[2u * c]', 'LD[2u * c + 1u]')}      }
${wantV ? '      PS[r * CP + c] = p;\n' : ''}${wantK ? '      DS[r * CP + c] = ds;\n' : ''}    }
    workgroupBarrier();
    for (var c = 0u; c < c_end; c++) {
${wantV ? `      let p = PS[r * CP + c];\n${accumulate('dv', 'p', 'GS', ev)}` : ''}${wantK ? `      let ds = DS[r * CP + c];\n${accumulate('dk', 'ds', 'QS', e)}` : ''}    }
  }
  if (j >= S) { return; }
${wantK ? store('dk', 'j', 'dk[k] * scale', e) : ''}${wantV ? store('dv', 'j', 'dv[k]', ev) : ''}}
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
