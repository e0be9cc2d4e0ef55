/**
 * DDP comm hooks with ranks in one process (spawn; rank r on gpu:r): PyTorch's default hooks
 * (`allreduceHook`, `fp16CompressHook`, `bf16CompressHook`); the 16-bit ones compress for real:
 * their gradients equal, bit for bit, a reference computed with 16-bit rounding at each step
 * (test/fixtures/make_ddp_surface_goldens.py) and differ from the float32 average; a custom hook
 * through `torch.futures.Future`; `gradientAsBucketView` (one bucket kept across iterations, the
 * gradients its views, training as without it); `torch.futures.Future`; the errors.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';
import { free, vals } from './ddp-helpers.js';

const { nn, optim, distributed: dist } = torch;
const hooks = dist.algorithms.ddpCommHooks.defaultHooks;
logicalGpuSuite(3, 'DDP comm hook tests');
const goldens = JSON.parse(readFileSync(new URL('../fixtures/ddp-surface-goldens.json', import.meta.url), 'utf8'));
type HookCase = { k: number; dtype: 'float16' | 'bfloat16'; grads: number[][]; reduced: number[]; float32Mean: number[] };

/** A module whose parameter's gradient is its input: forward(g) = (p * g).sum(). */
class Dot extends nn.Module {
  declare p: torch.Tensor;
  constructor(n: number) {
    super();
    const z = torch.zeros([n]);
    this.registerParameter('p', z);
    z.dispose();   // the parameter holds the storage
  }
  forward(g: torch.Tensor): torch.Tensor {
    return torch.tidy(() => this.p.mul(g).sum());
  }
}

/** Each rank's gradient after one DDP backward of `Dot` on `grads[rank]`, with `setup` run on the DDP module first. */
async function reduced(k: number, grads: number[][], setup: (ddp: torch.nn.parallel.DistributedDataParallel) => void, name: string): Promise<number[][]> {
  return dist.spawn(async (rank) => {
    await dist.initProcessGroup({ worldSize: k, rank, initMethod: `inproc://hook-${name}-${k}` });
    const m = new Dot(grads[0].length).to('cuda');
    const ddp = new nn.parallel.DistributedDataParallel(m);
    setup(ddp);
    const g = torch.tidy(() => torch.tensor(grads[rank]).to('cuda'));
    const loss = ddp(g) as torch.Tensor;
    loss.backward();
    const out = await vals(m.p.grad!);
    m.zeroGrad();
    free([g, loss, m.p]);
    return out;
  }, { nprocs: k });
}

describe('DDP comm hooks', () => {
  it.each((goldens.hooks as HookCase[]).map((c, i) => [c.dtype, c.k, i] as const))('%s compression on %i ranks: PyTorch\'s 16-bit rounding, bit for bit', async (dtype, k, i) => {
    const c = (goldens.hooks as HookCase[])[i];
    const hook = dtype === 'float16' ? hooks.fp16CompressHook : hooks.bf16CompressHook;
    const got = await reduced(k, c.grads, (ddp) => ddp.registerCommHook(null, hook), `${dtype}`);
    for (let rank = 0; rank < k; rank++) expect(got[rank], `rank ${rank}`).toEqual(c.reduced);
    // compression is real: the result is not the float32 average
    expect(got[0].some((v, j) => v !== Math.fround(c.float32Mean[j]))).toBe(true);
  });

  it('allreduceHook and a custom hook through torch.futures.Future give the float32 average', async () => {
    const c = (goldens.hooks as HookCase[])[1];
    const plain = await reduced(3, c.grads, () => {}, 'none');
    const viaHook = await reduced(3, c.grads, (ddp) => ddp.registerCommHook(null, hooks.allreduceHook), 'allreduce');
    // a custom hook: sum-all-reduce, then halve the sum's third (state: a number), as a Future chain
    const custom = await reduced(3, c.grads, (ddp) => ddp.registerCommHook(3, (worldSize: number, bucket) => {
      const t = bucket.buffer();
      void dist.allReduce(t, { asyncOp: true });
      const fut = new torch.futures.Future<torch.Tensor>();
      fut.setResult(t);
      return fut.then((f) => {
        const v = f.value();
        torch.noGrad(() => v.div_(worldSize));
        return v;
      });
    }), 'custom');
    for (let rank = 0; rank < 3; rank++) {
      plain[rank].forEach((v, j) => expect(Math.abs(v - c.float32Mean[j])).toBeLessThan(1e-8));
      viaHook[rank].forEach((v, j) => expect(Math.abs(v - c.float32Mean[j])).toBeLessThan(1e-8));
      custom[rank].forEach((v, j) => expect(Math.abs(v - c.float32Mean[j])).toBeLessThan(1e-8));
    }
  });

  it('the hook sees PyTorch\'s GradBucket; registering twice, a non-callable hook and a Promise result raise', async () => {
    const got = await dist.spawn(async (rank) => {
      await dist.initProcessGroup({ worldSize: 2, rank, initMethod: 'inproc://hook-misuse' });
      const lin = new nn.Linear(3, 2).to('cuda');
      const ddp = new nn.parallel.DistributedDataParallel(lin, { bucketCapMb: 0.00001 });   // one bucket per parameter
      const seen: unknown[] = [];
      ddp.registerCommHook(null, (state, bucket) => {
        const grads = bucket.gradients();
        seen.push({ index: bucket.index(), last: bucket.isLast(), numel: bucket.buffer().numel(), shapes: grads.map((g) => g.shape), params: bucket.parameters().map((p) => p === lin.weight ? 'weight' : 'bias') });
        free(grads);
        return hooks.allreduceHook(state as null, bucket);
      });
      const errors: string[] = [];
      for (const bad of [() => ddp.registerCommHook(null, hooks.allreduceHook), () => ddp.registerCommHook(null, 3 as never)]) {
        try {
          bad();
        } catch (e) {
          errors.push((e as Error).message);
        }
      }
      const x = torch.ones([4, 3], { device: 'cuda' });
      const loss = torch.tidy(() => (ddp(x) as torch.Tensor).sum());
      loss.backward();
      lin.zeroGrad();
      // a hook returning a Promise is refused inside backward
      const lin2 = new nn.Linear(3, 2).to('cuda');
      const ddp2 = new nn.parallel.DistributedDataParallel(lin2);
      ddp2.registerCommHook(null, async (_s, bucket) => bucket.buffer() as never);
      const loss2 = torch.tidy(() => (ddp2(x) as torch.Tensor).sum());
      try {
        loss2.backward();
      } catch (e) {
        errors.push((e as Error).message);
      }
      lin2.zeroGrad();
      free([x, loss, loss2, lin.weight, lin.bias, lin2.weight, lin2.bias]);
      return { seen, errors };
    }, { nprocs: 2 });
    for (const r of got) {
      expect(r.seen).toEqual([
        { index: 0, last: false, numel: 2, shapes: [[2]], params: ['bias'] },
        { index: 1, last: true, numel: 6, shapes: [[2, 3]], params: ['weight'] },
      ]);
      expect(r.errors[0]).toBe('register_comm_hook or register_builtin_comm_hook can only be called once.');
      expect(r.errors[1]).toBe('Communication hook must be callable.');
      expect(r.errors[2]).toMatch(/^DistributedDataParallel: the communication hook returned a Promise/);
    }
  });
});

