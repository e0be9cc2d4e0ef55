/**
 * The elementwise family: one template for every kernel that computes output element `i` from
 * strided inputs (unary, binary, where, copy with a dtype cast, fill, arange).
 *
 * Inputs are (shape, strides, offset) views, so broadcasting (stride 0), transposes and slices
 * need no copy. The shader is specialised on the rank and on which inputs are contiguous, so
 * the common case compiles to a plain `i + offset` load. Params are an `array<u32>` block:
 *   [0] n, [1..9) shape, [9] output offset, then per input (offset, strides[8]), then 4 f32
 *   scalars, then the device-check code, then a second check's code (a float -> int64 cast's range).
 *
 * Device checks: an expression that calls `divisor_i(b)` (the integer divisions of the op
 * table) makes a checking kernel: it binds the device's error buffer after its storages
 * (`errorBinding` in wgsl/index.ts), and a zero divisor records the params' check code there,
 * which the worker turns into PyTorch's ZeroDivisionError at the next sync point.
 * The output is contiguous from its offset; a packed output dtype runs one invocation per
 * 32-bit word, so its offset must be word-aligned (allocator blocks are 512-byte aligned).
 */
import { StorageCode } from '../ts/dtype.js';
import { bits, computeType, convert, elementsPerWord, helpers, load, loadWide, slotBindings, valueClass, wgslType, type ValueClass } from './dtype.js';
import { errorBinding } from './index.js';
import { ENABLE_F16, HALF_HELPERS, loadLane, loadVec, needsF16, slotKind, storeVec, vecBindings, vecType } from './half.js';
import { I64_PRELUDE, i64Checks } from './int64.js';

/** Workgroup size of 1-D kernels. */
export const WG = 256;
/** Dispatch width: grids larger than this many workgroups fold into y. */
export const MAX_X = 65535;

/** One input of a map kernel. */
export interface MapInput {
  dt: StorageCode;
  contiguous: boolean;
  /** The binding slot of its segment (0 when it shares the output's segment). */
  slot: number;
  /**
   * A JS scalar operand: no binding; its storage bits (in the low bits of a word) are the
   * params word of its view's offset, so `x + 1` is one kernel with no 0-dim tensor.
   */
  scalar?: boolean;
}

/** Describes a map kernel; `expr` computes the value in the output's compute type. */
export interface MapKernel {
  rank: number;
  inputs: MapInput[];
  /** Distinct segment buffers bound (the output's is slot 0). */
  slots: number;
  outDt: StorageCode;
  /**
   * A WGSL expression over `x0`, `x1`, … (inputs in their value classes, `valueClass`: int64 as
   * a `vec2<u32>`), `i` (u32 element index) and `s0..s3`.
   */
  expr: string;
  /** The class `expr` yields; it is converted to the output's class. */
  exprType: ValueClass;
  /** Extra WGSL functions the expression calls. */
  prelude?: string;
  /** The vec4 path binds float16-only storages as `vec4<f16>` (`shader-f16`, see wgsl/half.ts). */
  nativeF16?: boolean;
}

/** Whether a map expression checks its divisors (see the module's note): its kernel binds the error buffer. */
export const checksDivisor = (expr: string): boolean => expr.includes('divisor_i(') || expr.includes('divisor_i64(') || expr.includes('_ck(');

/** Whether a map kernel touches int64 (then it takes the int64 helpers of wgsl/int64.ts). */
const usesI64 = (k: MapKernel): boolean => k.outDt === StorageCode.I64 || k.exprType === 'i64' || k.inputs.some((inp) => inp.dt === StorageCode.I64);

/**
 * The WGSL of a checking kernel: the error buffer after `slots` storages, `divisor_i` (a zero
 * divisor records code word `codeWord`), and with `i64` the int64 checks of wgsl/int64.ts
 * (`divisor_i64`, and `f2i64_ck` for float -> int64 casts, which record the next code word).
 */
function divisorCheck(slots: number, codeWord: number, i64: boolean): string {
  return `${errorBinding(slots)}${i64 ? i64Checks(`P[${codeWord}u]`, `P[${codeWord + 1}u]`) : ''}fn divisor_i(b: i32) -> i32 {
  if (b == 0i) { fail(P[${codeWord}u], 0i); }
  return b;
}
`;
}

/** Params words a map kernel uses. */
export const mapParamWords = (nInputs: number): number => 10 + nInputs * 9 + 6;

