/**
 * `F.groupNorm` and `F.rmsNorm`, composed from reductions and elementwise ops (autograd derives
 * their gradients), in f32 for 16-bit float inputs as PyTorch accumulates them.
 */
import { ReduceOp } from '../ir/ops.js';
import { sameDevice } from '../runtime/dispatch.js';
import { fmt, numel } from '../shape.js';
import type { Tensor } from '../tensor.js';
import { binaryOp, unaryOp } from './elementwise.js';
import { checkFloat } from './nn.js';
import { bindArgs, type PyArgs } from '../args.js';
import { reduce } from './reduce.js';
import { tidy } from './scoped.js';
import * as V from './views.js';

const add = (a: Tensor, b: Tensor | number) => binaryOp('add', a, b);
const mul = (a: Tensor, b: Tensor | number) => binaryOp('mul', a, b);

/** The f32 machine epsilon (`torch.finfo(torch.float32).eps`), and the 16-bit ones. */
const FINFO_EPS: Record<string, number> = { float32: 1.1920928955078125e-7, float16: 0.0009765625, bfloat16: 0.0078125 };

/** Runs `f` on `x` in f32 when it is a 16-bit float and casts the result back. */
function inF32(x: Tensor, f: (x: Tensor) => Tensor): Tensor {
  if (x.dtype !== 'float16' && x.dtype !== 'bfloat16') return f(x);
  return tidy(() => V.cast(f(V.cast(x, 'float32')), x.dtype));
}

/**
 * `F.group_norm(input, numGroups, weight = null, bias = null, eps = 1e-5)`: input `[N, C, *]`
 * normalised over each group of `C / numGroups` channels (and all of `*`), then scaled and
 * shifted per channel.
 */
export function groupNorm(input: Tensor, numGroups: number,
  ...args: PyArgs<[weight: Tensor | null, bias: Tensor | null, eps: number], { weight?: Tensor | null; bias?: Tensor | null; eps?: number }>): Tensor {
  const op = 'group_norm';
  const { weight, bias, eps } = bindArgs(op, ['weight', 'bias', 'eps'], args, { weight: null as Tensor | null, bias: null as Tensor | null, eps: 1e-5 }, 2);
  checkFloat(op, input);
  sameDevice(op, [input, ...[weight, bias].filter((t): t is Tensor => !!t)]);
  if (input.ndim < 2) throw new RangeError(`${op}(): Expected at least 2 dimensions for input tensor but received ${input.ndim} (input ${fmt(input.shape)})`);
  const [N, C] = input.shape;
  if (!Number.isInteger(numGroups) || numGroups <= 0 || C % numGroups !== 0) {
    throw new RangeError(`Expected number of channels in input to be divisible by num_groups, but got input of shape ${fmt(input.shape)} and num_groups=${numGroups} (${op})`);
  }
  for (const [name, t] of [['weight', weight], ['bias', bias]] as const) {
    if (t && (t.ndim !== 1 || t.shape[0] !== C)) throw new RangeError(`Expected ${name} to be a vector of size equal to the number of channels in input, but got ${name} of shape ${fmt(t.shape)} and input of shape ${fmt(input.shape)} (${op})`);
  }
  const spatial = input.shape.slice(2), perChannel = [C, ...spatial.map(() => 1)];
  return inF32(input, (x) => tidy(() => {
    const g = V.reshape(x, [N, numGroups, numel(input.shape) / Math.max(N * numGroups, 1)]);
    const xc = binaryOp('sub', g, reduce(ReduceOp.Mean, g, 2, true));
    const rstd = unaryOp('rsqrt', add(reduce(ReduceOp.Mean, unaryOp('square', xc), 2, true), eps));
    let y = V.reshape(mul(xc, rstd), input.shape.slice());
    if (weight) y = mul(y, V.reshape(weight, perChannel));
    if (bias) y = add(y, V.reshape(bias, perChannel));
    return y;
  }));
}

/**
 * `F.rms_norm(input, normalizedShape, weight = null, eps = null)`: `x / √(mean(x²) + eps) · weight`
 * over the last dims; `eps` defaults to the dtype's machine epsilon (`torch.finfo(dtype).eps`).
 */
export function rmsNorm(input: Tensor, normalizedShape: number | number[],
  ...args: PyArgs<[weight: Tensor | null, eps: number | null], { weight?: Tensor | null; eps?: number | null }>): Tensor {
  const op = 'rms_norm';
  const { weight, eps } = bindArgs(op, ['weight', 'eps'], args, { weight: null as Tensor | null, eps: null as number | null }, 2);
  checkFloat(op, input);
  const ns = typeof normalizedShape === 'number' ? [normalizedShape] : normalizedShape;
  sameDevice(op, weight ? [input, weight] : [input]);
  if (ns.length === 0 || ns.length > input.ndim || ns.some((s, i) => s !== input.shape[input.ndim - ns.length + i])) {
    throw new RangeError(`Given normalized_shape=${fmt(ns)}, expected input with shape [*, ${ns.join(', ')}], but got input of size${fmt(input.shape)} (${op})`);
  }
  if (weight && weight.shape.join() !== ns.join()) {
    throw new RangeError(`Expected weight to be of same shape as normalized_shape, but got weight of shape ${fmt(weight.shape)} and normalized_shape = ${fmt(ns)} (${op})`);
  }
  const dims = ns.map((_, i) => input.ndim - ns.length + i);
  const e = eps ?? FINFO_EPS[input.dtype];
  return inF32(input, (x) => tidy(() => {
    const y = mul(x, unaryOp('rsqrt', add(reduce(ReduceOp.Mean, unaryOp('square', x), dims, true), e)));
    return weight ? mul(y, weight.dtype === x.dtype ? weight : V.cast(weight, x.dtype)) : y;
  }));
}
