/**
 * The row family of the gpu worker: reductions along the last dim (wgsl/reduce.ts) and the
 * row-norm kernels, softmax, log_softmax and layer_norm and their input gradients
 * (wgsl/softmax.ts), each in the form `rowForm` picks for the rows' length and the adapter
 * (subgroups, a CPU adapter). A few long rows are reduced in two passes (`rowPieces`).
 */
import { StorageCode } from '../../dtype.js';
import { computeType, elementsPerWord } from '../../../wgsl/dtype.js';
import { RWG, reduce64Shader, reduceShader, rowForm } from '../../../wgsl/reduce.js';
import { rowNormKey, rowNormShader } from '../../../wgsl/softmax.js';
import type { Command, Place } from '../../ir/commands.js';
import { ReduceOp } from '../../ir/ops.js';
import { chunks, tooLarge } from '../split.js';
import { buf, dispatch, grid1d, labelOf, maxBinding, paramAlign, rowDev, setWindow, slotsOf } from './core.js';
import { asSegments, KeptScratch } from './workspace.js';
import { viaScratch } from './map.js';

/** What the second pass of a split reduction does with the first pass's partial results. */
const SECOND_PASS: Partial<Record<ReduceOp, ReduceOp>> = {
  [ReduceOp.Sum]: ReduceOp.Sum, [ReduceOp.SumSq]: ReduceOp.Sum, [ReduceOp.Mean]: ReduceOp.Mean, [ReduceOp.Prod]: ReduceOp.Prod,
  [ReduceOp.Max]: ReduceOp.Max, [ReduceOp.Min]: ReduceOp.Min, [ReduceOp.All]: ReduceOp.All, [ReduceOp.Any]: ReduceOp.Any,
};

/**
 * How many pieces to cut each row into. The kernel gives one workgroup to a row, so a few long
 * rows leave most of a GPU idle (64 rows of 512K: 0.02× PyTorch on an H100). Long rows are then
 * reduced in two passes: `outer·pieces` rows of `inner/pieces`, then the partial results. Only
 * where the partial results keep full precision (not 16-bit floats) and the pieces are equal
 * (the mean of equal pieces' means is the mean).
 */
function rowPieces(cmd: Extract<Command, { k: 'reduce' }>): number {
  const { op, dt, outer, inner } = cmd;
  if (SECOND_PASS[op as ReduceOp] === undefined || outer >= 256 || inner < 1 << 16) return 1;
  if ((dt === StorageCode.F16 || dt === StorageCode.BF16) && op !== ReduceOp.Max && op !== ReduceOp.Min) return 1;
  let pieces = 1;
  while (outer * pieces < 512 && inner % (pieces * 2) === 0 && inner / (pieces * 2) >= 4096) pieces *= 2;
  return pieces;
}

/** The first pass's partial results of a two-pass reduction. */
const partialScratch = new KeptScratch('the partial results of a two-pass reduction');

/** A reduction of `outer` rows of `inner` elements (one pass, or two: `rowPieces`). */
export function runReduce(cmd: Extract<Command, { k: 'reduce' }>): void {
  if (cmd.outer === 0) return;
  const pieces = rowPieces(cmd);
  if (pieces === 1) return reduceOnce(cmd);
  // the first pass's partial results, in the output's dtype, in a scratch buffer
  const count = cmd.outer * pieces, bytes = cmd.outDt === StorageCode.I64 ? 8 : 4 / elementsPerWord(cmd.outDt);
  const partial = partialScratch.take(Math.ceil((count * bytes) / 16) * 16);
  asSegments([partial], ([id]) => {
    reduceOnce({ ...cmd, out: { id, offset: 0 }, outer: count, inner: cmd.inner / pieces });
    reduceOnce({ ...cmd, op: SECOND_PASS[cmd.op as ReduceOp]!, a: { id, offset: 0, strides: [1] }, dt: cmd.outDt, inner: pieces });
  });
}

