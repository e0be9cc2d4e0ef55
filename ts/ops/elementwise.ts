/**
 * Elementwise ops from the op table: checks, promotion, broadcasting, then one kernel.
 *
 * Inputs are first brought to the op's compute dtype (a cast kernel, only when an input's
 * dtype differs), so each kernel sees one input dtype. Broadcasting is done with strides:
 * a broadcast input is read with stride 0, never materialised. JS numbers take part in
 * promotion as Python scalars do, and reach the kernel as parameters (their bits in the
 * compute dtype), not as 0-dim tensors.
 */
import { checkFits, f32ToBF16, f32ToF16, isFloating, resultType, scalarName, storageCode, type DType } from '../dtype.js';
import { alloc, emit, ref, sameDevice, place } from '../runtime/dispatch.js';
import { broadcastFor, broadcastStrides, fmt, MAX_KERNEL_RANK } from '../shape.js';
import { Tensor } from '../tensor.js';
import { full } from './creation.js';
import { isGradEnabled, op as recorded } from '../autograd/graph.js';
import { sumTo } from './reduce-kernel.js';
import { elementwiseOp, type ElementwiseOp, type GradMath } from './table.js';
import { bindArgs, checkOptions, type PyArgs } from '../args.js';
import { cast } from './cast.js';
import type { Command, Operand } from '../ir/commands.js';
import { autocastCall, autocasting } from '../amp/autocast.js';

/** A tensor or a JS scalar operand. */
export type Scalar = number | boolean;
export type TensorOrScalar = Tensor | Scalar;

const BOOL_ERRORS: Record<string, string> = {
  neg: 'Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.',
  sub: 'Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.',
};

/** The dtype an op computes in and the dtype it returns, for a promoted input dtype. */
/** The operands of an op, for an error message (built only when one is thrown). */
function operandsText(a: TensorOrScalar, b?: TensorOrScalar): string {
  const one = (v: TensorOrScalar) => (v instanceof Tensor ? `${fmt(v.shape)} ${v.dtype}` : `scalar ${v}`);
  return b === undefined ? `input ${one(a)}` : `${one(a)} and ${one(b)}`;
}

/** The compute and result dtypes of an op on `device`; `a` and `b` are its operands, named in the errors. */
function dtypes(op: ElementwiseOp, promoted: DType, device: Tensor['device'], a: TensorOrScalar, b?: TensorOrScalar): { compute: DType; out: DType } {
  switch (op.dtypes) {
    case 'integral':
      // PyTorch names the kernel: "bitwise_and_cpu" (its CUDA one "bitwise_and_cuda", here "_gpu")
      if (isFloating(promoted)) throw new TypeError(`"${op.name}_${device.type}" not implemented for '${scalarName(promoted)}' (${operandsText(a, b)}; ${op.name} takes bool and integer tensors)`);
      return { compute: promoted, out: promoted };
    case 'floating':
      if (!isFloating(promoted)) throw new TypeError(`"${op.name}" not implemented for '${scalarName(promoted)}' (${operandsText(a, b)}; ${op.name} takes floating point tensors)`);
      return { compute: promoted, out: promoted };
    case 'float': {
      const f = isFloating(promoted) ? promoted : 'float32';
      return { compute: f, out: f };
    }
    case 'bool':
      return { compute: promoted, out: 'bool' };
    case 'number':
      if (promoted === 'bool') {
        if (op.boolResult) return { compute: 'int64', out: op.boolResult };
        throw new TypeError(`${BOOL_ERRORS[op.name] ?? `"${op.name}" not implemented for 'Bool'`} (in ${op.name}, ${operandsText(a, b)})`);
      }
      return { compute: promoted, out: promoted };
    default:
      return { compute: promoted, out: promoted };
  }
}

function checkRank(op: string, shape: readonly number[]): void {
  if (shape.length > MAX_KERNEL_RANK) throw new RangeError(`${op}: tensors of more than ${MAX_KERNEL_RANK} dims are not supported (got ${shape.length})`);
}

/** Brings a tensor to the compute dtype; returns it and whether it is a temporary. */
function toCompute(t: Tensor, dtype: DType): [Tensor, boolean] {
  return t.dtype === dtype ? [t, false] : [cast(t, dtype), true];
}

