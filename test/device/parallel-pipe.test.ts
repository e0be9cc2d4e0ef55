/**
 * `nn.parallel.Pipe` (GPipe micro-batches over a model split on gpu:0 and gpu:1): the same
 * outputs and gradients as the plain model-parallel forward for 1, 2, 3 and 8 micro-batches
 * (including chunk counts that do not divide the batch), the same parameters after SGD steps,
 * stage placement, and misuse.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

const { nn, optim } = torch;
logicalGpuSuite(2, 'Pipe tests');

/** The notes' model: sub-network 1 on gpu:0, sub-network 2 on gpu:1. */
function model(): torch.nn.Sequential {
  torch.manualSeed(3);
  const s1 = new nn.Sequential(new nn.Linear(6, 32), new nn.ReLU(), new nn.Linear(32, 32), new nn.ReLU()).to('gpu:0');
  const s2 = new nn.Sequential(new nn.Linear(32, 3)).to('gpu:1');
  return new nn.Sequential(s1, s2);
}
/** The plain model-parallel forward (examples/model-parallel.mjs). */
const plain = (m: torch.nn.Sequential, x: torch.Tensor) => torch.tidy(() => m.at(1)(m.at(0)(x.to('gpu:0')).to('gpu:1')));
const vals = (ts: torch.Tensor[]) => Promise.all(ts.map(async (t) => (await t.values()) as number[]));

function closeTo(a: number[], b: number[], tol: number, what: string): void {
  expect(a.length, what).toBe(b.length);
  const bad = a.findIndex((v, i) => !(Math.abs(v - b[i]) <= tol * (1 + Math.abs(b[i]))));
  expect(bad, `${what}: first mismatch at ${bad}: ${a[bad]} vs ${b[bad]}`).toBe(-1);
}

describe('nn.parallel.Pipe', () => {
  it.each([1, 2, 3, 8])('%i micro-batches: the plain run\'s output and gradients', async (chunks) => {
    torch.manualSeed(9);
    const X = torch.randn([10, 6]), T = torch.randn([10, 3]);
    const loss = (y: torch.Tensor) => torch.tidy(() => y.sub(T.to('gpu:1')).square().mean());
    const m = model();
    const y0 = plain(m, X);
    const l0 = loss(y0);
    l0.backward();
    const g0 = await vals(m.parameters().map((p) => p.grad!));
    const out0 = (await y0.values()) as number[];
    const dropGrads = () => m.parameters().forEach((p) => {
      p.grad?.dispose();
      p.grad = null;
    });
    dropGrads();
    const pipe = new nn.parallel.Pipe(m, { chunks });
    expect(pipe.stages.map((s) => String(s.device))).toEqual(['gpu:0', 'gpu:1']);
    const y1 = pipe(X);
    expect(String(y1.device)).toBe('gpu:1');
    const l1 = loss(y1);
    l1.backward();
    closeTo((await y1.values()) as number[], out0, 1e-6, 'output');
    const g1 = await vals(m.parameters().map((p) => p.grad!));
    g1.forEach((g, i) => closeTo(g, g0[i], 1e-5, `gradient of parameter ${i}`));
    expect(m.parameters().map((p) => String(p.grad!.device))).toEqual(['gpu:0', 'gpu:0', 'gpu:0', 'gpu:0', 'gpu:1', 'gpu:1']);
    dropGrads();
    [X, T, y0, y1, l0, l1, ...m.parameters()].forEach((t) => t.dispose());
  });

  it('trains to the plain run\'s parameters over 10 SGD steps (4 micro-batches)', async () => {
    torch.manualSeed(4);
    const X = torch.randn([16, 6]), T = torch.randn([16, 3]);
    const Tg = T.to('gpu:1');
    const train = async (fwd: (m: torch.nn.Sequential) => torch.Tensor, m: torch.nn.Sequential) => {
      const opt = new optim.SGD(m.parameters(), { lr: 0.1 });
      for (let s = 0; s < 10; s++) {
        opt.zeroGrad();
        const l = torch.tidy(() => fwd(m).sub(Tg).square().mean());
        l.backward();
        opt.step();
        l.dispose();
      }
      const out = await vals(m.parameters());
      opt.zeroGrad();
      m.parameters().forEach((p) => p.dispose());
      return out;
    };
    const a = await train((m) => plain(m, X), model());
    const pm = model(), pipe = new nn.parallel.Pipe(pm, { chunks: 4 });
    const b = await train(() => pipe(X), pm);
    b.forEach((p, i) => closeTo(p, a[i], 1e-5, `parameter ${i}`));
    [X, T, Tg].forEach((t) => t.dispose());
  });

  it('a batch smaller than the chunks makes fewer micro-batches (torch.chunk), with the plain run\'s output', async () => {
    torch.manualSeed(5);
    const X = torch.randn([2, 6]);
    const m = model();
    const y0 = plain(m, X), y1 = new nn.parallel.Pipe(m, { chunks: 4 })(X);
    expect(y1.shape).toEqual([2, 3]);
    closeTo((await y1.values()) as number[], (await y0.values()) as number[], 1e-6, 'output');
    [X, y0, y1, ...m.parameters()].forEach((t) => t.dispose());
  });

  it('misuse: PyTorch\'s messages', () => {
    const m = model();
    expect(() => new nn.parallel.Pipe(m, { chunks: 0 })).toThrow('Pipe: number of chunks must be positive integer, got 0');
    expect(() => new nn.parallel.Pipe(m.at(0) as never, { chunks: 2, micro: 1 } as never)).toThrow(/micro/);
    const lin = new nn.Linear(2, 2);
    expect(() => new nn.parallel.Pipe(lin as never)).toThrow('Pipe: module must be an nn.Sequential');
    lin.parameters().forEach((p) => p.dispose());
    expect(() => new nn.parallel.Pipe(new nn.Sequential(new nn.ReLU(), m.at(0)))).toThrow('the first child must have parameters');
    m.parameters().forEach((p) => p.dispose());
  });
});
