/**
 * The pointwise ops of optimizers and the index-add family: `lerp`, `addcmul`, `addcdiv`,
 * `indexAdd`, and their in-place forms with `maskedFill_`, `scatter_`, `scatterAdd_`.
 *
 * Each is composed from differentiable ops (so autograd follows), and each in-place form is its
 * out-of-place op written back with `inPlace` (ts/ops/inplace.ts): PyTorch's refusal for a leaf
 * that requires grad, the version counter moved, a cast refused where PyTorch's `can_cast` is.
 */
import { isFloating, scalarName } from '../dtype.js';
import { Tensor } from '../tensor.js';
import { normDim } from '../shape.js';
import { binaryOp, unaryOp, where, type TensorOrScalar } from './elementwise.js';
import { inPlace } from './inplace.js';
import { maskedFill, scatter, scatterAdd } from './indexing.js';
import { bindArgs, type PyArgs } from '../args.js';
import { tidy } from './scoped.js';
import * as V from './views.js';

/** ATen's C type names, which lerp's dtype message uses. */
const C_TYPE: Record<string, string> = {
  float32: 'float', float16: 'c10::Half', bfloat16: 'c10::BFloat16', int64: 'long int', int32: 'int', uint8: 'unsigned char', bool: 'bool',
};

const tensorArg = (op: string, t: unknown, what: string): Tensor => {
  if (!(t instanceof Tensor)) throw new TypeError(`${op}(): argument '${what}' must be Tensor, not ${t === null ? 'null' : typeof t}`);
  return t;
};

/**
 * `torch.lerp(input, end, weight)`: `input + weight·(end − input)`, computed as PyTorch does
 * (from `end` when |weight| ≥ 0.5, so weight 1 gives `end` exactly); `end` (and a tensor
 * weight) must have input's dtype.
 */
export function lerp(input: Tensor, end: Tensor, weight: TensorOrScalar, ...rest: []): Tensor {
  bindArgs('lerp', [], rest, {}, 3);
  tensorArg('lerp', input, 'input');
  tensorArg('lerp', end, 'end');
  if (end.dtype !== input.dtype) throw new TypeError(`lerp: expected dtype ${C_TYPE[input.dtype]} for \`end\` but got dtype ${C_TYPE[end.dtype]}`);
  if (weight instanceof Tensor && weight.dtype !== input.dtype) throw new TypeError(`lerp: expected dtype ${C_TYPE[input.dtype]} for \`weight\` but got dtype ${C_TYPE[weight.dtype]}`);
  if (!isFloating(input.dtype)) throw new TypeError(`lerp: "lerp_kernel" not implemented for '${scalarName(input.dtype)}'`);
  if (typeof weight !== 'number' && !(weight instanceof Tensor)) throw new TypeError(`lerp(): argument 'weight' must be a number or a Tensor, not ${typeof weight}`);
  return tidy(() => {
    const diff = binaryOp('sub', end, input);
    const low = () => binaryOp('add', input, binaryOp('mul', diff, weight));
    const high = () => binaryOp('sub', end, binaryOp('mul', diff, typeof weight === 'number' ? 1 - weight : binaryOp('sub', 1, weight)));
    if (typeof weight === 'number') return Math.abs(weight) < 0.5 ? low() : high();
    return where(binaryOp('lt', unaryOp('abs', weight), 0.5), low(), high());
  });
}

/** Keywords of `addcmul`/`addcdiv`. */
export interface ValueOption { value?: number }
type ValueArgs = PyArgs<[], ValueOption>;

/** `torch.addcmul(input, tensor1, tensor2, {value = 1})`: `input + value·tensor1·tensor2`. */
export function addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, ...args: ValueArgs): Tensor {
  const { value } = bindArgs('addcmul', ['value'], args, { value: 1 }, 3, 0);
  [input, tensor1, tensor2].forEach((t, i) => tensorArg('addcmul', t, ['input', 'tensor1', 'tensor2'][i]));
  return tidy(() => {
    const p = binaryOp('mul', tensor1, tensor2);
    return binaryOp('add', input, value === 1 ? p : binaryOp('mul', p, value));
  });
}

/** `torch.addcdiv(input, tensor1, tensor2, {value = 1})`: `input + value·tensor1/tensor2` (integer operands refused, as in PyTorch). */
export function addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, ...args: ValueArgs): Tensor {
  const { value } = bindArgs('addcdiv', ['value'], args, { value: 1 }, 3, 0);
  [input, tensor1, tensor2].forEach((t, i) => tensorArg('addcdiv', t, ['input', 'tensor1', 'tensor2'][i]));
  if (!isFloating(tensor1.dtype) && !isFloating(tensor2.dtype)) {
    throw new TypeError('addcdiv: Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.');
  }
  return tidy(() => {
    const q = binaryOp('div', tensor1, tensor2);
    return binaryOp('add', input, value === 1 ? q : binaryOp('mul', q, value));
  });
}

/** Keywords of `indexAdd`. */
export interface AlphaOption { alpha?: number }

/**
 * `torch.index_add(input, dim, index, source, {alpha = 1})`: `input` with `alpha·source[i]`
 * added at `input[index[i]]` along `dim` (repeated indices accumulate). A scatter-add of the
 * source with the index spread over source's shape, so both input and source get gradients.
 */
