/**
 * The gpu worker's own intermediate buffers, for families that split one command into several
 * dispatches (split-K partial products, a two-pass reduction's partial results, a transposed
 * operand's row-major copy): `KeptScratch` keeps one per use between commands, and `asSegments`
 * lets a family address such a buffer by id, as its commands address the allocator's segments.
 */
import { createScratch } from '../scratch.js';
import { buffers, device, retired } from './core.js';

/** Scratch up to this size is kept between commands (`KeptScratch`); larger is made for one command. */
const KEPT_SCRATCH = 64 << 20;
/** Every family's kept scratch, dropped together by `dropKeptScratch` (emptyCache). */
const keptScratch: KeptScratch[] = [];

/**
 * Note [kept scratch]: a scratch buffer a family keeps and grows, for work whose intermediate results live only
 * within one command (a product's operand copy, split partial results): dispatches on one queue
 * run in order, so the next command may overwrite what the last one read, and a fresh buffer per
 * command cost a buffer, its zeroing and new bind groups each time. A graph that binds it holds
 * it (`holdBuffer`), so a replay reads what its own dispatches wrote. Counted as cached scratch
 * (ts/worker/scratch.ts).
 */
export class KeptScratch {
  private b: GPUBuffer | null = null;
  constructor(private readonly what: string) {
    keptScratch.push(this);
  }

  /** A buffer of at least `bytes` bytes: the kept one, grown in whole MiB, or a one-off past KEPT_SCRATCH (retired at the flush). */
  take(bytes: number): GPUBuffer {
    if (bytes > KEPT_SCRATCH) {
      const once = createScratch(device, bytes, GPUBufferUsage.STORAGE, false, this.what);
      retired.push(once);
      return once;
    }
    if (!this.b || this.b.size < bytes || this.device !== device) {
      if (this.b && this.device === device) retired.push(this.b);
      this.b = createScratch(device, Math.ceil(bytes / (1 << 20)) << 20, GPUBufferUsage.STORAGE, true, this.what);
      this.device = device;
    }
    return this.b;
  }

  private device: GPUDevice | null = null;

  /** Retires the kept buffer. */
  drop(): void {
    if (this.b) retired.push(this.b);
    this.b = null;
  }
}

/** Retires every family's kept scratch (emptyCache). */
export function dropKeptScratch(): void {
  for (const k of keptScratch) k.drop();
}

/** The next id `asSegments` gives a worker-made buffer (negative: the allocator's ids are positive). */
let nextScratchId = -2;

/**
 * Runs `fn` with `bufs` (the worker's own scratch) addressable by id as segments are, so that a
 * family can run its own commands on them (a split product's partials, a two-pass reduction's
 * first pass). The ids are forgotten when `fn` returns.
 */
export function asSegments<T>(bufs: GPUBuffer[], fn: (ids: number[]) => T): T {
  const ids = bufs.map((b) => {
    const id = nextScratchId--;
    buffers.set(id, b);
    return id;
  });
  try {
    return fn(ids);
  } finally {
    for (const id of ids) buffers.delete(id);
  }
}
