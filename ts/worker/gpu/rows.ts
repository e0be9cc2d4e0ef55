/**
 * The row family of the gpu worker: reductions along the last dim (wgsl/reduce.ts) and the
 * row-norm kernels, softmax, log_softmax and layer_norm and their input gradients
 * (wgsl/softmax.ts), each in the form `rowForm` picks for the rows' length and the adapter
 * (subgroups, a CPU adapter).
 */
import { StorageCode } from '../../dtype.js';
import { computeType, elementsPerWord } from '../../../wgsl/dtype.js';
import { RWG, reduce64Shader, reduceShader, rowForm } from '../../../wgsl/reduce.js';
import { rowNormKey, rowNormShader } from '../../../wgsl/softmax.js';
import type { Command, Place } from '../../ir/commands.js';
import { chunks, tooLarge } from '../split.js';
import { buf, dispatch, grid1d, labelOf, maxBinding, paramAlign, rowDev, setWindow, slotsOf } from './core.js';
import { viaScratch } from './map.js';

/** A reduction of `outer` rows of `inner` elements (64-bit where wgsl/reduce.ts needs it; in chunks over a large input). */
export function runReduce(cmd: Extract<Command, { k: 'reduce' }>): void {
  if (cmd.outer === 0) return;
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
