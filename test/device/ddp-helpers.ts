/**
 * What the DDP surface suites share (ddp-join, ddp-comm-hooks, sync-batchnorm,
 * ddp-surface-process): freeing tensors, reading values, and an element-wise closeness check
 * that names the first mismatch.
 */
import { expect } from 'vitest';
import * as torch from '../../dist/webtorch.js';

export const free = (ts: (torch.Tensor | null | undefined)[]) => ts.forEach((t) => t?.dispose());
export const vals = async (t: torch.Tensor) => (await t.values()) as number[];

/** Every `a[i]` within `tol` (relative, plus 1) of `b[i]`; fails naming the first that is not. */
export function closeTo(a: number[], b: number[], tol: number, what: string): void {
  expect(a.length, what).toBe(b.length);
  const bad = a.findIndex((v, i) => !(Math.abs(v - b[i]) <= tol * (1 + Math.abs(b[i]))));
  expect(bad, `${what}: first mismatch at ${bad}: ${a[bad]} vs ${b[bad]}`).toBe(-1);
}

/**
 * fc1 (8→16) → a checkpointed ReLU → fc2 (16→16) → ReLU → fc3 (16→4), on the current GPU. The
 * checkpoint's recompute calls `probe` in the middle of backward: after the last layers'
 * gradients (fc3's bucket issued), before the first layer's (ddp-overlap, ddp-comm-stream).
 */
export function probedNet(probe: () => void): torch.nn.Module & { fc1: torch.nn.Linear; fc2: torch.nn.Linear; fc3: torch.nn.Linear } {
  class Net extends torch.nn.Module {
    fc1 = new torch.nn.Linear(8, 16);
    fc2 = new torch.nn.Linear(16, 16);
    fc3 = new torch.nn.Linear(16, 4);
    forward(x: torch.Tensor): torch.Tensor {
      const h = this.fc1.call(x);
      const a = torch.utils.checkpoint.checkpoint((t: torch.Tensor) => {
        probe();
        return t.relu();
      }, h);
      return this.fc3.call(this.fc2.call(a).relu());
    }
  }
  return new Net().to('cuda');
}
