/**
 * nn.SyncBatchNorm with ranks in one process (spawn; rank r on gpu:r): the output, the input's,
 * weight's and bias's gradients and the running statistics against PyTorch's BatchNorm over the
 * ranks' batches concatenated (test/fixtures/make_ddp_surface_goldens.py), on 2 ranks and on 3
 * with uneven batches and `momentum = null`; DDP over a converted model gives one device's
 * full-batch BatchNorm training; outside a process group it is BatchNorm; convertSyncBatchnorm
 * shares the layer's tensors; PyTorch's errors.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';
import { free, vals, closeTo } from './ddp-helpers.js';

const { nn, optim, distributed: dist } = torch;
logicalGpuSuite(3, 'SyncBatchNorm tests');
const goldens = JSON.parse(readFileSync(new URL('../fixtures/ddp-surface-goldens.json', import.meta.url), 'utf8'));

type Step = { x: number[][]; dy: number[][]; y: number[][]; dx: number[][]; dw: number[][]; db: number[][]; runningMean: number[]; runningVar: number[] };
type Case = { shapes: number[][]; momentum: number | null; weight: number[]; bias: number[]; steps: Step[] };

describe('nn.SyncBatchNorm', () => {
  it.each(Object.keys(goldens.syncbn))('%s: output, gradients and running statistics are the global batch\'s (PyTorch)', async (name) => {
    const c = goldens.syncbn[name] as Case;
    const k = c.shapes.length;
    const got = await dist.spawn(async (rank) => {
      await dist.initProcessGroup({ worldSize: k, rank, initMethod: `inproc://syncbn-${k}` });
      const bn = new nn.SyncBatchNorm(c.shapes[0][1], 1e-5, c.momentum).to('cuda');
      torch.noGrad(() => {
        const w = torch.tensor(c.weight), b = torch.tensor(c.bias);
        bn.weight!.copy_(w);
        bn.bias!.copy_(b);
        free([w, b]);
      });
      const steps = [];
      for (const s of c.steps) {
        const x = torch.tidy(() => torch.tensor(s.x[rank]).reshape(c.shapes[rank]).to('cuda')).requiresGrad_();
        const dy = torch.tidy(() => torch.tensor(s.dy[rank]).reshape(c.shapes[rank]).to('cuda'));
        const y = bn(x) as torch.Tensor;
        const loss = torch.tidy(() => y.mul(dy).sum());
        loss.backward();
        steps.push({
          y: await vals(y), dx: await vals(x.grad!), dw: await vals(bn.weight!.grad!), db: await vals(bn.bias!.grad!),
          rm: await vals(bn.running_mean!), rv: await vals(bn.running_var!), nbt: Number(await bn.num_batches_tracked!.item()),
        });
        bn.zeroGrad();
        free([x.grad, x, dy, y, loss]);
      }
      free([...bn.parameters(), ...bn.buffers()]);
      return steps;
    }, { nprocs: k });
    for (let rank = 0; rank < k; rank++) {
      c.steps.forEach((want, i) => {
        const g = got[rank][i], at = `rank ${rank} step ${i}`;
        closeTo(g.y, want.y[rank], 1e-4, `${at} output`);
        closeTo(g.dx, want.dx[rank], 1e-4, `${at} input gradient`);
        closeTo(g.dw, want.dw[rank], 1e-4, `${at} weight gradient`);
        closeTo(g.db, want.db[rank], 1e-4, `${at} bias gradient`);
        closeTo(g.rm, want.runningMean, 1e-5, `${at} running mean`);
        closeTo(g.rv, want.runningVar, 1e-5, `${at} running var`);
        expect(g.nbt).toBe(i + 1);
      });
    }
  });

  it('DDP over convertSyncBatchnorm(model) on 2 ranks trains as one device with BatchNorm over the whole batch', async () => {
    const make = () => {
      torch.manualSeed(3);
      return new nn.Sequential(new nn.Linear(4, 3), new nn.BatchNorm1d(3), new nn.ReLU(), new nn.Linear(3, 1));
    };
    torch.manualSeed(21);
    const X = torch.randn([8, 4]), T = torch.randn([8, 1]);
    const mse = (y: torch.Tensor, t: torch.Tensor) => y.sub(t).square().mean();
    const train = async (net: torch.nn.Module, x: torch.Tensor, t: torch.Tensor) => {
      const opt = new optim.SGD(net.parameters(), { lr: 0.1 });
      for (let s = 0; s < 3; s++) {
        opt.zeroGrad();
        const loss = torch.tidy(() => mse(net(x) as torch.Tensor, t));
        loss.backward();
        opt.step();
        loss.dispose();
      }
      opt.zeroGrad();
    };
    // one device, the whole batch
    const single = make().to('gpu:0');
    const x0 = X.to('gpu:0'), t0 = T.to('gpu:0');
    await train(single, x0, t0);
    const want = await Promise.all([...single.parameters(), ...single.buffers()].map(async (p) => (await p.values()) as number[]));
    const got = await dist.spawn(async (rank) => {
      await dist.initProcessGroup({ worldSize: 2, rank, initMethod: 'inproc://syncbn-ddp' });
      const net = nn.SyncBatchNorm.convertSyncBatchnorm(make()).to('cuda');
      expect((net as unknown as Record<number, unknown>)[1]).toBeInstanceOf(nn.SyncBatchNorm);
      const ddp = new nn.parallel.DistributedDataParallel(net);
      const x = torch.tidy(() => X.narrow(0, rank * 4, 4).to('cuda')), t = torch.tidy(() => T.narrow(0, rank * 4, 4).to('cuda'));
      await train(ddp, x, t);
      const out = await Promise.all([...net.parameters(), ...net.buffers()].map(async (p) => (await p.values()) as number[]));
      free([x, t, ...net.parameters(), ...net.buffers()]);
      return out;
    }, { nprocs: 2 });
    for (const rank of [0, 1]) got[rank].forEach((p, i) => closeTo(p, want[i], 1e-4, `rank ${rank} parameter/buffer ${i}`));
    // BatchNorm over each rank's half alone would train differently: the test can tell
    const halves = make().to('gpu:0');
    const xh = torch.tidy(() => X.narrow(0, 0, 4).to('gpu:0')), th = torch.tidy(() => T.narrow(0, 0, 4).to('gpu:0'));
    await train(halves, xh, th);
    const local = (await halves.parameters()[0].values()) as number[];
    expect(local.some((v, i) => Math.abs(v - want[0][i]) > 1e-3)).toBe(true);
    free([X, T, x0, t0, xh, th, ...single.parameters(), ...single.buffers(), ...halves.parameters(), ...halves.buffers()]);
  });

  it('outside a process group it is BatchNorm; convertSyncBatchnorm shares tensors and training mode; PyTorch\'s errors', async () => {
    torch.manualSeed(4);
    const x = torch.randn([5, 3, 2, 2]);
    const ref = new nn.BatchNorm2d(3, { momentum: 0.3 });
    const sync = nn.SyncBatchNorm.convertSyncBatchnorm(ref) as torch.nn.SyncBatchNorm;
    expect(sync).toBeInstanceOf(nn.SyncBatchNorm);
    expect(sync.weight).toBe(ref.weight);
    expect((sync as unknown as { running_mean: torch.Tensor }).running_mean).toBe((ref as unknown as { running_mean: torch.Tensor }).running_mean);
    expect(sync.momentum).toBe(0.3);
    const fresh = new nn.SyncBatchNorm(3, { momentum: 0.3 });
    const a = fresh(x) as torch.Tensor;
    const b2 = new nn.BatchNorm2d(3, { momentum: 0.3 });
    const b = b2(x) as torch.Tensor;
    closeTo(await vals(a), await vals(b), 1e-6, 'SyncBatchNorm without a group');
    closeTo(await vals((fresh as unknown as { running_var: torch.Tensor }).running_var), await vals((b2 as unknown as { running_var: torch.Tensor }).running_var), 1e-6, 'running var');
    // momentum null: the cumulative average (1 / batches seen), one batch: the batch's statistics
    const cum = new nn.SyncBatchNorm(3, 1e-5, null);
    const c = cum(x) as torch.Tensor;
    closeTo(await vals(c), await vals(b), 1e-5, 'momentum null output');
    const mean = torch.tidy(() => x.mean([0, 2, 3]));
    closeTo(await vals((cum as unknown as { running_mean: torch.Tensor }).running_mean), await vals(mean), 1e-5, 'momentum null running mean');

    // nested, eval mode kept
    const seq = new nn.Sequential(new nn.Linear(2, 3), new nn.Sequential(new nn.BatchNorm1d(3).eval()));
    const conv = nn.SyncBatchNorm.convertSyncBatchnorm(seq) as torch.nn.Sequential;
    expect(conv).toBe(seq);
    const inner = (conv as unknown as Record<number, Record<number, torch.nn.Module>>)[1][0];
    expect(inner).toBeInstanceOf(nn.SyncBatchNorm);
    expect(inner.training).toBe(false);

    const flat = torch.ones([3]);
    expect(() => fresh(flat)).toThrow('expected at least 2D input (got 1D input)');
    expect(() => new nn.SyncBatchNorm(3, { bogusOption: 1 } as never)).toThrow(/got an unexpected keyword argument 'bogusOption'/);
    expect(() => new nn.SyncBatchNorm(3, 1e-5, 0.1, true, true, null, null, null, 1 as never)).toThrow(/takes from 1 to 8 positional arguments but 9 were given/);
    free([x, flat, a, b, c, mean, ...fresh.parameters(), ...fresh.buffers(), ...ref.parameters(), ...ref.buffers(), ...b2.parameters(), ...b2.buffers(),
      ...cum.parameters(), ...cum.buffers(), ...seq.parameters(), ...seq.buffers()]);
  });
});
