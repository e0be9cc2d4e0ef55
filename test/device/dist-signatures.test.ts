/**
 * The collectives take PyTorch's signatures: `all_reduce(tensor, op, group, async_op)`,
 * `broadcast(tensor, src, …)`, `all_gather(tensor_list, tensor, …)`, `reduce_scatter(output,
 * input_list, op, …)` and `barrier(group, async_op)`, positional or as keywords, with
 * `dist.ReduceOp.AVG` for the op, and `init_process_group()` with no argument under `spawn`.
 * Before, each took only an options object: `dist.broadcast(t, 0)` raised "expected an options
 * object", `dist.ReduceOp` was undefined, and `initProcessGroup()` threw a TypeError.
 */
import { expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

const { distributed: dist } = torch;
logicalGpuSuite(2, 'collective signature tests');

it('positional and keyword forms, ReduceOp names, and an initProcessGroup() with no argument', async () => {
  const got = await dist.spawn(async (rank) => {
    await dist.initProcessGroup();
    const out: Record<string, unknown> = { rank: dist.getRank(), world: dist.getWorldSize() };
    const made: torch.Tensor[] = [];
    const f32 = (v: number[]) => {
      const x = torch.tensor(v, { device: 'cuda', dtype: 'float32' });
      made.push(x);
      return x;
    };
    const t = f32([1, 2, 3].map((x) => x * (rank + 1)));
    await dist.allReduce(t, dist.ReduceOp.AVG); // (1 + 2)/2 · [1, 2, 3]
    out.avg = await t.values();
    const m = f32([rank, 10 - rank]);
    const work = dist.allReduce(m, 'max', null, true) as torch.distributed.Work;
    expect(typeof work.wait).toBe('function');
    await work.wait();
    out.max = await m.values();
    const b = f32([rank + 5]);
    await dist.broadcast(b, 1);
    out.broadcast = await b.values();
    const list = [f32([0, 0]), f32([0, 0])];
    await dist.allGather(list, f32([rank, rank + 1]), null);
    out.gathered = await Promise.all(list.map((x) => x.values()));
    const rs = f32([0]);
    await dist.reduceScatter(rs, [f32([1 + rank]), f32([10 * (1 + rank)])], dist.ReduceOp.SUM);
    out.scattered = await rs.values();
    const bar = dist.barrier(null, true) as torch.distributed.Work;
    await bar.wait();
    const errors: string[] = [];
    for (const call of [
      () => dist.allReduce(t, 'avg', { op: 'sum' }),
      () => dist.allReduce(t, 'sum', null, false, 5 as never),
      () => dist.broadcast(b, { source: 1 } as never),
      () => dist.allReduce(t, 'mean' as never),
    ]) {
      try {
        await call();
        errors.push('no error');
      } catch (e) {
        errors.push((e as Error).message);
      }
    }
    out.errors = errors;
    await dist.barrier();
    for (const x of made) x.dispose();
    return out;
  }, { nprocs: 2 });
  for (const [rank, o] of got.entries()) {
    expect(o.rank).toBe(rank);
    expect(o.world).toBe(2);
    expect(o.avg).toEqual([1.5, 3, 4.5]);
    expect(o.max).toEqual([1, 10]);
    expect(o.broadcast).toEqual([6]);
    expect(o.gathered).toEqual([[0, 1], [1, 2]]);
    expect(o.scattered).toEqual([rank === 0 ? 3 : 30]);
    const errors = o.errors as string[];
    expect(errors[0]).toMatch(/allReduce\(\) got multiple values for argument 'op'/);
    expect(errors[1]).toMatch(/allReduce\(\) takes from 1 to 4 positional arguments but 5 were given/);
    expect(errors[2]).toMatch(/broadcast\(\) got an unexpected keyword argument 'source'/);
    expect(errors[3]).toMatch(/unknown reduction "mean"/);
  }
});
