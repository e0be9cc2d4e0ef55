/**
 * torch.distributed with ranks in one process (spawn; rank r on gpu:r) and DistributedDataParallel:
 * the same parameters as one device over 20 SGD steps on 2 and 3 ranks (one bucket and several),
 * noSync accumulation, the process group's collectives against references (sizes that do not
 * divide by the world size), and misuse: mismatched world sizes and calls, a collective only some
 * ranks reach (a time-out naming them), a rank that throws (the others raise, naming it).
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

const { nn, optim, distributed: dist } = torch;
const GPUS = 3;
logicalGpuSuite(GPUS, 'DDP tests');

class MLP extends nn.Module {
  fc1 = new nn.Linear(8, 16);
  act = new nn.ReLU();
  fc2 = new nn.Linear(16, 4);
  forward(x: torch.Tensor): torch.Tensor {
    return torch.tidy(() => this.fc2(this.act(this.fc1(x))));
  }
}
const mse = (y: torch.Tensor, t: torch.Tensor) => y.sub(t).square().mean();
const free = (ts: torch.Tensor[]) => ts.forEach((t) => t.dispose());
const vals = async (ts: torch.Tensor[]) => Promise.all(ts.map(async (t) => (await t.values()) as number[]));

function closeTo(a: number[], b: number[], tol: number, what: string): void {
  expect(a.length, what).toBe(b.length);
  const bad = a.findIndex((v, i) => !(Math.abs(v - b[i]) <= tol * (1 + Math.abs(b[i]))));
  expect(bad, `${what}: first mismatch at ${bad}: ${a[bad]} vs ${b[bad]}`).toBe(-1);
}

/** The data every run shares: 12 rows, split evenly over 1, 2 or 3 ranks. */
function data(): { X: torch.Tensor; T: torch.Tensor } {
  torch.manualSeed(11);
  return { X: torch.randn([12, 8]), T: torch.randn([12, 4]) };
}

async function reference(steps: number): Promise<number[][]> {
  const { X, T } = data();
  torch.manualSeed(7);
  const net = new MLP().to('gpu:0');
  const x = X.to('gpu:0'), t = T.to('gpu:0');
  const opt = new optim.SGD(net.parameters(), { lr: 0.05 });
  for (let s = 0; s < steps; s++) {
    opt.zeroGrad();
    const loss = torch.tidy(() => mse(net(x), t));
    loss.backward();
    opt.step();
    loss.dispose();
  }
  const out = await vals(net.parameters());
  opt.zeroGrad();
  free([X, T, x, t, ...net.parameters()]);
  return out;
}

