/**
 * flip and advanced indexing on every device: each case of test/fixtures/goldens-advanced.json
 * (made by PyTorch, see make_goldens_advanced.py), forward and backward, then the errors and
 * the layouts the goldens cannot express. Integer-tensor indices are a gather (`x.index`); a
 * bool mask's result size is device data, so its forms (`indexAsync`, `nonzero`,
 * `maskedSelect`) return Promises and have their own runner here. An out-of-range index fails
 * the next sync point with PyTorch's message, and the device keeps working.
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck, testDevices } from '../devices.js';
import { build, check, loadGoldens, num, runCase, T, type Case, type Runner, type TensorJson } from '../golden.js';

const goldens = loadGoldens('goldens-advanced.json');
const devices = await testDevices();
leakCheck(() => devices);

type Arg = torch.Tensor | number;
/** A golden spec entry ({t: k} is the k-th index tensor) as an `index` entry. */
const entries = (spec: unknown[], ts: Arg[]): torch.Index[] =>
  spec.map((s) => (s !== null && typeof s === 'object' ? T(ts[(s as { t: number }).t]) : (s as torch.Index)));

function put([x, ...rest]: Arg[], kw: Record<string, any>): torch.Tensor {
  const values = rest.pop()!;
  // A leaf that requires grad cannot be written in place (PyTorch's rule): write a copy, as the reference does.
  const dst = T(x).requiresGrad ? T(x).clone() : T(x);
  return dst.indexPut_(rest.map(T), values, kw.accumulate);
}

const RUNNERS: Record<string, Runner> = {
  flip: ([x], kw) => torch.flip(T(x), kw.dims),
  index: ([x, ...ts], kw) => T(x).index(...entries(kw.spec, ts)),
  index_put: put,
};

/** The sync points: their results are Promises. */
const ASYNC: Record<string, (args: Arg[], kw: Record<string, any>) => Promise<torch.Tensor>> = {
  index_async: ([x, ...ts], kw) => T(x).indexAsync(...entries(kw.spec, ts)),
  nonzero: ([x]) => torch.nonzero(T(x)),
  masked_select: ([x, m]) => torch.maskedSelect(T(x), T(m)),
};

/** `runCase` for an async op: builds the inputs (leaves where the case has gradients), awaits the result, checks it and the gradients. */
async function runAsyncCase(c: Case, device: string): Promise<void> {
  const owned: torch.Tensor[] = [];
  const leaves = c.args.map((a, i) => {
    if (!c.grads?.[i] || 'scalar' in a) return null;
    const flat = torch.tensor(a.data.map(num) as number[], { dtype: a.dtype as torch.DType, device });
    const shaped = flat.reshape(a.shape);
    const leaf = shaped.detach().requiresGrad_();
    owned.push(flat, shaped, leaf);
    return leaf;
  });
  const args = c.args.map((a, i) => {
    const leaf = leaves[i];
    if (!leaf) return build(a, device, owned);
    const p = (a as TensorJson).permute ? leaf.permute((a as TensorJson).permute!) : leaf;
    if (p !== leaf) owned.push(p);
    return p;
  });
  const out = await ASYNC[c.op](args, c.kwargs);
  try {
    await check(out, c.out as TensorJson, c.op, c.id);
    if (c.grads && c.gradOut) {
      out.backward(build(c.gradOut, device, owned) as torch.Tensor);
      for (let i = 0; i < leaves.length; i++) {
        const want = c.grads[i], leaf = leaves[i];
        if (!want || !leaf) continue;
        const g = leaf.grad!;
        const shown = (c.args[i] as TensorJson).permute ? g.permute((c.args[i] as TensorJson).permute!) : g;
        await check(shown, want, `${c.op}:grad`, `${c.id} grad[${i}]`);
        if (shown !== g) shown.dispose();
        g.dispose();
      }
    }
  } finally {
    out.dispose();
    owned.forEach((t) => t.dispose());
  }
}

describe.each(devices)(`flip and advanced indexing on %s (goldens from PyTorch ${goldens.torch})`, (device) => {
  it.each(goldens.cases.map((c) => [c.id, c] as const))('%s', async (_id, c) => {
    if (ASYNC[c.op]) await runAsyncCase(c, device);
    else await runCase(c, device, RUNNERS);
  });
});

describe('the advanced goldens', () => {
  it('cover every op, every dtype and gradients', () => {
    const ops = new Set(goldens.cases.map((c) => c.op));
    expect([...Object.keys(RUNNERS), ...Object.keys(ASYNC)].filter((op) => !ops.has(op))).toEqual([]);
    for (const op of ['flip', 'index', 'index_async', 'nonzero', 'masked_select', 'index_put']) {
      const dtypes = new Set(goldens.cases.filter((c) => c.op === op).map((c) => (c.args[0] as TensorJson).dtype));
      expect([...dtypes].sort(), op).toEqual(['bfloat16', 'bool', 'float16', 'float32', 'int32', 'int64', 'uint8']);
    }
    for (const op of ['flip', 'index', 'index_async', 'masked_select', 'index_put']) {
      expect(goldens.cases.some((c) => c.op === op && c.grads), `${op} has gradient goldens`).toBe(true);
    }
  });
});

