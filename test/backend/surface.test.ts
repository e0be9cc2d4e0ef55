/**
 * The everyday surface (issue 31): every case of test/fixtures/goldens-surface.json (made by
 * PyTorch, see make_goldens_surface.py), forward and backward, on every device, including the
 * ops whose size is device data (awaited here); PyTorch's refusals, whose message webtorch's must
 * contain; then what goldens cannot show: in-place ops on a leaf that requires grad, the version
 * counter, method and function forms agreeing, keywords checked, `allclose`'s boolean.
 * After each test the allocated bytes and live storages of every device are back where they were.
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck, testDevices } from '../devices.js';
import { build, check, goldenTests, loadGoldens, run, T, type Case, type Runner, type TensorJson, pieces } from '../golden.js';

const goldens = loadGoldens('goldens-surface.json');
const devices = await testDevices();
type Opt = torch.Tensor | undefined;

/** A clone of x, written in place by `f` (the in-place goldens run on a clone, as in PyTorch's). */
function onClone(x: unknown, f: (c: torch.Tensor) => torch.Tensor): torch.Tensor {
  return f(T(x).clone());
}

const RUNNERS: Record<string, Runner> = {
  addmm: ([i, a, b], kw) => torch.addmm(T(i), T(a), T(b), { beta: kw.beta, alpha: kw.alpha }),
  baddbmm: ([i, a, b], kw) => torch.baddbmm(T(i), T(a), T(b), { beta: kw.beta, alpha: kw.alpha }),
  addmv: ([i, a, b], kw) => torch.addmv(T(i), T(a), T(b), { beta: kw.beta, alpha: kw.alpha }),
  diag: ([x], kw) => torch.diag(T(x), { diagonal: kw.diagonal }),
  diagonal: ([x], kw) => torch.diagonal(T(x), { offset: kw.offset, dim1: kw.dim1, dim2: kw.dim2 }),
  einsum: (args, kw) => torch.einsum(kw.eq, ...(args as torch.Tensor[])),
  transpose: ([x], kw) => torch.transpose(T(x), kw.dim0, kw.dim1),
  permute: ([x], kw) => torch.permute(T(x), kw.dims),
  reshape: ([x], kw) => torch.reshape(T(x), kw.shape),
  squeeze: ([x], kw) => torch.squeeze(T(x), { dim: kw.dim }),
  unsqueeze: ([x], kw) => torch.unsqueeze(T(x), kw.dim),
  flatten: ([x], kw) => torch.flatten(T(x), { startDim: kw.start_dim, endDim: kw.end_dim }),
  narrow: ([x], kw) => torch.narrow(T(x), kw.dim, kw.start, kw.length),
  unbind: ([x], kw) => pieces(torch.unbind(T(x), kw.dim)),
  meshgrid: (args, kw) => pieces(torch.meshgrid(...(args as torch.Tensor[]), { indexing: kw.indexing })),
  argsort: ([x], kw) => torch.argsort(T(x), { dim: kw.dim, descending: kw.descending, stable: kw.stable }),
  amax: ([x], kw) => torch.amax(T(x), { dim: kw.dim, keepdim: kw.keepdim }),
  amin: ([x], kw) => torch.amin(T(x), { dim: kw.dim, keepdim: kw.keepdim }),
  repeat_interleave: ([x], kw) => torch.repeatInterleave(T(x), kw.repeats as number, { dim: kw.dim }),
  isclose: ([a, b], kw) => torch.isclose(T(a), T(b), { rtol: kw.rtol, atol: kw.atol, equalNan: kw.equal_nan }),
  addcmul: ([x, a, b], kw) => torch.addcmul(T(x), T(a), T(b), { value: kw.value }),
  addcdiv: ([x, a, b], kw) => torch.addcdiv(T(x), T(a), T(b), { value: kw.value }),
  index_add: ([x, i, s], kw) => torch.indexAdd(T(x), kw.dim, T(i), T(s), { alpha: kw.alpha }),
  masked_fill_: ([x, m]) => onClone(x, (c) => c.maskedFill_(T(m), -1.5)),
  scatter_: ([x, i, s]) => onClone(x, (c) => c.scatter_(1, T(i), T(s))),
  index_add_: ([x, i, s]) => onClone(x, (c) => c.indexAdd_(0, T(i), T(s), { alpha: -1 })),
  addcmul_: ([x, a, b]) => onClone(x, (c) => c.addcmul_(T(a), T(b), { value: 0.5 })),
  addcdiv_: ([x, a, b]) => onClone(x, (c) => c.addcdiv_(T(a), T(b), { value: -2 })),
  lerp_: ([x, e]) => onClone(x, (c) => c.lerp_(T(e), 0.25)),
  adadelta: ([p, ...grads], kw) => {
    const param = T(p).clone().requiresGrad_();
    const opt = new torch.optim.Adadelta([param], { lr: kw.lr, rho: kw.rho, eps: kw.eps, weightDecay: kw.weight_decay, maximize: kw.maximize });
    for (const g of grads) {
      param.grad = T(g).clone();
      opt.step();
      param.grad.dispose();
    }
    param.grad = null;
    for (const st of opt.state.values()) for (const v of Object.values(st)) if (v instanceof torch.Tensor) v.dispose();
    return param;
  },
  swapaxes: ([x], kw) => torch.swapaxes(T(x), kw.axis0, kw.axis1),
  swapdims: ([x], kw) => torch.swapdims(T(x), { dim0: kw.dim0, dim1: kw.dim1 }),
};

