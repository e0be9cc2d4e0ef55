/**
 * Fusion at capture end: a rewrite of a graph's captured command list (ts/worker/gpu/graphs.ts).
 *
 * A chain is a run of consecutive float32 `unary`/`binary` commands of one shape (operands
 * contiguous, or strided forward such as a broadcast bias), each reading the output of the one before; it becomes one fused kernel
 * (wgsl/fused.ts) when every intermediate output is dead: not alive at capture end (the facade
 * sends the live blocks with `captureEnd`), and not read by any later command before a command
 * writes it again. Reads are told conservatively: an operand of another dtype, or one whose
 * extent is not known (a `Place` without strides), counts as reading its whole segment from its
 * offset on. So fusion can only miss a chance, never drop a value someone reads.
 */
import { StorageCode } from '../../dtype.js';
import { valueClass } from '../../../wgsl/dtype.js';
import { checksDivisor } from '../../../wgsl/elementwise.js';
import { fusedGrid, fusedShader } from '../../../wgsl/fused.js';
import { WGSL_PRELUDE } from '../../ops/table.js';
import type { Command, Operand, Place, ViewRef } from '../../ir/commands.js';
import { BINARY, UNARY, buf, dispatchCode } from './core.js';

/** A fused chain, in place of its commands. */
export interface FusedCommand {
  k: 'fused';
  n: number;
  shape: number[];
  out: Place;
  inputs: ViewRef[];
  steps: string[];
  /** How many commands it stands for. */
  count: number;
}

/** Ops per fused kernel at most (a longer chain is cut: the cut's value is written out). */
const MAX_STEPS = 64;

type MapCmd = Extract<Command, { k: 'unary' | 'binary' }>;

const numel = (shape: number[]) => shape.reduce((a, b) => a * b, 1);

function contiguous(r: ViewRef, shape: number[]): boolean {
  let acc = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    if (shape[d] !== 1 && r.strides[d] !== acc) return false;
    acc *= shape[d];
  }
  return true;
}

/** The op's float32 expression, if the command can join a chain. */
function exprOf(cmd: Command): string | null {
  if (cmd.k !== 'unary' && cmd.k !== 'binary') return null;
  if (cmd.dt !== StorageCode.F32 || cmd.outDt !== StorageCode.F32 || cmd.check) return null;
  const op = (cmd.k === 'unary' ? UNARY : BINARY).get(cmd.op);
  if (!op || op.dtypes === 'bool' || valueClass(cmd.dt) !== 'f32') return null;
  const e = op.wgsl.f32;
  if (!e || checksDivisor(e) || /\bi\b/.test(e)) return null;
  const ops: Operand[] = cmd.k === 'unary' ? [cmd.a] : [cmd.a, cmd.b];
  // contiguous operands, or strided ones reading forward (a broadcast bias: stride 0)
  for (const o of ops) if (typeof o !== 'number' && !contiguous(o, cmd.shape) && (o.strides.length !== cmd.shape.length || o.strides.some((t) => t < 0))) return null;
  return e;
}

/** The elements from its offset that a view of `dims` with `strides` spans. */
const spanOf = (dims: number[], strides: number[]): number => dims.reduce((e, d, i) => e + (d - 1) * Math.abs(strides[i]), 1);

/**
 * The element ranges [start, end) of segments (in f32 elements) that `cmd` may read. A reduction
 * reads its `outer` rows of `inner` contiguous elements, as the row kernels do, and a product its
 * operands' spans over (batch, rows, columns); other operands with strides span their shape; the
 * rest count as reading their segment from their offset on. (Every small tensor shares a segment
 * with others, so a range to the segment's end once kept the bias add and the activation of a
 * training step's forward from fusing: the backward's sums over the batch seemed to read them.)
 */
