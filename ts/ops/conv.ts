/**
 * Padding, im2col (`unfold`) and convolutions.
 *
 * Every sliding-window op here (conv1d/2d and the pools in pool.ts) goes through `windows`:
 * a strided view of the (padded) input with one window per output position, made contiguous —
 * no kernel beyond a copy. Windows overlap when stride < kernel extent, so the gradient of that
 * copy is a fold: each kernel offset's slice of the gradient is added into the input positions
 * it was read from, one strided read-add-write per offset (on the cpu, for float32, one
 * `foldWindows` command does them all, a plane at a time). That rule, and `pad`'s (slice the
 * gradient), are the only hand-written gradients; conv itself is windows + a batched matmul in
 * which the groups are a batch dim.
 *
 * Where the device runs them as one command (Note [composable kinds], ts/ir/kinds.ts: the cpu,
 * a GPU of a CPU adapter), a float32 input skips the pad and the copy: `paddedWindows` writes the
 * windows, padding included, with one `windows` command; its gradient is the fold onto the
 * padded extent, cropped. A device that runs `conv` and `convGrad` gets a float32 convolution
 * as one command each (`convKernel`).
 */
import { needsGrad, withGradMode, op as recorded } from '../autograd/graph.js';
import { alloc, emit, place, ref, runsAsOne, sameDevice } from '../runtime/dispatch.js';
import { fmt, numel } from '../shape.js';
import { Tensor, view } from '../tensor.js';
import { copyInto } from './copy.js';
import { full } from './creation.js';
import { binaryOp } from './elementwise.js';
import { matmul } from './matmul.js';
import { bindArgs, checkOptions, type PyArgs } from '../args.js';
import { checkAccepted, checkFloat } from './nn.js';
import { tidy } from './scoped.js';
import * as V from './views.js';
import { reduce } from './reduce.js';
import { ReduceOp } from '../ir/ops.js';
import type { ConvGeom } from '../ir/commands.js';
import { autocastCall, autocasting } from '../amp/autocast.js';

/** A size per spatial dim, or one size for all of them. */
export type Size2 = number | number[];

/** @internal Validates a per-dim size: `n` integers ≥ `min` (one number is repeated). */
export function sizes(op: string, name: string, v: Size2 | undefined, n: number, fallback: number, min: number, why?: string): number[] {
  const a = v === undefined || v === null ? new Array<number>(n).fill(fallback) : typeof v === 'number' ? new Array<number>(n).fill(v) : v;
  if (!Array.isArray(a) || (a.length !== n && a.length !== 1) || a.some((x) => !Number.isInteger(x))) {
    throw new TypeError(`${op}(): ${name} must be an integer or ${n} integers, but got ${JSON.stringify(v)}`);
  }
  const out = a.length === n ? a.slice() : new Array<number>(n).fill(a[0]);
  if (out.some((x) => x < min)) throw new RangeError(why ?? `${op}(): ${name} must be at least ${min}, but got ${fmt(out)}`);
  return out;
}

/** Window positions along a (padded) extent `n`: kernel `k`, stride `s`, dilation `d`. */
const windowCount = (n: number, k: number, s: number, d: number): number => Math.floor((n - d * (k - 1) - 1) / s) + 1;

