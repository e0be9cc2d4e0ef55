/**
 * `foreachNorm`, `foreachMul` and `foreachClamp` on a GPU (the kernels are wgsl/foreach.ts; Note [a norm over
 * many tensors in two passes] there).
 *
 * As ts/worker/gpu/optim.ts does: every tensor of the command goes into one dispatch, each
 * segment bound once, unless they lie in more segments than a dispatch may bind; then the fewest
 * dispatches that fit (`planSegments`). A tensor in a segment larger than one binding
 * (maxStorageBufferBindingSize) runs alone, in windows of its segment (ts/worker/split.ts). The
 * norm's first pass writes into a partials buffer kept between commands (`KeptScratch`), a
 * tensor's chunks in consecutive slots whatever dispatch or window they ran in; one second
 * dispatch then writes every norm.
 */
import {
  FINISH_HEADER_WORDS, MUL_ENTRY_WORDS, MUL_HEADER_WORDS, NORM_CHUNK, NORM_ENTRY_WORDS, NORM_HEADER_WORDS,
  mulShader, normFinishShader, normKind, normPartialShader,
} from '../../../wgsl/foreach.js';
import { planSegments } from '../../../wgsl/optim.js';
import type { ForeachClampCommand, ForeachMulCommand, ForeachNormCommand, Place } from '../../ir/commands.js';
import { StorageCode } from '../../dtype.js';
import { chunks, tooLarge } from '../split.js';
import { buf, device, dispatchAt, grid1d, maxBinding, paramAlign, paramWords, reserveParams, setWindow } from './core.js';
import { KeptScratch } from './workspace.js';

/** A run of one tensor as one dispatch sees it: its place relative to the bound window, and its first partial slot. */
interface Run {
  segments: number[];
  at: Place;
  n: number;
  partial: number;
  dt: StorageCode;
}

/** Cuts each tensor into runs (windows past the binding limit) and gives each run its partial slots, a tensor's consecutively. */
function runsOf(tensors: { at: Place; n: number; dt?: StorageCode }[], fixed: number[]): { small: Run[]; large: { run: Run; window: Map<GPUBuffer, number> }[]; perTensor: [number, number][]; partials: number } {
  const small: Run[] = [], large: { run: Run; window: Map<GPUBuffer, number> }[] = [], perTensor: [number, number][] = [];
  let partials = 0;
  for (const t of tensors) {
    const first = partials;
    const b = t.n ? buf(t.at.id) : null;
    if (!b) {
      // an empty tensor: no chunk, and the second pass writes the identity (0)
    } else if (b.size <= maxBinding) {
      small.push({ segments: [t.at.id, ...fixed], at: t.at, n: t.n, partial: partials, dt: t.dt ?? StorageCode.F32 });
      partials += Math.ceil(t.n / NORM_CHUNK);
    } else {
      if (fixed.includes(t.at.id)) throw tooLarge('foreachMul (a tensor in the segment of the scalar)', b.size, maxBinding);
      if ((t.dt ?? StorageCode.F32) !== StorageCode.F32) throw tooLarge('foreachNorm', b.size, maxBinding, 'it has a 16-bit tensor');
      for (const c of chunks(t.n, [{ b, start: t.at.offset }], maxBinding, paramAlign)) {
        const at = { id: t.at.id, offset: t.at.offset + c.first - c.window.get(b)! / 4 };
        large.push({ run: { segments: [t.at.id, ...fixed], at, n: c.count, partial: partials, dt: StorageCode.F32 }, window: c.window });
        partials += Math.ceil(c.count / NORM_CHUNK);
      }
    }
    perTensor.push([first, partials - first]);
  }
  return { small, large, perTensor, partials };
}

/** The first pass's partial results, kept between commands. */
const partialScratch = new KeptScratch('the partial results of foreachNorm');

/** Queues one first-pass dispatch over `segments` and `runs`. */
function partialPass(kind: ReturnType<typeof normKind>, ord: number, segments: number[], runs: Run[], partials: GPUBuffer): void {
  const words = NORM_HEADER_WORDS + NORM_ENTRY_WORDS * runs.length;
  const at = reserveParams(words);
  let groups = 0;
  runs.forEach((r, i) => {
    paramWords.set([groups, r.n, segments.indexOf(r.at.id), r.at.offset, r.partial, r.dt], at + NORM_HEADER_WORDS + NORM_ENTRY_WORDS * i);
    groups += Math.ceil(r.n / NORM_CHUNK);
  });
  paramWords[at] = runs.length;
  paramWords[at + 1] = groups;
  paramWords[at + 2] = bits(ord);
  const bind = [...segments.map(buf), partials];
  dispatchAt(`foreachNorm|${kind}|${segments.length}`, () => normPartialShader(segments.length, kind), bind, at, words, grid1d(groups, 1));
}

