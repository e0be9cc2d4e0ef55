/**
 * torch.gpu.comm: every collective against a reference computed from the inputs' values, over
 * 2 and 3 logical GPU devices and the cpu, for sizes that do and do not divide by the number of
 * devices (including fewer elements than devices), and the errors for misuse.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

const { comm } = torch.gpu;
const GPUS = 3;
const devices = logicalGpuSuite(GPUS, 'collective tests');

const GROUPS = [['gpu:0', 'gpu:1'], ['gpu:0', 'gpu:1', 'gpu:2'], ['gpu:2', 'cpu', 'gpu:0']];
const SHAPES = [[1], [2], [5], [7, 3], [64], [1001]];
const free = (ts: torch.Tensor[]) => ts.forEach((t) => t.dispose());
const numel = (s: number[]) => s.reduce((a, b) => a * b, 1);

/** One random tensor per device (different values on each), and their values. */
async function inputs(group: string[], shape: number[], seed: number): Promise<{ ts: torch.Tensor[]; vals: number[][] }> {
  torch.manualSeed(seed);
  const ts = group.map((d) => torch.tidy(() => torch.randn(shape).to(d)));
  return { ts, vals: await Promise.all(ts.map(async (t) => (await t.values()) as number[])) };
}

function expectClose(got: number[], want: number[], what: string): void {
  expect(got.length, what).toBe(want.length);
  const bad = got.findIndex((v, i) => !(Math.abs(v - want[i]) <= 1e-5 * (1 + Math.abs(want[i]))));
  expect(bad, `${what}: first mismatch at ${bad}: ${got[bad]} vs ${want[bad]}`).toBe(-1);
}

const REF: Record<string, (xs: number[]) => number> = {
  sum: (xs) => xs.reduce((a, b) => a + b, 0),
  avg: (xs) => xs.reduce((a, b) => a + b, 0) / xs.length,
  max: (xs) => Math.max(...xs),
  min: (xs) => Math.min(...xs),
  product: (xs) => xs.reduce((a, b) => a * b, 1),
};

describe('allReduce', () => {
  for (const group of GROUPS) {
    for (const op of ['sum', 'avg', 'max', 'min', 'product']) {
      it(`${op} over ${group.join(', ')}, every size`, async () => {
        for (const [si, shape] of SHAPES.entries()) {
          const { ts, vals } = await inputs(group, shape, 100 + si);
          const out = comm.allReduce(ts, { op: op as 'sum' });
          expect(out).toBe(ts); // in place, as dist.all_reduce
          const want = vals[0].map((_, j) => REF[op](vals.map((v) => v[j])));
          for (const [i, t] of ts.entries()) {
            expect(String(t.device)).toBe(group[i]);
            expect(t.shape).toEqual(shape);
            expectClose((await t.values()) as number[], want, `${op} ${JSON.stringify(shape)} on ${group[i]}`);
          }
          free(ts);
        }
      });
    }
  }

  it('works on non-contiguous tensors and int32 (sum, max)', async () => {
    const a = torch.tidy(() => torch.arange(12, { dtype: 'int32' }).reshape(3, 4).to('gpu:0').T);
    const b = torch.tidy(() => torch.arange(12, { dtype: 'int32' }).mul(10).reshape(3, 4).to('gpu:1').T);
    comm.allReduce([a, b]);
    const want = [[0, 44, 88], [11, 55, 99], [22, 66, 110], [33, 77, 121]];
    expect(await a.tolist()).toEqual(want);
    expect(await b.tolist()).toEqual(want);
    comm.allReduce([a, b], 'max');
    expect(await a.tolist()).toEqual(want);
    free([a, b]);
  });
});

describe('reduceScatter', () => {
  for (const group of GROUPS) {
    it(`sum and avg over ${group.join(', ')}: tensor_split parts of the reduction`, async () => {
      for (const [si, shape] of SHAPES.entries()) {
        for (const op of ['sum', 'avg']) {
          const { ts, vals } = await inputs(group, shape, 200 + si);
          const outs = comm.reduceScatter(ts, op as 'sum');
          const full = vals[0].map((_, j) => REF[op](vals.map((v) => v[j])));
          const row = numel(shape.slice(1)), k = group.length;
          let at = 0;
          for (const [i, o] of outs.entries()) {
            const rows = Math.floor(shape[0] / k) + (i < shape[0] % k ? 1 : 0);
            expect(o.shape, `part ${i}`).toEqual([rows, ...shape.slice(1)]);
            expect(String(o.device)).toBe(group[i]);
            expectClose((await o.values()) as number[], full.slice(at * row, (at + rows) * row), `${op} ${JSON.stringify(shape)} part ${i}`);
            at += rows;
          }
          expect((await ts[0].values()) as number[]).toEqual(vals[0]); // the inputs are left as they were
          free([...ts, ...outs]);
        }
      }
    });
  }
});

