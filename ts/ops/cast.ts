/**
 * Casts and contiguous copies: the one kernel (`copy`) that every other op module and autocast
 * (ts/amp/autocast.ts) build on, kept below them all so that none of them imports another to get it.
 */
import { castOutOfRange, isFloating } from '../dtype.js';
import { code, emit, alloc, ref, sameDevice, place } from '../runtime/dispatch.js';
import { isContiguous } from '../shape.js';
import { op as recorded } from '../autograd/graph.js';
import type { Tensor } from '../tensor.js';

/** A row-major copy, or the tensor itself when it already is one. */
export function contiguous(t: Tensor): Tensor {
  sameDevice('contiguous', [t]);
  if (isContiguous(t.shape, t._strides)) return t;
  return cast(t, t.dtype);
}

/** A contiguous copy in another dtype (same device); its gradient is cast back. */
export function cast(t: Tensor, dtype: Tensor['dtype']): Tensor {
  // same dtype (`contiguous`, `clone`): the gradient passes through as it is, no copy, as PyTorch's;
  // another dtype: cast back (recorded under createGraph)
  return recorded('copy', [t], () => castForward(t, dtype), () => ([g]) => [g!.dtype === t.dtype ? g! : cast(g!, t.dtype)]);
}

function castForward(t: Tensor, dtype: Tensor['dtype']): Tensor {
  const out = alloc(t.shape, dtype, t.device);
  if (!out.numel()) return out;
  const check = dtype === 'int64' && isFloating(t.dtype) ? { message: castOutOfRange(t.dtype, dtype), overflow: castOutOfRange(t.dtype, dtype) } : undefined;
  emit(t.device, { k: 'copy', src: ref(t), srcDt: code(t), out: place(out), dt: code(dtype), shape: t.shape.slice(), ...(check ? { check } : {}) });
  return out;
}
