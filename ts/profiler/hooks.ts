/**
 * Where the rest of webtorch tells the profiler what happens: an op's argument check
 * (`sameDevice`, ts/runtime/dispatch.ts), each command it queues (`launch`), each block the
 * caching allocator hands out or takes back (ts/runtime/storage.ts), and each autograd node the
 * backward engine runs (ts/autograd/engine.ts, as ranges named as PyTorch names them). Empty unless a profile is
 * recording, so the cost without one is one property test per op. Imports nothing, so any
 * module may call it without an import cycle.
 */
import type { Device } from '../device.js';
import type { Command } from '../ir/commands.js';
import type { Tensor } from '../tensor.js';

/** The profiler's hooks (set only while a profile records). */
export interface ProfilerHooks {
  /** An op named `name` checked its tensor arguments: a new op begins. */
  op(name: string, tensors: readonly Tensor[]): void;
  /** A command is about to be queued on `device`'s current stream. */
  launch(device: Device, cmd: Command): void;
  /** The allocator handed out (`bytes` > 0) or took back (`bytes` < 0) a block of `device`. */
  memory(device: Device, bytes: number): void;
  /** A range opens (the backward engine's `autograd::engine::evaluate_function: …` around a node); returns its depth before it. */
  pushRange(name: string, autograd?: boolean): number;
  /** The innermost range closes. */
  popRange(): number;
}

/** The active hooks, or null. */
export const profilerHooks: { current: ProfilerHooks | null } = { current: null };