describe('allGather, broadcast, reduceAdd, scatter, gather', () => {
  for (const group of GROUPS) {
    it(`over ${group.join(', ')}`, async () => {
      for (const [si, shape] of SHAPES.entries()) {
        const { ts, vals } = await inputs(group, shape, 300 + si);
        const all = comm.allGather(ts);
        const cat = vals.flat();
        for (const [i, o] of all.entries()) {
          expect(String(o.device)).toBe(group[i]);
          expect(o.shape).toEqual([shape[0] * group.length, ...shape.slice(1)]);
          expect((await o.values()) as number[]).toEqual(cat);
        }
        const b = comm.broadcast(ts[0], group);
        expect(b[0]).toBe(ts[0]);
        for (const [i, o] of b.entries()) {
          expect(String(o.device)).toBe(group[i]);
          expect((await o.values()) as number[]).toEqual(vals[0]);
        }
        const sum = comm.reduceAdd(ts, group[1]);
        expect(String(sum.device)).toBe(group[1]);
        expectClose((await sum.values()) as number[], vals[0].map((_, j) => REF.sum(vals.map((v) => v[j]))), `reduceAdd ${JSON.stringify(shape)}`);
        const parts = comm.scatter(all[0], group);
        const back = comm.gather(parts, 0, 'cpu');
        expect(parts.map((p) => String(p.device))).toEqual(group.slice(0, parts.length));
        expect((await back.values()) as number[]).toEqual(cat);
        free([...ts, ...all, ...b.slice(1), sum, ...parts, back]);
      }
    });
  }

  it('broadcast into out, scatter with chunk sizes, gather on the current device; gradients flow through scatter/gather', async () => {
    const src = torch.tensor([1, 2, 3], { dtype: 'float32', device: 'gpu:1' });
    const out = [torch.zeros([3], { device: 'gpu:0' }), torch.zeros([3], { device: 'gpu:2' })];
    expect(comm.broadcast(src, { out })).toBe(out);
    expect(await out[1].tolist()).toEqual([1, 2, 3]);
    const x = torch.tidy(() => torch.arange(6, { dtype: 'float32' }).requiresGrad_());
    const parts = comm.scatter(x, ['gpu:0', 'gpu:1'], [4, 2]);
    expect(parts.map((p) => p.shape[0])).toEqual([4, 2]);
    const g = torch.tidy(() => comm.gather(parts.map((p, i) => p.mul(i + 1))));
    expect(String(g.device)).toBe('gpu:0');
    const s = g.sum();
    s.backward();
    expect(await x.grad!.tolist()).toEqual([1, 1, 1, 1, 2, 2]);
    free([src, ...out, x.grad!, x, ...parts, g, s]);
  });
});

describe('misuse', () => {
  it('raises naming the devices, shapes and dtypes', async () => {
    const a = torch.zeros([3], { device: 'gpu:0' }), b = torch.zeros([3], { device: 'gpu:0' });
    const c = torch.zeros([4], { device: 'gpu:1' }), d = torch.zeros([3], { device: 'gpu:1', dtype: 'int32' });
    const e = torch.zeros([3], { device: 'gpu:1' });
    expect(() => comm.allReduce([a, b])).toThrow('allReduce: expected one tensor per device, but tensors 0 and 1 are both on gpu:0');
    expect(() => comm.allReduce([a, c])).toThrow('allReduce: expected all tensors to have the same shape, but tensor 0 has [3] and tensor 1 has [4] (on gpu:1)');
    expect(() => comm.reduceAdd([a, d])).toThrow('reduceAdd: expected all tensors to have the same dtype, but tensor 0 is float32 and tensor 1 is int32 (on gpu:1)');
    expect(() => comm.allReduce([a, e], 'mean' as never)).toThrow("allReduce: unknown reduction \"mean\"");
    expect(() => comm.allReduce([d], 'avg')).toThrow("allReduce: op 'avg' needs a floating-point tensor, got int32");
    expect(() => comm.allReduce([])).toThrow('allReduce: expected a non-empty list of tensors');
    expect(() => comm.broadcast(a)).toThrow('broadcast: exactly one of devices and out must be specified');
    expect(() => comm.scatter(a, ['gpu:0', 'gpu:1'], [3])).toThrow('scatter: expected one chunk size per device, got 1 sizes for 2 devices');
    free([a, b, c, d, e]);
  });
});