/** The ops whose result's size is device data: each returns a Promise. */
type AsyncRunner = (args: (torch.Tensor | number)[], kw: Record<string, any>) => Promise<torch.Tensor>;
const ASYNC: Record<string, AsyncRunner> = {
  unique: async ([x], _kw) => T(await torch.unique(T(x))),
  bincount: async ([x, w]) => torch.bincount(T(x), w as Opt),
  repeat_interleave_tensor: async ([x, r]) => torch.repeatInterleave(T(x), T(r), { dim: 0 }),
};
/** The unique cases by id (their PyTorch side differs by the flags asked for). */
const UNIQUE: Record<string, AsyncRunner> = {
  'unique/inverse': async ([x]) => {
    const [out, inverse] = (await torch.unique(T(x), { returnInverse: true })) as torch.Tensor[];
    const flat = inverse.reshape([-1]), zeros = torch.zeros([flat.numel()], { dtype: 'int64', device: flat.device });
    const r = torch.stack([flat, zeros]);
    [out, inverse, flat, zeros].forEach((t) => t.dispose());
    return r;
  },
  'unique/counts': async ([x]) => {
    const [out, counts] = (await torch.unique(T(x), { returnCounts: true })) as torch.Tensor[];
    out.dispose();
    return counts;
  },
  'unique/dim0': async ([x]) => T(await torch.unique(T(x), { dim: 0 })),
  'unique/dim1-float': async ([x]) => T(await torch.unique(T(x), { dim: 1 })),
  'unique/dim0-inverse': async ([x]) => {
    const [out, inverse] = (await torch.unique(T(x), { dim: 0, returnInverse: true })) as torch.Tensor[];
    out.dispose();
    return inverse;
  },
  'unique/dim0-counts': async ([x]) => {
    const [out, counts] = (await torch.unique(T(x), false, false, true, 0)) as torch.Tensor[];
    out.dispose();
    return counts;
  },
  'bincount/minlength': async ([x]) => torch.bincount(T(x), { minlength: 10 }),
};
const asyncRunner = (c: Case): AsyncRunner => UNIQUE[c.id] ?? ASYNC[c.op];

