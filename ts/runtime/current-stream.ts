/**
 * The current stream of each device, as a context variable (ts/context.ts): PyTorch's
 * thread-local current stream, with the program's top level as the thread. `withStream(s, fn)`
 * makes `s` current for `fn` and the async work it starts, and for nothing else; `setStream`
 * changes it for the innermost `withStream` run, or for the program.
 *
 * Devices are keyed by name (`'gpu:0'`) so that the client (ts/runtime/client.ts) can read it
 * without importing the device module. Until a stream is first set, every device's current
 * stream is its default stream (0) and the lookup costs nothing.
 */
import { ContextVar } from '../context.js';

/** What the variable holds: the current stream id of each device that has one set, and the `withStream` scope. */
interface Streams {
  readonly ids: ReadonlyMap<string, number>;
  /** The stream of the innermost `withStream`, for the same-device check (ts/runtime/dispatch.ts). */
  readonly scope: StreamScope | null;
}

/** The stream of a `withStream` scope, as the dispatch check sees it. */
export interface StreamScope {
  readonly device: { toString(): string };
  toString(): string;
}

const current = new ContextVar<Streams>('torch.gpu.stream', { ids: new Map(), scope: null });
let used = false;

/** The id of the current stream of device `name`. */
export function streamId(name: string): number {
  return used ? (current.get().ids.get(name) ?? 0) : 0;
}

/** Makes stream `id` current on device `name` (for the innermost `withStream` run, or the program). */
export function setStreamId(name: string, id: number): void {
  used = true;
  const v = current.get();
  current.set({ ids: new Map(v.ids).set(name, id), scope: v.scope });
}

/** Runs `fn` with stream `id` current on device `name`, and `scope` as the `withStream` scope. */
export function runWithStream<T>(name: string, id: number, scope: StreamScope, fn: () => T): T {
  used = true;
  const v = current.get();
  return current.run({ ids: new Map(v.ids).set(name, id), scope }, fn);
}

/** The stream of the innermost `withStream` around the calling code, or null. */
export function streamScope(): StreamScope | null {
  return used ? current.get().scope : null;
}
