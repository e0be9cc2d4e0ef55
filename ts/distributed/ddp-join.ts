/**
 * `DistributedDataParallel.join()` for uneven inputs: PyTorch's `with ddp.join():` (the generic
 * `torch.distributed.algorithms.Join` with DDP's join hook), as `await ddp.join(async () => …)`.
 *
 * Note [Shadowing joined ranks]: inside `join`, each forward of a rank that still has data issues,
 * before the module runs, (1) a sum all-reduce of 1 (its "not joined" notice; the sum is the count
 * of ranks not joined, the gradients' divisor when `divideByInitialWorldSize` is false), (2) with
 * `broadcastBuffers`, the buffers' sync from the highest rank not joined (rank 0 may have joined and
 * hold stale buffers), and (3) a sum all-reduce of whether its backward will all-reduce gradients.
 * A rank whose `fn` has finished loops: it all-reduces 0 against (1); while the sum is not 0 it
 * contributes -1 to the buffers' choice of rank in (2), 0 to (3), and when (3) is not 0 one
 * all-reduce of zeros per gradient bucket (through the comm hook, if one is registered), in bucket
 * order, as the others' backward issues them. Once (1) sums to 0 every rank has joined: the
 * ranks that never had to shadow (the last to join; the highest of them) broadcast their
 * parameters and buffers, so every rank ends with the model that saw every batch. The ranks' calls
 * therefore pair one to one, nobody hangs, and the gradients are the sum over the ranks that had a
 * batch, divided by the world size (PyTorch's default) or by the ranks not joined.
 *
 * webtorch's (3) is "grad is enabled and not under `noSync`" where PyTorch's is "not under
 * `no_sync`": a forward without grad has no backward, and PyTorch's joined ranks would then wait for
 * bucket all-reduces that never come.
 */
import { withGradMode } from '../autograd/graph.js';
import { full } from '../ops/creation.js';
import { copyInto } from '../ops/copy.js';
import { binaryOp, where } from '../ops/elementwise.js';
import { tidy } from '../ops/scoped.js';
import { reshape } from '../ops/views.js';
import { zerosLike } from '../ops/creation.js';
import { untrack } from '../scope.js';
import type { Device } from '../device.js';
import type { Module } from '../nn/module.js';
import type { Tensor } from '../tensor.js';
import { allReduce, broadcast } from './collectives.js';
import type { Group, Work } from './group.js';

/** What `join` needs of the DDP module. */
export interface JoinableDDP {
  readonly processGroup: Group;
  readonly device: Device;
  readonly broadcastBuffers: boolean;
  readonly module: Module;
  /** @internal The all-reduces of one backward, on zeros. */
  _shadowBackward(): void;
}

/** The state of a `join` under way, read by DDP's forward and its buckets' reduction. */
export interface JoinState {
  divideByInitialWorldSize: boolean;
  /** The count of ranks not joined at the last forward (a [1] float32 tensor on the device). */
  count: Tensor | null;
}

/** Sum- or max-all-reduces the number `v` over the group and reads the result. */
async function allReduceNumber(v: number, op: 'sum' | 'max', g: Group, dev: Device): Promise<number> {
  const t = full([1], v, { dtype: 'float32', device: dev });
  try {
    await allReduce(t, { op, group: g });
    return Number(await t.item());
  } finally {
    t.dispose();
  }
}

/** (1) of Note [Shadowing joined ranks], on a rank with data: returns the count of ranks not joined (on the device). */
export function notifyNotJoined(g: Group, dev: Device): Tensor {
  const t = full([1], 1, { dtype: 'float32', device: dev });
  untrack(t); // kept past a tidy around the forward, until the next forward or the end of join
  void allReduce(t, { op: 'sum', group: g, asyncOp: true });
  return t;
}

/** (3): a sum all-reduce of whether this rank's backward all-reduces gradients (its result unread: only joined ranks read it). */
export function notifyWillSync(sync: boolean, g: Group, dev: Device): void {
  withGradMode(false, () => tidy(() => {
    void allReduce(full([1], sync ? 1 : 0, { dtype: 'float32', device: dev }), { op: 'sum', group: g, asyncOp: true });
  }));
}

/**
 * (2): every buffer of `module` becomes that of the highest rank for which `candidate` is true, on
 * the devices (a max all-reduce of the rank, then each buffer sum-all-reduced with the others' zeros).
 */
export function syncBuffersFromCommonRank(module: Module, g: Group, dev: Device, candidate: boolean): void {
  const bufs = module.buffers();
  if (!bufs.length) return;
  withGradMode(false, () => tidy(() => {
    const chosen = full([1], candidate ? g.rank : -1, { dtype: 'float32', device: dev });
    void allReduce(chosen, { op: 'max', group: g, asyncOp: true });
    const mine = reshape(binaryOp('eq', chosen, g.rank), []);
    for (const b of bufs) {
      const part = where(mine, b, zerosLike(b));
      void allReduce(part, { op: 'sum', group: g, asyncOp: true });
      copyInto(b, part);
    }
  }));
}

/** The join loop and final sync of a rank whose inputs ran out (Note [Shadowing joined ranks]). */
export async function joinedRank(ddp: JoinableDDP): Promise<void> {
  const g = ddp.processGroup, dev = ddp.device;
  let isLastJoiner = true;
  for (let i = 0; ; i++) {
    if (await allReduceNumber(0, 'sum', g, dev) === 0) break;
    isLastJoiner = false;
    if (i === 1000) console.warn(`Detected uneven input skew of greater than 1000. This means that rank ${g.rank} has at least 1000 fewer inputs than other currently-active ranks. This level of skew could lead to performance degradation during training.`);
    if (ddp.broadcastBuffers) syncBuffersFromCommonRank(ddp.module, g, dev, false);
    if (await allReduceNumber(0, 'sum', g, dev) === 0) continue;
    ddp._shadowBackward();
  }
  // The authoritative model: the last joiners', the highest rank among them.
  const src = await allReduceNumber(isLastJoiner ? g.rank : -1, 'max', g, dev);
  // As PyTorch's synchronous broadcasts: join ends once every rank has its side of them (between
  // processes, the source's bytes must have left before a rank may leave the group).
  const works = [...ddp.module.parameters(), ...ddp.module.buffers()].map((t) => broadcast(t, { src, group: g, asyncOp: true }) as Work);
  await Promise.all(works.map((w) => w.wait()));
}