/** Adds the gradient of windows [N, C, kh, kw, oh, ow] (any strides) back into an input of `shape`. */
function fold(g: Tensor, shape: readonly number[], k: number[], s: number[], d: number[]): Tensor {
  return withGradMode(false, () => {
    const [N, C, H, W] = shape, oh = g.shape[4], ow = g.shape[5], gs = g._strides;
    if (g.dtype === 'float32' && runsAsOne(g.device, 'foldWindows')) {
      // col2im as one command (the cpu's: a plane at a time, the same f32 sums as the composed order)
      const out = alloc(shape.slice(), 'float32', g.device);
      if (numel(shape)) {
        emit(g.device, { k: 'foldWindows', g: ref(g), out: place(out), shape: shape.slice(), kernel: k, stride: s, dilation: d, size: [oh, ow] });
      }
      return out;
    }
    const gx = full(shape.slice(), 0, { dtype: g.dtype, device: g.device });
    if (!numel(g.shape)) return gx;
    const collides = (i: number) => g.shape[4 + i] > 1 && k[i] > 1 && s[i] <= d[i] * (k[i] - 1);
    const overlap = collides(0) || collides(1);
    for (let i = 0; i < k[0]; i++) {
      for (let j = 0; j < k[1]; j++) {
        const dst = view(gx, [N, C, oh, ow], [C * H * W, H * W, s[0] * W, s[1]], i * d[0] * W + j * d[1]);
        const src = view(g, [N, C, oh, ow], [gs[0], gs[1], gs[4], gs[5]], g._offset + i * gs[2] + j * gs[3]);
        if (overlap && (i || j)) {
          const sum = binaryOp('add', dst, src);
          copyInto(dst, sum);
          sum.dispose();
        } else {
          copyInto(dst, src);
        }
        dst.dispose();
        src.dispose();
      }
    }
    return gx;
  });
}

/**
 * @internal The sliding windows of x [N, C, H, W] (already padded) as a contiguous tensor
 * [N, C, kh, kw, oh, ow], or [N, C, oh, ow, kh, kw] when `kernelLast`; gradient: `fold`.
 */
export function windows(x: Tensor, k: number[], s: number[], d: number[], kernelLast = false): Tensor {
  const [N, C, H, W] = x.shape, [sN, sC, sH, sW] = x._strides;
  const oh = windowCount(H, k[0], s[0], d[0]), ow = windowCount(W, k[1], s[1], d[1]);
  const ks = [d[0] * sH, d[1] * sW], os = [s[0] * sH, s[1] * sW];
  const [shape, strides] = kernelLast
    ? [[N, C, oh, ow, k[0], k[1]], [sN, sC, ...os, ...ks]]
    : [[N, C, k[0], k[1], oh, ow], [sN, sC, ...ks, ...os]];
  return recorded('im2col', [x], () => {
    const v = view(x, shape, strides);
    const c = V.contiguous(v);
    if (c !== v) v.dispose();
    return c;
  }, () => ([g]) => {
    if (!kernelLast) return [fold(g!, x.shape, k, s, d)];
    const t = g!._strides, gv = view(g!, [N, C, k[0], k[1], oh, ow], [t[0], t[1], t[4], t[5], t[2], t[3]]);
    const gx = fold(gv, x.shape, k, s, d);
    gv.dispose();
    return [gx];
  });
}

/** Whether the windows of x come from one `windows` command (`paddedWindows`): float32 on a device that runs it as one. */
export const fusedWindows = (x: Tensor): boolean => x.dtype === 'float32' && runsAsOne(x.device, 'windows');

/**
 * @internal The layout of `windows`, taken from x [N, C, H, W] padded by `p` = [top, left] with
 * `value` (bottom and right as far as the `size` = [oh, ow] windows reach), in one GPU kernel.
 * Gradient: `fold` onto the padded extent, then the crop of `pad`'s gradient.
 */
export function paddedWindows(x: Tensor, k: number[], s: number[], d: number[], p: number[], size: number[], kernelLast = false, value = 0): Tensor {
  const [N, C, H, W] = x.shape, [oh, ow] = size;
  const shape = kernelLast ? [N, C, oh, ow, k[0], k[1]] : [N, C, k[0], k[1], oh, ow];
  return recorded('im2col', [x], () => {
    const out = alloc(shape, 'float32', x.device);
    if (numel(shape)) {
      emit(x.device, { k: 'windows', x: ref(x), out: place(out), shape: [N, C, H, W], kernel: k, stride: s, dilation: d, padding: p, size, kernelLast, value });
    }
    return out;
  }, () => ([g]) => withGradMode(false, () => {
    const t = g!._strides;
    const gv = kernelLast ? view(g!, [N, C, k[0], k[1], oh, ow], [t[0], t[1], t[4], t[5], t[2], t[3]]) : g!;
    const gx = unwindow(gv, x.shape, k, s, d, p);
    if (gv !== g) gv.dispose();
    return [gx];
  }));
}

