/**
 * An optimizer's step on a GPU (the `optimStep` command; the kernel is wgsl/optim.ts).
 *
 * Every parameter of the group goes into one dispatch, each segment bound once, unless the
 * group's tensors lie in more segments than a dispatch may bind (maxStorageBuffersPerShaderStage
 * less one for the params): then the fewest dispatches that fit (`planSegments`). A parameter
 * with a tensor in a segment larger than one binding (maxStorageBufferBindingSize) runs alone, in
 * windows of its segments (ts/worker/split.ts), one dispatch per window. Device step counts
 * (capturable Adam) are incremented by dispatches of their own before any update, so that each
 * is incremented once however the parameters are split.
 */
import { OPTIM_ALGO, OPTIM_ENTRY_WORDS, OPTIM_FLAGS, OPTIM_HEADER, OPTIM_HEADER_WORDS, optimShader, planSegments } from '../../../wgsl/optim.js';
import type { OptimStepCommand, Place } from '../../ir/commands.js';
import { chunks } from '../split.js';
import { buf, device, dispatchAt, grid1d, maxBinding, paramAlign, paramWords, reserveParams, setWindow } from './core.js';

type Param = OptimStepCommand['params'][number];
/** A parameter's part as one dispatch sees it: places relative to their bound windows. */
interface Entry {
  segments: number[];
  places: Place[];
  n: number;
  from: Param;
}

const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);
/** The bits of `x` as an f32. */
const bits = (x: number): number => ((f32[0] = x), u32[0]);

/** The places of a parameter in the kernel's order: parameter, gradient, states. */
const placesOf = (q: Param): Place[] => [q.p, q.g, ...q.s];
/** The segments an entry binds: its places' and its step count's. */
const segmentsOf = (q: Param, places: Place[]): number[] => [...places.map((pl) => pl.id), ...(q.step ? [q.step.id] : [])];
/** Whether the command's step counts are on the device (capturable Adam). */
const deviceStep = (cmd: OptimStepCommand): boolean => cmd.params.some((q) => q.step);

/** Writes the group's scalars into the header at `at` (`mode` 0 updates, 1 increments the step counts). */
function header(cmd: OptimStepCommand, at: number, entries: number, units: number, mode: 0 | 1): void {
  const { h } = cmd, adam = cmd.algo === 'adam', H = OPTIM_HEADER, F = OPTIM_FLAGS;
  const flags = (h.maximize ? F.maximize : 0) | (h.decoupled ? F.decoupled : 0) | (h.amsgrad ? F.amsgrad : 0) |
    (h.nesterov ? F.nesterov : 0) | (h.momentum ? F.momentum : 0) | (h.weightDecay ? F.weightDecay : 0) | (deviceStep(cmd) ? F.deviceStep : 0);
  paramWords.fill(0, at, at + OPTIM_HEADER_WORDS);
  paramWords[at + H.entries] = entries;
  paramWords[at + H.units] = units;
  paramWords[at + H.algo] = adam ? OPTIM_ALGO.adam : OPTIM_ALGO.sgd;
  paramWords[at + H.flags] = flags;
  paramWords[at + H.lr] = bits(h.lr);
  paramWords[at + H.wd] = bits(h.weightDecay);
  paramWords[at + H.a] = bits(adam ? h.beta1 : h.momentum);
  paramWords[at + H.b] = bits(h.beta2);
  paramWords[at + H.eps] = bits(h.eps);
  paramWords[at + H.oneMinusA] = bits(1 - h.beta1);
  paramWords[at + H.oneMinusB] = bits(adam ? 1 - h.beta2 : 1 - h.dampening);
  paramWords[at + H.decay] = bits(1 - h.lr * h.weightDecay);
  paramWords[at + H.lnA] = bits(adam ? Math.log(h.beta1) : 0);
  paramWords[at + H.lnB] = bits(adam ? Math.log(h.beta2) : 0);
  paramWords[at + H.mode] = mode;
}

