/**
 * `torch.nn.init`: fills a parameter in place, with grad mode off (as PyTorch's run under
 * `no_grad`, so a leaf that requires grad may be written), on the parameter's device, from that
 * device's generator unless one is given. Fan-in and fan-out are PyTorch's: `size(1)` and
 * `size(0)` times the receptive field (the product of the dims after the first two).
 */
import { withGradMode } from '../autograd/graph.js';
import { fromHost } from '../ops/creation.js';
import { bindArgs, REQUIRED, type PyArgs } from '../args.js';
import { normal_ as normalOp, uniform_ as uniformOp } from '../ops/random.js';
import { defaultGenerator, type Generator } from '../random.js';
import { fmt } from '../shape.js';
import type { Tensor } from '../tensor.js';

type Gen = { generator?: Generator | null };
/** The nonlinearities `calculateGain` knows. */
export type Nonlinearity = 'linear' | 'conv1d' | 'conv2d' | 'conv3d' | 'conv_transpose1d' | 'conv_transpose2d' | 'conv_transpose3d' | 'sigmoid' | 'tanh' | 'relu' | 'leaky_relu' | 'selu';

const noGrad = <T>(f: () => T): T => withGradMode(false, f);

/** `calculateGain(nonlinearity, param = null)`: the recommended gain (√2 for relu, 5/3 for tanh, √(2/(1+slope²)) for leaky_relu…). */
export function calculateGain(nonlinearity: Nonlinearity, param: number | null = null): number {
  if (['linear', 'conv1d', 'conv2d', 'conv3d', 'conv_transpose1d', 'conv_transpose2d', 'conv_transpose3d', 'sigmoid'].includes(nonlinearity)) return 1;
  if (nonlinearity === 'tanh') return 5 / 3;
  if (nonlinearity === 'relu') return Math.SQRT2;
  if (nonlinearity === 'selu') return 3 / 4;
  if (nonlinearity === 'leaky_relu') {
    if (param !== null && typeof param !== 'number') throw new TypeError(`negative_slope ${String(param)} not a valid number`);
    const slope = param ?? 0.01;
    return Math.sqrt(2 / (1 + slope ** 2));
  }
  throw new RangeError(`Unsupported nonlinearity ${String(nonlinearity)}`);
}

/** `[fanIn, fanOut]` of a weight of at least 2 dims. */
function fans(t: Tensor): [number, number] {
  if (t.ndim < 2) throw new RangeError(`Fan in and fan out can not be computed for tensor with fewer than 2 dimensions (got ${fmt(t.shape)})`);
  const receptive = t.shape.slice(2).reduce((a, b) => a * b, 1);
  return [t.shape[1] * receptive, t.shape[0] * receptive];
}

/** `uniform_(tensor, a = 0, b = 1, {generator})`. */
export function uniform_(t: Tensor, ...args: PyArgs<[a: number, b: number], { a?: number; b?: number } & Gen>): Tensor {
  const o = bindArgs('uniform_', ['a', 'b', 'generator'], args, { a: 0, b: 1, generator: null as Generator | null }, 1);
  return noGrad(() => uniformOp(t, o.a, o.b, { generator: o.generator }));
}

/** `normal_(tensor, mean = 0, std = 1, {generator})`. */
export function normal_(t: Tensor, ...args: PyArgs<[mean: number, std: number], { mean?: number; std?: number } & Gen>): Tensor {
  const o = bindArgs('normal_', ['mean', 'std', 'generator'], args, { mean: 0, std: 1, generator: null as Generator | null }, 1);
  return noGrad(() => normalOp(t, o.mean, o.std, { generator: o.generator }));
}

/** `constant_(tensor, val)`. */
export function constant_(t: Tensor, ...args: PyArgs<[val: number], { val?: number }>): Tensor {
  const { val } = bindArgs('constant_', ['val'], args, { val: REQUIRED as number }, 1);
  return noGrad(() => t.fill_(val));
}

/** `ones_(tensor)`. */
export const ones_ = (t: Tensor): Tensor => noGrad(() => t.fill_(1));

/** `zeros_(tensor)`. */
export const zeros_ = (t: Tensor): Tensor => noGrad(() => t.fill_(0));