/** Runs `fn` on fresh tensors and disposes them, whether it throws or not. */
const scoped = <R>(fn: () => R): R => torch.tidy(fn);

describe.each(devices)('advanced indexing errors and layouts on %s', (device) => {
  const t = (data: torch.NestedArray, dtype?: torch.DType) => torch.tensor(data, { device, dtype });
  const x = () => t([[0, 1, 2], [3, 4, 5]], 'float32');

  it.each([
    ['a float index', () => x().index(t([0.5])), 'tensors used as indices must be long, int, byte or bool tensors'],
    ['a float index among others', () => x().index(':', t([1], 'float16')), 'tensors used as indices must be long, int, byte or bool tensors'],
    ['a bool mask to index', () => x().index(t([true, false])), 'use `await x.indexAsync(...)`'],
    ['a uint8 mask to index', () => x().index(':', t([1, 0, 1], 'uint8')), 'depends on its values'],
    ['indices that do not broadcast', () => x().index(t([0, 1]), t([0, 1, 2])), 'shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]'],
    ['too many indices', () => x().index(t([0]), 0, 1), 'too many indices for tensor of dimension 2'],
    ['a JS boolean', () => x().index(true as unknown as torch.Index), 'index: unsupported entry true'],
    ['two ellipses', () => x().index('...', t([0]), '...'), "an index can only have a single ellipsis ('...')"],
    ['flip twice', () => torch.flip(x(), [0, -2]), 'dim 0 appears multiple times in the list of dims'],
    ['flip dim', () => x().flip(2), 'Dimension out of range (expected to be in range of [-2, 1], but got 2)'],
    ['index_put dtype', () => x().indexPut_([t([0])], t([1, 2, 3])), 'Index put requires the source and destination dtypes match, got float32 for the destination and int64 for the source.'],
    ['index_put shape', () => x().indexPut_([t([0])], t([1, 2], 'float32')), 'shape mismatch: value tensor of shape [2] cannot be broadcast to indexing result of shape [1, 3]'],
    ['index_put leaf', () => x().requiresGrad_().indexPut_([t([0])], 1), 'a leaf Variable that requires grad is being used in an in-place operation.'],
    ['index_put mask values', () => x().indexPut_([t([true, false])], t([[1, 2, 3], [4, 5, 6]], 'float32')), 'the number of masked elements is device data'],
    ['index_put mask shape', () => x().indexPut_([t([true, false, true])], 1), 'The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [2, 3] at index 0'],
    ['index_put mixed mask', () => x().indexPut_([t([true, false]), t([0])], 1), 'a bool mask is supported alone'],
  ])('%s is refused at the call', (_what, fn, message) => {
    expect(() => scoped(fn)).toThrow(message);
  });

  it.each([
    ['a mask of the wrong shape', () => [x(), t([true, false])], (a, m) => a.indexAsync(':', m),
      'The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [2, 3] at index 1'],
    ['a mask over too many dims', () => [x(), t([[[true]]])], (a, m) => a.indexAsync(m), 'too many indices for tensor of dimension 2'],
    ['a float mask to masked_select', () => [x()], (a) => torch.maskedSelect(a, a), 'masked_select: expected BoolTensor for mask'],
    ['masks that do not broadcast', () => [x(), t([true, false])], (a, m) => torch.maskedSelect(a, m),
      'The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1'],
  ] as [string, () => torch.Tensor[], (...ts: torch.Tensor[]) => Promise<torch.Tensor>, string][])('%s is refused', async (_what, inputs, call, message) => {
    const ins = inputs();
    try {
      await expect(call(...ins)).rejects.toThrow(message);
    } finally {
      ins.forEach((i) => i.dispose());
    }
  });

  /** Launches `build`, expects its result's read to fail with `message`, then checks the device still works. */
  async function failsAtSync(build: () => torch.Tensor, message: string): Promise<void> {
    const out = scoped(build);
    try {
      await expect(out.data()).rejects.toThrow(message);
    } finally {
      out.dispose();
    }
    const ok = scoped(() => x().index(t([1, 0])).sum());
    expect(await ok.item(), 'the next sync point after the error').toBe(15);
    ok.dispose();
  }

  it.each([
    ['one index', () => x().index(t([0, 5])), 'index 5 is out of bounds for dimension 0 with size 2'],
    ['one negative index', () => x().index(':', t([-4], 'int32')), 'index -4 is out of bounds for dimension 0 with size 3'],
    ['the second of two', () => x().index(t([0, 1]), t([1, 3])), 'index 3 is out of bounds for dimension 1 with size 3'],
    ['the first of two, negative', () => x().index(t([-3]), t([0])), 'index -3 is out of bounds for dimension 0 with size 2'],
    ['index_put', () => x().indexPut_([t([2])], 1), 'index 2 is out of bounds for dimension 0 with size 2'],
    ['index_put, the second of two', () => x().indexPut_([t([0]), t([7])], 1, true), 'index 7 is out of bounds for dimension 1 with size 3'],
  ])('an out-of-range index (%s) fails the next sync point', async (_what, build, message) => {
    await failsAtSync(build, message);
  });

  it('reads expanded, sliced and transposed inputs and indices without copies', async () => {
    const out = scoped(() => {
      const base = t([[5, 1, 4, 9], [2, 8, 0, 7], [6, 3, 3, 1]], 'float32');
      const e = t([1, 2, 3], 'int32').unsqueeze(0).expand(2, 3);
      return {
        fe: e.flip(0, 1),
        fs: base.index('::2', '1:').flip(-1),
        ft: base.T.flip(1),
        ie: e.index(t([1, 0, 1]), t([2, 2, 0])),
        is: base.index('1:', '::2').index(t([1, 0]), t([1])),
        ix: base.index(':', t([[0, 3]]).expand(2, 2).T),
        iv: base.T.index(t([3, 0]), t([2, 1])),
        put: base.index('::2').contiguous().indexPut_([t([1]), t([2, 3])], t([-1, -2], 'float32')),
      };
    });
    expect(await out.fe.tolist()).toEqual([[3, 2, 1], [3, 2, 1]]);
    expect(await out.fs.tolist()).toEqual([[9, 4, 1], [1, 3, 3]]);
    expect(await out.ft.tolist()).toEqual([[6, 2, 5], [3, 8, 1], [3, 0, 4], [1, 7, 9]]);
    expect(await out.ie.tolist()).toEqual([3, 3, 1]);
    expect(await out.is.tolist()).toEqual([3, 0]);
    expect(await out.ix.tolist()).toEqual([[[5, 5], [9, 9]], [[2, 2], [7, 7]], [[6, 6], [1, 1]]]);
    expect(await out.iv.tolist()).toEqual([1, 2]);
    expect(await out.put.tolist()).toEqual([[5, 1, 4, 9], [6, 3, -1, -2]]);
    Object.values(out).forEach((v) => v.dispose());
  });

  it('writes in place through indexPut_, also into a non-contiguous view and with autograd', async () => {
    const a = t([[0, 0, 0], [0, 0, 0]], 'float32');
    const r = scoped(() => a.indexPut_([t([1, 0])], t([3, 4, 5], 'float32')));
    expect(r).toBe(a);
    expect(await a.tolist()).toEqual([[3, 4, 5], [3, 4, 5]]);
    const b = t([[1, 2], [3, 4], [5, 6]], 'int32');
    const bt = b.T;
    scoped(() => bt.indexPut_([t([0]), t([2, 0])], t([0, 9], 'int32'), true));
    expect(await b.tolist()).toEqual([[10, 2], [3, 4], [5, 6]]);
    bt.dispose();
    const w = t([[1, 2, 3], [4, 5, 6]], 'float32').requiresGrad_();
    const v = t([10, 20], 'float32').requiresGrad_();
    const y = scoped(() => {
      const h = w.mul(2);
      h.indexPut_([t([0, 1]), t([2, 0])], v);
      return h;
    });
    expect(await y.tolist()).toEqual([[2, 4, 10], [20, 10, 12]]);
    scoped(() => y.mul(t([[1, 2, 3], [4, 5, 6]], 'float32')).sum().backward());
    expect(await w.grad!.tolist()).toEqual([[2, 4, 0], [0, 10, 12]]);
    expect(await v.grad!.tolist()).toEqual([3, 4]);
    for (const z of [a, b, w, v, y, w.grad!, v.grad!]) z.dispose();
  });

  it('accepts cpu index tensors for a GPU tensor, as PyTorch does', async () => {
    if (device === 'cpu') return;
    const out = scoped(() => x().index(torch.tensor([1, 0]), torch.tensor([2])));
    expect(await out.tolist()).toEqual([5, 2]);
    out.dispose();
    expect(() => scoped(() => torch.zeros([2]).index(t([0])))).toThrow('indices should be either on cpu or on the same device as the indexed tensor (cpu)');
  });

  it('nonzero and indexAsync read one count from the device, as methods', async () => {
    const a = t([[0, 2, 0], [1, 0, 3]], 'float32');
    const nz = await a.nonzero();
    expect(nz.shape).toEqual([3, 2]);
    expect(await nz.tolist()).toEqual([[0, 1], [1, 0], [1, 2]]);
    const m = scoped(() => a.gt(1));
    const sel = await a.maskedSelect(m);
    const ia = await a.indexAsync(m);
    expect(await sel.tolist()).toEqual([2, 3]);
    expect(await ia.tolist()).toEqual([2, 3]);
    const plain = await a.indexAsync(1, '1:');
    expect(await plain.tolist()).toEqual([0, 3]);
    // A mask takes as many dims as it has, also when more entries follow (NumPy, PyTorch 2; torch 1.13 counted one).
    const y = scoped(() => torch.arange(24, undefined, 1, { device }).reshape(2, 3, 4));
    const mask = t([[true, false, true], [false, false, true]]);
    const after = await y.indexAsync(mask, -1);
    expect(await after.tolist()).toEqual([3, 11, 23]);
    for (const z of [a, nz, m, sel, ia, plain, y, mask, after]) z.dispose();
  });
});

afterAll(async () => {
  await torch.shutdown();
});