function readRanges(cmd: Command): { id: number; start: number; end: number }[] {
  const out: { id: number; start: number; end: number }[] = [];
  const f32 = 'dt' in cmd && (cmd as { dt: number }).dt === StorageCode.F32 && (!('srcDt' in cmd) || (cmd as { srcDt: number }).srcDt === StorageCode.F32);
  if (f32 && cmd.k === 'reduce') return [{ id: cmd.a.id, start: cmd.a.offset, end: cmd.a.offset + cmd.outer * cmd.inner }];
  // the row kernels read float32 rows of `inner` (softmax, layer norm, their gradients, the NLL's log-probabilities)
  const span = (p: Place | null | undefined, n: number) => (p ? [{ id: p.id, start: p.offset, end: p.offset + n }] : []);
  if (cmd.k === 'softmax') return [...span(cmd.a, cmd.outer * cmd.inner), ...span(cmd.norm?.w, cmd.inner), ...span(cmd.norm?.b, cmd.inner)];
  if (cmd.k === 'rowGrad') return [...span(cmd.x, cmd.outer * cmd.inner), ...span(cmd.g, cmd.outer * cmd.inner), ...span(cmd.norm?.w, cmd.inner)];
  if (cmd.k === 'nll' || cmd.k === 'nllGrad') {
    // the int64 targets: their whole segment (their offset's unit is not a float's)
    const target = { id: cmd.target.id, start: 0, end: Infinity };
    const read = cmd.k === 'nll' ? span(cmd.x, cmd.outer * cmd.classes * cmd.inner) : span(cmd.g, cmd.reduction === 'none' ? cmd.outer * cmd.inner : 1);
    return [...read, target, ...span(cmd.w, cmd.classes), ...span(cmd.total, 1)];
  }
  if (cmd.k === 'avgPool') return span(cmd.x, cmd.planes * cmd.size[0] * cmd.size[1]);
  if (cmd.k === 'avgPoolGrad') return span(cmd.g, cmd.planes * cmd.outSize[0] * cmd.outSize[1]);
  if (cmd.k === 'maxPool' || cmd.k === 'maxPoolGrad') {
    // f32 planes, contiguous; the int64 indices: their whole segment (their offset's unit is not a float's)
    const [H, W] = cmd.size, [oh, ow] = cmd.outSize, indices = { id: cmd.indices.id, start: 0, end: Infinity };
    return cmd.k === 'maxPool' ? span(cmd.x, cmd.planes * H * W) : [...span(cmd.g, cmd.planes * oh * ow), indices];
  }
  if (f32 && cmd.k === 'matmul' && cmd.aStrides.length === 3 && cmd.bStrides.length === 3) {
    return [
      { id: cmd.a.id, start: cmd.a.offset, end: cmd.a.offset + spanOf([cmd.batch, cmd.m, cmd.kk], cmd.aStrides) },
      { id: cmd.b.id, start: cmd.b.offset, end: cmd.b.offset + spanOf([cmd.batch, cmd.kk, cmd.n], cmd.bStrides) },
    ];
  }
  if (cmd.k === 'attention' || cmd.k === 'attentionGrad') {
    // f32 views over the lead dims, rows and (contiguous) columns; the mask counts as its whole segment
    const { lead, L, S, E, Ev } = cmd;
    const view = (r: ViewRef, rows: number, cols: number) => [{ id: r.id, start: r.offset, end: r.offset + spanOf([...lead, rows, cols], r.strides) }];
    const ins = [...view(cmd.q, L, E), ...view(cmd.key, S, E), ...view(cmd.v, S, Ev), ...(cmd.mask ? [{ id: cmd.mask.at.id, start: 0, end: Infinity }] : [])];
    return cmd.k === 'attention' ? ins : [...ins, ...view(cmd.o, L, Ev), ...view(cmd.g, L, Ev), ...span(cmd.lse, cmd.bh * L)];
  }
  // the multi-tensor commands hold their places in lists: each read counts as its whole segment
  if (cmd.k === 'ampUnscale') return [...cmd.grads.map((g) => g.at), cmd.invScale, cmd.found].map((p) => ({ id: p.id, start: 0, end: Infinity }));
  if (cmd.k === 'foreachNorm' || cmd.k === 'foreachClamp') return cmd.tensors.map((t) => ({ id: t.at.id, start: 0, end: Infinity }));
  if (cmd.k === 'foreachMul') return [...cmd.tensors.map((t) => t.at), cmd.scalar].map((p) => ({ id: p.id, start: 0, end: Infinity }));
  if (cmd.k === 'optimStep') return cmd.params.flatMap((q) => [q.p, q.g, ...q.s]).map((p) => ({ id: p.id, start: 0, end: Infinity }));
  const shape = 'shape' in cmd && Array.isArray((cmd as { shape: unknown }).shape) ? (cmd as { shape: number[] }).shape : null;
  for (const [key, v] of Object.entries(cmd)) {
    if (key === 'out' || key === 'dst' || typeof v !== 'object' || v === null || typeof (v as Place).id !== 'number' || typeof (v as Place).offset !== 'number') continue;
    const r = v as ViewRef;
    if (!f32) out.push({ id: r.id, start: 0, end: Infinity });
    else if (shape && Array.isArray(r.strides) && r.strides.length === shape.length) {
      let extent = 1;
      for (let d = 0; d < shape.length; d++) extent += (shape[d] - 1) * Math.abs(r.strides[d]);
      out.push({ id: r.id, start: r.offset, end: r.offset + extent });
    } else out.push({ id: r.id, start: r.offset, end: Infinity });
  }
  return out;
}

