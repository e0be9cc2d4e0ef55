// The dispatch plan of the optimizers' fused step on a GPU (wgsl/optim.ts, `planSegments`):
// entries in order, each dispatch binding at most `room` segments, a new dispatch only when the
// next entry's new segments do not fit.
import { describe, expect, it } from 'vitest';
import { planSegments } from '../../wgsl/optim.js';

const e = (...segments: number[]) => ({ segments });

describe('planSegments', () => {
  it('one dispatch while the segments fit; shared segments are bound once', () => {
    const plan = planSegments([e(1, 2, 3, 4), e(1, 2, 3, 4), e(1, 5, 3, 4)], 7);
    expect(plan.map((d) => d.segments)).toEqual([[1, 2, 3, 4, 5]]);
    expect(plan[0].entries.length).toBe(3);
  });

  it('a new dispatch when the next entry does not fit, in order', () => {
    const plan = planSegments([e(1, 2, 3, 4), e(5, 6, 7, 8), e(1, 2, 3, 4), e(9, 9, 9, 9)], 7);
    expect(plan.map((d) => d.entries.length)).toEqual([1, 1, 2]);
    expect(plan.map((d) => d.segments)).toEqual([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4, 9]]);
    for (const d of plan) expect(d.segments.length).toBeLessThanOrEqual(7);
  });

  it('an entry alone over the room raises, naming the counts', () => {
    expect(() => planSegments([e(1, 2, 3)], 2)).toThrow('optimStep: a parameter touches 3 segments, more than the 2 storage bindings a dispatch can have');
  });
});
