/**
 * The map family of the gpu worker: every elementwise op, fill, arange, copy and cast is one map
 * kernel over strided inputs (wgsl/elementwise.ts), keyed by a number on its launch path; the
 * vec4 path where the operands allow, and chunks over buffers larger than one binding.
 */
import { StorageCode } from '../../dtype.js';
import { checksDivisor, mapInvocations, mapParamWords, mapShader, mapVec4Shader, type MapKernel } from '../../../wgsl/elementwise.js';
import { computeType, elementsPerWord, type ValueClass } from '../../../wgsl/dtype.js';
import { vec4Dtype } from '../../../wgsl/half.js'; // f16: 16-bit floats on the vec4 paths
import { half } from '../half.js'; // f16: which float16 path (shader-f16 or storage)
import { WGSL_PRELUDE } from '../../ops/table.js';
import type { DeviceCheck, Place, ViewRef } from '../../ir/commands.js';
import { chunks, tooLarge } from '../split.js';
import { createScratch } from '../scratch.js';
import { buf, commandNow, compile, device, grid1d, labelOf, maxBinding, paramAlign, paramFloats, paramWords, queueDispatch, reserveParams, retired, setWindow, windowNow, type Kernel } from './core.js';
import { checkCode, deviceErrors } from './checks.js';

export const contiguousIn = (r: ViewRef, shape: number[]): boolean => {
  let acc = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    if (shape[d] !== 1 && r.strides[d] !== acc) return false;
    acc *= shape[d];
  }
  return true;
};

/** An input of a map kernel: a strided view (of `b`, or of segment `r.id`), or a JS scalar's storage bits. */
export interface MapOperand {
  r: ViewRef | number;
  dt: StorageCode;
  b?: GPUBuffer;
}

/** Short ids of map expressions, for shader keys (the table's strings hash once). */
const exprIds = new Map<string, number>();
export const NO_SCALARS: number[] = [];
/**
 * Map kernels by a numeric key: the elementwise launch path runs once per op, and hashing a
 * freshly built string key cost about 1 µs per op in the H100 worker's profile.
 */
const mapKernels = new Map<number, Kernel>();

/**
 * Runs a map kernel `expr` over strided inputs into `out` (a buffer and an element offset).
 * An expression with a device check (see wgsl/elementwise.ts) reports `check` at the next sync point.
 * This is the launch path of every elementwise op, so it keys the shader by a number (see
 * `mapKey`) and writes the params straight into the batch's params block; the kernel's
 * description is built only when its WGSL is.
 */
export function runMap(
  inputs: MapOperand[], shape: number[], out: GPUBuffer, outOffset: number, outDt: StorageCode,
  expr: string, exprType: ValueClass, scalars: number[] = NO_SCALARS, check?: DeviceCheck,
): void {
  let n = 1;
  for (const d of shape) n *= d;
  if (n === 0) return;
  if (!windowNow()) {
    let large = out.size > maxBinding;
    for (let j = 0; !large && j < inputs.length; j++) {
      const r = inputs[j].r;
      large = typeof r !== 'number' && (inputs[j].b ?? buf(r.id)).size > maxBinding;
    }
    if (large) return runMapChunks(inputs, shape, n, out, outOffset, outDt, expr, exprType, scalars, check);
  }
  let exprId = exprIds.get(expr);
  if (exprId === undefined) exprIds.set(expr, (exprId = exprIds.size));
  const bind = [out];
  // The vec4 path (wgsl/elementwise.ts): strided inputs need the 4 lanes of a word in one row.
  const rowsOf4 = shape.length <= 1 || shape[shape.length - 1] % 4 === 0;
  let vec4 = vec4Dtype(outDt) && outOffset % 4 === 0 && out.size >= 16; // f16: 16-bit floats too (wgsl/half.ts); a binding holds a whole vec4
  // per input: 1 + dt + 16 × (0 scalar, 1 contiguous, 2 strided) + 48 × slot, in 9 bits each;
  // on the vec4 path, contiguous means 16-byte words (offset a multiple of 4)
  let inputKey = 0, vec4Key = 0;
  for (const inp of inputs) {
    const wide = vec4Dtype(inp.dt); // f16: 16-bit floats too
    if (typeof inp.r === 'number') {
      inputKey = inputKey * 512 + 1 + inp.dt;
      vec4Key = vec4Key * 512 + 1 + inp.dt;
      vec4 &&= wide;
      continue;
    }
    const b = inp.b ?? buf(inp.r.id);
    let slot = bind.indexOf(b);
    if (slot < 0) slot = bind.push(b) - 1;
    if (b.size < 16) vec4 = false; // f16: a binding holds a whole vec4
    const contiguous = contiguousIn(inp.r, shape), words = contiguous && inp.r.offset % 4 === 0;
    inputKey = inputKey * 512 + 1 + inp.dt + 16 * (contiguous ? 1 : 2) + 48 * slot;
    vec4Key = vec4Key * 512 + 1 + inp.dt + 16 * (words ? 1 : 2) + 48 * slot;
    vec4 &&= wide && (words || rowsOf4);
  }
  if (vec4) inputKey = vec4Key;
  const code = checksDivisor(expr) ? checkCode('binary', check?.message ?? 'ZeroDivisionError: integer division by zero') : 0;
  if (code) bind.push(deviceErrors!);
  // The params block (see wgsl/elementwise.ts): n, shape, output offset, views (a scalar's bits in its offset word), scalars, check code.
  const words = mapParamWords(inputs.length), at = reserveParams(words);
  paramWords[at] = n;
  for (let d = 0; d < shape.length; d++) paramWords[at + 1 + d] = shape[d];
  paramWords[at + 9] = outOffset;
  for (let j = 0; j < inputs.length; j++) {
    const r = inputs[j].r, base = at + 10 + j * 9;
    if (typeof r === 'number') {
      paramWords[base] = r;
      continue;
    }
    paramWords[base] = r.offset;
    for (let d = 0; d < r.strides.length; d++) paramWords[base + 1 + d] = r.strides[d];
  }
  const sBase = at + 10 + inputs.length * 9;
  for (let j = 0; j < scalars.length; j++) paramFloats[sBase + j] = scalars[j];
  paramWords[sBase + 4] = code;
  paramWords[sBase + 5] = code && check?.overflow ? checkCode('binary', check.overflow) : 0;
  // exprId (10 bits), rank (4), bound buffers (3), output dtype (3), expression class (2), vec4 (1), inputs (9 each, at most 3)
  if (exprId >= 1024 || inputs.length > 3) throw new Error(`map kernel key overflow (${inputs.length} inputs, expression ${exprId})`);
  const cls = exprType === 'f32' ? 2 : exprType === 'i64' ? 1 : 0;
  const key = ((((exprId * 16 + shape.length) * 8 + bind.length) * 8 + outDt) * 8 + cls * 2 + (vec4 ? 1 : 0)) * 2 ** 27 + inputKey;
  let kernel = mapKernels.get(key);
  if (!kernel) {
    const k: MapKernel = { rank: shape.length, slots: code ? bind.length - 1 : bind.length, outDt, expr, exprType, prelude: WGSL_PRELUDE, inputs: mapInputs(inputs, bind, shape, vec4), nativeF16: half.native };
    kernel = compile(vec4 ? mapVec4Shader(k) : mapShader(k));
    mapKernels.set(key, kernel);
  }
  queueDispatch(kernel, bind, at, words, grid1d(vec4 ? Math.ceil(n / 4) : mapInvocations(n, outDt)));
}