/** The params block of a map kernel: n, shape, the output's element offset, each input's view, scalars, the check code. */
export function mapParams(n: number, shape: number[], outOffset: number, inputs: { strides: number[]; offset: number }[], scalars: number[] = [], checkCode = 0): ArrayBuffer {
  const words = new Uint32Array(mapParamWords(inputs.length));
  const f = new Float32Array(words.buffer);
  words[0] = n;
  shape.forEach((s, d) => (words[1 + d] = s));
  words[9] = outOffset;
  inputs.forEach((inp, k) => {
    const base = 10 + k * 9;
    words[base] = inp.offset;
    inp.strides.forEach((s, d) => (words[base + 1 + d] = s));
  });
  const sBase = 10 + inputs.length * 9;
  scalars.forEach((s, k) => (f[sBase + k] = s));
  words[sBase + 4] = checkCode;
  return words.buffer;
}

/** WGSL of `fn off{k}(i)`: the storage index of element `i` of input `k`'s strided view. */
function offsetFn(k: number, rank: number, contiguous = false): string {
  const base = 10 + k * 9;
  if (contiguous) return `fn off${k}(i: u32) -> u32 { return i + P[${base}u]; }\n`;
  let body = `  var r = i;\n  var o = P[${base}u];\n`;
  for (let d = rank - 1; d >= 0; d--) {
    body += d > 0
      ? `  o += (r % P[${1 + d}u]) * P[${base + 1 + d}u]; r = r / P[${1 + d}u];\n`
      : `  o += r * P[${base + 1}u];\n`;
  }
  return `fn off${k}(i: u32) -> u32 {\n${body}  return o;\n}\n`;
}

const MAIN_HEAD = `@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let n = P[0];
  let w = (wid.y * nwg.x + wid.x) * ${WG}u + li;`;

/** `fn rdP(i)`, the params reader scalar operands load through, when a kernel has any. */
const scalarReader = (k: MapKernel): string => (k.inputs.some((inp) => inp.scalar) ? `fn rdP(i: u32) -> u32 { return P[i]; }\n` : '');

/** WGSL source of a map kernel. */
export function mapShader(k: MapKernel): string {
  const epw = elementsPerWord(k.outDt);
  const sBase = 10 + k.inputs.length * 9;
  const offsets = k.inputs.map((inp, j) => (inp.scalar ? '' : offsetFn(j, k.rank, inp.contiguous))).join('') + scalarReader(k);
  const loads = k.inputs.map((inp, j) => `  let x${j} = ${inp.scalar
    ? (inp.dt === StorageCode.I64 ? `i64_from_i32(bitcast<i32>(P[${10 + j * 9}u]))` : load('rdP', inp.dt, `${(10 + j * 9) * elementsPerWord(inp.dt)}u`))
    : loadWide(`rd${inp.slot}`, inp.dt, `off${j}(i)`)};`).join('\n');
  const value = convert(`(${k.expr})`, k.exprType, k.outDt);
  const scalars = [0, 1, 2, 3].map((j) => `  let s${j} = bitcast<f32>(P[${sBase + j}u]);`).join('\n');
  const compute = `fn value(i: u32) -> ${wgslType(valueClass(k.outDt))} {\n${scalars}\n${loads}\n  return ${value};\n}\n`;
  const store = k.outDt === StorageCode.I64
    ? `  if (w >= n) { return; }\n  let v = value(w);\n  S0[2u * (P[9] + w)] = v.x;\n  S0[2u * (P[9] + w) + 1u] = v.y;`
    : epw === 1
    ? `  if (w >= n) { return; }\n  S0[P[9] + w] = ${bits('value(w)', k.outDt)};`
    : `  if (w * ${epw}u >= n) { return; }
  var word = 0u;
  for (var j = 0u; j < ${epw}u; j++) {
    let i = w * ${epw}u + j;
    if (i < n) { word |= ${bits('value(i)', k.outDt)} << (j * ${32 / epw}u); }
  }
  S0[P[9] / ${epw}u + w] = word;`;
  const i64 = usesI64(k);
  const check = checksDivisor(k.expr) ? divisorCheck(k.slots, sBase + 4, i64) : '';
  return `${slotBindings(k.slots)}${i64 ? I64_PRELUDE : ''}${check}${helpers(k.outDt)}${k.prelude ?? ''}
${offsets}
${compute}
${MAIN_HEAD}
${store}
}
`;
}

/** Invocations a map kernel over `n` elements of `outDt` needs. */
export const mapInvocations = (n: number, outDt: StorageCode): number => (outDt === StorageCode.I64 ? n : Math.ceil(n / elementsPerWord(outDt)));

/**
 * A copy into a strided destination (`dst.copy_(src)` where dst is a view): input 0 is the
 * source, input 1 the destination's view. Packed destinations are written with atomics, since
 * neighbouring elements share a word.
 */