/** The ops gradient rules are written in. */
const M: GradMath = {
  add: (a, b) => binaryOp('add', a, b), sub: (a, b) => binaryOp('sub', a, b), mul: (a, b) => binaryOp('mul', a, b),
  div: (a, b) => binaryOp('div', a, b), pow: (a, b) => binaryOp('pow', a, b), floorDivide: (a, b) => binaryOp('floor_divide', a, b),
  gt: (a, b) => binaryOp('gt', a, b), ge: (a, b) => binaryOp('ge', a, b), lt: (a, b) => binaryOp('lt', a, b),
  le: (a, b) => binaryOp('le', a, b), eq: (a, b) => binaryOp('eq', a, b),
  neg: (a) => unaryOp('neg', a), exp: (a) => unaryOp('exp', a), log: (a) => unaryOp('log', a), sin: (a) => unaryOp('sin', a),
  cos: (a) => unaryOp('cos', a), erf: (a) => unaryOp('erf', a), sign: (a) => unaryOp('sign', a), abs: (a) => unaryOp('abs', a),
  sigmoid: (a) => unaryOp('sigmoid', a), tanh: (a) => unaryOp('tanh', a), square: (a) => unaryOp('square', a),
  where: (c, a, b) => where(c, a, b), zerosLike: (a) => full(a.shape.slice(), 0, { dtype: a.dtype, device: a.device }),
};

/** A gradient for input `t`: broadcast dims summed away, in `t`'s dtype. */
function gradFor(t: Tensor, g: Tensor | null): Tensor | null {
  if (!g) return null;
  let r = sumTo(g, t.shape);
  if (r.dtype !== t.dtype) {
    const c = cast(r, t.dtype);
    if (r !== g) r.dispose();
    r = c;
  }
  return r;
}

/**
 * `torch.exp(x)`, `x.exp()`, …: `unaryOp` behind the autocast point. Ops built from table ops
 * call `unaryOp`/`binaryOp` directly, so their inner steps are not autocast (as in PyTorch).
 */
export function unaryApi(name: string, x: Tensor, s: number[] = []): Tensor {
  if (autocasting()) return autocastCall(name, [x, s], (x2: Tensor, s2: number[]) => unaryOp(name, x2, s2));
  return unaryOp(name, x, s);
}

/** `torch.pow(a, b)`, `a.add(b)`, …: `binaryOp` behind the autocast point (see `unaryApi`). */
export function binaryApi(name: string, a: TensorOrScalar, b: TensorOrScalar, alpha = 1): Tensor {
  if (autocasting()) return autocastCall(name, [a, b, alpha], (a2: TensorOrScalar, b2: TensorOrScalar, s: number) => binaryOp(name, a2, b2, s));
  return binaryOp(name, a, b, alpha);
}

/** Runs a one-input table op. `s` are the op's scalar options in table order. */
export function unaryOp(name: string, x: Tensor, s: number[] = []): Tensor {
  const named = elementwiseOp(name);
  sameDevice(name, [x]);
  const op = named.onBool && x.dtype === 'bool' ? elementwiseOp(named.onBool) : named;
  if (!op.grad || !(x.requiresGrad && isGradEnabled())) return unaryForward(op, x, s);
  return recorded(name, [x], () => unaryForward(op, x, s), (ctx, out) => {
    const sx = op.saves!.includes('x') ? ctx.save(x) : x, so = op.saves!.includes('out') ? ctx.save(out) : out;
    return ([g]) => [gradFor(x, op.grad!(M, { x: sx, y: sx, out: so, g: g!, s, need: [true] })[0])];
  });
}

function unaryForward(op: ElementwiseOp, x: Tensor, s: number[]): Tensor {
  const name = op.name;
  checkRank(name, x.shape);
  const { compute, out: outDt } = dtypes(op, x.dtype, x.device, x);
  const [xc, temp] = toCompute(x, compute);
  const out = alloc(x.shape, outDt, x.device);
  if (out.numel()) {
    emit(x.device, {
      k: 'unary', op: op.code, a: ref(xc), dt: storageCode(compute), out: place(out), outDt: storageCode(outDt),
      shape: x.shape.slice(), s: [s[0] ?? 0, s[1] ?? 0, s[2] ?? 0],
    });
  }
  if (temp) xc.dispose();
  return out;
}

const f32Word = new Float32Array(1), u32Word = new Uint32Array(f32Word.buffer);

