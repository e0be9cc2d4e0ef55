// The dispatch plan of GradScaler's fused check on a GPU (wgsl/amp.ts, `planAmp`): the fewest
// dispatches the binding limit allows, the scale's and flag's segments in each, and never two
// 16-bit gradients sharing a word in one dispatch.
import { describe, expect, it } from 'vitest';
import { StorageCode } from '../../ts/dtype.js';
import { ampUnits, planAmp } from '../../wgsl/amp.js';

const F32 = StorageCode.F32, F16 = StorageCode.F16, BF16 = StorageCode.BF16;

describe('planAmp', () => {
  it('puts every gradient into one dispatch when the segments fit, each segment bound once', () => {
    const g = [{ id: 5, dt: F32, offset: 0, n: 10 }, { id: 6, dt: F16, offset: 64, n: 3 }, { id: 5, dt: BF16, offset: 128, n: 7 }];
    const plan = planAmp(g, [1, 1], 7);
    expect(plan).toEqual([{ segments: [1, 5, 6], entries: g }]);
  });

  it('drops zero-size gradients', () => {
    expect(planAmp([{ id: 5, dt: F32, offset: 0, n: 0 }], [1, 2], 7)).toEqual([]);
  });

  it('splits past the binding limit into the fewest dispatches, the fixed segments in each', () => {
    const g = Array.from({ length: 12 }, (_, i) => ({ id: 10 + i, dt: F32, offset: 0, n: 4 }));
    const plan = planAmp(g, [1, 2], 7); // 7 bindings: scale, flag and 5 gradient segments each
    expect(plan.map((d) => d.segments.length)).toEqual([7, 7, 4]);
    for (const d of plan) expect(d.segments.slice(0, 2)).toEqual([1, 2]);
    expect(plan.flatMap((d) => d.entries)).toEqual(g);
  });

  it('never puts two 16-bit gradients that share a word into one dispatch', () => {
    const a = { id: 3, dt: F16, offset: 0, n: 3 }, b = { id: 3, dt: F16, offset: 3, n: 7 }, c = { id: 3, dt: F16, offset: 10, n: 2 };
    const plan = planAmp([a, b, c], [1, 2], 7);
    expect(plan.map((d) => d.entries)).toEqual([[a, c], [b]]);
  });

  it('raises when the bindings cannot hold the scale, the flag and one gradient', () => {
    expect(() => planAmp([{ id: 3, dt: F32, offset: 0, n: 1 }], [1, 2], 2)).toThrow(/cannot hold/);
  });

  it('counts one work unit per 32-bit word', () => {
    expect(ampUnits(F32, 3, 5)).toBe(5);
    expect(ampUnits(F16, 0, 4)).toBe(2);
    expect(ampUnits(F16, 1, 4)).toBe(3);
    expect(ampUnits(BF16, 1, 1)).toBe(1);
    expect(ampUnits(F16, 7, 0)).toBe(0);
  });
});