describe('DistributedDataParallel', () => {
  it.each([[2, 25], [3, 25], [3, 0.0003]])('%i ranks (bucketCapMb %d) give one device\'s parameters after 20 SGD steps', async (k, cap) => {
    const ref = await reference(20);
    const { X, T } = data();
    const per = 12 / k;
    const got = await dist.spawn(async (rank) => {
      await dist.initProcessGroup({ backend: 'webtorch', worldSize: k, rank, initMethod: `inproc://ddp-${k}-${cap}` });
      torch.manualSeed(rank === 0 ? 7 : 100 + rank);  // ranks start different: DDP broadcasts rank 0's parameters
      const net = new MLP().to('cuda');                 // spawn made gpu:rank current
      expect(String(net.fc1.weight.device)).toBe(`gpu:${rank}`);
      const ddp = new nn.parallel.DistributedDataParallel(net, { bucketCapMb: cap });
      if (cap < 1) expect(ddp.bucketSizes).toEqual([2, 1, 1]);
      else expect(ddp.bucketSizes).toEqual([4]);
      const x = torch.tidy(() => X.narrow(0, rank * per, per).to('cuda')), t = torch.tidy(() => T.narrow(0, rank * per, per).to('cuda'));
      const opt = new optim.SGD(ddp.parameters(), { lr: 0.05 });
      for (let s = 0; s < 20; s++) {
        opt.zeroGrad();
        const loss = torch.tidy(() => mse(ddp(x), t));
        loss.backward();      // each bucket's all-reduce is queued here
        opt.step();
        loss.dispose();
      }
      const out = await vals(net.parameters());
      opt.zeroGrad();
      free([x, t, ...net.parameters()]);
      return out;
    }, { nprocs: k });
    for (const [rank, params] of got.entries()) params.forEach((p, i) => closeTo(p, ref[i], 1e-4, `rank ${rank} parameter ${i}`));
    free([X, T]);
  });

  it('noSync accumulates locally; the next backward reduces the accumulated total', async () => {
    const { X, T } = data();
    // one device: the gradient of the ranks' summed micro-batch losses, averaged over 2 ranks
    torch.manualSeed(7);
    const single = new MLP().to('gpu:0');
    const x0 = X.to('gpu:0'), t0 = T.to('gpu:0');
    const total = torch.tidy(() => {
      let l = torch.zeros([], { device: 'gpu:0' });
      for (let r = 0; r < 2; r++) for (let m = 0; m < 2; m++) l = l.add(mse(single(x0.narrow(0, r * 6 + m * 3, 3)), t0.narrow(0, r * 6 + m * 3, 3)));
      return l.div(2);
    });
    total.backward();
    const want = await vals(single.parameters().map((p) => p.grad!));
    const got = await dist.spawn(async (rank) => {
      await dist.initProcessGroup({ worldSize: 2, rank, initMethod: 'inproc://nosync' });
      torch.manualSeed(7);
      const net = new MLP().to('cuda');
      const ddp = new nn.parallel.DistributedDataParallel(net);
      const xs = [0, 1].map((m) => torch.tidy(() => X.narrow(0, rank * 6 + m * 3, 3).to('cuda')));
      const ts = [0, 1].map((m) => torch.tidy(() => T.narrow(0, rank * 6 + m * 3, 3).to('cuda')));
      ddp.noSync(() => {
        const l = torch.tidy(() => mse(ddp(xs[0]), ts[0]));
        l.backward();
        l.dispose();
      });
      const local = await vals([net.fc2.bias.grad!]);
      const l = torch.tidy(() => mse(ddp(xs[1]), ts[1]));
      l.backward();
      l.dispose();
      const out = await vals(net.parameters().map((p) => p.grad!));
      net.zeroGrad();
      free([...xs, ...ts, ...net.parameters()]);
      return { local, out };
    }, { nprocs: 2 });
    // under noSync the ranks' gradients differ (their own data); after the synced backward they agree
    expect(got[0].local[0]).not.toEqual(got[1].local[0]);
    for (const r of [0, 1]) got[r].out.forEach((g, i) => closeTo(g, want[i], 1e-4, `rank ${r} grad ${i}`));
    single.zeroGrad();
    free([X, T, x0, t0, total, ...single.parameters()]);
  });

  it('broadcasts rank 0\'s buffers; refuses a module off the rank\'s device, wrong deviceIds or outputDevice, and unused parameters', async () => {
    /** A module with a buffer (different on each rank before DDP) and a parameter forward may skip. */
    class WithBuffer extends nn.Module {
      fc = new nn.Linear(2, 2);
      extra = new nn.Linear(2, 2);
      useExtra = true;
      constructor(rank: number) {
        super();
        this.registerBuffer('stats', torch.full([2], rank + 1, { dtype: 'float32' }));
      }
      forward(x: torch.Tensor): torch.Tensor {
        return torch.tidy(() => (this.useExtra ? this.extra(this.fc(x)) : this.fc(x)));
      }
    }
    const got = await dist.spawn(async (rank) => {
      await dist.initProcessGroup({ worldSize: 2, rank, initMethod: 'inproc://buffers' });
      const m = new WithBuffer(rank).to('cuda');
      const errors: string[] = [];
      const off = new WithBuffer(rank);   // on the cpu
      try {
        new nn.parallel.DistributedDataParallel(off);
      } catch (e) {
        errors.push((e as Error).message);
      }
      try {
        new nn.parallel.DistributedDataParallel(m, { deviceIds: [1 - rank] });
      } catch (e) {
        errors.push((e as Error).message);
      }
      try {
        new nn.parallel.DistributedDataParallel(m, { outputDevice: 'cpu' });
      } catch (e) {
        errors.push((e as Error).message);
      }
      const ddp = new nn.parallel.DistributedDataParallel(m, { deviceIds: [rank], outputDevice: rank });
      const stats = (await (m as unknown as { stats: torch.Tensor }).stats.values()) as number[];
      const x = torch.ones([3, 2], { device: 'cuda' });
      m.useExtra = false;                 // extra gets no gradient: its bucket never completes
      const l = torch.tidy(() => ddp(x).sum());
      l.backward();
      try {
        ddp(x);
      } catch (e) {
        errors.push((e as Error).message);
      }
      m.zeroGrad();
      free([x, l, ...m.parameters(), ...m.buffers(), ...off.parameters(), ...off.buffers()]);
      return { stats, errors };
    }, { nprocs: 2 });
    for (const rank of [0, 1]) {
      expect(got[rank].stats).toEqual([1, 1]);   // rank 0's buffer everywhere
      expect(got[rank].errors[0]).toBe(`DistributedDataParallel: module must have its parameters and buffers on rank ${rank}'s device gpu:${rank} but found one of them on device: cpu`);
      expect(got[rank].errors[1]).toBe(`DistributedDataParallel(): deviceIds must be [gpu:${rank}] (the module's device), got [${1 - rank}]`);
      expect(got[rank].errors[2]).toBe(`DistributedDataParallel(): outputDevice must be gpu:${rank} (the module's device, where its output is), got cpu`);
      expect(got[rank].errors[3]).toMatch(/^Expected to have finished reduction in the prior iteration before starting a new one/);
    }
  });
});

