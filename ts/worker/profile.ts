/**
 * A device worker's profiles (`WorkerApi.profile`): commands counted and timed by kind, time
 * ending batches and waiting for the device, a trace of each kernel command, and the GPU's
 * timed passes where the backend times them.
 *
 * Why a command belongs to the profile that was on when it *arrived*, whenever it runs: a
 * profile switch takes effect at once for what arrives next, while the scheduler may still hold
 * earlier commands. Trace numbers are unique over the worker's life, so a GPU pass names its
 * command by one, the GPU timer can run across back-to-back profiles (a schedule's cycles), and
 * each profile takes its own passes.
 *
 * Cost while no profile is on: one WeakMap lookup per kernel command (`profileOf`) and one null
 * check per batch and per flush.
 */
import type { Backend } from './backend.js';
import type { TraceEntry, WorkerProfile } from './protocol.js';
import type { Command } from '../ir/commands.js';
import { UNTRACED_KINDS } from '../ir/kinds.js';

/** The worker's clock as milliseconds since the epoch, comparable with the calling thread's. */
const epochMs = (t: number) => performance.timeOrigin + t;

/** One profile, from its switch on to its switch off (see `WorkerProfile`). */
export class Profile {
  readonly start = performance.now();
  batches = 0;
  flushMs = 0;
  waitMs = 0;
  readonly commands: WorkerProfile['commands'] = {};
  readonly trace: TraceEntry[] = [];

  add(kind: string, ms: number): void {
    const c = (this.commands[kind] ??= { count: 0, ms: 0 });
    c.count++;
    c.ms += ms;
  }

  /** Times an awaited step as waiting for the device. */
  async wait<T>(p: Promise<T> | T): Promise<T> {
    const t = performance.now();
    try {
      return await p;
    } finally {
      this.waitMs += performance.now() - t;
    }
  }
}

/** The profiles of one worker: the one on now, the commands' owners, op tags and spare passes. */
export class Profiler {
  /** The profile that commands arriving now belong to (null: none is on). */
  private current: Profile | null = null;
  private readonly owner = new WeakMap<Command, Profile>();
  /** Profiles switched off or replaced whose commands may still run (the GPU timer runs while any is). */
  private pendingProfiles = 0;
  /** Trace numbers, unique over the worker's life: a GPU pass names its command by one. */
  private nextSeq = 0;
  /** Passes drained for one profile that belong to a later one. */
  private sparePasses: NonNullable<WorkerProfile['passes']> = [];
  /** Per stream: the profiler's caller op its commands belong to (`opTag`). */
  private readonly opTags = new Map<number, number>();

  constructor(private readonly backend: Backend) {}

  /** Files a batch's commands under the profile on now, if one is. */
  adopt(cmds: readonly Command[]): void {
    const p = this.current;
    if (p) for (const c of cmds) this.owner.set(c, p);
  }

  /** The profile a command arrived under (undefined: none). */
  profileOf(cmd: Command): Profile | undefined {
    return this.owner.get(cmd);
  }

  /** Runs a kernel command of profile `p` through the backend, counted, timed and traced. */
  run(p: Profile, cmd: Command, stream: number): void {
    const backend = this.backend;
    const seq = UNTRACED_KINDS.has(cmd.k) ? -1 : this.nextSeq++;
    backend.traceSeq?.(seq);
    const t = performance.now();
    try {
      backend.run(cmd);
    } finally {
      const t1 = performance.now();
      p.add(cmd.k, t1 - t);
      if (seq >= 0) p.trace.push({ seq, op: this.opTags.get(stream) ?? 0, stream, name: cmd.k, t0: epochMs(t), t1: epochMs(t1) });
      backend.traceSeq?.(-1);
    }
  }

  /** `opTag`: the stream's later kernels belong to the caller's op `op`. */
  tag(stream: number, op: number): void {
    this.opTags.set(stream, op);
  }

  /** Ends a batch through the backend, timed while a profile is on. */
  flush(): void {
    const p = this.current;
    if (!p) return this.backend.flush();
    const t = performance.now();
    this.backend.flush();
    p.flushMs += performance.now() - t;
    p.batches++;
  }

  /** `step`, timed as waiting for the device while a profile is on. */
  waitFor<T>(step: Promise<T> | T): Promise<T> | T {
    return this.current ? this.current.wait(step) : step;
  }

  /**
   * Turns profiling on (a new profile) or off, and resolves with the profile that was on, once
   * its commands have all run (`settled`: after the commands received before the switch) and its
   * passes are in; null when none was on.
   */
  switch(on: boolean, settled: () => Promise<void>, compiled: () => Promise<void>): Promise<WorkerProfile | null> {
    const backend = this.backend;
    const done = this.current;
    this.current = on ? new Profile() : null;
    if (on) backend.timePasses?.(true);
    if (!done) return Promise.resolve(null);
    this.pendingProfiles++;
    return settled().then(async () => {
      const last = --this.pendingProfiles === 0 && !this.current;
      if (last) backend.timePasses?.(false);
      await compiled();
      const drained = backend.passTimes ? await backend.passTimes() : null;
      const wallMs = performance.now() - done.start;
      let passes: WorkerProfile['passes'] = null, gpu: WorkerProfile['gpu'] = null;
      if (drained) {
        const mine = new Set(done.trace.map((e) => e.seq));
        const all = this.sparePasses.concat(drained);
        passes = all.filter((q) => mine.has(q.seq));
        // Passes of later profiles wait for them (dropped once no profile is on).
        this.sparePasses = last ? [] : all.filter((q) => !mine.has(q.seq));
        gpu = {};
        for (const q of passes) {
          const e = (gpu[q.label] ??= { count: 0, ms: 0 });
          e.count++;
          e.ms += q.end - q.start;
        }
      }
      return {
        wallMs, batches: done.batches, commands: done.commands, flushMs: done.flushMs,
        waitMs: done.waitMs, gpu, trace: done.trace, passes,
      };
    });
  }
}