export function scatterShader(rank: number, srcDt: StorageCode, dstDt: StorageCode, srcSlot: number, slots: number): string {
  const epw = elementsPerWord(dstDt);
  const i64 = srcDt === StorageCode.I64 || dstDt === StorageCode.I64;
  const v = convert(loadWide(`rd${srcSlot}`, srcDt, 'off0(i)'), valueClass(srcDt), dstDt);
  const write = dstDt === StorageCode.I64
    ? `  S0[2u * d] = v.x;\n  S0[2u * d + 1u] = v.y;`
    : epw === 1
    ? `  S0[d] = ${bits('v', dstDt)};`
    : `  let sh = (d % ${epw}u) * ${32 / epw}u;
  atomicAnd(&S0[d / ${epw}u], ~(${epw === 4 ? '0xffu' : '0xffffu'} << sh));
  atomicOr(&S0[d / ${epw}u], ${bits('v', dstDt)} << sh);`;
  return `${slotBindings(slots, epw > 1)}${i64 ? I64_PRELUDE : ''}${helpers(dstDt)}
${offsetFn(0, rank)}${offsetFn(1, rank)}
${MAIN_HEAD}
  let i = w;
  if (i >= n) { return; }
  let v = ${v};
  let d = off1(i);
${write}
}
`;
}

/**
 * The vec4 path of a map kernel: the output is 32-bit or a 16-bit float and its offset a multiple
 * of 4, and each invocation writes 4 elements (one 16-byte word, or 8 bytes of 16-bit floats,
 * see wgsl/half.ts; 8-bit and int64 operands take `mapShader`). An input contiguous with the
 * output's shape at an offset that is a multiple of 4 loads its 4 elements as one word too (its
 * `contiguous` flag). Any other strided input (a broadcast such as `x - x.max(-1, true).values` or
 * a bias, a transpose, a misaligned slice) computes its offset once per word, with the divisions,
 * and steps by its innermost stride for the other three lanes; that needs the 4 lanes in one row
 * of the output (rank ≤ 1, or an innermost size that is a multiple of 4). On lavapipe it cuts the
 * integer divisions, which run one lane at a time there, by four.
 * Each binding's WGSL type depends on the dtypes that use it (`slotKind`); float16 binds as
 * `vec4<f16>` with `nativeF16`. The lanes compute in f32 or i32 whatever the storage.
 * The last word may run past `n` by up to 3 elements: reads stay within the buffers (robust
 * access), and the extra writes land in the output block's padding (blocks are 512-byte
 * multiples, outputs start block-aligned), never in another tensor.
 */
export function mapVec4Shader(k: MapKernel): string {
  const kinds = Array.from({ length: k.slots }, (_, s) => slotKind(
    [...(s === 0 ? [k.outDt] : []), ...k.inputs.filter((inp) => !inp.scalar && inp.slot === s).map((inp) => inp.dt)], k.nativeF16 ?? false));
  const sBase = 10 + k.inputs.length * 9;
  const strided = (inp: MapInput) => !inp.scalar && !inp.contiguous;
  const offsets = k.inputs.map((inp, j) => (strided(inp) ? offsetFn(j, k.rank) : '')).join('') + scalarReader(k);
  const scalars = [0, 1, 2, 3].map((j) => `  let s${j} = bitcast<f32>(P[${sBase + j}u]);`).join('\n');
  const words = k.inputs.map((inp, j) => (inp.scalar
    ? `  let v${j} = ${load('rdP', inp.dt, `${(10 + j * 9) * elementsPerWord(inp.dt)}u`)};`
    : inp.contiguous
      ? `  let v${j} = ${loadVec(inp.dt, kinds[inp.slot], inp.slot, `P[${10 + j * 9}u] / 4u + w`)};`
      : `  let b${j} = off${j}(w * 4u);\n  let t${j} = P[${10 + j * 9 + Math.max(k.rank, 1)}u];`)).join('\n');
  const lanes = k.inputs.map((inp, j) => `    let x${j} = ${inp.scalar ? `v${j}` : inp.contiguous ? `v${j}[c]` : loadLane(inp.dt, kinds[inp.slot], inp.slot, `b${j} + c * t${j}`)};`).join('\n');
  const value = convert(`(${k.expr})`, k.exprType, k.outDt);
  const check = checksDivisor(k.expr) ? divisorCheck(k.slots, sBase + 4, false) : '';
  const wide = kinds.includes('w2');
  return `${needsF16(kinds) ? ENABLE_F16 : ''}${vecBindings(kinds)}${wide ? HALF_HELPERS : ''}${check}${k.prelude ?? ''}
${offsets}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let n = P[0];
  let w = (wid.y * nwg.x + wid.x) * ${WG}u + li;
  if (w * 4u >= n) { return; }
${scalars}
${words}
  var o: ${vecType(k.outDt)};
  for (var c = 0u; c < 4u; c++) {
    let i = w * 4u + c;
    if (i >= n) { break; }
${lanes}
    o[c] = ${value};
  }
  ${storeVec(k.outDt, kinds[0], 'P[9] / 4u + w', 'o')}
}
`;
}