/**
 * A JS scalar operand as the storage bits of its value in `dtype`: exactly what a 0-dim tensor
 * made by `full([], v, {dtype})` would hold, so passing it in the kernel's params instead of
 * as a tensor changes no result (and saves a fill, an allocation and a free per op).
 */
function scalarBits(v: Scalar, dtype: DType): number {
  const x = Number(v);
  switch (dtype) {
    case 'float32':
      f32Word[0] = x;
      return u32Word[0];
    case 'float16': return f32ToF16(x);
    case 'bfloat16': return f32ToBF16(x);
    case 'bool': return x !== 0 ? 1 : 0;
    case 'uint8': return x & 0xff;
    default:
      checkFits(x, dtype, 'full');
      return x | 0;
  }
}

/** Whether two shapes are equal. */
function sameShape(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The kernel operand for `x` over the output `shape`: a scalar's bits, or the (cast) tensor's broadcast view; `temps` collects casts. */
function operand(x: TensorOrScalar, compute: DType, shape: readonly number[], temps: Tensor[], device: Tensor['device']): Operand {
  // An int64 scalar rides in one params word when it fits 32 bits (the kernels sign-extend it); others become a 0-dim tensor.
  if (!(x instanceof Tensor) && compute === 'int64' && (Number(x) < -2147483648 || Number(x) > 2147483647)) {
    temps.push((x = full([], x, { dtype: compute, device })));
  }
  if (!(x instanceof Tensor)) return scalarBits(x, compute);
  let c = x;
  if (x.dtype !== compute) temps.push((c = cast(x, compute)));
  return ref(c, sameShape(c.shape, shape) ? c._strides : broadcastStrides(c.shape, c._strides, shape));
}

/** Runs a two-input table op with broadcasting and promotion. */
export function binaryOp(name: string, a: TensorOrScalar, b: TensorOrScalar, alpha = 1): Tensor {
  const op = elementwiseOp(name);
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) throw new TypeError(`${name}: expected at least one tensor argument`);
  // The common case, nothing to record, skips the tape's closures.
  if (!op.grad || !isGradEnabled() || !((a instanceof Tensor && a.requiresGrad) || (b instanceof Tensor && b.requiresGrad))) {
    return binaryForward(op, a, b, alpha);
  }
  const need = [a instanceof Tensor && a.requiresGrad, b instanceof Tensor && b.requiresGrad];
  const saves = op.savesFor ? [...(need[0] ? op.savesFor.x : []), ...(need[1] ? op.savesFor.y : [])] : op.saves!;
  return recorded(name, [a as Tensor, b as Tensor], () => binaryForward(op, a, b, alpha), (ctx, out) => {
    const keep = (t: TensorOrScalar, k: 'x' | 'y'): TensorOrScalar => (t instanceof Tensor && saves.includes(k) ? ctx.save(t) : t);
    const sa = keep(a, 'x'), sb = keep(b, 'y'), so = saves.includes('out') ? ctx.save(out) : out;
    const asTensor = (v: TensorOrScalar) => (v instanceof Tensor ? v : full([], v, { dtype: out.dtype, device: out.device }));
    return ([g]) => {
      const [ga, gb] = op.grad!(M, { x: asTensor(sa), y: asTensor(sb), out: so, g: g!, s: [alpha], need });
      return [need[0] ? gradFor(a as Tensor, ga) : null, need[1] ? gradFor(b as Tensor, gb) : null];
    };
  });
}

/** Integer divisions: a zero divisor raises PyTorch's ZeroDivisionError (at the call, or at the next sync point for a tensor's element). */
const INT_DIVISIONS = new Set(['floor_divide', 'trunc_divide', 'remainder']);