export function indexAdd(input: Tensor, dim: number, index: Tensor, source: Tensor, ...args: PyArgs<[], AlphaOption>): Tensor {
  return indexAddAs('index_add', input, dim, index, source, args);
}

function indexAddAs(op: string, input: Tensor, dim: number, index: Tensor, source: Tensor, args: readonly unknown[]): Tensor {
  const { alpha } = bindArgs(op, ['alpha'], args, { alpha: 1 }, 4, 0);
  tensorArg(op, input, 'input');
  tensorArg(op, index, 'index');
  tensorArg(op, source, 'source');
  if (index.dtype !== 'int64' && index.dtype !== 'int32') throw new TypeError(`${op}_(): Expected dtype int32/int64 for index but got: ${scalarName(index.dtype)}`);
  if (index.ndim > 1) throw new RangeError(`${op}_(): Index is supposed to be a vector`);
  const d = normDim(dim, Math.max(1, input.ndim));
  const n = index.numel(), srcN = source.ndim ? source.shape[d] ?? 1 : 1;
  if (n !== srcN) throw new RangeError(`${op}_(): Number of indices (${n}) should be equal to source.size(dim): (${srcN}), for dim: ${dim}`);
  if (source.ndim !== input.ndim && !(source.ndim <= 1 && input.ndim <= 1)) {
    throw new RangeError(`${op}_(): Source/destination tensor must have same number of dimensions (got ${source.ndim} and ${input.ndim})`);
  }
  input.shape.forEach((s, i) => {
    if (i !== d && source.shape[i] !== s) throw new RangeError(`${op}_(): Source/destination tensor have different slice sizes: source [${source.shape.join(', ')}], destination [${input.shape.join(', ')}] at dim ${i}`);
  });
  if (source.dtype !== input.dtype) throw new TypeError(`${op}_(): self (${scalarName(input.dtype)}) and source (${scalarName(source.dtype)}) must have the same scalar type`);
  return tidy(() => {
    const x = input.ndim ? input : V.reshape(input, [1]), s = source.ndim ? source : V.reshape(source, [1]);
    const long = index.dtype === 'int64' ? V.reshape(index, [-1]) : V.cast(V.reshape(index, [-1]), 'int64');
    const spread = V.expand(V.reshape(long, s.shape.map((k, i) => (i === d ? k : 1))), s.shape.slice());
    const r = scatterAdd(x, d, V.contiguous(spread), alpha === 1 ? s : binaryOp('mul', s, alpha));
    return input.ndim ? r : V.reshape(r, []);
  });
}

/** `x.maskedFill_(mask, value)`, in place. */
export const maskedFill_ = (x: Tensor, mask: Tensor, value: number | boolean | Tensor): Tensor =>
  inPlace('masked_fill_', x, (src) => maskedFill(src, mask, value));

/**
 * `x.scatter_(dim, index, src)` or `x.scatter_(dim, index, {value})` (the PyTorch tutorial's
 * `scatter_(0, torch.tensor(y), value=1)`), in place; the `reduce` keyword is refused.
 */
export function scatter_(x: Tensor, dim: number, index: Tensor, ...args: PyArgs<[src: Tensor | number | boolean], { src?: Tensor | number | boolean; value?: number | boolean; reduce?: string }>): Tensor {
  const o = bindArgs('scatter_', ['src', 'value', 'reduce'], args, { src: undefined as Tensor | number | boolean | undefined, value: undefined as number | boolean | undefined, reduce: undefined as string | undefined }, 3, 1);
  if (o.reduce !== undefined) throw new TypeError(`scatter_(): reduce='${o.reduce}' is not supported; use scatterAdd_`);
  if ((o.src === undefined) === (o.value === undefined)) throw new TypeError('scatter_(): expects exactly one of src (a Tensor or number) and value (a number)');
  const src = (o.src ?? o.value)!;
  return inPlace('scatter_', x, (s) => scatter(s, dim, index, src));
}

/** `x.scatterAdd_(dim, index, src)`, in place. */
export const scatterAdd_ = (x: Tensor, dim: number, index: Tensor, src: Tensor): Tensor =>
  inPlace('scatter_add_', x, (s) => scatterAdd(s, dim, index, src));

/** `x.indexAdd_(dim, index, source, {alpha})`, in place. */
export const indexAdd_ = (x: Tensor, dim: number, index: Tensor, source: Tensor, ...args: PyArgs<[], AlphaOption>): Tensor =>
  inPlace('index_add_', x, (s) => indexAddAs('index_add', s, dim, index, source, args));

/** `x.addcmul_(tensor1, tensor2, {value})`, in place. */
export const addcmul_ = (x: Tensor, t1: Tensor, t2: Tensor, ...args: ValueArgs): Tensor => inPlace('addcmul_', x, (s) => addcmul(s, t1, t2, ...args));

/** `x.addcdiv_(tensor1, tensor2, {value})`, in place. */
export const addcdiv_ = (x: Tensor, t1: Tensor, t2: Tensor, ...args: ValueArgs): Tensor => inPlace('addcdiv_', x, (s) => addcdiv(s, t1, t2, ...args));

/** `x.lerp_(end, weight)`, in place. */
export const lerp_ = (x: Tensor, end: Tensor, weight: TensorOrScalar): Tensor => inPlace('lerp_', x, (s) => lerp(s, end, weight));
