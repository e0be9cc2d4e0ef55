/**
 * `torch.profiler.profile`: PyTorch's profiler over webtorch's devices. The calling thread's
 * ops, ranges and memory events come from a `Recorder` (ts/profiler/recorder.ts); the devices'
 * kernels from each worker's own profile (`WorkerApi.profile`, the old `_profileWorker`), turned
 * on at a device's first command in the profile and read back when a cycle ends.
 *
 * A schedule (`torch.profiler.schedule`) splits the steps (`prof.step()`) into cycles of wait,
 * warmup and active steps, as PyTorch's: warmup steps are recorded and thrown away, and at the
 * end of each active run the cycle's results become the profile's and `onTraceReady` is called.
 * A step's switch happens on the calling thread at once (the next op belongs to the next step);
 * reading the workers' profiles is async, so `step()` and `stop()` return promises.
 */
import { profilerHooks } from './hooks.js';
import { kernelsOf, type KernelEvent } from './kernels.js';
import { Recorder, type CallerEvent } from './recorder.js';
import { KeyAverages, type ProfileData } from './table.js';
import { chromeTrace } from './trace.js';

/** PyTorch's `ProfilerActivity`: `CUDA` (and `GPU`) are webtorch's GPU devices' kernels (and the cpu device's). */
export const ProfilerActivity = { CPU: 'cpu', CUDA: 'gpu', GPU: 'gpu' } as const;
/** An activity: 'cpu' (the calling thread's ops and ranges) or 'gpu' ('cuda'; the devices' kernels). */
export type Activity = 'cpu' | 'gpu' | 'cuda';

/** PyTorch's `ProfilerAction`: what a schedule says of a step. */
export enum ProfilerAction {
  NONE = 0,
  WARMUP = 1,
  RECORD = 2,
  RECORD_AND_SAVE = 3,
}

/** `torch.profiler.schedule` options, PyTorch's (`skipFirst` is `skip_first`). */
export interface ScheduleOptions {
  wait: number;
  warmup: number;
  active: number;
  repeat?: number;
  skipFirst?: number;
}

/** `torch.profiler.schedule({wait, warmup, active, repeat, skipFirst})`: step number → action, as PyTorch's. */
export function schedule(options: ScheduleOptions): (step: number) => ProfilerAction {
  const { wait, warmup, active, repeat = 0, skipFirst = 0 } = options ?? ({} as ScheduleOptions);
  const ok = (x: unknown, min: number) => Number.isInteger(x) && (x as number) >= min;
  if (!ok(wait, 0) || !ok(warmup, 0) || !ok(active, 1) || !ok(repeat, 0) || !ok(skipFirst, 0)) {
    throw new Error(`Invalid profiler schedule arguments: wait=${wait}, warmup=${warmup}, active=${active}, repeat=${repeat}, skipFirst=${skipFirst} (integers; active >= 1, the others >= 0)`);
  }
  const n = wait + warmup + active;
  return (step: number) => {
    if (step < skipFirst) return ProfilerAction.NONE;
    step -= skipFirst;
    if (repeat > 0 && Math.floor(step / n) >= repeat) return ProfilerAction.NONE;
    const m = step % n;
    if (m < wait) return ProfilerAction.NONE;
    if (m < wait + warmup) return ProfilerAction.WARMUP;
    return m < n - 1 ? ProfilerAction.RECORD : ProfilerAction.RECORD_AND_SAVE;
  };
}

/** `torch.profiler.profile` options (PyTorch's, in camelCase). */
export interface ProfileOptions {
  activities?: readonly (Activity | string)[];
  schedule?: (step: number) => ProfilerAction;
  onTraceReady?: (prof: Profile) => unknown;
  recordShapes?: boolean;
  profileMemory?: boolean;
  withStack?: boolean;
}

const OPTION_KEYS = ['activities', 'schedule', 'onTraceReady', 'recordShapes', 'profileMemory', 'withStack'];
const recording = (a: ProfilerAction) => a !== ProfilerAction.NONE;

/** A profile: started by `profile(options, fn)` or `prof.start()`, read with `keyAverages()` and `exportChromeTrace()`. */
export class Profile {
  readonly cpu: boolean;
  readonly devices: boolean;
  /** The steps taken (`step()`). */
  stepNum = 0;
  private readonly options: ProfileOptions;
  private state: 'new' | 'running' | 'stopped' = 'new';
  private action = ProfilerAction.NONE;
  private rec: Recorder | null = null;
  private recordSteps = false;
  private data: ProfileData | null = null;
  private start0 = 0;
  /** The saves in flight, in order; it never rejects (the first failure is kept in `failure`). */
  private chain: Promise<void> = Promise.resolve();
  private failure: unknown = null;