/** `runMap` over buffers larger than one binding: contiguous 32-bit operands, in chunks (ts/worker/split.ts). */
function runMapChunks(
  inputs: MapOperand[], shape: number[], n: number, out: GPUBuffer, outOffset: number, outDt: StorageCode,
  expr: string, exprType: ValueClass, scalars: number[], check?: DeviceCheck,
): void {
  const views = inputs.filter((i): i is MapOperand & { r: ViewRef } => typeof i.r !== 'number');
  const biggest = Math.max(out.size, ...views.map((i) => (i.b ?? buf(i.r.id)).size));
  const cmd = commandNow(), label = cmd ? labelOf(cmd) : 'a map kernel';
  if (elementsPerWord(outDt) !== 1 || views.some((i) => elementsPerWord(i.dt) !== 1 || !contiguousIn(i.r, shape))) throw tooLarge(label, biggest, maxBinding, 'it has strided, 16/8-bit or int64 operands');
  const spans = [{ b: out, start: outOffset }, ...views.map((i) => ({ b: i.b ?? buf(i.r.id), start: i.r.offset }))];
  for (const c of chunks(n, spans, maxBinding, paramAlign)) {
    setWindow(c.window);
    try {
      const rel = (b: GPUBuffer, start: number) => start + c.first - c.window.get(b)! / 4;
      const part = inputs.map((i) => (typeof i.r === 'number' ? i : { ...i, b: i.b ?? buf(i.r.id), r: { id: -1, offset: rel(i.b ?? buf(i.r.id), i.r.offset), strides: [1] } }));
      runMap(part, [c.count], out, rel(out, outOffset), outDt, expr, exprType, scalars, check);
    } finally {
      setWindow(null);
    }
  }
}

/**
 * The inputs of a map kernel's description: dtype, contiguity and slot among the bound buffers.
 * On the vec4 path an input is contiguous only if it loads 16-byte words (its offset a multiple of 4).
 */
function mapInputs(inputs: MapOperand[], bind: GPUBuffer[], shape: number[], vec4: boolean): MapKernel['inputs'] {
  return inputs.map((inp) => (typeof inp.r === 'number'
    ? { dt: inp.dt, contiguous: false, slot: -1, scalar: true }
    : { dt: inp.dt, contiguous: contiguousIn(inp.r, shape) && (!vec4 || inp.r.offset % 4 === 0), slot: bind.indexOf(inp.b ?? buf(inp.r.id)) }));
}

/** Runs `write` into a 32-bit target (the output itself, or a scratch buffer cast into a packed output). */
export function viaScratch(out: Place, outDt: StorageCode, n: number, srcDt: StorageCode, write: (target: GPUBuffer, offset: number) => void): void {
  if (elementsPerWord(outDt) === 1 || (outDt === StorageCode.I64 && srcDt === StorageCode.I64)) return write(buf(out.id), out.offset);
  const tmp = createScratch(device, Math.ceil(n / 4) * 16, GPUBufferUsage.STORAGE, false, 'a packed output'); // f16: whole vec4s, the cast's vec4 path reads them
  retired.push(tmp);
  write(tmp, 0);
  runMap([{ r: { id: -1, strides: [1], offset: 0 }, dt: srcDt, b: tmp }], [n], buf(out.id), out.offset, outDt, 'x0', computeType(srcDt));
}