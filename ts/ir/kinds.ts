/**
 * What each command kind of the IR (ts/ir/commands.ts) is to the parts that route commands
 * without running them: the scheduler and the caller's queue (`scope`), graph capture on both
 * sides of the worker boundary (`capture`), and the batch's wire form (`wire`).
 *
 * Note [one descriptor per kind]: `KINDS` is typed by the `Command` union itself, so a kind added
 * to the union without a row here, or a row for a kind that does not exist, fails to compile. The
 * sets the runtime consults (`DEVICE_KINDS`, `CAPTURED_KINDS`, …) are derived from the rows, never
 * listed by hand; test/unit/ir-kinds.test.ts holds the rows to the behaviour they name.
 */
import type { Command } from './commands.js';

/** The kinds of command. */
export type CommandKind = Command['k'];

/** How a command kind routes. */
export interface KindInfo {
  /**
   * 'stream': runs in its stream's order. 'device': belongs to the device as a whole (memory,
   * peers): the scheduler runs it after every stream's earlier commands, and a stream's later
   * command after it.
   */
  scope: 'stream' | 'device';
  /**
   * What a graph capture does with it:
   * - 'kernel': device work; captured instead of run, replayed later, traced by the profiler;
   * - 'event': the facade's stream bookkeeping (marks, events, profiler tags, a read's call):
   *   runs as usual while its stream captures;
   * - 'memory': memory and peers of the device as a whole: runs as usual, left out of traces;
   * - 'control': begins or ends a capture, or forgets a graph;
   * - 'copy': moves bytes from the host or another device: refused while capturing (a graph
   *   replays device work only);
   * - 'replay': a graph's replay: refused while capturing.
   */
  capture: 'kernel' | 'event' | 'memory' | 'control' | 'copy' | 'replay';
  /**
   * 'words': packed as numbers in the batch's `words` (the frequent kinds; ts/worker/protocol.ts);
   * 'object': structured-cloned in `objects`; 'worker': made inside the worker, never sent.
   */
  wire: 'words' | 'object' | 'worker';
}

const kernel = (wire: KindInfo['wire'] = 'object'): KindInfo => ({ scope: 'stream', capture: 'kernel', wire });
const event: KindInfo = { scope: 'stream', capture: 'event', wire: 'object' };
const copy = (scope: KindInfo['scope'] = 'stream'): KindInfo => ({ scope, capture: 'copy', wire: 'object' });

/** Every command kind, described once. */
export const KINDS: { readonly [K in CommandKind]: KindInfo } = {
  segment: { scope: 'device', capture: 'memory', wire: 'words' },
  release: { scope: 'device', capture: 'memory', wire: 'words' },
  dropScratch: { scope: 'device', capture: 'memory', wire: 'object' },
  connect: { scope: 'device', capture: 'memory', wire: 'object' },
  abortTags: { scope: 'device', capture: 'memory', wire: 'object' },
  write: copy(),
  fill: kernel('words'),
  arange: kernel(),
  random: kernel(),
  copy: kernel('words'),
  copyInto: kernel(),
  unary: kernel('words'),
  binary: kernel('words'),
  where: kernel(),
  reduce: kernel(),
  softmax: kernel(),
  windows: kernel(),
  matmul: kernel(),
  record: event,
  mark: event,
  wait: event,
  signal: copy('device'),
  waitSignal: copy(),
  readHost: copy(),
  writeHost: copy(),
  call: { scope: 'stream', capture: 'event', wire: 'worker' },
  opTag: event,
  captureBegin: { scope: 'stream', capture: 'control', wire: 'object' },
  captureEnd: { scope: 'stream', capture: 'control', wire: 'object' },
  replay: { scope: 'stream', capture: 'replay', wire: 'object' },
  graphReset: { scope: 'device', capture: 'control', wire: 'object' },
  send: copy(),
  recv: copy(),
  gather: kernel(),
  scatter: kernel(),
  cumulative: kernel(),
  sort: kernel(),
  oneHot: kernel(),
  nll: kernel(),
  nllGrad: kernel(),
  maxPool: kernel(),
  maxPoolGrad: kernel(),
  avgPool: kernel(),
  avgPoolGrad: kernel(),
  rowGrad: kernel(),
  foldWindows: kernel(),
  conv: kernel(),
  convGrad: kernel(),
  ampUnscale: kernel(),
  optimStep: kernel(),
  foreachNorm: kernel(),
  foreachMul: kernel(),
  foreachClamp: kernel(),
  attention: kernel(),
  attentionGrad: kernel(),
};

/**
 * Note [composable kinds]: ops with a composed form. A backend lists in `DeviceInfo.kernels` the
 * ones it runs as one command (its own choice: what its kernels do well on its hardware); on a
 * device that does not list a kind, the op builds the same result from other commands (ts/ops/conv.ts).
 * Ops ask `runsAsOne` (ts/runtime/dispatch.ts), never the device type or the adapter.
 */
export const COMPOSABLE_KINDS = ['conv', 'convGrad', 'windows', 'foldWindows'] as const satisfies readonly CommandKind[];
/** A kind a backend may run as one command or leave to its op's composed form. */
export type ComposableKind = (typeof COMPOSABLE_KINDS)[number];

const kindsWhere = (test: (d: KindInfo, k: CommandKind) => boolean): ReadonlySet<CommandKind> =>
  new Set((Object.keys(KINDS) as CommandKind[]).filter((k) => test(KINDS[k], k)));

/** Kinds of the device as a whole, not of a stream. */
export const DEVICE_KINDS = kindsWhere((d) => d.scope === 'device');
/** Kinds a graph captures and replays: the device's work. */
export const CAPTURED_KINDS = kindsWhere((d) => d.capture === 'kernel');
/** Stream kinds that run as usual while their stream captures (marks, events, tags, calls). */
export const PASSED_KINDS = kindsWhere((d) => d.capture === 'event');
/** Kinds the facade's capture lets through on any stream: bookkeeping, not device work. */
export const BOOKKEEPING_KINDS = kindsWhere((d) => d.capture === 'event' || d.capture === 'memory' || d.capture === 'control');
/** Kinds that copy between the host or another device and this one (refused by a capture). */
export const COPY_KINDS = kindsWhere((d) => d.capture === 'copy');
/** Kinds left out of a profile's trace: memory and peers. */
export const UNTRACED_KINDS = kindsWhere((d) => d.capture === 'memory');
/** Kinds packed as numbers on the wire. */
export const PACKED_KINDS = kindsWhere((d) => d.wire === 'words');