/** The f32 element range a command writes whole (its `out` of `n` elements), if known. */
function writeRange(cmd: Command): { id: number; start: number; end: number } | null {
  if ((cmd.k === 'unary' || cmd.k === 'binary') && cmd.outDt === StorageCode.F32) return { id: cmd.out.id, start: cmd.out.offset, end: cmd.out.offset + numel(cmd.shape) };
  if (cmd.k === 'copy' && cmd.dt === StorageCode.F32) return { id: cmd.out.id, start: cmd.out.offset, end: cmd.out.offset + numel(cmd.shape) };
  // the float32 kernels that write their output contiguously
  const at = (out: Place, n: number) => ({ id: out.id, start: out.offset, end: out.offset + n });
  if (cmd.k === 'fill' && cmd.dt === StorageCode.F32) return at(cmd.out, cmd.n);
  if (cmd.k === 'reduce' && cmd.outDt === StorageCode.F32) return at(cmd.out, cmd.outer);
  if (cmd.k === 'matmul' && cmd.dt === StorageCode.F32) return at(cmd.out, cmd.batch * cmd.m * cmd.n);
  if (cmd.k === 'softmax' || cmd.k === 'rowGrad') return at(cmd.out, cmd.outer * cmd.inner);
  // foreachNorm writes one float32 per tensor (foreachMul and foreachClamp write lists in place: not told, so never taken as rewrites)
  if (cmd.k === 'foreachNorm') return at(cmd.out, cmd.tensors.length);
  if (cmd.k === 'nllGrad') return at(cmd.out, cmd.outer * cmd.classes * cmd.inner);
  // attention writes more than one output: the one named here (the others count as not written, which only misses a chance);
  // each is a view over a dense block of its own from its offset (ts/ops/attention.ts)
  if (cmd.k === 'attention') return at(cmd.out, cmd.bh * cmd.L * cmd.Ev);
  if (cmd.k === 'attentionGrad') return at(cmd.dq, cmd.bh * cmd.L * cmd.E);
  if (cmd.k === 'maxPool' || cmd.k === 'avgPool') return at(cmd.values, cmd.planes * cmd.outSize[0] * cmd.outSize[1]);
  if (cmd.k === 'maxPoolGrad' || cmd.k === 'avgPoolGrad') return at(cmd.grad, cmd.planes * cmd.size[0] * cmd.size[1]);
  return null;
}

