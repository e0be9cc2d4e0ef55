/**
 * `torch._ampForeachNonFiniteCheckAndUnscale_(scaledGrads, foundInf, invScale)`: PyTorch's
 * `_amp_foreach_non_finite_check_and_unscale_`, the check behind `GradScaler.unscale_`.
 *
 * Every gradient is multiplied in place by `invScale`, and `foundInf` is set to 1.0 when a
 * value was inf or NaN: ONE `ampUnscale` command for the device (ts/worker/protocol.ts), which
 * is one WGSL dispatch on `gpu:N` (ts/worker/gpu/amp.ts says when it takes more) and one
 * AssemblyScript call on `cpu` (assembly/kernels/amp.ts). Nothing is read back.
 */
import { isFloating, storageCode } from '../dtype.js';
import { emit, place, sameDevice } from '../runtime/dispatch.js';
import { overlapsAny, rounds } from '../runtime/overlap.js';
import { Tensor } from '../tensor.js';

const OP = '_amp_foreach_non_finite_check_and_unscale_';

/**
 * Unscales `scaledGrads` in place by the 1-element float32 `invScale` and sets the 1-element
 * float32 `foundInf` to 1.0 where a gradient held inf or NaN (it is never cleared: zero it first).
 * All on one device; gradients float32, float16 or bfloat16, any sizes (a non-contiguous one
 * through a contiguous copy, written back in place). PyTorch's checks and messages.
 */
export function ampForeachNonFiniteCheckAndUnscale_(scaledGrads: Tensor[], foundInf: Tensor, invScale: Tensor): void {
  if (!(invScale instanceof Tensor) || !(foundInf instanceof Tensor)) throw new TypeError(`${OP}: found_inf and inv_scale must be Tensors`);
  if (invScale.numel() !== 1) throw new Error('inv_scale must be a 1-element tensor.');
  if (foundInf.numel() !== 1) throw new Error('found_inf must be a 1-element tensor.');
  if (invScale.dtype !== 'float32') throw new Error('inv_scale must be a float tensor.');
  if (foundInf.dtype !== 'float32') throw new Error('found_inf must be a float tensor.');
  if (invScale.device !== foundInf.device) {
    throw new Error(`Expected all tensors to be on the same device, but found at least two devices, ${foundInf.device} and ${invScale.device}! (when checking arguments for ${OP})`);
  }
  for (const g of scaledGrads) {
    if (!(g instanceof Tensor)) throw new TypeError(`${OP}: scaled_grads must be a list of Tensors`);
    if (g.device !== foundInf.device) throw new Error(`scaled_grads must be on the same device. (found ${g.device}, found_inf is on ${foundInf.device})`);
    if (!isFloating(g.dtype)) throw new Error(`${OP}: scaled_grads must be floating point tensors (got ${g.dtype} of shape [${g.shape.join(', ')}])`);
  }
  const dev = sameDevice(OP, [foundInf, invScale, ...scaledGrads]);
  // a copy of inv_scale where it is not contiguous or lies in a gradient's memory (read as it was)
  const inv = !invScale.isContiguous() || overlapsAny(invScale, scaledGrads) ? invScale.clone() : invScale, found = foundInf;
  if (!found.isContiguous()) throw new Error('found_inf must be contiguous.');
  const unscale = (grads: Tensor[]) => emit(dev, { k: 'ampUnscale', grads: grads.map((g) => ({ at: place(g), n: g.numel(), dt: storageCode(g.dtype) })), invScale: place(inv), found: place(found) });
  // gradients that share memory are unscaled in order, one command a round (Note [overlapping
  // tensors in one multi-tensor command]); found_inf is only ever set, so each round may set it
  for (const round of rounds(scaledGrads.filter((g) => g.isContiguous()), (g) => [g])) unscale(round);
  // a non-contiguous one through a contiguous copy, written back in place (its views see it)
  for (const g of scaledGrads) {
    if (g.isContiguous()) continue;
    const c = g.contiguous();
    unscale([c]);
    g.copy_(c);
    c.dispose();
  }
  if (inv !== invScale) inv.dispose();
}
