/**
 * Ranges a program marks: `torch.profiler.recordFunction(name, fn)` and NVTX's
 * `torch.gpu.nvtx.rangePush/rangePop/range`. They show in the trace (as PyTorch's
 * "user_annotation" events) and the table, with the ops inside them as children.
 *
 * NVTX keeps its own stack, profiler or not, as `nvtxRangePush`/`nvtxRangePop` do: push returns
 * the new range's 0-based level, pop the level of the range it ended, and -1 when no range is
 * open (what `torch.cuda.nvtx.range_pop()` returns; it does not raise).
 */
import { profilerHooks } from './hooks.js';
import { Recorder } from './recorder.js';

/** The recorder of the profile now recording, if any. */
export const activeRecorder = (): Recorder | null => (profilerHooks.current instanceof Recorder ? profilerHooks.current : null);

/** Runs `fn` between `open` and `close`, sync or async (closing once its promise settles). */
function within<T>(open: () => void, close: () => void, fn: () => T): T {
  open();
  let r: T;
  try {
    r = fn();
  } catch (e) {
    close();
    throw e;
  }
  if (r instanceof Promise) return r.finally(close) as T;
  close();
  return r;
}

/**
 * `torch.profiler.recordFunction(name, fn)`: PyTorch's `with record_function(name):` around
 * `fn` (sync or async); returns what `fn` returns. Outside a profile it just runs `fn`.
 */
export function recordFunction<T>(name: string, fn: () => T): T {
  if (typeof name !== 'string') throw new TypeError(`recordFunction(): name must be a string, got ${typeof name}`);
  if (typeof fn !== 'function') throw new TypeError('recordFunction(name, fn): fn must be a function (PyTorch\'s `with record_function(name):` body)');
  let rec: Recorder | null = null;
  return within(() => {
    rec = activeRecorder();
    rec?.pushRange(name);
  }, () => {
    if (rec && rec === activeRecorder()) rec.popRange();
  }, fn);
}

/** The NVTX range stack: each range's recorder (the profile recording when it was pushed), or null. */
const nvtxStack: (Recorder | null)[] = [];

/** `torch.gpu.nvtx.rangePush(msg)`: opens a range; returns its 0-based level. */
export function rangePush(msg: string): number {
  if (typeof msg !== 'string') throw new TypeError(`rangePush(): msg must be a string, got ${typeof msg}`);
  const rec = activeRecorder();
  rec?.pushRange(msg);
  nvtxStack.push(rec);
  return nvtxStack.length - 1;
}

/** `torch.gpu.nvtx.rangePop()`: closes the innermost range; returns its level, or -1 when no range is open (as PyTorch). */
export function rangePop(): number {
  if (!nvtxStack.length) return -1;
  const rec = nvtxStack.pop()!;
  if (rec && rec === activeRecorder()) rec.popRange();
  return nvtxStack.length;
}

/** `torch.gpu.nvtx.range(msg, fn)`: PyTorch's `with torch.cuda.nvtx.range(msg):` around `fn` (sync or async). */
export function range<T>(msg: string, fn: () => T): T {
  if (typeof fn !== 'function') throw new TypeError('nvtx.range(msg, fn): fn must be a function (the `with` body)');
  return within(() => void rangePush(msg), () => void rangePop(), fn);
}

/** `torch.gpu.nvtx.mark(msg)`: an instant marker; a zero-length range in the profile. */
export function mark(msg: string): void {
  const rec = activeRecorder();
  if (!rec) return;
  rec.pushRange(msg);
  rec.popRange();
}
