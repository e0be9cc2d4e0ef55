/**
 * `nn.SyncBatchNorm`: batch normalization whose training statistics are those of the global batch,
 * the batches of every rank of a process group together (PyTorch's `torch.nn.SyncBatchNorm`).
 *
 * Note [SyncBatchNorm through autograd]: PyTorch's `SyncBatchNorm` is a hand-written function:
 * forward all-gathers each rank's (mean, invstd, count), backward all-reduces `sum_dy` and
 * `sum_dy_xmu`. Here the forward is composed from differentiable ops and one differentiable
 * all-reduce (`allReduceSum`, whose gradient is the all-reduce of the incoming gradient): the
 * global sum and count, then the global sum of squared deviations (two passes, as numerically
 * safe as the local batch norm). Autograd then gives the same backward: the gradient of the
 * sum's all-reduce is the all-reduce of `sum_dy`, that of the squared deviations' all-reduce the
 * all-reduce of `sum_dy_xmu` (scaled), and the input's gradient is PyTorch's formula with the
 * global sums. The weight's and bias's gradients stay local (DistributedDataParallel averages
 * them), as PyTorch's. Every rank records the same graph, so the backward issues the all-reduces
 * in one order on every rank. Nothing reads the device on the way (no sync point), so PyTorch's
 * check that the global batch has more than one value per channel is not made (it reads the
 * all-gathered counts on the host); a global batch of one value gives NaN running variances.
 */
import { op, withGradMode } from '../autograd/graph.js';
import { bindArgs, type PyArgs } from '../args.js';
import { ReduceOp } from '../ir/ops.js';
import { cast } from '../ops/cast.js';
import { copyInto } from '../ops/copy.js';
import { full, ones, zeros } from '../ops/creation.js';
import { binaryOp, unaryOp } from '../ops/elementwise.js';
import { batchNorm } from '../ops/nn.js';
import { reduce } from '../ops/reduce.js';
import { tidy } from '../ops/scoped.js';
import { cat } from '../ops/shape.js';
import { narrow, reshape } from '../ops/views.js';
import { fmt } from '../shape.js';
import type { Tensor } from '../tensor.js';
import { allReduce } from '../distributed/collectives.js';
import { isInitialized, type Group, defaultGroup } from '../distributed/group.js';
import { Module, Parameter, type FactoryOptions } from './module.js';
import { countBatch, isBatchNorm, type BatchNorm1d, type BatchNormLayerOptions } from './spatial.js';

/** `nn.SyncBatchNorm`'s keywords after `numFeatures` (PyTorch's, camelCase). */
export interface SyncBatchNormOptions extends FactoryOptions {
  eps?: number;
  /** The running statistics' update factor; `null`: the cumulative average (1 / batches seen). */
  momentum?: number | null;
  affine?: boolean;
  trackRunningStats?: boolean;
  /** The ranks whose batches are normalized together (default: the default group). */
  processGroup?: Group | null;
}

/** `t` summed over the ranks of `group` (a new tensor); its gradient is the gradient summed over the ranks the same way. */
function allReduceSum(t: Tensor, group: Group): Tensor {
  const reduced = (x: Tensor): Tensor => {
    const out = cast(x, x.dtype);
    void allReduce(out, { op: 'sum', group, asyncOp: true });
    return out;
  };
  return op('syncBatchNormAllReduce', [t], () => reduced(t), () => ([g]) => [withGradMode(false, () => reduced(g!))]);
}

/** A parameter taking over a fresh tensor's storage. */
const param = (t: Tensor): Parameter => {
  const p = Parameter.of(t);
  t.dispose();
  return p;
};

type Positional = [eps: number, momentum: number | null, affine: boolean, trackRunningStats: boolean, processGroup: Group | null,
  device: FactoryOptions['device'], dtype: FactoryOptions['dtype']];