function binaryForward(op: ElementwiseOp, a: TensorOrScalar, b: TensorOrScalar, alpha: number): Tensor {
  const name = op.name;
  const ta = a instanceof Tensor ? a : null, tb = b instanceof Tensor ? b : null;
  const device = sameDevice(name, ta && tb ? [ta, tb] : [(ta ?? tb)!]);
  const promoted = ta && tb && ta.dtype === tb.dtype ? ta.dtype : resultType(a, b);
  // PyTorch broadcasts (TensorIterator) before its kernel refuses a dtype; only sub's bool check comes first
  if (promoted === 'bool' && BOOL_ERRORS[name]) dtypes(op, promoted, device, a, b);
  const shape = ta && tb && sameShape(ta.shape, tb.shape) ? ta.shape.slice()
    : !tb ? ta!.shape.slice() : !ta ? tb.shape.slice()
      : broadcastFor(name, [ta.shape, tb.shape], `, dtypes ${ta.dtype} and ${tb.dtype}`);
  const { compute, out: outDt } = dtypes(op, promoted, device, a, b);
  if ((name === 'add' || name === 'sub') && alpha !== 1 && !isFloating(compute) && !Number.isInteger(alpha)) {
    throw new TypeError(`For integral input tensors, argument alpha must not be a floating point number. (in ${name}, ${operandsText(a, b)}, alpha ${alpha})`);
  }
  // PyTorch's checked conversion of a scalar into a uint8 op: negative values down to -255 wrap
  // (a - b as a + 255·b), anything past 255 or below -255 raises instead of being cut to 8 bits.
  if (compute === 'uint8') {
    for (const s of [a, b]) {
      if (typeof s === 'number' && !(s > -256 && s < 256)) throw new RangeError(`value cannot be converted to type uint8_t without overflow (in ${name}, ${operandsText(a, b)})`);
    }
  }
  const intDivision = INT_DIVISIONS.has(name) && !isFloating(compute);
  if (intDivision && !tb && Number(b) === 0) throw new RangeError('ZeroDivisionError: integer division by zero');
  checkRank(name, shape);
  const temps: Tensor[] = [];
  const ra = operand(a, compute, shape, temps, device), rb = operand(b, compute, shape, temps, device);
  const out = alloc(shape, outDt, device);
  if (out.numel()) {
    const cmd: Command = { k: 'binary', op: op.code, dt: storageCode(compute), outDt: storageCode(outDt), out: place(out), shape, a: ra, b: rb, alpha };
    if (intDivision) cmd.check = { message: `ZeroDivisionError: integer division by zero (in ${name}, dtype ${compute})` };
    emit(device, cmd);
  }
  for (const t of temps) t.dispose();
  return out;
}

/** `torch.where(condition, x, y)`; the gradient goes to `x` where the condition holds, else to `y`. */
export function where(cond: Tensor, x: TensorOrScalar, y: TensorOrScalar): Tensor {
  return recorded('where', [cond, x as Tensor, y as Tensor], () => whereForward(cond, x, y), (ctx) => {
    const c = ctx.save(cond);
    return ([g]) => [
      null,
      // `where` itself, recorded under createGraph: the gradient is differentiable in g
      x instanceof Tensor && x.requiresGrad ? gradFor(x, where(c, g!, 0)) : null,
      y instanceof Tensor && y.requiresGrad ? gradFor(y, where(c, 0, g!)) : null,
    ];
  });
}

function whereForward(cond: Tensor, x: TensorOrScalar, y: TensorOrScalar): Tensor {
  if (!(cond instanceof Tensor)) throw new TypeError('where: condition must be a tensor');
  if (cond.dtype !== 'bool') {
    throw new TypeError(`where expected condition to be a boolean tensor, but got a tensor with dtype ${scalarName(cond.dtype)}`);
  }
  sameDevice('where', [cond, ...[x, y].filter((v): v is Tensor => v instanceof Tensor)]);
  const dtype = resultType(...[x, y].map((v) => (v instanceof Tensor ? { dtype: v.dtype, ndim: v.ndim } : v)));
  const shape = broadcastFor('where', [cond.shape, ...[x, y].map((v) => (v instanceof Tensor ? v.shape : []))]);
  checkRank('where', shape);
  const temps: Tensor[] = [];
  const prep = (v: TensorOrScalar) => {
    const t = v instanceof Tensor ? v : full([], v, { dtype, device: cond.device });
    if (!(v instanceof Tensor)) temps.push(t);
    const [c, temp] = toCompute(t, dtype);
    if (temp) temps.push(c);
    return c;
  };
  const xc = prep(x), yc = prep(y);
  const out = alloc(shape, dtype, cond.device);
  const r = (t: Tensor) => ref(t, broadcastStrides(t.shape, t._strides, shape));
  if (out.numel()) emit(cond.device, { k: 'where', c: r(cond), a: r(xc), b: r(yc), dt: storageCode(dtype), out: place(out), shape });
  temps.forEach((t) => t.dispose());
  return out;
}

