/**
 * `torch.nn.init`: the in-place initialisers (`normal_`, `uniform_`, `constant_`, `ones_`,
 * `zeros_`, `xavierUniform_`, `xavierNormal_`, `kaimingUniform_`, `kaimingNormal_`) and
 * `calculateGain`, with PyTorch's formulas, defaults and errors. Each writes the tensor in place
 * with recording off (as PyTorch's run under `torch.no_grad()`), so it works on parameters, and
 * returns it. The random ones draw on the tensor's device from its generator (or `generator`).
 */
import { scopedGradMode } from '../autograd/graph.js';
import type { Generator } from '../random.js';
import { Tensor } from '../tensor.js';
import { bindArgs, REQUIRED, type PyArgs } from '../ops/options.js';
import { fill_ } from '../ops/inplace.js';
import { normal_ as normalFill, uniform_ as uniformFill } from '../ops/random.js';

type Gen = { generator?: Generator | null };
/** PyTorch's nonlinearity names (its string values, unchanged). */
export type Nonlinearity = 'linear' | 'conv1d' | 'conv2d' | 'conv3d' | 'conv_transpose1d' | 'conv_transpose2d' | 'conv_transpose3d'
  | 'sigmoid' | 'tanh' | 'relu' | 'leaky_relu' | 'selu';

const noGrad = <T>(fn: () => T): T => scopedGradMode(false, fn);
const tensorArg = (op: string, t: unknown): Tensor => {
  if (!(t instanceof Tensor)) throw new TypeError(`${op}(): argument 'tensor' must be Tensor, not ${t === null ? 'null' : typeof t}`);
  return t;
};

/**
 * `nn.init.calculate_gain(nonlinearity, param = null)`: the recommended gain (1 for linear and
 * convolutions and sigmoid, 5/3 for tanh, √2 for relu, √(2/(1+slope²)) for leaky_relu, 3/4 for selu).
 */
export function calculateGain(nonlinearity: Nonlinearity, ...args: PyArgs<[param: number | null], { param?: number | null }>): number {
  const { param } = bindArgs('calculate_gain', ['param'], args, { param: null as number | null }, 1);
  if (['linear', 'conv1d', 'conv2d', 'conv3d', 'conv_transpose1d', 'conv_transpose2d', 'conv_transpose3d', 'sigmoid'].includes(nonlinearity)) return 1;
  if (nonlinearity === 'tanh') return 5 / 3;
  if (nonlinearity === 'relu') return Math.SQRT2;
  if (nonlinearity === 'leaky_relu') {
    if (param !== null && typeof param !== 'number') throw new TypeError(`negative_slope ${param} not a valid number`);
    const slope = param ?? 0.01;
    return Math.sqrt(2 / (1 + slope ** 2));
  }
  if (nonlinearity === 'selu') return 3 / 4;
  throw new RangeError(`Unsupported nonlinearity ${nonlinearity}`);
}

/** fan_in and fan_out: dims 1 and 0 times the receptive field (the product of the dims after 2). */
function fans(t: Tensor): [number, number] {
  if (t.ndim < 2) throw new RangeError('Fan in and fan out can not be computed for tensor with fewer than 2 dimensions');
  const receptive = t.shape.slice(2).reduce((a, b) => a * b, 1);
  return [t.shape[1] * receptive, t.shape[0] * receptive];
}

/** `nn.init.uniform_(tensor, a = 0, b = 1, {generator})`. */
export function uniform_(tensor: Tensor, ...args: PyArgs<[a: number, b: number], { a?: number; b?: number } & Gen>): Tensor {
  const o = bindArgs('uniform_', ['a', 'b', 'generator'], args, { a: 0, b: 1, generator: null as Generator | null }, 1, 2);
  return noGrad(() => uniformFill(tensorArg('uniform_', tensor), o.a, o.b, { generator: o.generator }));
}

/** `nn.init.normal_(tensor, mean = 0, std = 1, {generator})`. */
export function normal_(tensor: Tensor, ...args: PyArgs<[mean: number, std: number], { mean?: number; std?: number } & Gen>): Tensor {
  const o = bindArgs('normal_', ['mean', 'std', 'generator'], args, { mean: 0, std: 1, generator: null as Generator | null }, 1, 2);
  return noGrad(() => normalFill(tensorArg('normal_', tensor), o.mean, o.std, { generator: o.generator }));
}