/**
 * `nn.SyncBatchNorm(numFeatures, eps = 1e-5, momentum = 0.1, affine = true, trackRunningStats = true,
 * processGroup = null, {device, dtype})` over input [N, C, ...]. In training, inside an initialized
 * process group of more than one rank, the mean and variance are those of every rank's batch
 * together (all-reduced; see Note [SyncBatchNorm through autograd]) and the running statistics
 * follow the global batch; otherwise (evaluation, no process group, one rank) it is `BatchNorm`.
 */
export class SyncBatchNorm extends Module {
  weight: Parameter | null;
  bias: Parameter | null;
  readonly eps: number;
  readonly momentum: number | null;
  readonly affine: boolean;
  readonly trackRunningStats: boolean;
  /** The group the statistics are reduced over (`null`: the default group). */
  processGroup: Group | null;
  declare running_mean: Tensor | null;
  declare running_var: Tensor | null;
  declare num_batches_tracked: Tensor | null;

  constructor(readonly numFeatures: number, ...args: PyArgs<Positional, SyncBatchNormOptions>) {
    super();
    const o = bindArgs('SyncBatchNorm', ['eps', 'momentum', 'affine', 'trackRunningStats', 'processGroup', 'device', 'dtype'], args, {} as SyncBatchNormOptions, 1);
    if (!Number.isInteger(numFeatures) || numFeatures < 0) throw new RangeError(`SyncBatchNorm(): numFeatures must be a non-negative integer, got ${String(numFeatures)}`);
    this.eps = o.eps ?? 1e-5;
    this.momentum = o.momentum === undefined ? 0.1 : o.momentum;
    this.affine = o.affine ?? true;
    this.trackRunningStats = o.trackRunningStats ?? true;
    this.processGroup = o.processGroup ?? null;
    this.weight = this.affine ? param(ones([numFeatures])) : null;
    this.bias = this.affine ? param(zeros([numFeatures])) : null;
    this.registerParameter('weight', this.weight);
    this.registerParameter('bias', this.bias);
    const track = this.trackRunningStats;
    this.registerBuffer('running_mean', track ? zeros([numFeatures]) : null);
    this.registerBuffer('running_var', track ? ones([numFeatures]) : null);
    this.registerBuffer('num_batches_tracked', track ? zeros([], { dtype: 'int64' }) : null);
    this.place(o);
  }

  forward(x: Tensor): Tensor {
    if (x.ndim < 2) throw new RangeError(`expected at least 2D input (got ${x.ndim}D input)`);
    if (x.shape[1] === 0) throw new RangeError('SyncBatchNorm number of input channels should be non-zero');
    const batchStats = this.training || (!this.running_mean && !this.running_var);
    // Buffers are updated only when tracked in training, and read only in evaluation.
    const rm = !this.training || this.trackRunningStats ? this.running_mean : null;
    const rv = !this.training || this.trackRunningStats ? this.running_var : null;
    // PyTorch 2's rule: synchronise in training inside an initialized group of more than one rank.
    const group = this.training ? this.processGroup ?? (isInitialized() ? defaultGroup() : null) : null;
    const sync = group !== null && group.worldSize > 1;
    const factor = countBatch(this.training, this.num_batches_tracked, this.momentum);
    try {
      if (!sync || !batchStats) return batchNorm(x, rm, rv, this.weight, this.bias, batchStats, factor, this.eps);
      return this.globalBatchNorm(x, rm, rv, group, factor);
    } finally {
      if (typeof factor !== 'number') factor.dispose();
    }
  }