  /** Queues `work` after the saves in flight, keeping its failure for `stop()`. */
  private after(work: () => unknown): void {
    this.chain = this.chain.then(work).then(() => undefined, (e: unknown) => {
      this.failure ??= e;
    });
  }

  constructor(options: ProfileOptions = {}) {
    if (typeof options !== 'object' || options === null) throw new TypeError('profile(): options must be an object');
    for (const k of Object.keys(options)) {
      if (!OPTION_KEYS.includes(k)) throw new TypeError(`profile() got an unexpected keyword argument '${k}' (expected ${OPTION_KEYS.join(', ')})`);
    }
    const acts = options.activities ?? ['cpu', 'gpu'];
    for (const a of acts) {
      if (!['cpu', 'gpu', 'cuda'].includes(String(a))) throw new TypeError(`profile(): unknown activity '${String(a)}'; expected ProfilerActivity.CPU ('cpu') or ProfilerActivity.CUDA ('gpu')`);
    }
    if (options.schedule !== undefined && typeof options.schedule !== 'function') throw new TypeError('profile(): schedule must be a function of the step (torch.profiler.schedule({...}))');
    this.options = options;
    this.cpu = acts.includes('cpu');
    this.devices = acts.includes('gpu') || acts.includes('cuda');
  }

  /** Starts profiling (PyTorch's `prof.start()` / entering `with profile(...)`). */
  start(): this {
    if (this.state !== 'new') throw new Error(`profile.start(): this profile was already ${this.state === 'running' ? 'started' : 'stopped'}; make a new one`);
    if (profilerHooks.current) throw new Error('profile.start(): the profiler is already enabled (another profile is recording); stop it first');
    this.state = 'running';
    this.action = this.options.schedule ? this.options.schedule(0) : ProfilerAction.RECORD;
    this.transit(ProfilerAction.NONE, this.action);
    return this;
  }

  /**
   * Ends the current step (PyTorch's `prof.step()`): the schedule's next action takes effect now;
   * resolves once a cycle it ended is saved. It never rejects, so that an un-awaited `step()`
   * (PyTorch's is synchronous) cannot end the process: a failure (a device lost, `onTraceReady`
   * throwing) is raised by `stop()`.
   */
  step(): Promise<void> {
    if (this.state !== 'running') return Promise.reject(new Error('profile.step(): the profile is not running (call start() first, or step inside profile(options, fn))'));
    this.recordSteps = true;
    if (this.rec && this.rec.depth && this.stepOpen) this.rec.popRange();
    this.stepOpen = false;
    const prev = this.action;
    this.stepNum++;
    this.action = this.options.schedule ? this.options.schedule(this.stepNum) : ProfilerAction.RECORD;
    this.transit(prev, this.action);
    return this.chain;
  }

  /** Whether a `ProfilerStep#N` range is open. */
  private stepOpen = false;

  /** Stops profiling; resolves once the devices' profiles are read (and `onTraceReady` has run). */
  stop(): Promise<void> {
    if (this.state !== 'running') return Promise.reject(new Error('profile.stop(): the profile is not running'));
    this.state = 'stopped';
    this.transit(this.action, ProfilerAction.NONE, true);
    return this.chain.then(() => {
      const f = this.failure;
      this.failure = null;
      if (f) throw f;
    });
  }

  /** Whether results can be read: a cycle was saved (the profile stopped, or a schedule's active run ended). */
  get finished(): boolean {
    return this.data !== null;
  }

  private transit(prev: ProfilerAction, next: ProfilerAction, stopping = false): void {
    const A = ProfilerAction;
    if (prev === A.RECORD_AND_SAVE || ((prev === A.RECORD) && (next === A.NONE || stopping))) this.save();
    else if (prev === A.WARMUP && (next === A.NONE || stopping)) this.discard();
    else if (prev === A.WARMUP && (next === A.RECORD || next === A.RECORD_AND_SAVE)) this.restart();
    if (!stopping && recording(next) && !this.rec) this.begin();
    if (!stopping && this.rec && this.recordSteps) {
      this.rec.pushRange(`ProfilerStep#${this.stepNum}`);
      this.stepOpen = true;
    }
  }

  private begin(): void {
    this.rec = new Recorder({
      recordShapes: !!this.options.recordShapes, profileMemory: !!this.options.profileMemory, withStack: !!this.options.withStack, devices: this.devices,
    });
    profilerHooks.current = this.rec;
  }

  /** Detaches the recorder and asks the devices for their profiles (in program order, now). */
  private detach(): [Recorder, ReturnType<Recorder['devicesProfiles']>] | null {
    const rec = this.rec;
    if (!rec) return null;
    rec.finish();
    this.stepOpen = false;
    if (profilerHooks.current === rec) profilerHooks.current = null;
    this.rec = null;
    const profiles = rec.devicesProfiles(false);
    profiles.catch(() => undefined); // handled where the chain reaches it (see `after`)
    return [rec, profiles];
  }