/**
 * The gradient of `paddedWindows` (not recorded): windows g [N, C, kh, kw, oh, ow] folded onto
 * the padded extent of an input of `shape`, then cropped to it.
 */
function unwindow(g: Tensor, shape: readonly number[], k: number[], s: number[], d: number[], p: number[]): Tensor {
  const [N, C, H, W] = shape, [oh, ow] = g.shape.slice(4);
  // the padded extent: every window position, and x itself
  const Hp = Math.max(p[0] + H, (oh - 1) * s[0] + d[0] * (k[0] - 1) + 1), Wp = Math.max(p[1] + W, (ow - 1) * s[1] + d[1] * (k[1] - 1) + 1);
  const gp = fold(g, [N, C, Hp, Wp], k, s, d);
  if (Hp === H && Wp === W) return gp;
  const r = view(gp, [N, C, H, W], gp._strides, p[0] * Wp + p[1]), gx = V.contiguous(r);
  r.dispose();
  gp.dispose();
  return gx;
}

/**
 * `F.pad(x, padding, 'constant', value)`: `padding` lists (before, after) pairs starting from the
 * last dim, as in PyTorch; negative amounts crop.
 */
export function pad(x: Tensor, padding: number[], ...args: PyArgs<[mode: 'constant', value: number], { mode?: 'constant'; value?: number }>): Tensor {
  const { mode, value } = bindArgs('pad', ['mode', 'value'], args, { mode: 'constant' as const, value: 0 }, 2);
  if (!(x instanceof Tensor)) throw new TypeError(`pad(): expected input to be a Tensor, but got ${typeof x}`);
  sameDevice('pad', [x]);
  if (!Array.isArray(padding) || padding.some((p) => !Number.isInteger(p))) throw new TypeError(`pad(): padding must be an array of integers, but got ${JSON.stringify(padding)}`);
  if (padding.length % 2) throw new RangeError(`Padding length must be divisible by 2 (pad(): got ${padding.length} values)`);
  if (padding.length / 2 > x.ndim) throw new RangeError(`Padding length too large: ${padding.length} values pad ${padding.length / 2} dims of a ${x.ndim}-dim input ${fmt(x.shape)}`);
  if (mode !== 'constant') throw new RangeError(`pad(): mode '${String(mode)}' is not supported; only 'constant' is`);
  const lo = x.shape.map(() => 0), hi = x.shape.map(() => 0);
  for (let i = 0; i < padding.length / 2; i++) [lo[x.ndim - 1 - i], hi[x.ndim - 1 - i]] = [padding[2 * i], padding[2 * i + 1]];
  const outShape = x.shape.map((n, i) => n + lo[i] + hi[i]);
  outShape.forEach((n, i) => {
    if (n < 0) throw new RangeError(`The input size ${x.shape[i]}, plus negative padding ${lo[i]} and ${hi[i]} resulted in a negative output size, which is invalid. Check dimension ${i} of your input.`);
  });
  const len = x.shape.map((n, i) => Math.max(0, n - Math.max(0, -lo[i]) - Math.max(0, -hi[i])));
  const inOff = lo.map((p) => Math.max(0, -p)), outOff = lo.map((p) => Math.max(0, p));
  const region = (t: Tensor, off: number[]) => view(t, len, t._strides, t._offset + off.reduce((a, o, i) => a + o * t._strides[i], 0));
  const copyRegion = (dst: Tensor, dOff: number[], src: Tensor, sOff: number[]) => {
    if (!numel(len)) return;
    const a = region(dst, dOff), b = region(src, sOff);
    copyInto(a, b);
    a.dispose();
    b.dispose();
  };
  return recorded('constant_pad_nd', [x], () => {
    const out = full(outShape, value, { dtype: x.dtype, device: x.device });
    copyRegion(out, outOff, x, inOff);
    return out;
  }, () => ([g]) => withGradMode(false, () => {
    if (len.every((n, i) => n === x.shape[i])) {
      const r = region(g!, outOff), c = V.contiguous(r);
      if (c !== r) r.dispose();
      return [c];
    }
    const gx = full(x.shape.slice(), 0, { dtype: g!.dtype, device: g!.device });
    copyRegion(gx, inOff, g!, outOff);
    return [gx];
  }));
}

