/**
 * Row normalisations of a contiguous f32 [outer, inner] block, each in one kernel: softmax and
 * log-softmax (a max, a sum of exp(x - max), the outputs) and layer norm (a mean, a sum of
 * squared deviations, the outputs times an optional weight plus an optional bias, both [inner]).
 * Composed from the table's ops they read and write the block five to seven times.
 *
 * Their input gradients (the `rowGrad` command, `RowNorm.g` set) are the same kernels with other
 * passes: softmax's `y·(g − Σ g·y)` and log-softmax's `g − exp(y)·Σ g` from the output y (one
 * sum, then the outputs), layer norm's `rstd·(gy − mean(gy) − x̂·mean(gy·x̂))`, gy = g·weight,
 * from its input (the forward's two sums for mean and rstd, then Σ gy and Σ gy·x̂, then the
 * outputs). Composed, each was three to eight dispatches; the cpu's are assembly/kernels/rownorm.ts.
 *
 * Rows go to subgroups or to workgroups as in the reduction family (wgsl/reduce.ts says why).
 * Max propagates NaN (bit tests: compilers may fold `x != x`), so a softmax row holding NaN gives
 * NaN throughout, as in PyTorch; layer norm's sums carry NaN by themselves.
 * Params: [outer, inner, input offset, output offset, rows per workgroup, weight offset, bias
 * offset, eps as f32 bits, gradient offset] in elements.
 */
import { slotBindings } from './dtype.js';
import { SUBGROUPS, rowMain, subgroupRowMain, type RowForm } from './reduce.js';

/** Invocations per row of the workgroup form. */
const SWG = 256;

/** Which normalisation, and the slots of its operands (the output is in slot 0). */
export interface RowNorm {
  kind: 'softmax' | 'log_softmax' | 'layer_norm';
  x: number;
  /** Layer norm's weight and bias slots, when it has them (a gradient has no bias). */
  w?: number;
  b?: number;
  /** The incoming gradient's slot: the kernel is the input gradient, and `x` holds softmax's output y. */
  g?: number;
}

/** The kernel's cache key. */
export const rowNormKey = (n: RowNorm, slots: number, form: RowForm): string => `rownorm|${n.kind}|${n.x}|${n.w ?? '-'}|${n.b ?? '-'}|${n.g ?? '-'}|${slots}|${form}`;

/** WGSL of a row normalisation in the `subgroup` or `tree` form of wgsl/reduce.ts. */
export function rowNormShader(n: RowNorm, slots: number, form: RowForm): string {
  const sg = form === 'subgroup';
  const x = (k: string) => `bitcast<f32>(rd${n.x}(base + ${k}))`;
  const each = (body: string) => `for (var k = ${sg ? 'lane' : 'li'}; k < inner; k += ${sg ? 'sgs' : `${SWG}u`}) { ${body} }`;
  // `let name = ` the row's combination of every invocation's `v`, by `op`.
  const total = (name: string, v: string, op: 'max' | 'add') => (sg
    ? op === 'add'
      ? `let ${name} = subgroupAdd(${v});`
      : `let ${name}Nan = subgroupMax(select(0u, bitcast<u32>(${v}), isnan_f(${v})));
let ${name} = select(subgroupMax(${v}), bitcast<f32>(${name}Nan), ${name}Nan != 0u);`
    : `SV[li] = ${v};
workgroupBarrier();
for (var s = ${SWG / 2}u; s > 0u; s = s >> 1u) {
  if (li < s) { SV[li] = ${op === 'max' ? 'max_f(SV[li], SV[li + s])' : 'SV[li] + SV[li + s]'}; }
  workgroupBarrier();
}
let ${name} = SV[0];
workgroupBarrier();`);
  const store = (v: string) => `S0[dst + k] = bitcast<u32>(${v});`;
  const g = (k: string) => `bitcast<f32>(rd${n.g}(P[8] + row * inner + ${k}))`;
  // layer norm's mean and rstd, of the forward and of the gradient alike
  const moments = `var part = 0.0;
${each(`part += ${x('k')};`)}
${total('sum', 'part', 'add')}
let mean = sum / f32(inner);
var dev = 0.0;
${each(`let d = ${x('k')} - mean; dev += d * d;`)}
${total('devs', 'dev', 'add')}
let rstd = 1.0 / sqrt(devs / f32(inner) + bitcast<f32>(P[7]));`;
  let body: string;
  if (n.g !== undefined) {
    if (n.kind === 'layer_norm') {
      const gy = `let gy = ${n.w === undefined ? g('k') : `${g('k')} * bitcast<f32>(rd${n.w}(P[5] + k))`}; let xh = (${x('k')} - mean) * rstd;`;
      body = `${moments}
var pg = 0.0;
var pgx = 0.0;
${each(`${gy} pg += gy; pgx += gy * xh;`)}
${total('sg', 'pg', 'add')}
${total('sgx', 'pgx', 'add')}
let mg = sg / f32(inner);
let mgx = sgx / f32(inner);
${each(`${gy} ${store('rstd * ((gy - mg) - xh * mgx)')}`)}`;
    } else {
      const log = n.kind === 'log_softmax';
      body = `var part = 0.0;
${each(`part += ${log ? g('k') : `${g('k')} * ${x('k')}`};`)}
${total('s', 'part', 'add')}
${each(store(log ? `${g('k')} - exp(${x('k')}) * s` : `${x('k')} * (${g('k')} - s)`))}`;
    }
  } else if (n.kind === 'layer_norm') {
    const affine = (v: string) => {
      const w = n.w === undefined ? v : `(${v}) * bitcast<f32>(rd${n.w}(P[5] + k))`;
      return n.b === undefined ? w : `${w} + bitcast<f32>(rd${n.b}(P[6] + k))`;
    };
    body = `${moments}
${each(store(affine(`(${x('k')} - mean) * rstd`)))}`;
  } else {
    const log = n.kind === 'log_softmax';
    body = `var acc = ${x('0u')};
${each(`acc = max_f(acc, ${x('k')});`)}
${total('m', 'acc', 'max')}
var part = 0.0;
${each(`part += exp(${x('k')} - m);`)}
${total('sum', 'part', 'add')}
let ${log ? 'ls = log(sum)' : 'inv = 1.0 / sum'};
${each(`let v = ${x('k')}; ${store(log ? '(v - m) - ls' : 'exp(v - m) * inv')}`)}`;
  }
  body = `let dst = P[3] + row * inner;\n${body}`;
  const helpers = `fn isnan_f(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }
fn max_f(a: f32, b: f32) -> f32 { return select(select(max(a, b), b, isnan_f(b)), a, isnan_f(a)); }
`;
  return sg
    ? `${SUBGROUPS}${slotBindings(slots)}${helpers}${subgroupRowMain(body)}`
    : `${slotBindings(slots)}var<workgroup> SV: array<f32, ${SWG}>;\n${helpers}${rowMain(SWG, body.replace(/^/gm, '  '))}`;
}
