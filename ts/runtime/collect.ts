/**
 * Freeing what nobody holds, when memory is short: PyTorch's habit of dropping tensors.
 *
 * PyTorch frees a tensor when its last reference goes (reference counting). Here a tensor that is
 * dropped without `dispose()` or `tidy` is freed when the JavaScript garbage collector finds it
 * dead and its FinalizationRegistry callback runs (ts/runtime/storage.ts), which happens in a
 * task after the current one. A training loop written as in PyTorch allocates faster than that:
 * its garbage piles up in the device's budget. So the allocator's caller collects:
 *
 * - On a miss (`malloc` raises `OutOfMemoryError`): a full collection, the callbacks of what it
 *   found dead run at once (Note [Forcing a collection] in ts/platform.ts), and the allocation is
 *   retried; only a second miss raises.
 * - Under pressure, before a miss: when the bytes of live storages pass the device's `limit`, the
 *   same collection runs after the allocation. The limit then becomes twice what survived (at
 *   least an eighth of the budget, at most 256 MiB more than what survived; when that passes three
 *   quarters of the budget, only misses collect): a heap-growth rule, as V8's own, so that a loop whose garbage is small next to its
 *   live set collects rarely, and `memoryAllocated` stays flat over a long loop instead of rising
 *   to the budget.
 *
 * Cost: one full collection of the JavaScript heap: about 10–50 ms for a small program's heap
 * (`collectorStats()` counts them and their time). In steady state it runs once every
 * (limit − live) / (garbage per step) steps, not every step.
 *
 * What it assumes: a collection inside an allocation runs in the middle of an op, so a storage an
 * op still means to use must be held through a reachable tensor (an argument, a temporary it
 * disposes after its commands are queued, or one in a `tidy` scope), never by a storage or a
 * `ViewRef` alone: a temporary dropped undisposed before the op allocates could be found dead,
 * and its block given to the allocation. The ops dispose their temporaries (the suites' leak
 * check fails otherwise), which keeps them reachable until then.
 *
 * In a browser no collection can be forced: a miss raises `OutOfMemoryError` at once, and dropped
 * tensors are freed when the program yields to the event loop (an `await` of a read, a timer).
 * Loops there should `tidy` their steps, or await something each step.
 */
import { forcedCollector } from '../platform.js';
import { OutOfMemoryError } from '../memory/errors.js';
import type { Allocation, CachingAllocator } from '../memory/index.js';

const MiB = 1024 ** 2;

/** What the storages lend the collector (set by ts/runtime/storage.ts, below it in the imports). */
export interface CollectorHooks {
  /** The registry whose callbacks free dropped tensors' storages. */
  registry: FinalizationRegistry<never>;
  /** Registers the tensors made in the current run that are not watched yet (so they can be found dead). */
  watchPending(): void;
  /** Bytes of live storages on the device with this allocator's label. */
  liveBytes(label: string): number;
}

let hooks: CollectorHooks | null = null;

/** @internal Lends the collector what it needs (ts/runtime/storage.ts, at import). */
export function setCollectorHooks(h: CollectorHooks): void {
  hooks = h;
}

/** Collections run so far and what they cost (`collectorStats`). */
const stats = { collections: 0, onMiss: 0, underPressure: 0, ms: 0, maxMs: 0, freedBytes: 0 };
/** Per allocator: what survived the last collection, and the limit it sets under the budget it was set for. */
interface Limit {
  budget: number;
  survived: number;
  bytes: number;
}
const limits = new WeakMap<CachingAllocator, Limit>();

/** The budget an allocator enforces now (its capacity times its fraction). */
const budgetOf = (a: CachingAllocator): number => a.capacity * a.memoryFraction;

/** The limit under `budget` after a collection left `survived` bytes live. */
function nextLimit(budget: number, survived: number): number {
  const grown = Math.max(budget / 8, Math.min(2 * survived, survived + 256 * MiB));
  // a live set too large to double within the budget: only misses collect
  return grown <= 0.75 * budget ? grown : Infinity;
}

/** The live bytes above which an allocation collects (recomputed when the budget changed: `setPerProcessMemoryFraction`). */
function limitOf(a: CachingAllocator): Limit {
  const budget = budgetOf(a);
  let l = limits.get(a);
  if (!l) limits.set(a, (l = { budget: NaN, survived: 0, bytes: 0 }));
  if (l.budget !== budget) {
    l.budget = budget;
    l.bytes = nextLimit(budget, l.survived);
  }
  return l;
}

/**
 * Runs a full collection and the callbacks of the tensors it found dead; returns false where no
 * collection can be forced (a browser). `label` names the device whose live bytes are reported.
 */
function collect(a: CachingAllocator, why: 'miss' | 'pressure'): boolean {
  const c = forcedCollector();
  if (!c || !hooks) return false;
  const before = hooks.liveBytes(a.label);
  const t0 = performance.now();
  hooks.watchPending();
  c.gc();
  c.cleanupSome(hooks.registry);
  const ms = performance.now() - t0;
  const after = hooks.liveBytes(a.label);
  stats.collections++;
  if (why === 'miss') stats.onMiss++;
  else stats.underPressure++;
  stats.ms += ms;
  stats.maxMs = Math.max(stats.maxMs, ms);
  stats.freedBytes += Math.max(0, before - after);
  const l = limitOf(a);
  l.survived = after;
  l.bytes = nextLimit(l.budget, after);
  return true;
}

/**
 * Allocates `bytes` for `stream` from `a`, collecting garbage on a miss (then retrying once) and
 * after an allocation that took the live bytes past the device's limit (see the note above).
 */
export function mallocCollecting(a: CachingAllocator, bytes: number, stream: number): Allocation {
  let got: Allocation;
  try {
    got = a.malloc(bytes, stream);
  } catch (e) {
    if (!(e instanceof OutOfMemoryError) || !collect(a, 'miss')) throw e;
    return a.malloc(bytes, stream);
  }
  if (hooks && hooks.liveBytes(a.label) + bytes > limitOf(a).bytes) collect(a, 'pressure');
  return got;
}

/**
 * @internal Forces a full collection now and frees the storages of the tensors it found dead
 * (the tests' leak check after a loop without `tidy`); false where none can be forced (a browser).
 */
export function collectGarbage(): boolean {
  const c = forcedCollector();
  if (!c || !hooks) return false;
  hooks.watchPending();
  c.gc();
  c.cleanupSome(hooks.registry);
  return true;
}

/** What the collections forced so far cost (Node; all zeros in a browser). */
export interface CollectorStats {
  /** Full collections forced. */
  collections: number;
  /** Of those, how many an allocation's miss forced (each retried the allocation). */
  onMiss: number;
  /** Of those, how many ran because the live bytes passed the device's limit. */
  underPressure: number;
  /** Milliseconds spent in them, in all and at most in one. */
  ms: number;
  maxMs: number;
  /** Bytes of storages they freed. */
  freedBytes: number;
}

/** @internal The collections forced so far and their cost (the habits tests, `bench/no-tidy-loop.mjs`). */
export function collectorStats(): CollectorStats {
  return { ...stats };
}