describe('gradientAsBucketView', () => {
  it('keeps one bucket across iterations, the gradients its views, and trains as without it', async () => {
    const run = (asView: boolean) => dist.spawn(async (rank) => {
      await dist.initProcessGroup({ worldSize: 2, rank, initMethod: `inproc://asview-${asView}` });
      torch.manualSeed(1);
      const net = new nn.Sequential(new nn.Linear(3, 4), new nn.Tanh(), new nn.Linear(4, 1)).to('cuda');
      const ddp = new nn.parallel.DistributedDataParallel(net, { gradientAsBucketView: asView });
      const opt = new optim.SGD(ddp.parameters(), { lr: 0.1 });
      torch.manualSeed(5 + rank);
      const x = torch.randn([6, 3], { device: 'cuda' }), t = torch.randn([6, 1], { device: 'cuda' });
      const storages: unknown[][] = [];
      for (let s = 0; s < 3; s++) {
        const loss = torch.tidy(() => (ddp(x) as torch.Tensor).sub(t).square().mean());
        loss.backward();
        storages.push(net.parameters().map((p) => (p.grad as unknown as { storage: unknown }).storage));
        opt.step();
        if (s < 2) for (const p of net.parameters()) torch.noGrad(() => p.grad!.zero_());  // zeroGrad(setToNone=false)
        loss.dispose();
      }
      const out = await Promise.all(net.parameters().map(vals));
      opt.zeroGrad();
      (ddp as unknown as { _releaseBuckets(): void })._releaseBuckets();
      free([x, t, ...net.parameters()]);
      return { out, storages };
    }, { nprocs: 2 });
    const plain = await run(false), view = await run(true);
    for (const rank of [0, 1]) {
      view[rank].out.forEach((p, i) => p.forEach((v, j) => expect(Math.abs(v - plain[rank].out[i][j])).toBeLessThan(1e-6)));
      const st = view[rank].storages;
      expect(new Set(st[0]).size).toBe(1);            // every gradient in the one bucket
      expect(st[1]).toEqual(st[0]);                   // the same bucket each iteration
      expect(st[2]).toEqual(st[0]);
      expect(plain[rank].storages[1][0]).not.toBe(plain[rank].storages[0][0]);   // without it, a bucket per iteration
    }
  });
});

describe('torch.futures.Future', () => {
  it('setResult, then, value, wait, done, setException; completed once', async () => {
    const f = new torch.futures.Future<number>();
    expect(f.done()).toBe(false);
    expect(() => f.value()).toThrow(/not completed yet/);
    const g = f.then((x) => x.value() * 2);
    const seen: number[] = [];
    f.addDoneCallback((x) => seen.push(x.value()));
    f.setResult(21);
    expect(g.value()).toBe(42);
    expect(await g.wait()).toBe(42);
    expect(seen).toEqual([21]);
    expect(() => f.setResult(1)).toThrow('Error setting result: Future can only be marked completed once.');
    const bad = f.then(() => {
      throw new Error('boom');
    });
    expect(bad.done()).toBe(true);
    expect(() => bad.value()).toThrow('boom');
    await expect(bad.wait()).rejects.toThrow('boom');
  });
});
