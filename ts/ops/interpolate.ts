/**
 * `F.interpolate` (and `nn.Upsample`'s forward) in the modes 'nearest', 'linear' and 'bilinear',
 * composed as one `indexSelect` per spatial dim (nearest) or two and a blend (linear): the
 * resampling is separable, so each spatial dim is done in turn. The source indices and weights are
 * computed on the host with PyTorch's formulas (`area_pixel_compute_source_index`, `nearest_idx`),
 * so the numbers match; autograd derives the gradients from indexSelect and the blend.
 */
import { fmt } from '../shape.js';
import { Tensor } from '../tensor.js';
import { fromHost } from './creation.js';
import { binaryOp } from './elementwise.js';
import { indexSelect } from './indexing.js';
import { checkFloat } from './nn.js';
import { bindArgs, type PyArgs } from '../args.js';
import { tidy } from './scoped.js';

/** The resampling modes `F.interpolate` supports here. */
export type InterpolateMode = 'nearest' | 'linear' | 'bilinear';
const MODES = ['nearest', 'linear', 'bilinear', 'bicubic', 'trilinear', 'area', 'nearest-exact'];

/** Options of `F.interpolate` after the input. */
export interface InterpolateOptions {
  size?: number | number[] | null; scaleFactor?: number | number[] | null; mode?: InterpolateMode; alignCorners?: boolean | null;
  recomputeScaleFactor?: boolean | null; antialias?: boolean;
}
type InterpolatePositional = [size: number | number[] | null, scaleFactor: number | number[] | null, mode: InterpolateMode,
  alignCorners: boolean | null, recomputeScaleFactor: boolean | null, antialias: boolean];
/** The parameter names of `F.interpolate` after the input (and of `nn.Upsample`, which has no antialias). */
export const INTERPOLATE_PARAMS = ['size', 'scaleFactor', 'mode', 'alignCorners', 'recomputeScaleFactor', 'antialias'] as const;

const f32 = Math.fround;

/** Index tensor (int64) on the input's device. */
const indexTensor = (idx: number[], x: Tensor) => fromHost(Int32Array.from(idx), [idx.length], 'int64', x.device);

/**
 * `F.interpolate(input, size = null, scaleFactor = null, mode = 'nearest', alignCorners = null,
 * recomputeScaleFactor = null, antialias = false)`: input `[N, C, *]` with one ('nearest',
 * 'linear') or two ('nearest', 'bilinear') spatial dims, resized to `size` or by `scaleFactor`.
 */
export function interpolate(input: Tensor, ...args: PyArgs<InterpolatePositional, InterpolateOptions>): Tensor {
  const op = 'interpolate';
  const o = bindArgs(op, [...INTERPOLATE_PARAMS], args,
    { size: null, scaleFactor: null, mode: 'nearest', alignCorners: null, recomputeScaleFactor: null, antialias: false } as InterpolateOptions, 1);
  if (!(input instanceof Tensor)) throw new TypeError(`${op}(): expected input to be a Tensor, but got ${typeof input}`);
  const mode = o.mode!;
  const spatial = input.ndim - 2;
  if (!MODES.includes(mode)) throw new RangeError(`${op}(): mode must be one of ${MODES.join(' | ')}, but got '${String(mode)}'`);
  if (mode !== 'nearest' && mode !== 'linear' && mode !== 'bilinear') throw new TypeError(`${op}(): mode '${mode}' is not supported (supported: nearest, linear, bilinear)`);
  if (o.antialias) throw new TypeError(`${op}(): Anti-alias option is only supported for bilinear and bicubic modes, and is not implemented here`);
  if (mode === 'nearest' && o.alignCorners != null) {
    throw new RangeError('align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear');
  }
  if (spatial < 1 || spatial > 3) throw new RangeError(`Input Error: Only 3D, 4D and 5D input Tensors supported (got ${input.ndim}D) for the modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got ${mode})`);
  if (mode === 'linear' && spatial !== 1) throw new RangeError(`Got ${input.ndim}D input, but linear mode needs 3D input`);
  if (mode === 'bilinear' && spatial !== 2) throw new RangeError(`Got ${input.ndim}D input, but bilinear mode needs 4D input`);
  if (mode === 'nearest' && spatial === 3) throw new TypeError(`${op}(): 5-D input (nearest over 3 spatial dims) is not supported`);
  if (o.size != null && o.scaleFactor != null) throw new RangeError('only one of size or scale_factor should be defined');
  if (o.size == null && o.scaleFactor == null) throw new RangeError('either size or scale_factor should be defined');
  const list = (v: number | number[], what: string) => {
    const a = Array.isArray(v) ? v : Array(spatial).fill(v);
    if (a.length !== spatial) {
      throw new RangeError(`Input and ${what} must have the same number of spatial dimensions, but got input with spatial dimensions of ${fmt(input.shape.slice(2))} and output ${what} of ${fmt(a)}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and output ${what} in (o1, o2, ...,oK) format.`);
    }
    return a;
  };
  const inSizes = input.shape.slice(2);
  const scales = o.scaleFactor != null ? list(o.scaleFactor, 'scale_factor') : null;
  const outSizes = o.size != null ? list(o.size, 'size') : inSizes.map((s, i) => Math.floor(s * scales![i]));
  if (outSizes.some((s) => !Number.isInteger(s) || s <= 0)) throw new RangeError(`${op}(): output size must be positive, but got ${fmt(outSizes)} (input ${fmt(input.shape)})`);
  // the scale the kernel sees: the user's factor unless recomputed from the sizes
  const given = scales && !o.recomputeScaleFactor ? scales : null;
  if (mode !== 'nearest') checkFloat(op, input);
  const align = !!o.alignCorners;
  return tidy(() => {
    let x = input;
    for (let i = 0; i < spatial; i++) {
      const d = 2 + i, n = inSizes[i], m = outSizes[i];
      if (mode === 'nearest') {
        const scale = given ? f32(1 / given[i]) : f32(n / m);
        const idx = Array.from({ length: m }, (_, j) => (m === n ? j : m === 2 * n ? j >> 1 : Math.min(Math.floor(f32(j * scale)), n - 1)));
        x = indexSelect(x, d, indexTensor(idx, x));
        continue;
      }
      const scale = align ? (m > 1 ? f32((n - 1) / (m - 1)) : 0) : given && given[i] > 0 ? f32(1 / given[i]) : f32(n / m);
      const i0: number[] = [], i1: number[] = [], lam = new Float32Array(m);
      for (let j = 0; j < m; j++) {
        const src = align ? f32(scale * j) : Math.max(f32(f32(scale * (j + 0.5)) - 0.5), 0);
        const lo = Math.min(Math.floor(src), n - 1);
        i0.push(lo);
        i1.push(lo < n - 1 ? lo + 1 : lo);
        lam[j] = f32(src - lo);
      }
      const shape = [m, ...Array(input.ndim - 1 - d).fill(1)];
      const l1 = fromHost(lam, shape, 'float32', x.device), l0 = binaryOp('sub', 1, l1);
      const cast = (t: Tensor) => (x.dtype === 'float32' ? t : t.to({ dtype: x.dtype }));
      x = binaryOp('add', binaryOp('mul', indexSelect(x, d, indexTensor(i0, x)), cast(l0)), binaryOp('mul', indexSelect(x, d, indexTensor(i1, x)), cast(l1)));
    }
    return x === input ? indexSelect(input, 0, indexTensor(Array.from({ length: input.shape[0] }, (_, j) => j), input)) : x;
  });
}