const F32_MAX = 3.4028234663852886e38, BF16_MAX = 3.3895313892515355e38;

/** `torch.clamp(x, min, max)`; either bound may be omitted (`null`). */
export function clamp(x: Tensor, min?: number | null, max?: number | null): Tensor {
  if (min == null && max == null) throw new TypeError("torch.clamp: At least one of 'min' or 'max' must not be None");
  const dtype = resultType({ dtype: x.dtype, ndim: x.ndim }, ...[min, max].filter((v): v is number => v != null));
  const src = dtype === x.dtype ? x : cast(x, dtype);
  // PyTorch casts the bounds to the tensor's dtype first: for uint8, -2 is 254.
  const bound = (v: number | null | undefined) => (v == null ? NaN : dtype === 'uint8' ? ((Math.trunc(v) % 256) + 256) % 256 : v);
  if ((dtype === 'int64' || dtype === 'int32') && [min, max].some((v) => v != null && Math.abs(v) > 2 ** 24)) {
    // A GPU kernel's scalar options are f32, which would round such a bound: compare with exact 0-dim tensors instead.
    let out = src;
    for (const [v, op] of [[min, 'maximum'], [max, 'minimum']] as const) {
      if (v == null) continue;
      const b = full([], v, { dtype, device: x.device }), next = binaryOp(op, out, b);
      b.dispose();
      if (out !== x) out.dispose();
      out = next;
    }
    return out;
  }
  const out = unaryOp('clamp', src, [bound(min), bound(max)]);
  if (src !== x) src.dispose();
  return out;
}

/** `torch.nan_to_num(x, nan=0, posinf=max, neginf=min)`. */
export function nanToNum(x: Tensor, o: { nan?: number; posinf?: number; neginf?: number } = {}): Tensor {
  checkOptions('nan_to_num', o, ['nan', 'posinf', 'neginf']);
  if (x.dtype === 'bool') return unaryOp('sign', x); // the identity on {false, true}, as PyTorch's
  if (!isFloating(x.dtype)) return unaryOp('clamp', x, [NaN, NaN]);
  const max = x.dtype === 'float16' ? 65504 : x.dtype === 'bfloat16' ? BF16_MAX : F32_MAX;
  return unaryOp('nan_to_num', x, [o.nan ?? 0, o.posinf ?? max, o.neginf ?? -max]);
}

/** `torch.nn.functional.softplus(x, beta=1, threshold=20)`. */
export function softplus(x: Tensor, ...args: PyArgs<[beta: number, threshold: number], { beta?: number; threshold?: number }>): Tensor {
  const o = bindArgs('softplus', ['beta', 'threshold'], args, { beta: 1, threshold: 20 }, 1);
  return unaryApi('softplus', x, [o.beta ?? 1, o.threshold ?? 20]);
}

/** `torch.div(a, b, rounding_mode=)`: true division, or 'floor' / 'trunc' rounding. */
export function div(a: TensorOrScalar, b: TensorOrScalar, o: { roundingMode?: 'floor' | 'trunc' | null } = {}): Tensor {
  checkOptions('div', o, ['roundingMode']);
  const mode = o.roundingMode ?? null;
  if (mode !== null && b === 0 && !isFloating(resultType(...[a, b].map((v) => (v instanceof Tensor ? { dtype: v.dtype, ndim: v.ndim } : v))))) {
    throw new RangeError('ZeroDivisionError: integer division by zero');
  }
  if (mode === null) return binaryOp('div', a, b);
  if (mode === 'floor') return binaryOp('floor_divide', a, b);
  if (mode === 'trunc') return binaryOp('trunc_divide', a, b);
  throw new RangeError(`div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '${String(mode)}'`);
}

/** `torch.gelu(x, approximate='none'|'tanh')`. */
export function gelu(x: Tensor, ...args: PyArgs<[approximate: 'none' | 'tanh'], { approximate?: 'none' | 'tanh' }>): Tensor {
  const o = bindArgs('gelu', ['approximate'], args, {} as { approximate?: 'none' | 'tanh' }, 1);
  const a = o.approximate ?? 'none';
  if (a !== 'none' && a !== 'tanh') throw new RangeError(`approximate argument must be either none or tanh, got '${String(a)}'`);
  return unaryOp(a === 'tanh' ? 'gelu_tanh' : 'gelu', x);
}