const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);
/** The bits of `x` as an f32. */
const bits = (x: number): number => ((f32[0] = x), u32[0]);

/** Runs a `foreachNorm` command (see the file's note). */
export function runForeachNorm(cmd: ForeachNormCommand): void {
  const count = cmd.tensors.length;
  if (!count) return;
  const out = buf(cmd.out.id);
  if (out.size > maxBinding) throw tooLarge('foreachNorm (its output)', out.size, maxBinding);
  const kind = normKind(cmd.ord);
  const { small, large, perTensor, partials } = runsOf(cmd.tensors, []);
  const scratch = partialScratch.take(Math.max(16, Math.ceil((partials * 4) / 16) * 16));
  const room = device.limits.maxStorageBuffersPerShaderStage - 2;
  for (const d of planSegments(small, room)) partialPass(kind, cmd.ord, d.segments, d.entries, scratch);
  for (const { run, window } of large) {
    setWindow(window);
    try {
      partialPass(kind, cmd.ord, [run.at.id], [run], scratch);
    } finally {
      setWindow(null);
    }
  }
  const words = FINISH_HEADER_WORDS + 2 * count;
  const at = reserveParams(words);
  paramWords[at] = count;
  paramWords[at + 1] = cmd.out.offset;
  paramWords[at + 2] = bits(1 / cmd.ord);
  perTensor.forEach(([first, n], i) => paramWords.set([first, n], at + FINISH_HEADER_WORDS + 2 * i));
  dispatchAt(`foreachNormFinish|${kind}`, () => normFinishShader(kind), [scratch, out], at, words, grid1d(count, 1));
}

/** Queues one `foreachMul` dispatch over `segments` and `runs` (or `foreachClamp`'s, with its bounds). */
function mulPass(scalar: Place | null, segments: number[], runs: Run[], bounds?: [number, number]): void {
  const words = MUL_HEADER_WORDS + MUL_ENTRY_WORDS * runs.length;
  const at = reserveParams(words);
  let units = 0;
  runs.forEach((r, i) => {
    paramWords.set([units, r.n, segments.indexOf(r.at.id), r.at.offset], at + MUL_HEADER_WORDS + MUL_ENTRY_WORDS * i);
    units += r.n;
  });
  paramWords.set([runs.length, units, ...(scalar ? [segments.indexOf(scalar.id), scalar.offset] : bounds!.map(bits))], at);
  const bind = segments.map(buf), clamp = !scalar;
  dispatchAt(`foreach${clamp ? 'Clamp' : 'Mul'}|${bind.length}`, () => mulShader(bind.length, clamp), bind, at, words, grid1d(units));
}

/** Runs a `foreachMul` command (see the file's note). */
export function runForeachMul(cmd: ForeachMulCommand): void {
  const s = buf(cmd.scalar.id);
  if (s.size > maxBinding) throw tooLarge('foreachMul (the scalar)', s.size, maxBinding);
  const { small, large } = runsOf(cmd.tensors, [cmd.scalar.id]);
  const room = device.limits.maxStorageBuffersPerShaderStage - 1;
  for (const d of planSegments(small, room)) mulPass(cmd.scalar, d.segments, d.entries);
  for (const { run, window } of large) {
    setWindow(window);
    try {
      mulPass(cmd.scalar, [...new Set(run.segments)], [run]);
    } finally {
      setWindow(null);
    }
  }
}

/** Runs a `foreachClamp` command (as `foreachMul`, without the scalar). */
export function runForeachClamp(cmd: ForeachClampCommand): void {
  const { small, large } = runsOf(cmd.tensors, []);
  const room = device.limits.maxStorageBuffersPerShaderStage - 1, bounds: [number, number] = [cmd.lo, cmd.hi];
  for (const d of planSegments(small, room)) mulPass(null, d.segments, d.entries, bounds);
  for (const { run, window } of large) {
    setWindow(window);
    try {
      mulPass(null, [run.at.id], [run], bounds);
    } finally {
      setWindow(null);
    }
  }
}