/** Queues the dispatches that increment the device step counts of `params`, each once (before any update reads them). */
function incrementSteps(cmd: OptimStepCommand, params: Param[]): void {
  const room = device.limits.maxStorageBuffersPerShaderStage - 1;
  for (const d of planSegments(params.map((q) => ({ segments: [q.step!.id], q })), room)) {
    const words = OPTIM_HEADER_WORDS + OPTIM_ENTRY_WORDS * d.entries.length;
    const at = reserveParams(words);
    header(cmd, at, d.entries.length, 0, 1);
    d.entries.forEach(({ q }, i) => {
      const w = at + OPTIM_HEADER_WORDS + OPTIM_ENTRY_WORDS * i;
      paramWords.fill(0, w, w + OPTIM_ENTRY_WORDS);
      paramWords[w + 15] = d.segments.indexOf(q.step!.id);
      paramWords[w + 16] = q.step!.offset;
    });
    const bind = d.segments.map(buf);
    dispatchAt(`optim|${bind.length}`, () => optimShader(bind.length), bind, at, words, grid1d(d.entries.length));
  }
}

/** Queues one update dispatch over `segments` and `entries`. */
function one(cmd: OptimStepCommand, segments: number[], entries: Entry[]): void {
  const words = OPTIM_HEADER_WORDS + OPTIM_ENTRY_WORDS * entries.length;
  const at = reserveParams(words);
  let units = 0;
  entries.forEach((e, i) => {
    const w = at + OPTIM_HEADER_WORDS + OPTIM_ENTRY_WORDS * i;
    paramWords.fill(0, w, w + OPTIM_ENTRY_WORDS);
    paramWords[w] = units;
    paramWords[w + 1] = e.n;
    e.places.forEach((pl, k) => {
      paramWords[w + 2 + 2 * k] = segments.indexOf(pl.id);
      paramWords[w + 3 + 2 * k] = pl.offset;
    });
    paramWords[w + 12] = bits(e.from.stepSize);
    paramWords[w + 13] = bits(e.from.invSqrtBc2);
    paramWords[w + 14] = e.from.first ? 1 : 0;
    if (e.from.step) {
      paramWords[w + 15] = segments.indexOf(e.from.step.id);
      paramWords[w + 16] = e.from.step.offset;
    }
    units += e.n;
  });
  header(cmd, at, entries.length, units, 0);
  const bind = segments.map(buf);
  dispatchAt(`optim|${bind.length}`, () => optimShader(bind.length), bind, at, words, grid1d(units));
}

/** Runs an `optimStep` command (see the file's note). */
export function runOptimStep(cmd: OptimStepCommand): void {
  const small: Entry[] = [], large: Param[] = [];
  const params = cmd.params.filter((q) => q.n > 0);
  if (deviceStep(cmd)) incrementSteps(cmd, params);
  for (const q of params) {
    const places = placesOf(q);
    if (places.some((pl) => buf(pl.id).size > maxBinding)) large.push(q);
    else small.push({ segments: segmentsOf(q, places), places, n: q.n, from: q });
  }
  const room = device.limits.maxStorageBuffersPerShaderStage - 1;
  for (const d of planSegments(small, room)) one(cmd, d.segments, d.entries);
  for (const q of large) {
    const places = placesOf(q), spans = places.map((pl) => ({ b: buf(pl.id), start: pl.offset }));
    for (const c of chunks(q.n, spans, maxBinding, paramAlign)) {
      setWindow(c.window);
      try {
        const moved = places.map((pl, k) => ({ id: pl.id, offset: pl.offset + c.first - c.window.get(spans[k].b)! / 4 }));
        one(cmd, [...new Set(segmentsOf(q, places))], [{ segments: [], places: moved, n: c.count, from: q }]);
      } finally {
        setWindow(null);
      }
    }
  }
}