/** Whether [lo, hi) lies within the union of the intervals `cover`. */
function covered(cover: [number, number][], lo: number, hi: number): boolean {
  for (let moved = true; moved && lo < hi; ) {
    moved = false;
    for (const [a, b] of cover) if (a <= lo && b > lo) (lo = b), (moved = true);
  }
  return lo >= hi;
}

/**
 * Whether the f32 range [start, end) of segment `id`, written by command `at`, is dead after
 * command `from`: no later command reads a part of it before later commands have written that
 * part again, and no block alive at capture end holds a part not written again.
 */
function deadAfter(cmds: (Command | FusedCommand)[], from: number, id: number, start: number, end: number, live: number[]): boolean {
  const rewritten: [number, number][] = [];
  for (let j = from + 1; j < cmds.length; j++) {
    const c = cmds[j];
    if (c.k === 'fused') continue;
    for (const r of readRanges(c)) {
      if (r.id === id && r.start < end && r.end > start && !covered(rewritten, Math.max(r.start, start), Math.min(r.end, end))) return false;
    }
    const w = writeRange(c);
    if (w && w.id === id && w.start < end && w.end > start) {
      rewritten.push([w.start, w.end]);
      // written again whole: the value at capture end is the later one's
      if (covered(rewritten, start, end)) return true;
    }
  }
  // the last value written there: dead unless a block alive at capture end holds a part of it
  for (let j = 0; j < live.length; j += 3) {
    const lo = Math.max(live[j + 1] / 4, start), hi = Math.min((live[j + 1] + live[j + 2]) / 4, end);
    if (live[j] === id && lo < hi && !covered(rewritten, lo, hi)) return false;
  }
  return true;
}

/** How many elements from its offset a view of `shape` spans. */
const extentOf = (r: Place, shape: number[]): number => {
  const strides = (r as ViewRef).strides;
  if (!strides) return numel(shape);
  let e = 1;
  for (let d = 0; d < shape.length; d++) e += (shape[d] - 1) * Math.abs(strides[d]);
  return e;
};

/** Whether view `a` and `n` contiguous elements from `b` share memory (`a` over `shape`). */
const overlaps = (a: Place, b: Place, n: number, shape: number[]): boolean => a.id === b.id && a.offset < b.offset + n && b.offset < a.offset + extentOf(a, shape);

/** Whether an operand is the contiguous view of `prev` (the last step's output). */
const isPrev = (o: Operand, prev: Place, shape: number[]): o is ViewRef => typeof o !== 'number' && o.id === prev.id && o.offset === prev.offset && contiguous(o, shape);

const sameView = (a: ViewRef, b: ViewRef) => a.id === b.id && a.offset === b.offset && String(a.strides) === String(b.strides);

/** Reads an operand as a chain step's argument: the last step, a (new or known) input, or a literal. */
function argOf(o: Operand, prev: Place | null, inputs: ViewRef[], shape: number[]): string {
  if (typeof o === 'number') return `bitcast<f32>(${o >>> 0}u)`;
  if (prev && isPrev(o, prev, shape)) return 'PREV';
  let j = inputs.findIndex((r) => sameView(r, o));
  if (j < 0) j = inputs.push(o) - 1;
  return `a${j}`;
}

const F = new Float32Array(1), U = new Uint32Array(F.buffer);
/** A scalar as the f32 the map kernels read from their params (exact: its bits). */
const lit = (x: number) => ((F[0] = x), `bitcast<f32>(${U[0]}u)`);

/** One step's WGSL: the op's expression with its operands and scalars substituted. */
function stepOf(cmd: MapCmd, expr: string, prev: Place | null, inputs: ViewRef[], k: number): string {
  const ops: Operand[] = cmd.k === 'unary' ? [cmd.a] : [cmd.a, cmd.b];
  const args = ops.map((o) => argOf(o, prev, inputs, cmd.shape).replace('PREV', `t${k - 1}`));
  const scalars = cmd.k === 'unary' ? cmd.s : [cmd.alpha];
  return `(${expr.replace(/\b([xs])(\d)\b/g, (_, v: string, d: string) => (v === 'x' ? args[Number(d)] : lit(scalars[Number(d)] ?? 0)))})`;
}