describe('DDP buffers at each forward', () => {
  it('rank 0\'s buffers reach every rank before each forward, one broadcast per dtype (PyTorch\'s coalesced broadcast)', async () => {
    /** Three batch norms (float32 running stats and an int64 counter each): 9 buffers in two dtypes. */
    const net = () => new nn.Sequential(new nn.Linear(4, 6), new nn.BatchNorm1d(6), new nn.Linear(6, 6), new nn.BatchNorm1d(6), new nn.Linear(6, 3), new nn.BatchNorm1d(3));
    const got = await dist.spawn(async (rank) => {
      await dist.initProcessGroup({ worldSize: 2, rank, initMethod: 'inproc://buffer-sync' });
      torch.manualSeed(0);
      const m = net().to('cuda');
      const ddp = new nn.parallel.DistributedDataParallel(m);
      const g = ddp.processGroup as unknown as { seq: number }; // the number of collectives it has issued
      const out: { seqPerForward: number[]; buffers: number[][] } = { seqPerForward: [], buffers: [] };
      for (let step = 0; step < 3; step++) {
        // each rank's buffers drift apart (rank 1's are overwritten): the next forward must start from rank 0's
        torch.noGrad(() => m.buffers().forEach((b) => b.fill_(b.dtype === 'int64' ? 10 * rank + step : rank + step + 0.5)));
        // every rank the same batch: after the forward, the buffers agree only if they started from rank 0's
        const x = torch.tidy(() => torch.arange(0, 32, { device: 'cuda' }).reshape([8, 4]).sin());
        const before = g.seq;
        const y = torch.noGrad(() => ddp(x));
        out.seqPerForward.push(g.seq - before);
        out.buffers.push((await Promise.all(m.buffers().map((b) => b.values()))).flat() as number[]);
        free([x, y]);
      }
      free([...m.parameters(), ...m.buffers()]);
      return out;
    }, { nprocs: 2 });
    expect(got[0].seqPerForward).toEqual([2, 2, 2]); // float32 and int64: two broadcasts, not nine
    expect(got[1].seqPerForward).toEqual([2, 2, 2]);
    for (let step = 0; step < 3; step++) {
      expect(got[1].buffers[step]).toEqual(got[0].buffers[step]);
      expect(got[0].buffers[step].some((v) => v !== step + 0.5 && v !== step)).toBe(true); // the forward updated the running stats
    }
  });
});

