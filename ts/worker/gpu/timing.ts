/**
 * The gpu worker's timing: the pass timer of the worker's profile (WorkerApi.profile), which
 * writes timestamps around every pass, and event marks (Backend.mark), the point of the queue
 * an event's record stands for.
 */
import { device, flush, handOver, openEncoder, retired, setPassTimer, settle } from './core.js';
import { contextBuffer } from '../scratch.js';

/** Timestamp pairs per query set; a full set is resolved and copied out, and a new one begun. */
const TIMED_PASSES = 1024;

/** Writes a timestamp pair around each pass, and sums what the device measured once it is done. */
class PassTimer {
  private set = device.createQuerySet({ type: 'timestamp', count: 2 * TIMED_PASSES });
  private used = 0;
  /** Staging buffers holding resolved timestamp pairs, with how many pairs each holds. */
  private readonly resolved: { staging: GPUBuffer; labels: string[]; seqs: number[] }[] = [];
  private labels: string[] = [];
  /** Each pass's entry in the profile's trace (-1: none). */
  private seqs: number[] = [];
  private readonly full: GPUQuerySet[] = [];

  /** The timestamp writes of the next pass of `enc` (resolving the set into `enc` when it fills). */
  next(enc: GPUCommandEncoder, label: string, seq: number): GPUComputePassTimestampWrites {
    if (this.used === TIMED_PASSES) this.resolve(enc);
    this.labels.push(label);
    this.seqs.push(seq);
    const i = 2 * this.used++;
    return { querySet: this.set, beginningOfPassWriteIndex: i, endOfPassWriteIndex: i + 1 };
  }

  /** Records the copy of the used pairs out of the set, and starts a new set. */
  private resolve(enc: GPUCommandEncoder): void {
    const bytes = this.used * 16;
    const target = contextBuffer(device.createBuffer({ size: bytes, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC }));
    const staging = contextBuffer(device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }));
    enc.resolveQuerySet(this.set, 0, 2 * this.used, target, 0);
    enc.copyBufferToBuffer(target, 0, staging, 0, bytes);
    retired.push(target);
    this.full.push(this.set);
    this.resolved.push({ staging, labels: this.labels, seqs: this.seqs });
    this.labels = [];
    this.seqs = [];
    this.set = device.createQuerySet({ type: 'timestamp', count: 2 * TIMED_PASSES });
    this.used = 0;
  }

  /** The GPU's first timestamp: passes are told in ms after it. */
  private base: bigint | null = null;

  /**
   * Each pass timed so far and not yet drained (start and end in ms after the timer's first
   * timestamp), once they have run; `release` also frees the timer's query sets (it is done).
   */
  async drain(release: boolean): Promise<{ seq: number; label: string; start: number; end: number }[]> {
    if (this.used) {
      const enc = device.createCommandEncoder();
      this.resolve(enc);
      device.queue.submit([enc.finish()]);
      handOver();
    }
    flush();
    const passes: { seq: number; label: string; start: number; end: number }[] = [];
    const full = this.full.splice(0);
    for (const { staging, labels, seqs } of this.resolved.splice(0)) {
      await staging.mapAsync(GPUMapMode.READ);
      const t = new BigUint64Array(staging.getMappedRange());
      labels.forEach((l, i) => {
        const t0 = t[2 * i], t1 = t[2 * i + 1];
        // A pass the device did not time (zeros) has no place on the timeline.
        if (t0 === 0n || t1 < t0) return;
        this.base ??= t0;
        passes.push({ seq: seqs[i], label: l, start: Number(t0 - this.base) / 1e6, end: Number(t1 - this.base) / 1e6 });
      });
      staging.destroy();
    }
    for (const q of full) q.destroy();
    if (release) this.set.destroy();
    return passes;
  }
}

/** The running pass timer (core.ts holds it too, as `setPassTimer` gave it). */
let timer: PassTimer | null = null;
/** The timer that `timePasses(false)` stopped, until `passTimes` reads it. */
let stopped: PassTimer | null = null;

/** Starts (if not running) or stops timing passes, where the device has timestamp queries. */
export function timePasses(on: boolean): void {
  flush();
  if (on) {
    if (!timer && device.features.has('timestamp-query')) setPassTimer(timer = new PassTimer());
  } else if (timer) {
    stopped = timer;
    timer = null;
    setPassTimer(null);
  }
}

/** The passes timed since the last call; after `timePasses(false)`, the last ones (and the timer is released). */
export async function passTimes(): Promise<{ seq: number; label: string; start: number; end: number }[] | null> {
  if (timer) return timer.drain(false);
  const t = stopped;
  stopped = null;
  return t ? t.drain(true) : null;
}

// Event marks (Backend.mark): the point of the queue an event's record stands for.

/** The first GPU timestamp seen: event times are milliseconds after it (a double holds them exactly). */
let timeBase: bigint | null = null;

/**
 * Resolves once the work submitted so far has finished, with its time: with `timing` on an
 * adapter with `timestamp-query`, the GPU's own timestamp, written by an empty pass at this
 * point of the queue (its mapping also tells that the work before it has finished); otherwise
 * the worker's clock when `onSubmittedWorkDone` resolves.
 */
export async function mark(timing: boolean): Promise<number> {
  settle(1);
  try {
    return await markNow(timing);
  } finally {
    settle(-1);
  }
}

async function markNow(timing: boolean): Promise<number> {
  if (!timing || !device.features.has('timestamp-query')) {
    flush();
    await device.queue.onSubmittedWorkDone();
    return performance.now();
  }
  const encoder = openEncoder();
  const set = device.createQuerySet({ type: 'timestamp', count: 2 });
  encoder.beginComputePass({ timestampWrites: { querySet: set, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } }).end();
  const resolved = contextBuffer(device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC }));
  const staging = contextBuffer(device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }));
  encoder.resolveQuerySet(set, 0, 2, resolved, 0);
  encoder.copyBufferToBuffer(resolved, 0, staging, 0, 16);
  retired.push(resolved);
  flush();
  try {
    await staging.mapAsync(GPUMapMode.READ);
    const t = new BigUint64Array(staging.getMappedRange())[1];
    timeBase ??= t;
    return Number(t - timeBase) / 1e6;
  } finally {
    staging.destroy();
    set.destroy();
  }
}