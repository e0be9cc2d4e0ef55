/**
 * The hop between an op's checks and its device: output allocation, the same-device rule,
 * and queuing the IR command. Every op goes `Tensor` → `ts/ops/*` → here → the worker.
 */
import { elementSize, storageCode, type DType } from '../dtype.js';
import { clientOf, type Device } from '../device.js';
import { contiguousStrides, numel } from '../shape.js';
import { Tensor } from '../tensor.js';
import type { Command, Place, ViewRef } from '../ir/commands.js';
import type { ComposableKind } from '../ir/kinds.js';
import { streamScope } from './current-stream.js';
import { Storage } from './storage.js';
import { profilerHooks } from '../profiler/hooks.js';

/** A new contiguous tensor with uninitialised contents. */
export function alloc(shape: readonly number[], dtype: DType, device: Device): Tensor {
  const storage = Storage.alloc(device, numel(shape) * elementSize(dtype));
  return new Tensor(storage, shape.slice(), contiguousStrides(shape), 0, dtype);
}

/** The kernel's view of a tensor (segment, element offset, strides), optionally with broadcast strides. */
export function ref(t: Tensor, strides: readonly number[] = t._strides): ViewRef {
  return { id: t.storage.id, strides: strides.slice(), offset: t.storage.byteOffset / elementSize(t.dtype) + t._offset };
}

/** Where a fresh contiguous output tensor starts. */
export function place(t: Tensor): Place {
  return { id: t.storage.id, offset: t.storage.byteOffset / elementSize(t.dtype) + t._offset };
}

/** The storage code of a tensor's dtype. */
export const code = (t: Tensor | DType) => storageCode(typeof t === 'string' ? t : t.dtype);

/**
 * The one device of an op's tensors, or PyTorch's error naming two of them.
 * Also rejects disposed tensors, and, inside `torch.gpu.stream(s, fn)`, tensors of another GPU
 * than s's (their work would run on that GPU's current stream, not on s).
 */
export function sameDevice(op: string, tensors: Tensor[]): Device {
  profilerHooks.current?.op(op, tensors);
  const first = tensors[0]._check(op).device;
  for (const t of tensors) {
    t._check(op);
    if (t.device !== first) {
      throw new Error(`Expected all tensors to be on the same device, but found at least two devices, ${first} and ${t.device}! (when checking arguments for ${op})`);
    }
  }
  const scope = streamScope();
  if (scope && first.type === 'gpu' && first !== scope.device) {
    throw new Error(`Expected all tensors to be on the device of the current stream ${scope} inside torch.gpu.stream(), but found ${first} (when checking arguments for ${op}); move the tensors with .to('${scope.device}') or leave the stream's scope`);
  }
  return first;
}

/** Queues an IR command (ts/ir/commands.ts) on a device, on its current stream: what to compute; the device's worker decides how (which kernel, how many passes, what scratch). */
export function emit(device: Device, cmd: Command, transfer?: Transferable[]): void {
  profilerHooks.current?.launch(device, cmd);
  clientOf(device).enqueue(cmd, transfer);
}

/**
 * Whether `device` runs each of `kinds` as one command (Note [composable kinds], ts/ir/kinds.ts):
 * the backend says so in its `DeviceInfo.kernels`; otherwise the op composes the result itself.
 */
export function runsAsOne(device: Device, ...kinds: ComposableKind[]): boolean {
  const listed = clientOf(device).info?.kernels;
  return !!listed && kinds.every((k) => listed.includes(k));
}
