/**
 * DistributedDataParallel.join() with ranks in one process (spawn; rank r on gpu:r) that have
 * different numbers of batches: no rank hangs, and every rank ends with the parameters of the
 * reference computed by hand in PyTorch (test/fixtures/make_ddp_surface_goldens.py: at each
 * iteration the ranks with a batch contribute, divided by the world size or by the ranks not
 * joined); buffers follow the last rank to join; the options PyTorch has, and their errors.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';
import { free, vals, closeTo } from './ddp-helpers.js';

const { nn, optim, distributed: dist } = torch;
logicalGpuSuite(3, 'DDP join tests');
const goldens = JSON.parse(readFileSync(new URL('../fixtures/ddp-surface-goldens.json', import.meta.url), 'utf8'));
type JoinCase = { batches: number[]; divideByInitialWorldSize: boolean; weight: number[]; bias: number[]; data: [number[], number[]][][]; finalWeight: number[]; finalBias: number[] };

describe('DistributedDataParallel.join()', () => {
  it.each((goldens.join as JoinCase[]).map((c, i) => [c.batches.join('|'), c.divideByInitialWorldSize, i] as const))(
    'batches %s, divideByInitialWorldSize %s: no hang, every rank ends with the hand-computed parameters', async (_, __, ci) => {
      const c = (goldens.join as JoinCase[])[ci];
      const k = c.batches.length;
      const got = await dist.spawn(async (rank) => {
        await dist.initProcessGroup({ worldSize: k, rank, initMethod: `inproc://join-${ci}`, timeout: 20_000 });
        const lin = new nn.Linear(3, 2).to('cuda');
        if (rank === 0) {
          torch.noGrad(() => torch.tidy(() => {
            lin.weight.copy_(torch.tensor(c.weight).reshape([2, 3]));
            lin.bias!.copy_(torch.tensor(c.bias));
          }));
        }
        const ddp = new nn.parallel.DistributedDataParallel(lin);   // rank 0's parameters everywhere
        const opt = new optim.SGD(ddp.parameters(), { lr: 0.1 });
        const batches = c.data[rank].map(([x, t]) => torch.tidy(() => [torch.tensor(x).reshape([4, 3]).to('cuda'), torch.tensor(t).reshape([4, 2]).to('cuda')]));
        let steps = 0;
        const r = await ddp.join(async () => {
          for (const [x, t] of batches) {
            opt.zeroGrad();
            const loss = torch.tidy(() => (ddp(x) as torch.Tensor).sub(t).square().mean());
            loss.backward();
            opt.step();
            loss.dispose();
            steps++;
          }
          return 'done';
        }, { divideByInitialWorldSize: c.divideByInitialWorldSize });
        const out = { r, steps, w: await vals(lin.weight), b: await vals(lin.bias!) };
        opt.zeroGrad();
        free([...batches.flat(), lin.weight, lin.bias]);
        return out;
      }, { nprocs: k });
      for (let rank = 0; rank < k; rank++) {
        expect(got[rank].r).toBe('done');
        expect(got[rank].steps).toBe(c.batches[rank]);
        closeTo(got[rank].w, c.finalWeight, 1e-5, `rank ${rank} weight`);
        closeTo(got[rank].b, c.finalBias, 1e-5, `rank ${rank} bias`);
      }
    });

  it('3 ranks with a BatchNorm: buffers come from the ranks still training, and every rank ends with the last joiner\'s', async () => {
    const batches = [1, 4, 2];
    const got = await dist.spawn(async (rank) => {
      await dist.initProcessGroup({ worldSize: 3, rank, initMethod: 'inproc://join-bn', timeout: 20_000 });
      torch.manualSeed(2);
      const net = new nn.Sequential(new nn.Linear(3, 4), new nn.BatchNorm1d(4)).to('cuda');
      const ddp = new nn.parallel.DistributedDataParallel(net);
      const opt = new optim.SGD(ddp.parameters(), { lr: 0.1 });
      torch.manualSeed(10 + rank);
      const xs = Array.from({ length: batches[rank] }, () => torch.randn([5, 3], { device: 'cuda' }));
      await ddp.join(async () => {
        for (const x of xs) {
          opt.zeroGrad();
          const loss = torch.tidy(() => (ddp(x) as torch.Tensor).square().mean());
          loss.backward();
          opt.step();
          loss.dispose();
        }
      });
      const state = await Promise.all([...net.parameters(), ...net.buffers()].map(async (t) => (await t.values()) as number[]));
      opt.zeroGrad();
      free([...xs, ...net.parameters(), ...net.buffers()]);
      return state;
    }, { nprocs: 3 });
    for (const rank of [1, 2]) got[rank].forEach((t, i) => closeTo(t, got[0][i], 0, `rank ${rank} tensor ${i}`));
    // num_batches_tracked: the buffers are synced from the highest rank still training at each
    // forward, and the model at the end is rank 1's, the last to join: 4 batches.
    expect(got[0][got[0].length - 1]).toEqual([4]);
  });

  it('enable false runs fn as it is; misuse raises', async () => {
    const got = await dist.spawn(async (rank) => {
      await dist.initProcessGroup({ worldSize: 2, rank, initMethod: 'inproc://join-misuse' });
      const lin = new nn.Linear(2, 1).to('cuda');
      const ddp = new nn.parallel.DistributedDataParallel(lin);
      const errors: string[] = [];
      const ran = await ddp.join(() => 7, { enable: false });
      for (const bad of [
        () => ddp.join(() => 1, { throwOnEarlyTermination: true }),
        () => ddp.join(() => 1, { bogusOption: 1 } as never),
        () => ddp.join(() => 1, true, true, false, 1 as never),
      ]) {
        try {
          await bad();
        } catch (e) {
          errors.push((e as Error).message);
        }
      }
      free([lin.weight, lin.bias]);
      return { ran, errors };
    }, { nprocs: 2 });
    for (const r of got) {
      expect(r.ran).toBe(7);
      expect(r.errors[0]).toMatch(/^join\(\): throwOnEarlyTermination=true is not supported by webtorch/);
      expect(r.errors[1]).toMatch(/join\(\) got an unexpected keyword argument 'bogusOption'/);
      expect(r.errors[2]).toMatch(/join\(\) takes from 1 to 4 positional arguments but 5 were given/);
    }
  });
});
