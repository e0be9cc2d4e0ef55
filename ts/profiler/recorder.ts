/**
 * The calling thread's half of a profile: ops, ranges and memory events as they happen, and the
 * tags that tie each op to the kernels its commands run as on the devices.
 *
 * The hard part is knowing where an op begins and ends without wrapping every function. An op
 * begins at its argument check (`sameDevice`, which every op with tensor arguments calls with
 * PyTorch's op name) and ends when the next op begins, a range opens or closes, or the
 * synchronous code it ran in returns (a microtask closes it). Commands queued without a check
 * (a tensor's creation, a fill, random numbers, a copy between devices) begin an op of their own,
 * named after what they do. Before an op's first command on a stream, the recorder queues an
 * `opTag` command there, so the worker files the stream's following commands, and the GPU passes
 * they record, under that op: that is the link from each op to its kernels.
 */
import { clientOf, type Device } from '../device.js';
import type { Tensor } from '../tensor.js';
import type { WorkerProfile } from '../worker/protocol.js';
import type { Command } from '../ir/commands.js';
import { memoryAllocated } from '../runtime/memory.js';
import type { ProfilerHooks } from './hooks.js';

/** Milliseconds since the epoch: the clock the calling thread and the workers share. */
export const nowMs = (): number => performance.timeOrigin + performance.now();

/** An op (a PyTorch op's name) or a range (`recordFunction`, NVTX, `ProfilerStep#N`) on the calling thread. */
export interface CallerEvent {
  id: number;
  name: string;
  kind: 'op' | 'range';
  /** The device of its tensors or of its first command; null for a range or an op that queued nothing on a device. */
  device: string | null;
  /** The stream its first command was queued on. */
  stream: number;
  /** Its tensor arguments' shapes (when `recordShapes`), else null. */
  shapes: number[][] | null;
  /** Start and end, milliseconds since the epoch. */
  t0: number;
  t1: number;
  /** The range it ran inside (0: none). */
  parent: number;
  /** Commands it queued. */
  commands: number;
  /** Net bytes it allocated, by device (frees negative). */
  memory: Record<string, number>;
  /** The caller's stack at its start (when `withStack`). */
  stack: string | null;
  /** A range the backward engine opened around an autograd node (PyTorch's `cpu_op` category in the trace). */
  autograd?: boolean;
}

/** A block handed out or taken back by a device's caching allocator. */
export interface MemoryEvent {
  t: number;
  device: string;
  /** Positive: allocated; negative: freed. */
  bytes: number;
  /** The device's allocated bytes after it. */
  total: number;
  /** The op or range it happened in (0: none). */
  op: number;
}

/** What a recorder records. */
export interface RecordOptions {
  recordShapes: boolean;
  profileMemory: boolean;
  withStack: boolean;
  /** Whether the devices' kernels are recorded (the `gpu` activity). */
  devices: boolean;
}

/** Commands that begin an op of their own (they come without an argument check), by the op's name. */
const OWN_OP: Partial<Record<Command['k'], string>> = {
  write: 'tensor', fill: 'fill_', arange: 'arange', random: 'random_', send: 'to', connect: 'connect',
};

/** Op and range ids: unique while the process lives, since the workers keep a stream's last tag. */
let nextId = 1;

/** The calling thread's recorder of one profiling cycle (see the note at the top). */
export class Recorder implements ProfilerHooks {
  readonly events: CallerEvent[] = [];
  readonly memoryEvents: MemoryEvent[] = [];
  readonly start = nowMs();
  /** Devices whose worker profile this recorder turned on, with the profile each will answer. */
  private readonly profiling = new Map<string, Device>();
  /** The open ops, outermost first, with the frames of each one's check (its op's function first). */
  private readonly open: { e: CallerEvent; frames: string[] }[] = [];
  private readonly ranges: CallerEvent[] = [];
  /** Per `device#stream`: the op its last `opTag` named. */
  private readonly tagged = new Map<string, number>();
  private closeQueued = false;

  constructor(readonly options: RecordOptions) {}

  /** The innermost open op's or range's id, or 0. */
  private get parent(): number {
    if (this.open.length) return this.open[this.open.length - 1].e.id;
    return this.ranges.length ? this.ranges[this.ranges.length - 1].id : 0;
  }

