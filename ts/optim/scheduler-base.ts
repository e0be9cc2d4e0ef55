/**
 * The learning-rate schedulers' base: each group's initial lr (PyTorch's `initial_lr`, kept
 * beside the group so that schedulers built one after another, as for `SequentialLR`, all start
 * from it) and `step()`, which sets `lr = lrAt(epoch, base)`: every schedule here is in closed form.
 */
import type { Optimizer, ParamGroup } from './optimizer.js';

/** Each group's lr when the first scheduler was attached to it (PyTorch's `group['initial_lr']`). */
const initialLrs = new WeakMap<ParamGroup, number>();

/** The group's initial lr, recorded by the first scheduler that asks. */
export function initialLr(g: ParamGroup): number {
  if (!initialLrs.has(g)) initialLrs.set(g, g.lr);
  return initialLrs.get(g)!;
}

/** `lastEpoch` other than -1 resumes a schedule, which needs state these schedulers do not keep: refused, not ignored. */
export function checkFresh(name: string, lastEpoch: number): void {
  if (lastEpoch !== -1) throw new RangeError(`${name}: lastEpoch=${lastEpoch} is not supported (resume with loadStateDict)`);
}

/** The base: remembers each group's initial lr and sets `lr = lrAt(epoch, base)` on `step()`. */
export abstract class LRScheduler {
  lastEpoch = 0;
  readonly baseLrs: number[];

  constructor(readonly optimizer: Optimizer) {
    this.baseLrs = optimizer.paramGroups.map(initialLr);
  }

  protected abstract lrAt(epoch: number, base: number, group: number): number;

  /** Sets every group's lr for `lastEpoch` (the constructors' initial step, and `step()`'s). */
  protected apply(): void {
    this.optimizer.paramGroups.forEach((g, i) => (g.lr = this.lrAt(this.lastEpoch, this.baseLrs[i], i)));
  }

  /** Advances one epoch (or, as PyTorch's deprecated form, goes to `epoch`) and updates the groups' learning rates. */
  step(epoch?: number): void {
    this.lastEpoch = epoch ?? this.lastEpoch + 1;
    this.apply();
  }

  /** The learning rates set by the last `step()`. */
  getLastLr(): number[] {
    return this.optimizer.paramGroups.map((g) => g.lr);
  }

  stateDict(): { lastEpoch: number; baseLrs: number[] } {
    return { lastEpoch: this.lastEpoch, baseLrs: [...this.baseLrs] };
  }

  loadStateDict(s: { lastEpoch: number; baseLrs: number[] }): void {
    this.lastEpoch = s.lastEpoch;
    this.baseLrs.splice(0, this.baseLrs.length, ...s.baseLrs);
  }
}
