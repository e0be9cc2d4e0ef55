/**
 * Shapes, strides and broadcasting. Strides and offsets are in elements, as in PyTorch.
 * Kernels take (shape, strides, offset) views directly, so broadcasting is a stride of 0 and
 * transposes and slices reach the kernels without a copy.
 */

/** A tensor's sizes, as a plain array of non-negative integers. */
export type Shape = readonly number[];

/** Kernels accept views of up to this many dims; higher ranks are made contiguous first. */
export const MAX_KERNEL_RANK = 8;

/** Product of the sizes. */
export const numel = (shape: Shape): number => shape.reduce((a, b) => a * b, 1);

/** Row-major strides for a shape. */
export function contiguousStrides(shape: Shape): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= Math.max(shape[i], 1);
  }
  return s;
}

/** Whether (shape, strides) is row-major contiguous (size-1 dims may have any stride). */
export function isContiguous(shape: Shape, strides: Shape): boolean {
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    if (shape[i] === 1) continue;
    if (strides[i] !== acc) return false;
    acc *= shape[i];
  }
  return true;
}

/** Formats a shape the way PyTorch prints sizes: `[2, 3]`. */
export const fmt = (shape: Shape): string => `[${shape.join(', ')}]`;

/** Normalises a possibly negative dim, with PyTorch's IndexError wording. */
export function normDim(dim: number, ndim: number): number {
  const n = Math.max(ndim, 1);
  if (!Number.isInteger(dim) || dim < -n || dim >= n) {
    throw new RangeError(`Dimension out of range (expected to be in range of [${-n}, ${n - 1}], but got ${dim})`);
  }
  return dim < 0 ? dim + n : dim;
}

/** Validates a user-given shape. */
export function checkShape(shape: unknown, where: string): number[] {
  if (!Array.isArray(shape)) throw new TypeError(`${where}: size must be an array of integers, got ${String(shape)}`);
  for (const s of shape) {
    if (!Number.isInteger(s) || s < 0) {
      throw new RangeError(`${where}: Trying to create tensor with negative dimension or non-integer size: ${fmt(shape)}`);
    }
  }
  return shape.slice();
}

/** The broadcast shape of several shapes, with PyTorch's error message. */
export function broadcastShapes(...shapes: Shape[]): number[] {
  return broadcastFor('', shapes);
}

/** `broadcastShapes` for an op: the error names the op (and `detail`, e.g. the dtypes). */
export function broadcastFor(op: string, shapes: Shape[], detail = ''): number[] {
  const rank = Math.max(0, ...shapes.map((s) => s.length));
  const out = new Array<number>(rank).fill(1);
  for (const s of shapes) {
    for (let i = 0; i < s.length; i++) {
      const o = rank - s.length + i, d = s[i];
      if (d === out[o] || d === 1) continue;
      if (out[o] === 1) { out[o] = d; continue; }
      const [a, b] = shapes.length === 2 ? shapes : [shapes[0], s];
      throw new RangeError(
        `The size of tensor a (${a[a.length - rank + o] ?? 1}) must match the size of tensor b (${b[b.length - rank + o] ?? 1}) at non-singleton dimension ${o}` +
          ` (${op ? `in ${op}, ` : ''}shapes ${shapes.map(fmt).join(' and ')}${detail})`,
      );
    }
  }
  return out;
}

/** Strides that view (shape, strides) as `target` by broadcasting (stride 0 on new or size-1 dims). */
export function broadcastStrides(shape: Shape, strides: Shape, target: Shape): number[] {
  const out = new Array<number>(target.length).fill(0);
  const off = target.length - shape.length;
  for (let i = 0; i < shape.length; i++) out[off + i] = shape[i] === 1 && target[off + i] !== 1 ? 0 : strides[i];
  return out;
}

/**
 * Strides for viewing a tensor under a new shape without copying, or null when the memory
 * layout does not allow it (PyTorch's `computeStride`).
 */
export function viewStrides(shape: Shape, strides: Shape, newShape: Shape): number[] | null {
  if (numel(shape) === 0) return contiguousStrides(newShape);
  const out = new Array<number>(newShape.length);
  let viewD = newShape.length - 1;
  let chunkBase = strides[strides.length - 1] ?? 1;
  let tensorNumel = 1, viewNumel = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    tensorNumel *= shape[d];
    if (d === 0 || (shape[d - 1] !== 1 && strides[d - 1] !== tensorNumel * chunkBase)) {
      while (viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] === 1)) {
        out[viewD] = viewNumel * chunkBase;
        viewNumel *= newShape[viewD];
        viewD--;
      }
      if (viewNumel !== tensorNumel) return null;
      if (d > 0) {
        chunkBase = strides[d - 1];
        tensorNumel = 1;
        viewNumel = 1;
      }
    }
  }
  if (viewD !== -1) return null;
  return out;
}

/** Resolves one `-1` in a requested shape, checking the element count. */
export function inferShape(shape: readonly number[], total: number, where: string): number[] {
  const out = shape.slice();
  const neg = out.indexOf(-1);
  if (out.some((s, i) => !Number.isInteger(s) || (s < 0 && i !== neg)) || out.lastIndexOf(-1) !== neg) {
    throw new RangeError(`${where}: invalid shape ${fmt(shape)}`);
  }
  if (neg >= 0) {
    const rest = numel(out.filter((_, i) => i !== neg));
    if (rest === 0 || total % rest !== 0) throw new RangeError(`shape '${fmt(shape)}' is invalid for input of size ${total}`);
    out[neg] = total / rest;
  }
  if (numel(out) !== total) throw new RangeError(`shape '${fmt(shape)}' is invalid for input of size ${total}`);
  return out;
}
