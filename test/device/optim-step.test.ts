/**
 * The optimizers' step as PyTorch runs it: in place, and fused (ts/optim/fused.ts, the
 * `optimStep` command; wgsl/optim.ts, assembly/kernels/optim.ts), on cpu, gpu:0 and gpu:1.
 *
 * - The fused step is one command per group and device, and gives the per-parameter loop's
 *   values (`foreach: false`); the PyTorch goldens of both are in training.test.ts.
 * - A group whose tensors lie in more segments than a dispatch binds takes several dispatches,
 *   with the same values.
 * - A parameter the fused step cannot take (non-contiguous, float16) takes the composed step, or
 *   raises under `fused: true`; PyTorch's option errors.
 * - An eager step between replays of a captured forward and backward is seen by the next replay:
 *   the optimizers write the parameters the graph reads, in place. (Before, each step swapped the
 *   parameter's storage, and the replays kept training the first parameters: mutation checked by
 *   putting `p._setData(value)` back in Optimizer.composedStep and running with foreach: false.)
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';
import { batchOn, capture, free, mlp, newGraph } from './graphs-helpers.js';

const { optim } = torch;
const devices = suiteDevices();

type Make = (params: torch.Tensor[], way: object) => torch.optim.Optimizer;
const MAKERS: [string, Make][] = [
  ['AdamW', (p, w) => new optim.AdamW(p, { lr: 0.01, weightDecay: 0.1, ...w })],
  ['Adam amsgrad', (p, w) => new optim.Adam(p, { lr: 0.01, amsgrad: true, weightDecay: 0.01, ...w })],
  ['SGD nesterov', (p, w) => new optim.SGD(p, { lr: 0.05, momentum: 0.9, nesterov: true, weightDecay: 1e-3, ...w })],
  ['SGD', (p, w) => new optim.SGD(p, { lr: 0.05, ...w })],
];

/** Parameters of `sizes` on `d`, from one seed, and gradients from another per step. */
function params(d: string, sizes: number[][]): torch.Tensor[] {
  torch.manualSeed(1);
  return sizes.map((s) => torch.randn(s, { device: d }).requiresGrad_());
}
function setGrads(ps: torch.Tensor[], step: number): void {
  torch.manualSeed(100 + step);
  for (const p of ps) {
    p.grad?.dispose();
    p.grad = torch.randn(p.shape, { device: p.device });
  }
}
async function flat(ts: torch.Tensor[]): Promise<number[]> {
  const out: number[] = [];
  for (const t of ts) for (const v of (await t.data()) as Float32Array) out.push(v);
  return out;
}
function freeAll(ps: torch.Tensor[], opt: torch.optim.Optimizer): void {
  for (const p of ps) {
    p.grad?.dispose();
    p.dispose();
  }
  for (const s of opt.state.values()) for (const v of Object.values(s)) if (typeof v === 'object') v.dispose();
}
const expectClose = (got: number[], want: number[], tol: number, what: string) => {
  expect(got.length).toBe(want.length);
  got.forEach((v, i) => expect(Math.abs(v - want[i]), `${what} [${i}]: ${v} vs ${want[i]}`).toBeLessThanOrEqual(tol * (1 + Math.abs(want[i]))));
};

