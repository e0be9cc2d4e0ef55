/**
 * `tidy` scopes free everything they made, backward included, without a garbage collection:
 * the garbage collector does not see device memory pressure, so a block held until a collection
 * is a leak to the user. This file never calls `gc()` (vitest runs it without --expose-gc); after
 * each scope the allocator's live bytes and live storages must be back at their start.
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck, testDevices } from '../devices.js';

const devices = await testDevices();
leakCheck(() => devices);
afterAll(async () => {
  await torch.shutdown();
});
const F = torch.nn.functional;

type Chain = (x: torch.Tensor, w: torch.Tensor, y: torch.Tensor) => torch.Tensor;

/** Forward chains ending in a scalar: elementwise, scalars, broadcasting, views, matmul, reductions, losses. */
const chains: Record<string, Chain> = {
  'unary ops and a sum': (x) => x.exp().tanh().sigmoid().sum(),
  'scalar operands': (x) => x.mul(2).add(1).div(3).pow(2).clamp(-1, 1).mean(),
  broadcasting: (x, _w, y) => x.add(y).mul(y.unsqueeze(1)).sub(y).sum(),
  views: (x) => x.transpose(0, 1).reshape([-1]).unsqueeze(0).squeeze(0).view([4, 4]).permute(1, 0).sum(),
  matmul: (x, w) => x.matmul(w).relu().matmul(w.T).sum(),
  'reductions over dims': (x) => x.sum(0).mul(x.mean(1, true).squeeze(1)).sum().add(x.max(0).values.sum()).add(x.prod(1).sum()),
  'softmax and log-softmax': (x) => F.softmax(x, 1).mul(F.logSoftmax(x, 0)).sum(),
  'cross entropy': (x) => F.crossEntropy(x, torch.tensor([0, 1, 2, 3], { dtype: 'int64', device: x.device })),
  'mse loss': (x, w) => F.mseLoss(x.matmul(w), torch.zerosLike(x)),
  'gelu, silu, maximum': (x, _w, y) => F.gelu(x).add(F.silu(x)).maximum(y).sum(),
};

/** Allocated bytes, live storages and live storage bytes on a device. */
function live(d: string): [number, number, number] {
  const s = torch._liveStorage(torch.device(d));
  return [torch.gpu.memoryAllocated(d), s.count, s.bytes];
}

describe.each(devices)('tidy scopes with backward on %s free everything without a collection', (d) => {
  it('frees what forward and backward made, with parameters made outside the scope', async () => {
    const x = torch.randn([4, 4], { device: d }).requiresGrad_();
    const w = torch.randn([4, 4], { device: d }).requiresGrad_();
    const y = torch.randn([4], { device: d });
    for (const [name, f] of Object.entries(chains)) {
      torch.tidy(() => f(x, w, y).backward()); // the first pass makes the parameters' .grad
      await torch.gpu.synchronize(d);
      const start = live(d);
      for (let i = 0; i < 3; i++) torch.tidy(() => f(x, w, y).backward());
      await torch.gpu.synchronize(d);
      expect(live(d), `${name}: live bytes and storages after the scopes`).toEqual(start);
      for (const p of [x, w]) {
        p.grad?.dispose();
        p.grad = null;
      }
    }
    [x, w, y].forEach((t) => t.dispose());
  });

  it('frees the gradients of leaves made inside the scope', async () => {
    const y = torch.randn([4], { device: d });
    for (const [name, f] of Object.entries(chains)) {
      const start = live(d);
      for (let i = 0; i < 3; i++) {
        torch.tidy(() => {
          const x = torch.randn([4, 4], { device: d }).requiresGrad_();
          const w = torch.randn([4, 4], { device: d }).requiresGrad_();
          const h = x.mul(1.5);
          h.retainGrad();
          f(h, w, y).backward();
          expect(x.grad?.shape).toEqual([4, 4]);
          expect(h.grad?.shape).toEqual([4, 4]);
        });
      }
      await torch.gpu.synchronize(d);
      expect(live(d), `${name}: live bytes and storages after the scopes`).toEqual(start);
    }
    y.dispose();
  });

  it('keeps the gradient of a leaf returned from the scope, and frees both with the leaf', async () => {
    const start = live(d);
    const x = torch.tidy(() => {
      const x = torch.ones([3], { device: d }).requiresGrad_();
      x.mul(x).sum().backward();
      return x;
    });
    expect(x.grad!.isDisposed).toBe(false);
    expect(Array.from((await x.grad!.data()) as Float32Array)).toEqual([2, 2, 2]);
    torch.tidy(() => x); // a kept tensor moves to the outer scope with its gradient
    expect(x.grad!.isDisposed).toBe(false);
    x.grad!.dispose();
    x.dispose();
    await torch.gpu.synchronize(d);
    expect(live(d)).toEqual(start);
  });
});
