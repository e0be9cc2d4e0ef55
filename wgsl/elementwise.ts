/**
 * The elementwise family: one template for every kernel that computes output element `i` from
 * strided inputs (unary, binary, where, copy with a dtype cast, fill, arange).
 *
 * Inputs are (shape, strides, offset) views, so broadcasting (stride 0), transposes and slices
 * need no copy. The shader is specialised on the rank and on which inputs are contiguous, so
 * the common case compiles to a plain `i + offset` load. Params are a `array<u32>` block:
 *   [0] n, [1..9) shape, then per input (offset, strides[8]), then 4 f32 scalars.
 * The output is contiguous; a packed output dtype runs one invocation per 32-bit word.
 */
import type { StorageCode } from '../ts/dtype.js';
import { bits, computeType, convert, elementsPerWord, helpers, load } from './dtype.js';

/** Workgroup size of 1-D kernels. */
export const WG = 256;
/** Dispatch width: grids larger than this many workgroups fold into y. */
export const MAX_X = 65535;

/** One input of a map kernel. */
export interface MapInput {
  dt: StorageCode;
  contiguous: boolean;
}

/** Describes a map kernel; `expr` computes the value in the output's compute type. */
export interface MapKernel {
  rank: number;
  inputs: MapInput[];
  outDt: StorageCode;
  /** A WGSL expression over `x0`, `x1`, … (inputs in their compute types), `i` (u32 element index) and `s0..s3`. */
  expr: string;
  /** The WGSL type `expr` yields; it is converted to the output's compute type. */
  exprType: 'f32' | 'i32';
  /** Extra WGSL functions the expression calls. */
  prelude?: string;
}

/** Params slots (u32) a map kernel uses. */
export const mapParamWords = (nInputs: number): number => 9 + nInputs * 9 + 4;

/** The params block for a map kernel. */
export function mapParams(n: number, shape: number[], inputs: { strides: number[]; offset: number }[], scalars: number[] = []): ArrayBuffer {
  const words = new Uint32Array(mapParamWords(inputs.length));
  const f = new Float32Array(words.buffer);
  words[0] = n;
  shape.forEach((s, d) => (words[1 + d] = s));
  inputs.forEach((inp, k) => {
    const base = 9 + k * 9;
    words[base] = inp.offset;
    inp.strides.forEach((s, d) => (words[base + 1 + d] = s));
  });
  const sBase = 9 + inputs.length * 9;
  scalars.forEach((s, k) => (f[sBase + k] = s));
  return words.buffer;
}

/** A cache key for a map kernel. */
export const mapKey = (k: MapKernel): string =>
  `map|${k.rank}|${k.inputs.map((i) => `${i.dt}${i.contiguous ? 'c' : 's'}`).join(',')}|${k.outDt}|${k.exprType}|${k.expr}`;

function offsetFn(k: number, rank: number): string {
  const base = 9 + k * 9;
  let body = `  var r = i;\n  var o = P[${base}u];\n`;
  for (let d = rank - 1; d >= 0; d--) {
    body += d > 0
      ? `  o += (r % P[${1 + d}u]) * P[${base + 1 + d}u]; r = r / P[${1 + d}u];\n`
      : `  o += r * P[${base + 1}u];\n`;
  }
  return `fn off${k}(i: u32) -> u32 {\n${body}  return o;\n}\n`;
}

/** WGSL source of a map kernel. */
export function mapShader(k: MapKernel): string {
  const epw = elementsPerWord(k.outDt);
  const sBase = 9 + k.inputs.length * 9;
  const bindings = k.inputs.map((_, j) => `@group(0) @binding(${j + 2}) var<storage, read> X${j}: array<u32>;`).join('\n');
  const offsets = k.inputs.map((inp, j) => (inp.contiguous ? `fn off${j}(i: u32) -> u32 { return i + P[${9 + j * 9}u]; }\n` : offsetFn(j, k.rank))).join('');
  const loads = k.inputs.map((inp, j) => `  let x${j} = ${load(`X${j}`, inp.dt, `off${j}(i)`)};`).join('\n');
  const value = convert(`(${k.expr})`, k.exprType, k.outDt);
  const scalars = [0, 1, 2, 3].map((j) => `  let s${j} = bitcast<f32>(P[${sBase + j}u]);`).join('\n');
  const compute = `fn value(i: u32) -> ${computeType(k.outDt)} {\n${scalars}\n${loads}\n  return ${value};\n}\n`;
  const main = epw === 1
    ? `  if (w >= n) { return; }\n  O[w] = ${bits('value(w)', k.outDt)};`
    : `  if (w * ${epw}u >= n) { return; }
  var word = 0u;
  for (var j = 0u; j < ${epw}u; j++) {
    let i = w * ${epw}u + j;
    if (i < n) { word |= ${bits('value(i)', k.outDt)} << (j * ${32 / epw}u); }
  }
  O[w] = word;`;
  return `@group(0) @binding(0) var<storage, read> P: array<u32>;
@group(0) @binding(1) var<storage, read_write> O: array<u32>;
${bindings}
${helpers(k.outDt)}${k.prelude ?? ''}
${offsets}
${compute}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let n = P[0];
  let w = (wid.y * nwg.x + wid.x) * ${WG}u + li;
${main}
}
`;
}

/** Invocations a map kernel over `n` elements of `outDt` needs. */
export const mapInvocations = (n: number, outDt: StorageCode): number => Math.ceil(n / elementsPerWord(outDt));

/**
 * A copy into a strided destination (`dst.copy_(src)` where dst is a view). Packed
 * destinations are written with atomics, since neighbouring elements share a word.
 */
export function scatterShader(rank: number, srcDt: StorageCode, dstDt: StorageCode): string {
  const epw = elementsPerWord(dstDt);
  const v = convert(load('X0', srcDt, 'off0(i)'), computeType(srcDt), dstDt);
  const write = epw === 1
    ? `  O[d] = ${bits('v', dstDt)};`
    : `  let sh = (d % ${epw}u) * ${32 / epw}u;
  atomicAnd(&O[d / ${epw}u], ~(${epw === 4 ? '0xffu' : '0xffffu'} << sh));
  atomicOr(&O[d / ${epw}u], ${bits('v', dstDt)} << sh);`;
  return `@group(0) @binding(0) var<storage, read> P: array<u32>;
@group(0) @binding(1) var<storage, read_write> O: array<${epw === 1 ? 'u32' : 'atomic<u32>'}>;
@group(0) @binding(2) var<storage, read> X0: array<u32>;
${helpers(dstDt)}
${offsetFn(0, rank)}${offsetFn(1, rank)}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let i = (wid.y * nwg.x + wid.x) * ${WG}u + li;
  if (i >= P[0]) { return; }
  let v = ${v};
  let d = off1(i);
${write}
}
`;
}