/** Options of `unfold`. */
export interface UnfoldOptions {
  dilation?: Size2;
  padding?: Size2;
  stride?: Size2;
}

/** `F.unfold(x, kernelSize, {dilation, padding, stride})`: im2col, [N, C, H, W] → [N, C·kh·kw, L]. */
export function unfold(x: Tensor, kernelSize: Size2, ...args: PyArgs<[dilation: Size2, padding: Size2, stride: Size2], UnfoldOptions>): Tensor {
  if (!(x instanceof Tensor)) throw new TypeError(`unfold(): expected input to be a Tensor, but got ${typeof x}`);
  const o = bindArgs('unfold', ['dilation', 'padding', 'stride'], args, {} as UnfoldOptions, 2);
  checkFloat('unfold', x);
  sameDevice('unfold', [x]);
  if (x.ndim !== 3 && x.ndim !== 4) throw new RangeError(`Input Error: Only 3D or 4D input Tensors are supported (got ${x.ndim}D) (unfold of ${fmt(x.shape)})`);
  const k = sizes('unfold', 'kernel_size', kernelSize, 2, 1, 1);
  const d = sizes('unfold', 'dilation', o.dilation, 2, 1, 1), p = sizes('unfold', 'padding', o.padding, 2, 0, 0), s = sizes('unfold', 'stride', o.stride, 2, 1, 1);
  const x4shape = x.ndim === 4 ? x.shape : [1, ...x.shape];
  const oh = windowCount(x4shape[2] + 2 * p[0], k[0], s[0], d[0]), ow = windowCount(x4shape[3] + 2 * p[1], k[1], s[1], d[1]);
  if (oh < 1 || ow < 1) {
    throw new RangeError(`Given input with spatial size (${x4shape[2]}, ${x4shape[3]}), kernel_size=${fmt(k)}, dilation=${fmt(d)}, padding=${fmt(p)}, calculated shape of the array of sliding blocks as (${oh}, ${ow}), but its components must be at least one.`);
  }
  return tidy(() => {
    const x4 = x.ndim === 4 ? x : V.unsqueeze(x, 0);
    const cols = fusedWindows(x4)
      ? paddedWindows(x4, k, s, d, p, [oh, ow])
      : windows(p[0] || p[1] ? pad(x4, [p[1], p[1], p[0], p[0]]) : x4, k, s, d);
    const out = V.reshape(cols, [x4.shape[0], x4.shape[1] * k[0] * k[1], oh * ow]);
    return x.ndim === 4 ? out : V.squeeze(out, 0);
  });
}

/** Options of `conv1d` and `conv2d`. */
export interface ConvOptions {
  stride?: Size2;
  /** Zeros added on both sides of each spatial dim, or `'valid'` (none) or `'same'` (output size = input size, stride 1). */
  padding?: Size2 | 'valid' | 'same';
  dilation?: Size2;
  groups?: number;
}

/** The convolutions' parameters after (input, weight), in PyTorch's order. */
type ConvPositional = [bias: Tensor | null, stride: Size2, padding: Size2 | 'valid' | 'same', dilation: Size2, groups: number];
type ConvCall = PyArgs<ConvPositional, ConvOptions & { bias?: Tensor | null }>;

