/**
 * `torch.cpu`: PyTorch's stand-ins for the cpu, with the GPU API's shape. The cpu device has one
 * stream (ts/runtime/streams.ts): `torch.cpu.Stream()` and `currentStream()` are it, `stream(s, fn)`
 * just runs `fn`, and `synchronize()` waits for the cpu worker's queued work.
 */
import { clientOf, CPU } from './device.js';
import { CpuStream, cpuCurrentStream, type Stream } from './runtime/streams.js';

export { CpuStream as Stream, cpuCurrentStream as currentStream };

/** Runs `fn` (the cpu has one stream). */
export function stream<T>(_s: Stream | null | undefined, fn: () => T): T {
  return fn();
}

/** A no-op (the cpu has one stream). */
export function setStream(_s: Stream): void {}

/** Always true. */
export const isAvailable = (): boolean => true;

/** Always 1. */
export const deviceCount = (): number => 1;

/** `'cpu'`, as PyTorch's `torch.cpu.current_device()`. */
export const currentDevice = (): string => 'cpu';

/** Waits for the work queued on the cpu device. */
export async function synchronize(): Promise<void> {
  const c = clientOf(CPU);
  if (c.inUse) await c.sync();
}

// Graphs on the cpu (ts/runtime/graphs.ts): capture once, replay without a message per op.
export { CpuGraph as Graph, cpuGraph as graph, graphPoolHandle, cpuIsCurrentStreamCapturing as isCurrentStreamCapturing } from './runtime/graphs.js';