  /** The innermost open op, or null. */
  private get current(): CallerEvent | null {
    return this.open.length ? this.open[this.open.length - 1].e : null;
  }

  private begin(name: string, kind: 'op' | 'range', device: string | null, shapes: number[][] | null): CallerEvent {
    const t = nowMs();
    const e: CallerEvent = {
      id: nextId++, name, kind, device, stream: 0, shapes, t0: t, t1: t, parent: this.parent, commands: 0, memory: {},
      stack: this.options.withStack ? stackHere() : null,
    };
    this.events.push(e);
    return e;
  }

  /** Ends the open ops now: all of them, or those that the code at `frames` is not inside (`strictly`: deeper than). */
  closeOp(frames: string[] | null = null, strictly = false): void {
    const t = nowMs();
    while (this.open.length) {
      const top = this.open[this.open.length - 1];
      if (frames && inside(frames, top.frames, strictly)) break;
      this.open.pop();
      top.e.t1 = t;
    }
  }

  /** Opens an op whose check is at `frames`, inside the open ops that called it. */
  private openOp(name: string, device: string | null, shapes: number[][] | null, frames: string[]): void {
    this.closeOp(frames, true);
    this.open.push({ e: this.begin(name, 'op', device, shapes), frames });
    if (!this.closeQueued) {
      this.closeQueued = true;
      queueMicrotask(() => {
        this.closeQueued = false;
        this.closeOp();
      });
    }
  }

  op(name: string, tensors: readonly Tensor[]): void {
    const first = tensors[0];
    this.openOp(name, first ? String(first.device) : null, this.options.recordShapes ? tensors.map((t) => t.shape.slice()) : null, opFrames(name, callerFrames()));
  }

  launch(device: Device, cmd: Command): void {
    // An op's commands come from its own function or deeper: the ops it called before (views,
    // other ops) have returned, and an op whose function this is not inside has ended.
    const frames = callerFrames();
    this.closeOp(frames, false);
    const own = OWN_OP[cmd.k];
    const cur = this.current;
    // A cross-device copy's `recv` is the second half of the `send` before it; a command of its
    // own after an op's commands (a creation after an add) is a new op.
    const joins = cur !== null && (cmd.k === 'recv' ? cur.name === 'to' : !(own && cur.commands > 0));
    if (!joins) this.openOp(own ?? cmd.k, String(device), null, frames);
    const op = this.current!;
    op.device ??= String(device);
    const client = clientOf(device);
    const stream = client.stream;
    if (op.commands++ === 0) op.stream = stream;
    if (!this.options.devices) return;
    const name = String(device);
    if (!this.profiling.has(name)) {
      this.profiling.set(name, device);
      void client.profile(true).catch(() => undefined);
    }
    const key = `${name}#${stream}`;
    if (this.tagged.get(key) !== op.id) {
      this.tagged.set(key, op.id);
      client.enqueue({ k: 'opTag', op: op.id }, undefined, stream);
    }
  }

  memory(device: Device, bytes: number): void {
    if (!this.options.profileMemory) return;
    // A free by code outside the open ops (a dispose after them) is not theirs.
    this.closeOp(callerFrames(), false);
    const name = String(device);
    const owner = this.current ?? (this.ranges.length ? this.ranges[this.ranges.length - 1] : null);
    let total = 0;
    try {
      total = memoryAllocated(device);
    } catch {
      /* a device whose allocator is gone: the total is unknown */
    }
    this.memoryEvents.push({ t: nowMs(), device: name, bytes, total, op: owner?.id ?? 0 });
    if (owner) owner.memory[name] = (owner.memory[name] ?? 0) + bytes;
  }

  /** Opens a range (`recordFunction`, `rangePush`, a profiler step, an autograd node's with `autograd`); returns its depth before it. */
  pushRange(name: string, autograd = false): number {
    this.closeOp();
    const r = this.begin(name, 'range', null, null);
    if (autograd) r.autograd = true;
    this.ranges.push(r);
    return this.ranges.length - 1;
  }

  /** Closes the innermost range; returns its depth, or -1 when none is open. */
  popRange(): number {
    this.closeOp();
    const r = this.ranges.pop();
    if (!r) return -1;
    r.t1 = nowMs();
    return this.ranges.length;
  }