  /** Training with the statistics of the ranks' batches together; `factor` updates the running statistics (`countBatch`). */
  private globalBatchNorm(x: Tensor, rm: Tensor | null, rv: Tensor | null, group: Group, factor: number | Tensor): Tensor {
    const C = x.shape[1], n = x.numel() / C;
    const chan = x.shape.map((s, i) => (i === 1 ? s : 1)), dims = x.shape.map((_, i) => i).filter((i) => i !== 1);
    for (const [name, t] of [['weight', this.weight], ['bias', this.bias], ['running_mean', rm], ['running_var', rv]] as const) {
      if (t && t.numel() !== C) throw new RangeError(`${name} should contain ${C} elements not ${t.numel()} (SyncBatchNorm input ${fmt(x.shape)})`);
    }
    const sumAll = (t: Tensor) => allReduceSum(t, group);
    return tidy(() => {
      // The global sum per channel and the global count, in one all-reduce.
      const firsts = sumAll(cat([reduce(ReduceOp.Sum, x, dims), full([1], n, { dtype: x.dtype, device: x.device })], 0));
      const count = narrow(firsts, 0, C, 1).detach();
      const mean = binaryOp('div', narrow(firsts, 0, 0, C), count);
      const xc = binaryOp('sub', x, reshape(mean, chan));
      const variance = binaryOp('div', sumAll(reduce(ReduceOp.Sum, unaryOp('square', xc), dims)), count);
      let y = binaryOp('mul', xc, reshape(unaryOp('rsqrt', binaryOp('add', variance, this.eps)), chan));
      withGradMode(false, () => {
        const update = (buf: Tensor | null, stat: Tensor) => {
          if (buf) copyInto(buf, binaryOp('add', buf, binaryOp('mul', binaryOp('sub', stat, buf), factor)));
        };
        update(rm, mean);
        update(rv, binaryOp('div', binaryOp('mul', variance, count), binaryOp('sub', count, 1)));   // unbiased, over the global count
      });
      if (this.weight) y = binaryOp('mul', y, reshape(this.weight, chan));
      if (this.bias) y = binaryOp('add', y, reshape(this.bias, chan));
      return y;
    });
  }

  /**
   * `nn.SyncBatchNorm.convertSyncBatchnorm(module, processGroup = null)`: `module` with every
   * `BatchNorm1d`/`BatchNorm2d`/`BatchNorm3d`/`SyncBatchNorm` in it (itself included) replaced by a
   * `SyncBatchNorm` that shares its parameters and buffers and its training mode; returns the
   * converted module (the argument itself when it is not a batch norm).
   */
  static convertSyncBatchnorm<M extends Module>(module: M, ...args: PyArgs<[processGroup: Group | null], { processGroup?: Group | null }>): M | SyncBatchNorm {
    const { processGroup } = bindArgs('convert_sync_batchnorm', ['processGroup'], args, { processGroup: null as Group | null }, 1);
    if (!(module instanceof Module)) throw new TypeError(`convert_sync_batchnorm(): expected module to be an nn.Module, but got ${typeof module}`);
    let out: Module = module;
    if (isBatchNorm(module) || module instanceof SyncBatchNorm) {
      const m = module as unknown as { numFeatures: number; weight: Parameter | null; bias: Parameter | null; running_mean: Tensor | null; running_var: Tensor | null; num_batches_tracked: Tensor | null };
      const [eps, momentum, affine, track] = module instanceof SyncBatchNorm
        ? [module.eps, module.momentum, module.affine, module.trackRunningStats]
        : ((o: BatchNormLayerOptions) => [o.eps ?? 1e-5, o.momentum === undefined ? 0.1 : o.momentum, o.affine ?? true, o.trackRunningStats ?? true])((module as unknown as BatchNorm1d).options);
      const s = new SyncBatchNorm(m.numFeatures, eps, momentum as number | null, affine, track, processGroup);
      // The new layer takes the old one's tensors themselves (PyTorch assigns them): its own are freed.
      for (const t of [...s.parameters(), ...s.buffers()]) t.dispose();
      s.registerParameter('weight', m.weight);
      s.registerParameter('bias', m.bias);
      s.weight = m.weight;
      s.bias = m.bias;
      s.registerBuffer('running_mean', m.running_mean);
      s.registerBuffer('running_var', m.running_var);
      s.registerBuffer('num_batches_tracked', m.num_batches_tracked);
      s.training = module.training;
      out = s;
    }
    for (const [name, child] of [...module.namedChildren()]) out.addModule(name, SyncBatchNorm.convertSyncBatchnorm(child, processGroup));
    return out as M | SyncBatchNorm;
  }
}