describe('process group collectives', () => {
  it('allReduce (sum/avg/max/min), broadcast, allGather, reduceScatter, barrier over 3 ranks, against references', async () => {
    const SIZES = [1, 2, 5, 7, 1001];
    const inputs = SIZES.map((n, si) => [0, 1, 2].map((r) => {
      torch.manualSeed(1000 * si + r);
      return torch.randn([n]);
    }));
    const host = await Promise.all(inputs.map((xs) => vals(xs)));
    const results = await dist.spawn(async (rank) => {
      await dist.initProcessGroup({ worldSize: 3, rank, initMethod: 'inproc://collectives' });
      const out: Record<string, number[][]> = {};
      for (const [si] of SIZES.entries()) {
        for (const op of ['sum', 'avg', 'max', 'min'] as const) {
          const t = inputs[si][rank].to('cuda');
          await dist.allReduce(t, { op });
          out[`${op}${si}`] = [(await t.values()) as number[]];
          t.dispose();
        }
        const b = inputs[si][rank].to('cuda');
        const work = dist.broadcast(b, { src: 1, asyncOp: true }) as torch.distributed.Work;
        await work.wait();
        out[`bcast${si}`] = [(await b.values()) as number[]];
        expect(work.isCompleted()).toBe(true); // the read was a sync point after the broadcast's device work
        const mine = inputs[si][rank].to('cuda');
        const list = [0, 1, 2].map(() => torch.zeros([SIZES[si]], { device: 'cuda' }));
        await dist.allGather(list, mine);
        out[`gather${si}`] = await vals(list);
        // reduceScatter over parts of sizes n, n+1, n+2: rank r gets the sum of everyone's part r
        const parts = [0, 1, 2].map((j) => torch.tidy(() => torch.full([SIZES[si] + j], rank + 1 + j, { device: 'cuda', dtype: 'float32' })));
        const rs = torch.zeros([SIZES[si] + rank], { device: 'cuda' });
        await dist.reduceScatter(rs, parts);
        out[`rs${si}`] = [(await rs.values()) as number[]];
        free([b, mine, ...list, ...parts, rs]);
      }
      await dist.barrier();
      return out;
    }, { nprocs: 3 });
    const red: Record<string, (xs: number[]) => number> = {
      sum: (xs) => xs[0] + xs[1] + xs[2], avg: (xs) => (xs[0] + xs[1] + xs[2]) / 3, max: (xs) => Math.max(...xs), min: (xs) => Math.min(...xs),
    };
    for (const [si, n] of SIZES.entries()) {
      for (const rank of [0, 1, 2]) {
        for (const op of ['sum', 'avg', 'max', 'min']) {
          closeTo(results[rank][`${op}${si}`][0], host[si][0].map((_, j) => red[op](host[si].map((h) => h[j]))), 1e-5, `${op} n=${n} rank ${rank}`);
        }
        expect(results[rank][`bcast${si}`][0]).toEqual(host[si][1]);
        expect(results[rank][`gather${si}`]).toEqual(host[si]);
        // everyone's part `rank` holds rank+1+rank, …: the sum over ranks q of (q + 1 + rank)
        expect(results[rank][`rs${si}`][0]).toEqual(new Array(n + rank).fill(6 + 3 * rank));
      }
    }
    inputs.flat().forEach((t) => t.dispose());
  });
});

