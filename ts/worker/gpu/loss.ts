/**
 * The fused negative log likelihood on a GPU (the `nll` and `nllGrad` commands; kernels in
 * wgsl/loss.ts): one dispatch each. A reduced loss ('sum', 'mean') runs as one workgroup over
 * every row, which writes the result itself; 'none' and the gradient run one invocation per row
 * or element.
 */
import { LWG, lossParams, nllGradShader, nllShader, type LossSlots } from '../../../wgsl/loss.js';
import type { NllCommand, Place } from '../../ir/commands.js';
import { buf, dispatch, grid1d, slotsOf } from './core.js';
import { checkCode, deviceErrors, words64 } from './checks.js';

/** Runs an `nll` or `nllGrad` command. */
export function runNll(cmd: NllCommand): void {
  const rows = cmd.outer * cmd.inner;
  const reduced = cmd.k === 'nll' && cmd.reduction !== 'none';
  // a reduced loss is written even over no rows (the sum 0, the mean NaN, as PyTorch's)
  if (!(rows && cmd.classes) && !reduced) return;
  // the storages each get a slot (slot 0 is the output's segment; tensors of one segment share one)
  const named: [keyof LossSlots, Place | null][] = [['target', cmd.target], ['w', cmd.w], ['x', cmd.k === 'nll' ? cmd.x : null],
    ['g', cmd.k === 'nllGrad' ? cmd.g : null], ['total', cmd.total]];
  const present = named.filter((e): e is [keyof LossSlots, Place] => e[1] !== null);
  const { bind, slot } = slotsOf(buf(cmd.out.id), present.map(([, p]) => buf(p.id)));
  const s: LossSlots = { x: -1, target: -1, w: -1, g: -1, total: -1, slots: bind.length };
  present.forEach(([name], i) => (s[name] = slot[i]));
  const k = { reduction: cmd.reduction, smooth: cmd.eps > 0 };
  const base = { rows, classes: cmd.classes, inner: cmd.inner, target: cmd.target.offset, w: cmd.w?.offset ?? 0, out: cmd.out.offset, ignore: words64(cmd.ignore), eps: cmd.eps };
  const key = `${cmd.k}|${k.reduction}|${+k.smooth}|${s.x}|${s.target}|${s.w}|${s.g}|${s.total}|${s.slots}`;
  if (cmd.k === 'nll') {
    const p = lossParams({ ...base, x: cmd.x.offset, last: checkCode(cmd.k, cmd.check.message), total: cmd.total?.offset });
    dispatch(key, () => nllShader(k, s), [...bind, deviceErrors!], p, reduced ? [1, 1, 1] : grid1d(rows, LWG));
  } else {
    const p = lossParams({ ...base, x: 0, last: cmd.g.offset, total: cmd.total?.offset });
    dispatch(key, () => nllGradShader(k, s), bind, p, grid1d(rows * cmd.classes, LWG));
  }
}