describe('the fused step', () => {
  it.each(MAKERS)('%s: one optimStep command per step for a group of 6 parameters, no elementwise command; the per-parameter loop\'s values after 5 steps', async (_name, make) => {
    const sizes = [[16, 8], [16], [4, 16], [4], [3, 5, 7], [1]];
    for (const d of devices) {
      const a = params(d, sizes), b = params(d, sizes);
      const fused = make(a, {}), loop = make(b, { foreach: false });
      for (let s = 0; s < 5; s++) {
        setGrads(a, s);
        setGrads(b, s);
        if (s === 3) await torch._profileWorker(d, true);
        fused.step();
        if (s === 3) {
          const prof = (await torch._profileWorker(d, false))!;
          expect(prof.commands.optimStep?.count, `${d}: optimStep commands`).toBe(1);
          const other = Object.keys(prof.commands).filter((k) => k !== 'optimStep' && prof.commands[k].count > 0);
          expect(other, `${d}: other commands of the fused step`).toEqual([]);
        }
        loop.step();
      }
      expectClose(await flat(a), await flat(b), 2e-6, `${d} parameters`);
      const stateA = [...fused.state.values()].flatMap((s) => Object.values(s).filter((v): v is torch.Tensor => typeof v === 'object'));
      const stateB = [...loop.state.values()].flatMap((s) => Object.values(s).filter((v): v is torch.Tensor => typeof v === 'object'));
      expect(stateA.length).toBe(stateB.length);
      expectClose(await flat(stateA), await flat(stateB), 2e-6, `${d} state`);
      if (fused instanceof optim.Adam) expect(fused.state.get(a[0])!.step).toBe(5);
      freeAll(a, fused);
      freeAll(b, loop);
    }
  });

  it('gpu:0: more parameters of 10.8 MB with momentum than a dispatch binds (a segment each for the parameter, gradient and buffer): one command, several dispatches, the values of SGD\'s rule', async () => {
    const d = devices.find((x) => x === 'gpu:0');
    if (!d) throw new Error('no gpu:0 (GPU suites do not skip)');
    const room = (await torch.gpu.getDeviceProperties(d)).limits.maxStorageBuffersPerShaderStage - 1;
    const count = Math.floor(room / 3) + 1, n = 2_700_000;
    const ps = Array.from({ length: count }, (_, i) => torch.full([n], i + 1, { device: d, dtype: 'float32' }).requiresGrad_());
    const opt = new optim.SGD(ps, { lr: 0.02, momentum: 0.9 });
    try {
      for (const p of ps) p.grad = torch.full([n], 0.5, { device: d, dtype: 'float32' });
      opt.step();
      await torch._profileWorker(d, true);
      opt.step();
      await torch.gpu.synchronize(d);
      const prof = (await torch._profileWorker(d, false))!;
      expect(prof.commands.optimStep.count).toBe(1);
      expect(prof.gpu!.optimStep.count, 'dispatches').toBeGreaterThan(1);
      // buf = g, then 0.9·buf + g; p −= 0.02·buf, in float32
      const f = Math.fround, lr = f(0.02), g = 0.5;
      for (const [i, p] of ps.entries()) {
        let x = f(i + 1), buf = g;
        x = f(x + f(-lr * buf));
        buf = f(f(buf * f(0.9)) + g);
        x = f(x + f(-lr * buf));
        const v = (await p.data()) as Float32Array;
        for (const k of [0, 1, n >> 1, n - 1]) expect(Math.abs(v[k] - x), `parameter ${i} [${k}]: ${v[k]} vs ${x}`).toBeLessThanOrEqual(1e-6 * x);
        expect(v.every((y) => y === v[0]), `parameter ${i}: every element alike`).toBe(true);
      }
    } finally {
      freeAll(ps, opt);
    }
  }, 120_000);

  it('cpu: 1,000 parameters, more than one descriptor area: every one updated as the loop updates it', async () => {
    const sizes = Array.from({ length: 1000 }, (_, i) => [(i % 5) + 1]);
    const a = params('cpu', sizes), b = params('cpu', sizes);
    const fused = new optim.SGD(a, { lr: 0.1, momentum: 0.5 }), loop = new optim.SGD(b, { lr: 0.1, momentum: 0.5, foreach: false });
    for (let s = 0; s < 2; s++) {
      setGrads(a, s);
      setGrads(b, s);
      fused.step();
      loop.step();
    }
    expectClose(await flat(a), await flat(b), 1e-6, 'parameters');
    freeAll(a, fused);
    freeAll(b, loop);
  }, 60_000);

  it('a non-contiguous or float16 parameter takes the composed step beside the fused ones; fused: true names it', async () => {
    for (const d of devices) {
      const make = () => {
        torch.manualSeed(3);
        const base = torch.randn([5, 4], { device: d });
        const view = base.t(), t = view.detach().requiresGrad_(); // a non-contiguous leaf
        [view, base].forEach((x) => x.dispose());
        return [torch.randn([6], { device: d }).requiresGrad_(), t, torch.randn([3], { device: d, dtype: 'float16' }).requiresGrad_()];
      };
      const a = make(), b = make();
      const fused = new optim.Adam(a, { lr: 0.1 }), loop = new optim.Adam(b, { lr: 0.1, foreach: false });
      for (let s = 0; s < 3; s++) {
        setGrads(a, s);
        setGrads(b, s);
        for (const p of [...a, ...b]) if (p.dtype === 'float16') {
          const g = p.grad!;
          p.grad = g.to('float16');
          g.dispose();
        }
        fused.step();
        loop.step();
      }
      expect(a[1].isContiguous()).toBe(false);
      expectClose(await flat(a), await flat(b), 1e-6, `${d} parameters`);
      const strict = new optim.Adam([a[0], a[1]], { lr: 0.1, fused: true });
      expect(() => strict.step()).toThrow(`Adam(fused=True): the fused step takes float32, contiguous parameters, gradients and state on one device, outside graph capture; got a non-contiguous parameter or gradient (parameter of shape [4, 5] on ${d})`);
      const half = new optim.SGD([a[2]], { lr: 0.1, fused: true });
      expect(() => half.step()).toThrow(`SGD(fused=True): the fused step takes float32, contiguous parameters, gradients and state on one device, outside graph capture; got a float16 parameter (parameter of shape [3] on ${d})`);
      freeAll(a, fused);
      freeAll(b, loop);
    }
  });

  it('PyTorch\'s option checks: fused and foreach together, an unknown keyword, maximize positional', () => {
    const p = torch.zeros([2]).requiresGrad_();
    expect(() => new optim.AdamW([p], { fused: true, foreach: true })).toThrow('`fused` and `foreach` cannot be `True` together.');
    expect(() => new optim.SGD([p], { lr: 0.1, fused: true, foreach: true })).toThrow('`fused` and `foreach` cannot be `True` together.');
    expect(() => new optim.Adam([p], { differentiable: true } as object)).toThrow("Adam() got an unexpected keyword argument 'differentiable'");
    // PyTorch's SGD takes maximize, foreach and fused by keyword only
    expect(() => new (optim.SGD as any)([p], 0.1, 0, 0, 0, false, true)).toThrow(/SGD\(\) takes from 1 to 6 positional arguments but 7 were given/);
    expect(new optim.SGD([p], 0.1).paramGroups[0]).toMatchObject({ foreach: null, fused: null, maximize: false });
    expect(new optim.Adam([p]).stateDict().param_groups[0]).toMatchObject({ foreach: null, fused: null, maximize: false, capturable: false });
    p.dispose();
  });
});

