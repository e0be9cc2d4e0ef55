/**
 * What the DDP surface suites share (ddp-join, ddp-comm-hooks, sync-batchnorm,
 * ddp-surface-process): freeing tensors, reading values, and an element-wise closeness check
 * that names the first mismatch.
 */
import { expect } from 'vitest';
import type * as torch from '../../dist/webtorch.js';

export const free = (ts: (torch.Tensor | null | undefined)[]) => ts.forEach((t) => t?.dispose());
export const vals = async (t: torch.Tensor) => (await t.values()) as number[];

/** Every `a[i]` within `tol` (relative, plus 1) of `b[i]`; fails naming the first that is not. */
export function closeTo(a: number[], b: number[], tol: number, what: string): void {
  expect(a.length, what).toBe(b.length);
  const bad = a.findIndex((v, i) => !(Math.abs(v - b[i]) <= tol * (1 + Math.abs(b[i]))));
  expect(bad, `${what}: first mismatch at ${bad}: ${a[bad]} vs ${b[bad]}`).toBe(-1);
}