/** Checks a convolution's arguments; returns its geometry with the 1-D case as height 1. */
function convArgs(op: string, nd: 1 | 2, x: Tensor, w: Tensor, args: ConvCall) {
  const { bias: b, ...o } = bindArgs(op, ['bias', 'stride', 'padding', 'dilation', 'groups'], args, {} as ConvOptions & { bias?: Tensor | null }, 2);
  // PyTorch convolves integers too (on the CPU), but not bools
  checkAccepted(op, x);
  checkAccepted(op, w, 'weight');
  sameDevice(op, b ? [x, w, b] : [x, w]);
  if (x.ndim !== nd + 1 && x.ndim !== nd + 2) {
    throw new RangeError(`Expected ${nd + 1}D (unbatched) or ${nd + 2}D (batched) input to ${op}, but got input of size: ${fmt(x.shape)}`);
  }
  if (w.ndim !== nd + 2) throw new RangeError(`${op}(): expected weight of ${nd + 2} dims [out_channels, in_channels/groups, ${nd === 1 ? 'kW' : 'kH, kW'}], but got ${fmt(w.shape)}`);
  if (x.dtype !== w.dtype || (b && b.dtype !== x.dtype)) {
    throw new TypeError(`${op}(): expected input, weight and bias of one dtype, but got ${x.dtype}, ${w.dtype}${b ? `, ${b.dtype}` : ''}`);
  }
  const groups = o.groups ?? 1;
  if (!Number.isInteger(groups) || groups < 1) throw new RangeError(`non-positive groups is not supported (${op}(): groups=${groups})`);
  const s = sizes(op, 'stride', o.stride, nd, 1, 1, `non-positive stride is not supported (${op}(): stride=${JSON.stringify(o.stride)})`);
  const d = sizes(op, 'dilation', o.dilation, nd, 1, 1, `dilation should be greater than zero (${op}(): dilation=${JSON.stringify(o.dilation)})`);
  const k = w.shape.slice(2), cin = x.shape[x.ndim - nd - 1], cout = w.shape[0];
  if (cout % groups) throw new RangeError(`Given groups=${groups}, expected weight to be divisible by ${groups} at dimension 0, but got weight of size ${fmt(w.shape)} instead`);
  if (w.shape[1] * groups !== cin) {
    throw new RangeError(`Given groups=${groups}, weight of size ${fmt(w.shape)}, expected input${fmt(x.shape)} to have ${w.shape[1] * groups} channels, but got ${cin} channels instead`);
  }
  if (b && (b.ndim !== 1 || b.shape[0] !== cout)) {
    throw new RangeError(`Given weight of size ${fmt(w.shape)}, expected bias to be 1-dimensional with ${cout} elements, but got bias of size ${fmt(b.shape)} instead`);
  }
  let lo: number[], hi: number[];
  if (o.padding === 'same') {
    if (s.some((v) => v !== 1)) throw new RangeError(`padding='same' is not supported for strided convolutions (${op}(): stride=${fmt(s)})`);
    lo = k.map((kk, i) => Math.floor((d[i] * (kk - 1)) / 2));
    hi = k.map((kk, i) => d[i] * (kk - 1) - lo[i]);
  } else if (o.padding === 'valid') {
    lo = hi = k.map(() => 0);
  } else if (typeof o.padding === 'string') {
    throw new RangeError(`Invalid padding string '${o.padding}' (${op}() accepts 'valid', 'same', or integers)`);
  } else {
    lo = hi = sizes(op, 'padding', o.padding, nd, 0, 0, `negative padding is not supported (${op}(): padding=${JSON.stringify(o.padding)})`);
  }
  const spatial = x.shape.slice(-nd), padded = spatial.map((n, i) => n + lo[i] + hi[i]), extent = k.map((kk, i) => d[i] * (kk - 1) + 1);
  if (padded.some((n, i) => n < extent[i])) {
    throw new RangeError(`Calculated padded input size per channel: (${padded.join(' x ')}). Kernel size: (${extent.join(' x ')}). Kernel size can't be greater than actual input size`);
  }
  const as2 = (v: number[], one: number) => (nd === 1 ? [one, v[0]] : v);
  return { groups, k: as2(k, 1), s: as2(s, 1), d: as2(d, 1), lo: as2(lo, 0), hi: as2(hi, 0), cout, bias: b ?? null };
}