/** An awaited case: output (and gradients, when the case has them) checked, or PyTorch's refusal. */
async function runAsyncCase(c: Case, device: string): Promise<void> {
  const owned: torch.Tensor[] = [];
  const leaves: (torch.Tensor | null)[] = [];
  const args = c.args.map((a, i) => {
    const v = build(a, device, owned);
    if (!c.grads?.[i] || !(v instanceof torch.Tensor)) return (leaves.push(null), v);
    const leaf = v.detach().requiresGrad_();
    owned.push(leaf);
    leaves.push(leaf);
    return leaf;
  });
  try {
    if (c.error !== undefined) {
      await expect(asyncRunner(c)(args, c.kwargs)).rejects.toThrow(c.error);
      return;
    }
    const out = await asyncRunner(c)(args, c.kwargs);
    owned.push(out);
    await check(out, c.out as TensorJson, c.op, c.id);
    if (c.grads && c.gradOut) {
      out.backward(build(c.gradOut, device, owned) as torch.Tensor);
      for (let i = 0; i < leaves.length; i++) {
        if (!c.grads[i] || !leaves[i]) continue;
        owned.push(leaves[i]!.grad!);
        await check(leaves[i]!.grad!, c.grads[i]!, `${c.op}:grad`, `${c.id} grad[${i}]`);
      }
    }
  } finally {
    owned.forEach((t) => t.dispose());
  }
}

const isAsync = (c: Case) => !!asyncRunner(c);
const syncCases = goldens.cases.filter((c) => !isAsync(c)), asyncCases = goldens.cases.filter(isAsync);

leakCheck(() => devices);
afterAll(async () => {
  await torch.shutdown();
});

describe.each(devices)(`the surface on %s (goldens from PyTorch ${goldens.torch})`, (device) => {
  goldenTests(syncCases, device, RUNNERS);
  it.each(asyncCases.map((c) => [c.id, c] as const))('%s (awaited)', async (_id, c) => {
    await runAsyncCase(c, device);
  });
});

describe('PyTorch\'s wording', () => {
  it.each(syncCases.filter((c) => c.error !== undefined).map((c) => [c.id, c] as const))('%s', async (_id, c) => {
    const owned: torch.Tensor[] = [];
    const args = c.args.map((a) => build(a, 'cpu', owned));
    try {
      expect(() => {
        const out = run(c, args, RUNNERS);
        owned.push(...(out instanceof torch.Tensor ? [out] : [out.values, out.indices]));
      }).toThrow(c.error);
    } finally {
      owned.forEach((t) => t.dispose());
    }
  });
});

describe('the surface goldens', () => {
  it('cover every runner, with a backward case for each differentiable op', () => {
    for (const op of [...Object.keys(RUNNERS), ...Object.keys(ASYNC), 'mm', 'bmm', 'mv', 'dot', 'outer', 'lerp', 'isinf', 'isfinite', 'cosh', 'sinh']) {
      const cases = goldens.cases.filter((c) => c.op === op && !c.error);
      expect(cases.length, op).toBeGreaterThan(0);
      const grads = !['argsort', 'unique', 'bincount', 'isclose', 'isinf', 'isfinite', 'adadelta'].includes(op);
      if (grads) expect(cases.some((c) => c.grads), `${op} has a backward case`).toBe(true);
    }
  });
});

