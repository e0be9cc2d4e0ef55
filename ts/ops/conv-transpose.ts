/**
 * `F.convTranspose2d` (and `F.convTranspose1d`), composed: the transposed convolution of x is the
 * ordinary convolution (ts/ops/conv.ts) of x with `stride - 1` zeros inserted between its
 * elements and `dilation·(k - 1) - padding` zeros around it (plus `outputPadding` at the end), by
 * the weight with its in/out channels swapped per group and its kernel flipped. Autograd derives
 * the gradients through pad, reshape, flip and conv2d.
 */
import { fmt } from '../shape.js';
import { sameDevice } from '../runtime/dispatch.js';
import { Tensor } from '../tensor.js';
import { flip } from './advanced.js';
import { conv2d, pad, type Size2 } from './conv.js';
import { checkFloat } from './nn.js';
import { bindArgs, type PyArgs } from '../args.js';
import { tidy } from './scoped.js';
import * as V from './views.js';

/** Options of `F.convTranspose2d` after (input, weight). */
export interface ConvTransposeOptions {
  bias?: Tensor | null; stride?: Size2; padding?: Size2; outputPadding?: Size2; groups?: number; dilation?: Size2;
}
type ConvTransposePositional = [bias: Tensor | null, stride: Size2, padding: Size2, outputPadding: Size2, groups: number, dilation: Size2];

const pair = (op: string, name: string, v: Size2, n: number, min: number): number[] => {
  const a = typeof v === 'number' ? Array(n).fill(v) : v.slice();
  if (a.length !== n || a.some((x) => !Number.isInteger(x) || x < min)) throw new RangeError(`${op}(): ${name} must be ${n === 1 ? 'an integer' : `an integer or ${n} integers`} >= ${min}, but got ${JSON.stringify(v)}`);
  return a;
};

/** x [N, C, H, W] with `s - 1` zeros after each element along dim `d` (the last `s - 1` dropped). */
function spread(x: Tensor, d: number, s: number): Tensor {
  if (s === 1) return x;
  const shape = x.shape.slice(), n = shape[d];
  const withDim = V.unsqueeze(x, d + 1); // [..., n, 1, ...]
  const padding = Array(2 * (x.ndim - d - 1)).fill(0).concat([0, s - 1]); // pads dim d + 1 to s
  const spaced = V.reshape(pad(withDim, padding), [...shape.slice(0, d), n * s, ...shape.slice(d + 1)]);
  return V.narrow(spaced, d, 0, (n - 1) * s + 1);
}

function convTransposeNd(op: string, dims: 1 | 2, x: Tensor, weight: Tensor, args: readonly unknown[]): Tensor {
  const o = bindArgs(op, ['bias', 'stride', 'padding', 'outputPadding', 'groups', 'dilation'], args,
    { bias: null, stride: 1, padding: 0, outputPadding: 0, groups: 1, dilation: 1 } as ConvTransposeOptions, 2);
  checkFloat(op, x);
  checkFloat(op, weight, 'weight');
  const bias = o.bias ?? null;
  sameDevice(op, bias ? [x, weight, bias] : [x, weight]);
  const batched = x.ndim === dims + 2;
  if (!batched && x.ndim !== dims + 1) throw new RangeError(`${op}(): Expected ${dims + 1}D (unbatched) or ${dims + 2}D (batched) input to ${op}, but got input of size: ${fmt(x.shape)}`);
  if (weight.ndim !== dims + 2) throw new RangeError(`${op}(): expected weight of ${dims + 2} dims [in_channels, out_channels/groups, kernel...], but got ${fmt(weight.shape)}`);
  const stride = pair(op, 'stride', o.stride!, dims, 1), padding = pair(op, 'padding', o.padding!, dims, 0);
  const outPad = pair(op, 'output_padding', o.outputPadding!, dims, 0), dilation = pair(op, 'dilation', o.dilation!, dims, 1);
  const groups = o.groups!;
  const cin = weight.shape[0], coutG = weight.shape[1], k = weight.shape.slice(2);
  const C = x.shape[batched ? 1 : 0];
  if (!Number.isInteger(groups) || groups < 1 || cin % groups !== 0) throw new RangeError(`${op}(): groups must be a positive integer dividing in_channels, but got groups=${groups} and weight ${fmt(weight.shape)}`);
  if (C !== cin) {
    throw new RangeError(`Given transposed=1, weight of size ${fmt(weight.shape)}, expected input${fmt(x.shape)} to have ${cin} channels, but got ${C} channels instead (${op})`);
  }
  outPad.forEach((p, i) => {
    if (p >= stride[i] && p >= dilation[i]) throw new RangeError(`output padding must be smaller than either stride or dilation, but got output_padding=${fmt(outPad)}, stride=${fmt(stride)}, dilation=${fmt(dilation)} (${op})`);
  });
  if (bias && (bias.ndim !== 1 || bias.shape[0] !== coutG * groups)) throw new RangeError(`${op}(): expected bias of shape [${coutG * groups}], but got ${fmt(bias.shape)}`);
  return tidy(() => {
    // as 2-D: a 1-D problem is height 1
    let h = batched ? x : V.unsqueeze(x, 0);
    if (dims === 1) h = V.unsqueeze(h, 2);
    const s2 = dims === 1 ? [1, ...stride] : stride, p2 = dims === 1 ? [0, ...padding] : padding;
    const op2 = dims === 1 ? [0, ...outPad] : outPad, d2 = dims === 1 ? [1, ...dilation] : dilation, k2 = dims === 1 ? [1, ...k] : k;
    h = spread(spread(h, 2, s2[0]), 3, s2[1]);
    const edge = (i: number) => d2[i] * (k2[i] - 1) - p2[i];
    h = pad(h, [edge(1), edge(1) + op2[1], edge(0), edge(0) + op2[0]]);
    let w = dims === 1 ? V.unsqueeze(weight, 2) : weight; // [Cin, Cout/g, kH, kW]
    w = V.reshape(V.transpose(V.reshape(w, [groups, cin / groups, coutG, k2[0], k2[1]]), 1, 2), [groups * coutG, cin / groups, k2[0], k2[1]]);
    w = flip(w, [2, 3]);
    let y = conv2d(h, w, bias, 1, 0, d2, groups);
    if (dims === 1) y = V.squeeze(y, 2);
    return batched ? y : V.squeeze(y, 0);
  });
}

/**
 * `F.conv_transpose2d(input, weight, bias = null, stride = 1, padding = 0, outputPadding = 0,
 * groups = 1, dilation = 1)`: input [N, Cin, H, W] (or unbatched), weight [Cin, Cout/groups, kH, kW];
 * the output is `(H - 1)·stride - 2·padding + dilation·(kH - 1) + outputPadding + 1` high.
 */
export function convTranspose2d(x: Tensor, weight: Tensor, ...args: PyArgs<ConvTransposePositional, ConvTransposeOptions>): Tensor {
  return convTransposeNd('conv_transpose2d', 2, x, weight, args);
}

/** `F.conv_transpose1d(input, weight, bias, stride, padding, outputPadding, groups, dilation)`: input [N, Cin, L], weight [Cin, Cout/groups, k]. */
export function convTranspose1d(x: Tensor, weight: Tensor, ...args: PyArgs<ConvTransposePositional, ConvTransposeOptions>): Tensor {
  return convTransposeNd('conv_transpose1d', 1, x, weight, args);
}