/** im2col + one batched matmul over [N, groups]: x [N, C, H, W], w [Cout, C/groups, kh, kw]. */
function conv(x: Tensor, w: Tensor, b: Tensor | null | undefined, g: ReturnType<typeof convArgs>): Tensor {
  if (x.dtype === 'float32' && numel(x.shape) && numel(w.shape) && runsAsOne(x.device, 'conv', 'convGrad')) return convKernel(x, w, b ?? null, g);
  return tidy(() => {
    const { groups, k, s, d, lo, hi, cout } = g;
    let cols: Tensor;
    if (fusedWindows(x)) {
      const size = [0, 1].map((i) => windowCount(x.shape[2 + i] + lo[i] + hi[i], k[i], s[i], d[i]));
      cols = paddedWindows(x, k, s, d, lo, size);
    } else {
      const xp = lo.some(Boolean) || hi.some(Boolean) ? pad(x, [lo[1], hi[1], lo[0], hi[0]]) : x;
      cols = windows(xp, k, s, d);
    }
    const [N, C] = x.shape, [oh, ow] = cols.shape.slice(4), K = (C / groups) * k[0] * k[1];
    const y = matmul(V.reshape(w, [groups, cout / groups, K]), V.reshape(cols, [N, groups, K, oh * ow]));
    const out = V.reshape(y, [N, cout, oh, ow]);
    return b ? binaryOp('add', out, V.reshape(b, [1, cout, 1, 1])) : out;
  });
}

/**
 * A float32 convolution as one `conv` command (on the cpu, assembly/kernels/conv.ts: an image at a
 * time with its windows in cache), recorded with its gradient rule, one `convGrad` command.
 */
function convKernel(x: Tensor, w: Tensor, b: Tensor | null, g: ReturnType<typeof convArgs>): Tensor {
  const { groups, k, s, d, lo, hi, cout } = g;
  const size = [0, 1].map((i) => windowCount(x.shape[2 + i] + lo[i] + hi[i], k[i], s[i], d[i]));
  const geom: ConvGeom = { shape: x.shape.slice(), cout, groups, kernel: k, stride: s, dilation: d, padding: lo, size };
  // the windows are kept for the weight's gradient (one write of them, not a second pass)
  let saved: Tensor | null = null;
  const keep = needsGrad(w); // read here: the forward below runs with grad mode off
  return recorded('convolution', b ? [x, w, b] : [x, w], () => {
    const wc = V.contiguous(w), bc = b && V.contiguous(b);
    const out = alloc([x.shape[0], cout, ...size], 'float32', x.device);
    if (keep) saved = alloc([x.shape[0], x.shape[1] * k[0] * k[1], size[0] * size[1]], 'float32', x.device);
    emit(x.device, { k: 'conv', x: ref(x), w: place(wc), b: bc ? place(bc) : null, out: place(out), saved: saved && place(saved), ...geom });
    if (wc !== w) wc.dispose();
    if (bc && bc !== b) bc.dispose();
    return out;
  }, (ctx) => {
    const sx = ctx.save(x), sw = ctx.save(w), wants = [x.requiresGrad, w.requiresGrad, !!b?.requiresGrad];
    const cols = saved && ctx.save(saved);
    saved?.dispose();
    return ([gy]) => convBackward(gy!, sx, sw, wants, geom, cols).slice(0, b ? 3 : 2);
  });
}

/**
 * The gradients of `convKernel` that `wants` asks for ([x, w, bias]): one `convGrad` command; a
 * gradient that is itself differentiated (`createGraph`) is composed of recorded ops instead:
 * the windows and a product for the weight's, a product and their fold (`col2im`) for the input's.
 */
