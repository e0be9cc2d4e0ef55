/**
 * DistributedDataParallel's all-reduces run on a stream of their own (issue 30, "communication
 * beside compute"): a bucket's `recv`, waiting for a peer's bytes, must not hold backward's later
 * kernels, and the optimizer step (queued after backward) must still read the averages.
 *
 * Rank 1 is held back until rank 0's backward has been issued and observed. The model's middle is
 * a checkpointed ReLU, so backward runs JavaScript (the recompute) after the first bucket's
 * all-reduce has been issued; there rank 0 records an event on its compute stream. While rank 1
 * has sent nothing yet, that event must finish: on one stream it would wait behind the bucket's
 * `recv`. Then rank 0 queues a read of fc1's gradient on the compute stream before releasing
 * rank 1: it must see the average (the compute stream waits for the comm stream at the end of
 * backward), not rank 0's local gradient. Both checks against a reference: each rank's local
 * gradients, computed without DDP, averaged here.
 *
 * MUTATION RECORD (ts/distributed/ddp.ts as in the commit that adds this file):
 * - `onCommStream` running `reduce()` on the current stream (`if (!comm || Math.random() < 2)`):
 *   both cases fail with "rank 0: the compute stream's event recorded during backward did not
 *   finish while rank 1 held back its bytes: expected false to be true" (after the 20 s race).
 * - the last bucket's `joinCommStream()` skipped: fails with "rank 0 fc1.weight.grad after
 *   backward: first mismatch at 0: 0.00106… vs 0.0283…" (reads on the compute stream saw the
 *   local gradient).
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';
import { closeTo, free, probedNet, vals } from './ddp-helpers.js';

const { nn, distributed: dist } = torch;
logicalGpuSuite(2, 'the DDP comm-stream test');

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe('DistributedDataParallel on its own comm stream', () => {
  for (const gradientAsBucketView of [false, true]) {
    it(`backward's later kernels run while a peer's bytes are awaited, and the optimizer still reads the average (gradientAsBucketView ${gradientAsBucketView})`, async () => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const got = await dist.spawn(async (rank) => {
        await dist.initProcessGroup({ backend: 'webtorch', worldSize: 2, rank, initMethod: `inproc://ddp-comm-stream-${gradientAsBucketView}` });
        torch.manualSeed(3);
        let inBackward = false, mark: torch.gpu.Event | null = null;
        const net = probedNet(() => {
          if (inBackward && !mark) mark = torch.gpu.currentStream().recordEvent(); // the recompute, mid-backward
        });
        const ddp = new nn.parallel.DistributedDataParallel(net, { bucketCapMb: 300 / 2 ** 20, gradientAsBucketView });
        torch.manualSeed(100 + rank); // each rank its own data: local gradients differ from the average
        const x = torch.randn([6, 8], { device: 'cuda' }), t = torch.randn([6, 4], { device: 'cuda' });
        const lossOf = (m: nn.Module) => m.call(x).sub(t).square().mean();
        // this rank's local gradients, without DDP (the parameters are rank 0's on both: the
        // constructor's broadcast is queued in stream order before these reads)
        const localLoss = torch.tidy(() => lossOf(net));
        const local = torch.autograd.grad(localLoss, [net.fc1.weight, net.fc3.weight]);
        const localVals = await Promise.all(local.map(vals));
        free([localLoss, ...local]);

        if (rank === 1) await gate;
        const loss = torch.tidy(() => lossOf(ddp));
        inBackward = true;
        loss.backward();
        inBackward = false;
        let markFinished = true, early: Promise<number[]> | null = null;
        if (rank === 0) {
          markFinished = await Promise.race([mark!.synchronize().then(() => true), sleep(20_000).then(() => false)]);
          early = vals(net.fc1.weight.grad!); // queued on the compute stream while rank 1 has sent nothing
          release();
        }
        const final = await Promise.all([net.fc1.weight.grad!, net.fc3.weight.grad!].map(vals));
        const atRead = early ? await early : final[0];
        net.zeroGrad();
        if (gradientAsBucketView) (ddp as unknown as { _releaseBuckets(): void })._releaseBuckets();
        free([x, t, loss, ...net.parameters()]);
        return { localVals, markFinished, atRead, final };
      }, { nprocs: 2 });

      const avg = (k: number) => got[0].localVals[k].map((v, i) => (v + got[1].localVals[k][i]) / 2);
      expect(got[0].markFinished, 'rank 0: the compute stream\'s event recorded during backward did not finish while rank 1 held back its bytes').toBe(true);
      for (const [rank, r] of got.entries()) {
        closeTo(r.final[0], avg(0), 1e-5, `rank ${rank} fc1.weight.grad after backward`);
        closeTo(r.final[1], avg(1), 1e-5, `rank ${rank} fc3.weight.grad after backward`);
      }
      closeTo(got[0].atRead, avg(0), 1e-5, 'rank 0 fc1.weight.grad read on the compute stream after backward');
    }, 90_000);
  }
});
