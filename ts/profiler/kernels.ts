/**
 * The devices' half of a profile: the kernels each worker ran, placed on the calling thread's
 * clock. The cpu device's kernels are the worker's own run of each command (that is where its
 * kernels execute). A GPU's are its timed passes (timestamp queries, one pass per dispatch
 * while profiling); the GPU's clock is not the caller's, so its passes are shifted by the least
 * amount that puts no pass before the worker recorded its command, which can only be earlier.
 * A GPU without `timestamp-query` gives the worker's recording times and no device time.
 */
import type { WorkerProfile } from '../worker/protocol.js';

/** One kernel (or command) on a device's stream. */
export interface KernelEvent {
  /**
   * Its name: `wgsl:` (a GPU's kernels) or `wasm:` (the cpu device's AssemblyScript kernels) and
   * the command (`matmul`, `binary`, …), with the op or shape where the GPU worker tells them
   * (`wgsl:binary:add`, `wgsl:matmul:1x8x16x32`); the prefix keeps a kernel's row apart from its op's.
   */
  name: string;
  device: string;
  stream: number;
  /** The caller op it belongs to (0: none). */
  op: number;
  /** Start and end, milliseconds since the epoch (caller's clock). */
  t0: number;
  t1: number;
  /** Its time on the device in ms, or null where the device cannot tell (a GPU without timestamp queries, or a command with no pass). */
  deviceMs: number | null;
}

/** The kernels of one device's worker profile. */
export function kernelsOf(device: string, p: WorkerProfile): KernelEvent[] {
  const isGpu = device.startsWith('gpu');
  if (!isGpu) {
    return p.trace.map((e) => ({ name: `wasm:${e.name}`, device, stream: e.stream, op: e.op, t0: e.t0, t1: e.t1, deviceMs: e.t1 - e.t0 }));
  }
  if (!p.passes) {
    return p.trace.map((e) => ({ name: `wgsl:${e.name}`, device, stream: e.stream, op: e.op, t0: e.t0, t1: e.t1, deviceMs: null }));
  }
  const entries = new Map(p.trace.map((e) => [e.seq, e]));
  const passes = p.passes.filter((q) => entries.has(q.seq));
  let offset = -Infinity;
  for (const q of passes) offset = Math.max(offset, entries.get(q.seq)!.t0 - q.start);
  return passes.map((q) => {
    const e = entries.get(q.seq)!;
    return { name: `wgsl:${q.label}`, device, stream: e.stream, op: e.op, t0: q.start + offset, t1: q.end + offset, deviceMs: q.end - q.start };
  });
}