  private discard(): void {
    const d = this.detach();
    if (d) this.after(() => d[1]);
  }

  private restart(): void {
    if (!this.rec) return;
    this.stepOpen = false;
    this.rec.finish();
    const p = this.rec.devicesProfiles(true);
    p.catch(() => undefined); // handled where the chain reaches it (see `after`)
    this.after(() => p);
  }

  private save(): void {
    const d = this.detach();
    if (!d) return;
    const [rec, profiles] = d;
    this.after(async () => {
      const kernels: KernelEvent[] = [];
      for (const [device, p] of await profiles) if (p) kernels.push(...kernelsOf(device, p));
      kernels.sort((a, b) => a.t0 - b.t0);
      this.data = {
        events: rec.events, kernels: this.devices ? kernels : [], memory: rec.memoryEvents, cpu: this.cpu, profileMemory: !!this.options.profileMemory,
      };
      this.start0 = rec.start;
      await this.options.onTraceReady?.(this);
    });
  }

  private results(what: string): ProfileData {
    if (!this.data) {
      throw new Error(`${what}: the profile has not finished; call it after \`await torch.profiler.profile(options, fn)\`, after \`await prof.stop()\`, or in onTraceReady`);
    }
    return this.data;
  }

  /** PyTorch's `key_averages(group_by_input_shape=...)` (positional too: `keyAverages(true)`). */
  keyAverages(options: { groupByInputShape?: boolean } | boolean = {}): KeyAverages {
    const data = this.results('keyAverages()');
    if (typeof options === 'boolean') options = { groupByInputShape: options };
    if (options.groupByInputShape && !data.events.some((e) => e.shapes)) {
      throw new Error('keyAverages({groupByInputShape: true}) needs the profile to record shapes: profile({recordShapes: true, ...})');
    }
    return new KeyAverages(data, !!options.groupByInputShape);
  }

  /** The recorded events: the calling thread's ops and ranges, the devices' kernels, the memory events. */
  events(): { ops: CallerEvent[]; kernels: KernelEvent[]; memory: ProfileData['memory'] } {
    const d = this.results('events()');
    return { ops: d.events, kernels: d.kernels, memory: d.memory };
  }

  /**
   * PyTorch's `export_chrome_trace(path)`: the trace as Chrome trace-event JSON (Perfetto opens
   * it). In Node it writes `path`; in a browser it offers the file as a download named `path`.
   * Resolves with the JSON text.
   */
  async exportChromeTrace(path?: string): Promise<string> {
    const json = JSON.stringify(chromeTrace(this.results('exportChromeTrace()'), this.start0));
    if (path === undefined) return json;
    if (typeof path !== 'string') throw new TypeError(`exportChromeTrace(): path must be a string, got ${typeof path}`);
    const g = globalThis as { process?: { versions?: { node?: string } }; document?: { createElement(t: string): { href: string; download: string; click(): void } } };
    if (g.process?.versions?.node) {
      const { writeFile } = await import('node:fs/promises');
      await writeFile(path, json);
    } else if (g.document) {
      const a = g.document.createElement('a');
      a.href = URL.createObjectURL(new Blob([json], { type: 'application/json' }));
      a.download = path.split('/').pop() || 'trace.json';
      a.click();
    }
    return json;
  }
}

/**
 * `torch.profiler.profile(options, fn)`: profiles `fn(prof)` (sync or async) and resolves with
 * the finished profile (PyTorch's `with profile(...) as prof:`). Without `fn`, returns a profile
 * to drive with `start()`, `step()` and `await stop()`.
 */
export function profile(options?: ProfileOptions): Profile;
export function profile(options: ProfileOptions, fn: (prof: Profile) => unknown): Promise<Profile>;
export function profile(options: ProfileOptions = {}, fn?: (prof: Profile) => unknown): Profile | Promise<Profile> {
  const prof = new Profile(options);
  if (fn === undefined) return prof;
  if (typeof fn !== 'function') throw new TypeError('profile(options, fn): fn must be a function (the `with` body)');
  return (async () => {
    prof.start();
    try {
      await fn(prof);
    } catch (e) {
      await prof.stop().catch(() => undefined);
      throw e;
    }
    await prof.stop();
    return prof;
  })();
}

/** PyTorch's `tensorboard_trace_handler(dir)`: an `onTraceReady` that writes each cycle's trace into `dir` (Node). */
export function tensorboardTraceHandler(dir: string, workerName = 'webtorch'): (prof: Profile) => Promise<void> {
  return async (prof) => {
    const { mkdir } = await import('node:fs/promises');
    await mkdir(dir, { recursive: true });
    await prof.exportChromeTrace(`${dir}/${workerName}.${Date.now()}.pt.trace.json`);
  };
}