describe.each(devices)('in place, methods and keywords on %s', (device) => {
  const on = { device };
  it('refuses an in-place write into a leaf that requires grad, with PyTorch\'s message', () => {
    const x = torch.ones([3], { ...on, requiresGrad: true });
    const m = torch.tensor([true, false, true], on), i = torch.tensor([0, 2], on), s = torch.ones([2], on), o = torch.ones([3], on);
    const writes: [string, () => unknown][] = [
      ['maskedFill_', () => x.maskedFill_(m, 0)], ['scatter_', () => x.scatter_(0, i, s)], ['indexAdd_', () => x.indexAdd_(0, i, s)],
      ['addcmul_', () => x.addcmul_(o, o)], ['addcdiv_', () => x.addcdiv_(o, o)], ['lerp_', () => x.lerp_(o, 0.5)],
    ];
    for (const [name, write] of writes) expect(write, name).toThrow('a leaf Variable that requires grad is being used in an in-place operation.');
    // Under noGrad the same write is allowed, and moves the version counter.
    const before = x._version;
    torch.noGrad(() => x.lerp_(o, 0.5));
    expect(x._version).toBe(before + 1);
    [x, m, i, s, o].forEach((t) => t.dispose());
  });

  it('gives the same numbers through the methods as through the functions', async () => {
    const made: torch.Tensor[] = [];
    const keep = <X extends torch.Tensor | torch.Tensor[]>(x: X): X => (made.push(...(Array.isArray(x) ? x : [x])), x);
    const a = keep(torch.randn([3, 4], on)), b = keep(torch.randn([4, 2], on)), v = keep(torch.randn([4], on));
    const ba = keep(torch.randn([2, 3, 4], on)), bb = keep(torch.randn([2, 4, 2], on)), na = keep(a.neg());
    const pairs: [torch.Tensor, torch.Tensor][] = [
      [a.mm(b), torch.mm(a, b)], [a.mv(v), torch.mv(a, v)], [v.dot(v), torch.dot(v, v)], [v.outer(v), torch.outer(v, v)],
      [ba.bmm(bb), torch.bmm(ba, bb)], [a.amax(1), torch.amax(a, 1)], [a.amin(), torch.amin(a)], [a.argsort(0, true), torch.argsort(a, 0, true)],
      [a.diag(), torch.diag(a)], [a.diagonal(1), torch.diagonal(a, 1)], [a.isinf(), torch.isinf(a)], [a.isfinite(), torch.isfinite(a)],
      [a.lerp(na, 0.5), torch.lerp(a, na, 0.5)], [a.addcmul(a, a), torch.addcmul(a, a, a)], [a.repeatInterleave(2), torch.repeatInterleave(a, 2)],
      [torch.einsum('ij,jk->ik', [a, b]), torch.matmul(a, b)], [torch.einsum('bij,bjk->bik', ba, bb), torch.matmul(ba, bb)],
      // implicit output: the labels used once (i, k), so b is summed too
      [torch.einsum('bij,bjk', ba, bb), keep(torch.matmul(ba, bb)).sum(0)],
    ];
    pairs.forEach(keep);
    try {
      for (const [m, f] of pairs) {
        expect(m.shape).toEqual(f.shape);
        const [mv, fv] = [await m.values(), await f.values()];
        // the same kernels give the same bits; einsum's sum over b adds in another order, hence the tolerance
        mv.forEach((x, i) => expect(typeof x === 'number' ? Math.abs(x - (fv[i] as number)) <= 1e-5 * (1 + Math.abs(x)) : x === fv[i], `${i}: ${x} vs ${fv[i]}`).toBe(true));
      }
    } catch (e) {
      made.forEach((t) => t.dispose());
      throw e;
    }
    expect(keep(a.unbind(1)).length).toBe(4);
    expect(await torch.allclose(a, a)).toBe(true);
    const shifted = keep(a.add(1e-3));
    expect(await a.allclose(shifted)).toBe(false);
    expect(await a.allclose(shifted, { atol: 1e-2 })).toBe(true);
    const close = keep(torch.isclose(a, shifted, 0, 1e-2)), every = keep(close.all());
    expect(await every.item()).toBe(true);
    made.forEach((t) => t.dispose());
  });

  it('refuses an unknown keyword or a stray argument as Python does', () => {
    const a = torch.ones([2, 2], on);
    expect(() => torch.addmm(a, a, a, { betta: 1 } as never)).toThrow("addmm() got an unexpected keyword argument 'betta'");
    expect(() => torch.argsort(a, { dims: 0 } as never)).toThrow("argsort() got an unexpected keyword argument 'dims'");
    expect(() => (torch.mm as (...x: unknown[]) => unknown)(a, a, a)).toThrow('mm() takes 2 positional arguments but 3 were given');
    const flat = a.flatten();
    expect(() => torch.meshgrid(flat, { indexing: 'ji' as 'ij' })).toThrow('torch.meshgrid: indexing must be one of "xy" or "ij", but received: ji');
    [a, flat].forEach((t) => t.dispose());
  });
});