/** A float32 elementwise command: what the copy folding below can move and look through. */
const isMap = (c: Command): c is MapCmd => (c.k === 'unary' || c.k === 'binary') && c.outDt === StorageCode.F32 && !c.check;

/** The f32 element range a copy writes (its contiguous destination). */
const copyWrite = (c: Extract<Command, { k: 'copyInto' }>) => ({ id: c.dst.id, start: c.dst.offset, end: c.dst.offset + extentOf(c.dst, c.shape) });

/**
 * Writes straight into a copy's destination. Under capture an in-place update is a fresh result
 * copied into its place (an optimizer's `p.copy_(p − lr·g)`, its state's `buf.copy_(…)`; eager
 * code swaps the storage instead): a float32 `unary`/`binary` whose output only feeds such a
 * `copyInto` gets the destination as its output, and the copy goes. Only when: both sides are
 * contiguous over one shape; the result is dead after the copy; the commands between the two are
 * float32 elementwise or copies that neither read nor write the destination, and read the result
 * only whole (those reads move to the destination); and every operand of the writer that touches
 * the destination is exactly its own elements. A destination is memory outside the graph's pool
 * (a parameter, a state), which `live` does not list: each one written is added to `live`, so that
 * no chain fused later drops its value.
 */
function forwardCopies(captured: Command[], live: number[]): Command[] {
  const cmds = captured.slice();
  for (let j = 0; j < cmds.length; j++) {
    const cp = cmds[j];
    if (cp.k !== 'copyInto' || cp.srcDt !== StorageCode.F32 || cp.dt !== StorageCode.F32 || !contiguous(cp.src, cp.shape) || !contiguous(cp.dst, cp.shape)) continue;
    const n = numel(cp.shape), src = cp.src, dst = cp.dst, shape = cp.shape;
    const touches = (r: { id: number; start: number; end: number } | null, p: Place) => !!r && r.id === p.id && r.start < p.offset + n && r.end > p.offset;
    // the writer: the last command before the copy that writes the copied elements
    let i = j - 1, moved: number[] = [];
    for (; i >= 0; i--) {
      const c = cmds[i];
      if (c.k !== 'copyInto' && !isMap(c)) { i = -1; break; }
      if (c.k !== 'copyInto' && c.out.id === src.id && c.out.offset === src.offset && String(c.shape) === String(shape)) break;
      const w = c.k === 'copyInto' ? copyWrite(c) : writeRange(c);
      if (touches(w, src) || touches(w, dst) || readRanges(c).some((r) => touches(r, dst))) { i = -1; break; }
      // a read of the result must be of all of it, as it is (it moves to the destination)
      const ops: Operand[] = c.k === 'copyInto' ? [c.src] : c.k === 'unary' ? [c.a] : [c.a, c.b];
      if (ops.some((o) => typeof o !== 'number' && overlaps(o, src, n, c.shape) && !(isPrev(o, src, c.shape) && numel(c.shape) === n))) { i = -1; break; }
      if (ops.some((o) => typeof o !== 'number' && isPrev(o, src, c.shape))) moved.push(i);
    }
    if (i < 0) continue;
    const writer = cmds[i] as MapCmd;
    const ops: Operand[] = writer.k === 'unary' ? [writer.a] : [writer.a, writer.b];
    if (ops.some((o) => typeof o !== 'number' && overlaps(o, dst, n, shape) && !isPrev(o, dst, shape))) continue;
    if (!deadAfter(cmds, j, src.id, src.offset, src.offset + n, live)) continue;
    const at = (o: Operand): Operand => (typeof o !== 'number' && isPrev(o, src, shape) ? { ...dst, strides: o.strides } : o);
    cmds[i] = { ...writer, out: { id: dst.id, offset: dst.offset } };
    live.push(dst.id, dst.offset * 4, n * 4);
    for (const k of moved) {
      const c = cmds[k];
      if (c.k === 'unary') cmds[k] = { ...c, a: at(c.a) as ViewRef };
      else if (c.k === 'binary') cmds[k] = { ...c, a: at(c.a), b: at(c.b) };
      else if (c.k === 'copyInto') cmds[k] = { ...c, src: at(c.src) as ViewRef };
    }
    cmds.splice(j, 1);
    j--;
  }
  return cmds;
}