describe('in place, as PyTorch', () => {
  it.each([['fused', {}], ['per-parameter', { foreach: false }]])('%s: an eager step between replays of a captured forward and backward is seen by the next replay (SGD with momentum, AdamW)', async (_w, way) => {
    for (const d of devices) {
      const batch = batchOn(d);
      for (const make of [(p: Iterable<torch.Tensor>) => new optim.SGD(p, { lr: 0.1, momentum: 0.9, ...way }), (p: Iterable<torch.Tensor>) => new optim.AdamW(p, { lr: 0.01, ...way })]) {
        // the eager reference: forward, backward, step, 4 times
        const a = mlp(d), oa = make(a.parameters());
        const want: number[] = [];
        for (let i = 0; i < 4; i++) {
          oa.zeroGrad();
          const l = batch.loss(a);
          l.backward();
          oa.step();
          want.push((await l.item()) as number);
          l.dispose();
        }
        // the same with forward and backward captured once, replayed, and the step eager
        const b = mlp(d), ob = make(b.parameters());
        const storages = [...b.parameters()].map((p) => p.storage);
        const g = newGraph(d);
        let loss: torch.Tensor | null = null;
        await capture(d, g, () => {
          loss = batch.loss(b);
          loss.backward();
        });
        const got: number[] = [];
        for (let i = 0; i < 4; i++) {
          g.replay();
          got.push((await loss!.item()) as number);
          ob.step();
        }
        expectClose(got, want, 1e-5, `${d} ${ob.constructor.name} losses`);
        // the parameters kept their storages (the graph's reads)
        expect([...b.parameters()].every((p, i) => p.storage === storages[i])).toBe(true);
        g.reset();
        loss!.dispose();
        free(a, oa);
        free(b, ob);
      }
      batch.dispose();
    }
  });
});