/** One pass: `outer` rows of `inner` elements (64-bit where wgsl/reduce.ts needs it; in chunks over a large input). */
function reduceOnce(cmd: Extract<Command, { k: 'reduce' }>): void {
  const indexOut = cmd.op === 4 || cmd.op === 5 || cmd.op === 6 || cmd.op === 7;
  // 64 bits (wgsl/reduce.ts, reduce64Shader): every reduction of int64, and integer sums and products (int64 out)
  const wide = cmd.dt === StorageCode.I64 || (computeType(cmd.dt) === 'i32' && cmd.outDt === StorageCode.I64 && !indexOut);
  const kernelOut = wide && !indexOut ? StorageCode.I64 : indexOut || computeType(cmd.dt) === 'i32' ? StorageCode.I32 : StorageCode.F32;
  const reduceRows = (outer: number, aOffset: number, target: GPUBuffer, offset: number) => {
    const { bind, slot } = slotsOf(target, [buf(cmd.a.id)]);
    const { form, rows } = wide ? { form: 'tree' as const, rows: 1 } : rowForm(outer, cmd.inner, rowDev, true);
    const p = new Uint32Array([outer, cmd.inner, aOffset, offset, rows]).buffer;
    dispatch(`reduce|${cmd.op}|${cmd.dt}|${slot[0]}|${bind.length}|${form}|${wide ? 64 : 32}`,
      () => (wide ? reduce64Shader(cmd.op, cmd.dt, slot[0], bind.length) : reduceShader(cmd.op, cmd.dt, slot[0], bind.length, form)), bind, p,
      form === 'short' ? grid1d(outer, RWG) : grid1d(form === 'subgroup' ? Math.ceil(outer / rows) : outer, 1));
  };
  const a = buf(cmd.a.id);
  if (a.size > maxBinding || buf(cmd.out.id).size > maxBinding) {
    // rows in chunks, each binding a window of the input (ts/worker/split.ts)
    // an int64 output: arg-reductions write i32 positions into a scratch widened afterwards, integer sums two words a row
    const wideOut = cmd.outDt === StorageCode.I64;
    if (elementsPerWord(cmd.dt) !== 1 || (elementsPerWord(cmd.outDt) !== 1 && !wideOut)) throw tooLarge(labelOf(cmd), a.size, maxBinding, 'it has 16/8-bit or int64 inputs');
    const rowsInto = (out: GPUBuffer, outOffset: number, outWords: number) => {
      for (const c of chunks(cmd.outer, [{ b: out, start: outOffset * outWords }, { b: a, start: cmd.a.offset }], maxBinding, paramAlign, cmd.inner, [outWords, cmd.inner])) {
        setWindow(c.window);
        try {
          reduceRows(c.count, cmd.a.offset + c.first * cmd.inner - c.window.get(a)! / 4, out, outOffset + c.first - c.window.get(out)! / (4 * outWords));
        } finally {
          setWindow(null);
        }
      }
    };
    if (wideOut && indexOut) viaScratch(cmd.out, StorageCode.I64, cmd.outer, StorageCode.I32, (target, offset) => rowsInto(target, offset, 1));
    else rowsInto(buf(cmd.out.id), cmd.out.offset, wideOut ? 2 : 1);
    return;
  }
  viaScratch(cmd.out, cmd.outDt, cmd.outer, kernelOut, (target, offset) => reduceRows(cmd.outer, cmd.a.offset, target, offset));
}

/**
 * softmax, log_softmax or layer_norm over rows (`cmd.norm`: layer_norm's weight, bias and eps), or
 * the input gradient of one (`rowGrad`: `cmd.g` the incoming gradient, `cmd.x` softmax's output
 * or layer norm's input), in one dispatch (wgsl/softmax.ts).
 */
export function runRowNorm(cmd: Extract<Command, { k: 'softmax' | 'rowGrad' }>): void {
  const n = cmd.outer * cmd.inner;
  if (n === 0) return;
  const grad = cmd.k === 'rowGrad' ? cmd : null;
  const norm = cmd.norm;
  const bias = cmd.k === 'softmax' ? cmd.norm?.b : null;
  const x = cmd.k === 'softmax' ? cmd.a : cmd.x;
  const { form, rows } = rowForm(cmd.outer, cmd.inner, rowDev, false);
  viaScratch(cmd.out, StorageCode.F32, n, StorageCode.F32, (target, offset) => {
    // slots: x, then the weight, bias and gradient that are present
    const extra = [norm?.w, bias, grad?.g];
    const present = extra.filter((t): t is Place => !!t);
    const { bind, slot } = slotsOf(target, [buf(x.id), ...present.map((t) => buf(t.id))]);
    const slotOf = (t: Place | null | undefined) => (t ? slot[1 + present.indexOf(t)] : undefined);
    const kind = grad ? grad.kind : norm ? 'layer_norm' : cmd.k === 'softmax' && cmd.log ? 'log_softmax' : 'softmax';
    const spec = { kind, x: slot[0], w: slotOf(norm?.w), b: slotOf(bias), g: slotOf(grad?.g) } as const;
    const p = new Uint32Array([cmd.outer, cmd.inner, x.offset, offset, rows, norm?.w?.offset ?? 0, bias?.offset ?? 0, 0, grad?.g.offset ?? 0]);
    new Float32Array(p.buffer, 28, 1)[0] = norm?.eps ?? 0;
    dispatch(rowNormKey(spec, bind.length, form), () => rowNormShader(spec, bind.length, form), bind, p.buffer,
      grid1d(form === 'subgroup' ? Math.ceil(cmd.outer / rows) : cmd.outer, 1));
  });
}