/** Rewrites `cmds`: each in-place copy of a fresh result is folded into it (`forwardCopies`), and each fusable chain becomes one `FusedCommand`. */
export function fuseChains(captured: Command[], liveAtEnd: number[]): (Command | FusedCommand)[] {
  const live = liveAtEnd.slice();
  const cmds = forwardCopies(captured, live);
  const out: (Command | FusedCommand)[] = [];
  let i = 0;
  while (i < cmds.length) {
    const first = cmds[i], e0 = exprOf(first);
    if (!e0) {
      out.push(first);
      i++;
      continue;
    }
    const c0 = first as MapCmd, n = numel(c0.shape);
    const inputs: ViewRef[] = [], steps = [stepOf(c0, e0, null, inputs, 0)];
    let end = i, prev: Place = c0.out;
    const written: Place[] = [c0.out];
    while (end + 1 < cmds.length && steps.length < MAX_STEPS) {
      const next = cmds[end + 1], e = exprOf(next);
      if (!e) break;
      const c = next as MapCmd;
      if (String(c.shape) !== String(c0.shape)) break;
      const ops: Operand[] = c.k === 'unary' ? [c.a] : [c.a, c.b];
      if (!ops.some((o) => isPrev(o, prev, c.shape))) break;
      // the intermediate `prev` must be dead once `next` has read it
      if (!deadAfter(cmds, end + 1, prev.id, prev.offset, prev.offset + n, live)) break;
      // no other operand of `next` may read what a step of the chain wrote (it is not written out)
      if (ops.some((o) => typeof o !== 'number' && !isPrev(o, prev, c.shape) && written.some((w) => overlaps(o, w, n, c.shape)))) break;
      const trial = inputs.slice();
      const step = stepOf(c, e, prev, trial, steps.length);
      inputs.length = 0;
      inputs.push(...trial);
      steps.push(step);
      prev = c.out;
      written.push(prev);
      end++;
    }
    // an input sharing memory with the output must be the output's own elements (each invocation
    // reads its element before writing it; a shifted view would race with the others' writes)
    if (inputs.some((r) => overlaps(r, prev, n, c0.shape) && !isPrev(r, prev, c0.shape))) end = i;
    if (end === i) {
      out.push(first);
      i++;
      continue;
    }
    out.push({ k: 'fused', n, shape: c0.shape, out: prev, inputs, steps, count: end - i + 1 });
    i = end + 1;
  }
  return out;
}

/** Records a fused chain's one dispatch. */
export function runFused(cmd: FusedCommand): void {
  const bind = [buf(cmd.out.id)];
  const inputSlots = cmd.inputs.map((r) => {
    const b = buf(r.id);
    const s = bind.indexOf(b);
    return s >= 0 ? s : bind.push(b) - 1;
  });
  const p = new Uint32Array(2 + cmd.inputs.length);
  p[0] = cmd.n;
  p[1] = cmd.out.offset;
  cmd.inputs.forEach((r, j) => (p[2 + j] = r.offset));
  const inputStrides = cmd.inputs.map((r) => (contiguous(r, cmd.shape) ? null : r.strides));
  const code = fusedShader({ slots: bind.length, inputSlots, inputStrides, shape: cmd.shape, steps: cmd.steps, prelude: WGSL_PRELUDE });
  dispatchCode(code, bind, p.buffer, fusedGrid(cmd.n));
}