/** `xavier_uniform_(tensor, gain = 1, {generator})`: uniform in ±gain·√(6/(fanIn + fanOut)). */
export function xavierUniform_(t: Tensor, ...args: PyArgs<[gain: number], { gain?: number } & Gen>): Tensor {
  const o = bindArgs('xavier_uniform_', ['gain', 'generator'], args, { gain: 1, generator: null as Generator | null }, 1);
  const [fi, fo] = fans(t), a = o.gain * Math.sqrt(6 / (fi + fo));
  return noGrad(() => uniformOp(t, -a, a, { generator: o.generator }));
}

/** `xavier_normal_(tensor, gain = 1, {generator})`: normal with std gain·√(2/(fanIn + fanOut)). */
export function xavierNormal_(t: Tensor, ...args: PyArgs<[gain: number], { gain?: number } & Gen>): Tensor {
  const o = bindArgs('xavier_normal_', ['gain', 'generator'], args, { gain: 1, generator: null as Generator | null }, 1);
  const [fi, fo] = fans(t);
  return noGrad(() => normalOp(t, 0, o.gain * Math.sqrt(2 / (fi + fo)), { generator: o.generator }));
}

/** Options of the Kaiming initialisers. */
export interface KaimingOptions extends Gen { a?: number; mode?: 'fan_in' | 'fan_out'; nonlinearity?: Nonlinearity }

function kaimingStd(op: string, t: Tensor, args: readonly unknown[]): [number, Generator | null] {
  const o = bindArgs(op, ['a', 'mode', 'nonlinearity', 'generator'], args, { a: 0, mode: 'fan_in', nonlinearity: 'leaky_relu', generator: null } as Required<KaimingOptions>, 1);
  if (o.mode !== 'fan_in' && o.mode !== 'fan_out') throw new RangeError(`Mode ${String(o.mode)} not supported, please use one of fan_in, fan_out`);
  const [fi, fo] = fans(t);
  return [calculateGain(o.nonlinearity, o.a) / Math.sqrt(o.mode === 'fan_in' ? fi : fo), o.generator];
}

/** `kaiming_uniform_(tensor, a = 0, mode = 'fan_in', nonlinearity = 'leaky_relu', {generator})`: uniform in ±√3·gain/√fan. */
export function kaimingUniform_(t: Tensor, ...args: PyArgs<[a: number, mode: 'fan_in' | 'fan_out', nonlinearity: Nonlinearity], KaimingOptions>): Tensor {
  const [std, generator] = kaimingStd('kaiming_uniform_', t, args);
  return noGrad(() => uniformOp(t, -Math.sqrt(3) * std, Math.sqrt(3) * std, { generator }));
}

/** `kaiming_normal_(tensor, a = 0, mode = 'fan_in', nonlinearity = 'leaky_relu', {generator})`: normal with std gain/√fan. */
export function kaimingNormal_(t: Tensor, ...args: PyArgs<[a: number, mode: 'fan_in' | 'fan_out', nonlinearity: Nonlinearity], KaimingOptions>): Tensor {
  const [std, generator] = kaimingStd('kaiming_normal_', t, args);
  return noGrad(() => normalOp(t, 0, std, { generator }));
}

/**
 * `trunc_normal_(tensor, mean = 0, std = 1, a = -2, b = 2, {generator})`: normal values redrawn
 * until they fall in [a, b]. Drawn on the host from the (cpu) generator, then copied to the
 * tensor's device.
 */
export function truncNormal_(t: Tensor, ...args: PyArgs<[mean: number, std: number, a: number, b: number], { mean?: number; std?: number; a?: number; b?: number } & Gen>): Tensor {
  const o = bindArgs('trunc_normal_', ['mean', 'std', 'a', 'b', 'generator'], args, { mean: 0, std: 1, a: -2, b: 2, generator: null as Generator | null }, 1);
  if (!(o.a < o.b)) throw new RangeError(`trunc_normal_: expected a < b, got a=${o.a} and b=${o.b}`);
  const g = o.generator ?? defaultGenerator, n = t.numel(), out = new Float32Array(n);
  for (let filled = 0; filled < n;) {
    for (const z of g.normal(Math.max(64, 2 * (n - filled)))) {
      const v = o.mean + o.std * z;
      if (v >= o.a && v <= o.b && filled < n) out[filled++] = v;
    }
  }
  const src = fromHost(out, t.shape.slice(), 'float32', t.device);
  noGrad(() => t.copy_(src));
  src.dispose();
  return t;
}