function convBackward(gy: Tensor, x: Tensor, w: Tensor, wants: boolean[], geom: ConvGeom, saved: Tensor | null): (Tensor | null)[] {
  const [N, C] = geom.shape, { cout, groups, kernel: k, stride: s, dilation: d, padding: p, size } = geom;
  const Kg = (C / groups) * k[0] * k[1], Mg = cout / groups, L = size[0] * size[1];
  // (x and w are the node's saved handles, detached: only the incoming gradient can carry a graph)
  if (needsGrad(gy)) {
    return tidy(() => {
      const gyr = V.reshape(gy, [N, groups, Mg, L]);
      const db = wants[2] ? reduce(ReduceOp.Sum, gy, [0, 2, 3]) : null;
      const dw = wants[1]
        ? V.reshape(reduce(ReduceOp.Sum, matmul(gyr, V.transpose(V.reshape(paddedWindows(x, k, s, d, p, size), [N, groups, Kg, L]), 2, 3)), [0]), w.shape.slice())
        : null;
      const dx = wants[0] ? col2im(V.reshape(matmul(V.transpose(V.reshape(w, [groups, Mg, Kg]), 1, 2), gyr), [N, C, k[0], k[1], ...size]), geom) : null;
      return [dx, dw, db];
    });
  }
  const [dx, dw, db] = [geom.shape, w.shape, [cout]].map((shape, i) => (wants[i] ? alloc(shape.slice(), 'float32', gy.device) : null));
  const gc = V.contiguous(gy), wc = V.contiguous(w);
  emit(gy.device, { k: 'convGrad', x: ref(x), w: place(wc), gy: place(gc), dx: dx && place(dx), dw: dw && place(dw), db: db && place(db), saved: saved && place(saved), ...geom });
  if (gc !== gy) gc.dispose();
  if (wc !== w) wc.dispose();
  return [dx, dw, db];
}

/** The fold of windows g [N, C, kh, kw, oh, ow] onto x's shape, recorded: its gradient is the windows of the incoming gradient. */
function col2im(g: Tensor, geom: ConvGeom): Tensor {
  const { kernel: k, stride: s, dilation: d, padding: p, size } = geom;
  return recorded('col2im', [g], () => unwindow(g, geom.shape, k, s, d, p), () => ([gg]) => [paddedWindows(gg!, k, s, d, p, size)]);
}

/**
 * `F.conv2d(x, weight, bias, {stride, padding, dilation, groups})`: x [N, C, H, W] or [C, H, W],
 * weight [Cout, C/groups, kH, kW].
 */
export function conv2d(x: Tensor, weight: Tensor, ...args: ConvCall): Tensor {
  if (autocasting()) return autocastCall('conv2d', [x, weight, ...args], conv2d as (...a: unknown[]) => Tensor);
  const g = convArgs('conv2d', 2, x, weight, args), bias = g.bias;
  return tidy(() => {
    if (x.ndim === 4) return conv(x, weight, bias, g);
    return V.squeeze(conv(V.unsqueeze(x, 0), weight, bias, g), 0);
  });
}

/** `F.conv1d(x, weight, bias, {stride, padding, dilation, groups})`: x [N, C, L] or [C, L], weight [Cout, C/groups, kW]. */
export function conv1d(x: Tensor, weight: Tensor, ...args: ConvCall): Tensor {
  if (autocasting()) return autocastCall('conv1d', [x, weight, ...args], conv1d as (...a: unknown[]) => Tensor);
  const g = convArgs('conv1d', 1, x, weight, args), bias = g.bias;
  return tidy(() => {
    const x4 = V.unsqueeze(x.ndim === 3 ? x : V.unsqueeze(x, 0), 2);
    const y = conv(x4, V.unsqueeze(weight, 2), bias, g);
    return x.ndim === 3 ? V.squeeze(y, 2) : V.reshape(y, [y.shape[1], y.shape[3]]);
  });
}