describe('misuse', () => {
  it('Work.isCompleted() waits for the bytes, not only for every rank to issue its side', async () => {
    const got = await dist.spawn(async (rank) => {
      await dist.initProcessGroup({ worldSize: 2, rank, initMethod: 'inproc://completed' });
      const t = torch.full([1 << 16], rank + 1, { device: 'cuda', dtype: 'float32' });
      let busy: torch.Tensor | null = null;
      if (rank === 1) {
        // Rank 1's device is busy before its side of the collective: rank 0's receive waits for it.
        const a = torch.randn([768, 768], { device: 'cuda' });
        busy = torch.tidy(() => {
          let x = a;
          for (let i = 0; i < 6; i++) x = x.matmul(a).div(768);
          return x;
        });
        a.dispose();
      }
      const work = dist.allReduce(t, { asyncOp: true }) as torch.distributed.Work;
      await work.wait();
      const early = work.isCompleted();
      const sum = (await t.values()) as number[];
      const late = work.isCompleted();
      free([t, ...(busy ? [busy] : [])]);
      return { early, late, ok: sum.every((v) => v === 3) };
    }, { nprocs: 2 });
    // Rank 0 asked while its receive still waited for rank 1's busy device.
    expect(got[0].early).toBe(false);
    for (const r of [0, 1]) {
      expect(got[r].late).toBe(true);
      expect(got[r].ok).toBe(true);
    }
  });

  it('no process group, a world size that differs, a call that differs from another rank\'s', async () => {
    expect(() => dist.getRank()).toThrow('Default process group has not been initialized, please make sure to call initProcessGroup.');
    expect(() => new nn.parallel.DistributedDataParallel(new nn.ReLU())).toThrow('Default process group has not been initialized');
    await expect(dist.spawn(async (rank) => {
      await dist.initProcessGroup({ worldSize: rank === 0 ? 2 : 3, rank, initMethod: 'inproc://sizes', timeout: 300 });
    }, { nprocs: 2 })).rejects.toThrow(/Process 0 terminated[\s\S]*initProcessGroup: timed out after 300 ms waiting for rank 1 to join inproc:\/\/sizes|Process 1 terminated[\s\S]*rank 1 has worldSize 3 but the group inproc:\/\/sizes has worldSize 2/);
    const errors: string[] = [];
    await dist.spawn(async (rank) => {
      await dist.initProcessGroup({ worldSize: 2, rank, initMethod: 'inproc://differ', timeout: 300 });
      const t = torch.zeros([3], { device: 'cuda' });
      // A misspelt option raises at the call, before anything is issued (it would otherwise be ignored).
      expect(() => dist.allReduce(t, { op: 'sum', asyncop: true } as never)).toThrow(
        "allReduce() got an unexpected keyword argument 'asyncop' (expected 'op', 'group', 'asyncOp')");
      expect(() => dist.broadcast(t, { source: 0 } as never)).toThrow("broadcast() got an unexpected keyword argument 'source'");
      try {
        // rank 0 waits at a barrier, rank 1 calls allReduce: rank 1 raises before issuing anything
        if (rank === 0) await dist.barrier();
        else await dist.allReduce(t);
      } catch (e) {
        errors[rank] = (e as Error).message;
      }
      t.dispose();
    }, { nprocs: 2 });
    // Both ranks raise the mismatch, rank 0 at once rather than at its time-out (test/device/dist-abort.test.ts).
    const why = 'allReduce (collective 1): rank 1 called allReduce([3], float32, sum) but rank 0 called barrier()';
    expect(errors).toEqual([why, why]);
  });

  it('a rank that throws: the others\' collectives raise naming it, and spawn reports it', async () => {
    const seen: string[] = [];
    await expect(dist.spawn(async (rank) => {
      await dist.initProcessGroup({ worldSize: 3, rank, initMethod: 'inproc://dies', timeout: 5000 });
      if (rank === 2) throw new Error('out of data');
      try {
        await dist.barrier();
      } catch (e) {
        seen.push((e as Error).message);
      }
    }, { nprocs: 3 })).rejects.toThrow(/-- Process 2 terminated with the following error:\nError: out of data/);
    expect(seen.length).toBe(2);
    for (const m of seen) expect(m).toMatch(/rank 2 failed: out of data/);
  });
});
