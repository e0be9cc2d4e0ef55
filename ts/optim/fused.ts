/**
 * The optimizers' fused step: PyTorch's `foreach`/`fused` implementations of Adam, AdamW and
 * SGD as one `optimStep` command per parameter group and device (ts/ir/commands.ts), which
 * updates every parameter and its state in place. The composed step (ts/optim/algorithms.ts)
 * is about ten elementwise commands per parameter; a GPT's step has dozens of parameters, so
 * the composed step is a few hundred launches where this is one.
 *
 * Which parameters it takes (`whyNot`): float32 parameters with a float32 gradient and float32
 * state, all contiguous and on the parameter's device; under a graph capture only with
 * `capturable` (the step count a float32 device tensor the command increments) and a state that
 * exists already. The rest of the group takes the composed step. The
 * options follow PyTorch's: `foreach: false` asks for the per-parameter loop (composed), and
 * `fused: true` asks for the fused kernel and raises where a parameter cannot have it.
 */
import { emit, place, sameDevice } from '../runtime/dispatch.js';
import { isCurrentStreamCapturing } from '../runtime/graphs.js';
import { rounds } from '../runtime/overlap.js';
import type { Tensor } from '../tensor.js';
import type { Device } from '../device.js';
import type { OptimStepCommand } from '../ir/commands.js';
import type { ParamGroup, ParamState } from './optimizer.js';

/** Whether the group asks for the fused kernel: PyTorch's `fused=True`, or the default where `foreach` is not false. */
export function wantsFused(group: ParamGroup): boolean {
  return group.fused === true || group.foreach !== false;
}

/** Checks PyTorch's rule on the two options (at construction). */
export function checkFusedOptions(name: string, o: { fused?: unknown; foreach?: unknown }): void {
  for (const k of ['fused', 'foreach'] as const) {
    if (o[k] != null && typeof o[k] !== 'boolean') throw new TypeError(`${name}(): ${k} must be a boolean or null, got ${typeof o[k]}`);
  }
  if (o.fused === true && o.foreach === true) throw new RangeError('`fused` and `foreach` cannot be `True` together.');
}

/** Why `p` cannot take the fused step (null: it can). `capturable`: its step count is a device tensor. */
function whyNot(p: Tensor, state: ParamState, keys: string[], capturable: boolean): string | null {
  const g = p.grad!;
  if (p.dtype !== 'float32') return `a ${p.dtype} parameter`;
  if (g.dtype !== 'float32') return `a ${g.dtype} gradient`;
  if (g.device !== p.device) return `a gradient on ${g.device} for a parameter on ${p.device}`;
  if (!p.isContiguous() || !g.isContiguous()) return 'a non-contiguous parameter or gradient';
  if (String(g.shape) !== String(p.shape)) return `a gradient of shape [${g.shape.join(', ')}] for a parameter of shape [${p.shape.join(', ')}]`;
  if (isCurrentStreamCapturing(p.device)) {
    // a capture replays the command: only device step counts advance, and only a state that exists already
    if (!capturable) return 'a step under graph capture (use capturable=True)';
    if (keys.some((k) => state[k] === undefined) || state.step === undefined) return 'its first step under graph capture';
  }
  const step = state.step;
  if (capturable ? step !== undefined && (typeof step !== 'object' || step.dtype !== 'float32' || step.numel() !== 1 || step.device !== p.device) : typeof step === 'object') {
    return `its step count (${typeof step === 'object' ? `a ${step.dtype} tensor on ${step.device}` : 'a host number'}, with capturable=${capturable})`;
  }
  for (const k of keys) {
    const s = state[k];
    if (s === undefined) continue;
    if (typeof s !== 'object' || s.dtype !== 'float32' || !s.isContiguous() || s.device !== p.device || String(s.shape) !== String(p.shape)) return `its state '${k}' (${typeof s === 'object' ? `${s.dtype} [${s.shape.join(', ')}] on ${s.device}` : typeof s})`;
  }
  return null;
}

/** One parameter's part of a command, and the tensors whose storages it writes. */
export interface FusedParam {
  p: Tensor;
  /** The state tensors, in the kernel's order (they exist: the caller made the missing ones). */
  states: Tensor[];
  stepSize: number;
  invSqrtBc2: number;
  first: boolean;
  /** Its float32 step count on the device (capturable Adam), which the command increments. */
  step?: Tensor;
}

/**
 * Splits a group's parameters (those with a gradient) into those the fused step takes and the
 * rest; with `fused: true`, a parameter it cannot take raises instead.
 */
export function partition(name: string, group: ParamGroup, stateOf: (p: Tensor) => ParamState, keys: string[]): { fused: Tensor[]; rest: Tensor[] } {
  const fused: Tensor[] = [], rest: Tensor[] = [];
  const want = wantsFused(group);
  for (const p of group.params) {
    if (!p.grad) continue;
    if (!want) {
      rest.push(p);
      continue;
    }
    const why = whyNot(p, stateOf(p), keys, !!group.capturable);
    if (why === null) fused.push(p);
    else if (group.fused === true) throw new TypeError(`${name}(fused=True): the fused step takes float32, contiguous parameters, gradients and state on one device, outside graph capture; got ${why} (parameter of shape [${p.shape.join(', ')}] on ${p.device})`);
    else rest.push(p);
  }
  return { fused, rest };
}

/** Queues the fused step of `params`, one command per device (their storages are written in place). */
export function emitFused(name: string, algo: OptimStepCommand['algo'], h: OptimStepCommand['h'], params: FusedParam[]): void {
  const byDevice = new Map<Device, FusedParam[]>();
  for (const q of params) {
    const list = byDevice.get(q.p.device) ?? [];
    list.push(q);
    byDevice.set(q.p.device, list);
  }
  for (const [, list] of byDevice) {
    const device = sameDevice(`${name}.step`, list.flatMap((q) => [q.p, q.p.grad!, ...q.states]));
    // parameters that share memory (views of one tensor) are stepped in order, one command a round,
    // as the per-parameter loop steps them (Note [overlapping tensors in one multi-tensor command])
    const written = (q: FusedParam) => [q.p, ...q.states, ...(q.step ? [q.step] : [])];
    for (const round of rounds(list, written, (q) => [q.p.grad!])) {
      emit(device, {
        k: 'optimStep', algo, h,
        params: round.map((q) => ({ p: place(q.p), g: place(q.p.grad!), s: q.states.map(place), n: q.p.numel(), stepSize: q.stepSize, invSqrtBc2: q.invSqrtBc2, first: q.first, ...(q.step ? { step: place(q.step) } : {}) })),
      });
    }
    for (const q of list) for (const t of written(q)) t.storage.version++;
  }
}