  /** How many ranges are open. */
  get depth(): number {
    return this.ranges.length;
  }

  /** Ends the recording on the calling thread: open ranges end now. */
  finish(): void {
    while (this.ranges.length) this.popRange();
    this.closeOp();
  }

  /**
   * Turns off (`save`) or restarts (clearing, for a schedule's warmup ending) the devices' worker
   * profiles this recorder turned on; resolves with each device's profile.
   */
  devicesProfiles(restart: boolean): Promise<[string, WorkerProfile | null][]> {
    const all = [...this.profiling].map(([name, d]) => clientOf(d).profile(restart).then((p): [string, WorkerProfile | null] => [name, p]));
    if (restart) {
      this.events.length = 0;
      this.memoryEvents.length = 0;
      for (const r of this.ranges) this.events.push(r);
    }
    return Promise.all(all);
  }
}

/** V8's structured stack frame (the parts used here). */
interface CallSite {
  getFunctionName(): string | null;
  getFileName(): string | undefined;
  getEnclosingLineNumber?(): number | null;
  getEnclosingColumnNumber?(): number | null;
}

/**
 * The frames of the code that called `sameDevice` or `launch`, innermost first, each naming its
 * function but not the line in it (so that two calls from one function compare equal). In V8 the
 * frames are read structured (no source-map formatting) and name the function by where it
 * starts; elsewhere they are the stack's lines without line and column. Costs a stack capture
 * per op, while profiling only.
 */
function callerFrames(): string[] {
  const E = Error as unknown as { stackTraceLimit: number; prepareStackTrace?: (e: Error, cs: CallSite[]) => unknown };
  const limit = E.stackTraceLimit, prepare = E.prepareStackTrace;
  E.stackTraceLimit = Infinity;
  E.prepareStackTrace = (_e, cs) => cs;
  try {
    const stack = new Error().stack as unknown;
    // Frames: callerFrames, the hook (op/launch), sameDevice/launch, then the caller.
    if (Array.isArray(stack)) {
      return (stack as CallSite[]).slice(3).map((c) =>
        `at ${c.getFunctionName() ?? '<anonymous>'} (${c.getFileName() ?? ''}:${c.getEnclosingLineNumber?.() ?? ''}:${c.getEnclosingColumnNumber?.() ?? ''})`);
    }
    const lines = String(stack ?? '').split('\n');
    return lines.slice(lines[0].startsWith('Error') ? 4 : 3).map((l) => l.trim().replace(/:\d+:\d+\)?$/, ''));
  } finally {
    E.stackTraceLimit = limit;
    E.prepareStackTrace = prepare;
  }
}

/**
 * An op's frames from its own function on: where a helper of the op checked its arguments
 * (`crossEntropy` → `classDim` → `sameDevice`), the frames from the op's function, found by its
 * name, so that the ops it calls after the check are inside it.
 */
function opFrames(op: string, frames: string[]): string[] {
  const name = op.replace(/_+$/, '').replace(/_(\w)/g, (_, c: string) => c.toUpperCase());
  const own = (f: string | undefined) => f !== undefined && (f.startsWith(`at ${name} `) || f.includes(`.${name} (`) || f.startsWith(`${name}@`));
  if (own(frames[0])) return frames;
  for (let i = 1; i < 3; i++) if (own(frames[i])) return frames.slice(i);
  return frames;
}

/** Whether code at `frames` runs inside the call whose frames are `outer` (`strictly`: in a call it made). */
function inside(frames: string[], outer: string[], strictly: boolean): boolean {
  const extra = frames.length - outer.length;
  if (extra < (strictly ? 1 : 0)) return false;
  for (let i = outer.length - 1; i >= 0; i--) if (frames[i + extra] !== outer[i]) return false;
  return true;
}

/** The caller's stack, without webtorch's own frames (the bundle's, or the sources' under ts/). */
function stackHere(): string {
  const lines = (new Error().stack ?? '').split('\n').slice(1);
  return lines.filter((l) => !/webtorch\.js|\/ts\/(profiler|runtime|ops)\//.test(l)).map((l) => l.trim()).join('\n');
}
