/**
 * The interface a device implements (ts/worker/cpu.ts, ts/worker/gpu.ts): running IR commands,
 * reads, writes, marks, graphs. Everything else (stream order, peers, capture, errors, profiles)
 * is the executor's (ts/worker/executor.ts).
 */
import type { Command, ReplayRng } from '../ir/commands.js';
import type { DeviceInfo, HostMemory, WorkerProfile } from './protocol.js';

/** What a device implements; everything else (ordering, peers, errors) is the executor's. */
export interface Backend {
  init(options: { name: string; index: number }): Promise<DeviceInfo>;
  /** Runs one compute or memory command synchronously (may just record GPU work). */
  run(cmd: Command): void;
  /** Ends a batch (the GPU submits its encoder). */
  flush(): void;
  /**
   * Reads bytes of a storage after all recorded work: into `into` where given and the backend
   * can copy there directly (then it returns nothing), else as a new ArrayBuffer.
   */
  read(id: number, byteOffset: number, bytes: number): Promise<ArrayBuffer> | ArrayBuffer;
  read(id: number, byteOffset: number, bytes: number, into: Uint8Array): Promise<ArrayBuffer | void> | ArrayBuffer | void;
  /**
   * Writes bytes into a storage, ordered after all recorded work; `data` may be a view of shared
   * memory. A returned promise holds the stream (and, as a write is a fence, every stream) until
   * the bytes are in the device's queue.
   */
  write(id: number, byteOffset: number, data: ArrayBuffer | Uint8Array): Promise<void> | void;
  /** Waits until all submitted work is complete. */
  idle(): Promise<void>;
  /**
   * Ends the batch and resolves once the work recorded so far has finished on the device, with
   * the time it finished in milliseconds: the GPU's timestamp when `timing` and the device has
   * them (`DeviceInfo.eventTiming`), else the worker's clock when it saw the work finish.
   */
  mark(timing: boolean): Promise<number>;
  close(): Promise<void> | void;
  /** The cpu device's shared memory, for the other devices' pinned copies (ts/runtime/pinned.ts); null elsewhere. */
  hostMemory?(): HostMemory | null;
  /**
   * How long the worker polls for the next call after it has answered every call, in ms
   * (ts/worker/channel.ts: `Poll`); not at all when absent. The worker polls only once every call
   * is answered and nothing is in flight, so nothing waits on its event loop meanwhile but
   * callbacks nobody awaits (Dawn's), which wait the poll's length at most.
   */
  pollMs?: number;
  /** Starts (if not running) or stops timing the device's own work, where it can (GPU passes with timestamp queries). */
  timePasses?(on: boolean): void;
  /**
   * The passes timed since the last call (each with its command's `traceSeq`), once they have
   * finished; after `timePasses(false)`, the last ones, and the timer is released.
   */
  passTimes?(): Promise<NonNullable<WorkerProfile['passes']> | null>;
  /** The trace number of the command about to run (-1: none), which the passes it records carry. */
  traceSeq?(seq: number): void;
  /**
   * Prepares captured commands as graph `id` for replay (`fuse`: fusing elementwise chains where
   * the backend can, whose intermediates are not in `live`, the blocks alive at capture end as
   * (segment, byte offset, bytes) triples); returns the dispatches a replay makes. A backend without it has its graphs
   * replayed by the executor, command by command through `run` (no messages per op either way).
   */
  captureGraph?(id: number, cmds: Command[], fuse: boolean, live: number[]): number;
  /** Replays graph `id` after the work recorded so far (`rng`: its draws' key and counter offset). */
  replayGraph?(id: number, rng?: ReplayRng): void;
  /** Forgets graph `id`. */
  dropGraph?(id: number): void;
  /**
   * While kernels are being compiled asynchronously, a promise that settles once none is (else
   * null). Their dispatches are recorded but not yet encoded, so the executor holds back what
   * would hand work to the device's queue meanwhile (the flush, and every stream command that
   * is not a kernel) until it settles; the GPU worker compiles so (ts/worker/gpu/core.ts).
   */
  compiling?(): Promise<void> | null;
}