/** `nn.init.constant_(tensor, val)`. */
export function constant_(tensor: Tensor, ...args: PyArgs<[val: number], { val?: number }>): Tensor {
  const { val } = bindArgs('constant_', ['val'], args, { val: REQUIRED as number }, 1);
  return noGrad(() => fill_(tensorArg('constant_', tensor), val));
}

/** `nn.init.ones_(tensor)`. */
export const ones_ = (tensor: Tensor): Tensor => noGrad(() => fill_(tensorArg('ones_', tensor), 1));
/** `nn.init.zeros_(tensor)`. */
export const zeros_ = (tensor: Tensor): Tensor => noGrad(() => fill_(tensorArg('zeros_', tensor), 0));

/** `nn.init.xavier_uniform_(tensor, gain = 1, {generator})`: U(−a, a), a = gain·√(6/(fan_in + fan_out)). */
export function xavierUniform_(tensor: Tensor, ...args: PyArgs<[gain: number], { gain?: number } & Gen>): Tensor {
  const o = bindArgs('xavier_uniform_', ['gain', 'generator'], args, { gain: 1, generator: null as Generator | null }, 1, 1);
  const [fin, fout] = fans(tensorArg('xavier_uniform_', tensor));
  const a = o.gain * Math.sqrt(6 / (fin + fout));
  return noGrad(() => uniformFill(tensor, -a, a, { generator: o.generator }));
}

/** `nn.init.xavier_normal_(tensor, gain = 1, {generator})`: N(0, std²), std = gain·√(2/(fan_in + fan_out)). */
export function xavierNormal_(tensor: Tensor, ...args: PyArgs<[gain: number], { gain?: number } & Gen>): Tensor {
  const o = bindArgs('xavier_normal_', ['gain', 'generator'], args, { gain: 1, generator: null as Generator | null }, 1, 1);
  const [fin, fout] = fans(tensorArg('xavier_normal_', tensor));
  return noGrad(() => normalFill(tensor, 0, o.gain * Math.sqrt(2 / (fin + fout)), { generator: o.generator }));
}

/** Keywords of the kaiming initialisers. */
export interface KaimingOptions { a?: number; mode?: 'fan_in' | 'fan_out'; nonlinearity?: Nonlinearity; generator?: Generator | null }
type KaimingArgs = PyArgs<[a: number, mode: 'fan_in' | 'fan_out', nonlinearity: Nonlinearity], KaimingOptions>;

/** The standard deviation kaiming's formulas give: gain / √fan. */
function kaimingStd(op: string, tensor: Tensor, args: readonly unknown[]): [number, Generator | null] {
  const o = bindArgs(op, ['a', 'mode', 'nonlinearity', 'generator'], args, { a: 0, mode: 'fan_in' as string, nonlinearity: 'leaky_relu' as Nonlinearity, generator: null as Generator | null }, 1, 3);
  tensorArg(op, tensor);
  if (tensor.numel() === 0) return [0, o.generator];
  if (o.mode !== 'fan_in' && o.mode !== 'fan_out') throw new RangeError(`Mode ${o.mode} not supported, please use one of fan_in, fan_out`);
  const [fin, fout] = fans(tensor);
  return [calculateGain(o.nonlinearity, o.a) / Math.sqrt(o.mode === 'fan_in' ? fin : fout), o.generator];
}

/** `nn.init.kaiming_uniform_(tensor, a = 0, mode = 'fan_in', nonlinearity = 'leaky_relu', {generator})`: U(−b, b), b = gain·√(3/fan). */
export function kaimingUniform_(tensor: Tensor, ...args: KaimingArgs): Tensor {
  const [std, generator] = kaimingStd('kaiming_uniform_', tensor, args);
  if (tensor.numel() === 0) return tensor;
  const bound = Math.sqrt(3) * std;
  return noGrad(() => uniformFill(tensor, -bound, bound, { generator }));
}

/** `nn.init.kaiming_normal_(tensor, a = 0, mode = 'fan_in', nonlinearity = 'leaky_relu', {generator})`: N(0, (gain/√fan)²). */
export function kaimingNormal_(tensor: Tensor, ...args: KaimingArgs): Tensor {
  const [std, generator] = kaimingStd('kaiming_normal_', tensor, args);
  if (tensor.numel() === 0) return tensor;
  return noGrad(() => normalFill(tensor, 0, std, { generator }));
}
