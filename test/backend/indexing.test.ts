/**
 * The index family on every device: each case of test/fixtures/goldens-indexing.json (made by
 * PyTorch, see make_goldens_indexing.py), then the errors. Shapes and dtypes are checked at the
 * call with PyTorch's messages; index values live on the device, so an out-of-range index fails
 * the next sync point with a message naming the op, once, and the device keeps working.
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck, testDevices } from '../devices.js';
import { goldenTests, loadGoldens, T, type Runner } from '../golden.js';

const goldens = loadGoldens('goldens-indexing.json');
const devices = await testDevices();
leakCheck(() => devices);

const RUNNERS: Record<string, Runner> = {
  index_select: ([x, i], kw) => torch.indexSelect(T(x), kw.dim, T(i)),
  gather: ([x, i], kw) => torch.gather(T(x), kw.dim, T(i)),
  scatter: ([x, i, s], kw) => torch.scatter(T(x), kw.dim, T(i), s),
  scatter_add: ([x, i, s], kw) => torch.scatterAdd(T(x), kw.dim, T(i), T(s)),
  cumsum: ([x], kw) => torch.cumsum(T(x), kw.dim),
  cumprod: ([x], kw) => torch.cumprod(T(x), kw.dim),
  sort: ([x], kw) => torch.sort(T(x), kw.dim, kw.descending),
  topk: ([x], kw) => torch.topk(T(x), kw.k, kw.dim, kw.largest),
  embedding: ([w, i]) => torch.embedding(T(w), T(i)),
  one_hot: ([i], kw) => torch.oneHot(T(i), kw.num_classes),
  masked_fill: ([x, m, v]) => torch.maskedFill(T(x), T(m), v),
  take: ([x, i]) => torch.take(T(x), T(i)),
};

describe.each(devices)(`index ops on %s (goldens from PyTorch ${goldens.torch})`, (device) => {
  goldenTests(goldens.cases, device, RUNNERS);
});

describe('the index goldens', () => {
  it('cover every op of the family', () => {
    const covered = new Set(goldens.cases.map((c) => c.op));
    expect(Object.keys(RUNNERS).filter((op) => !covered.has(op))).toEqual([]);
  });
});

/** Runs `fn` on fresh tensors and disposes them, whether it throws or not. */
const scoped = <R>(fn: () => R): R => torch.tidy(fn);

describe.each(devices)('index errors on %s', (device) => {
  const t = (data: torch.NestedArray, dtype?: torch.DType) => torch.tensor(data, { device, dtype });
  const x = () => t([[0, 1, 2], [3, 4, 5]], 'float32');

  it.each([
    ['gather', () => torch.gather(x(), 1, t([[0]], 'int32')), 'gather(): Expected dtype int64 for index'],
    ['scatter', () => torch.scatter(x(), 1, t([[0]], 'int32'), 1), 'scatter(): Expected dtype int64 for index'],
    ['scatter_add', () => torch.scatterAdd(x(), 1, t([[0]], 'int32'), x()), 'scatter_add(): Expected dtype int64 for index'],
    ['index_select', () => torch.indexSelect(x(), 0, t([0, 1], 'float32')), 'index_select(): Expected dtype int32 or int64 for index'],
    ['embedding', () => torch.embedding(x(), t([0], 'float32')),
      "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got torch.FloatTensor instead (while checking arguments for embedding)"],
    ['one_hot', () => torch.oneHot(t([0, 1], 'int32'), 3), 'one_hot is only applicable to index tensor.'],
    ['take', () => torch.take(x(), t([0], 'int32')), 'take(): Expected a long tensor for index, but got Int'],
    ['masked_fill', () => torch.maskedFill(x(), t([1, 0, 1], 'uint8'), 2), 'masked_fill_ only supports boolean masks, but got mask with dtype uint8'],
  ])('a wrong index dtype for %s fails at the call', (_op, fn, message) => {
    expect(() => scoped(fn)).toThrow(message);
  });

  it.each([
    ['gather rank', () => torch.gather(x(), 1, t([0])), 'Index tensor must have the same number of dimensions as input tensor'],
    ['gather sizes', () => torch.gather(x(), 1, t([[0], [0], [0]])),
      'Size does not match at dimension 0 expected index [3, 1] to be smaller than self [2, 3] apart from dimension 1'],
    ['scatter src dtype', () => torch.scatter(x(), 1, t([[0]]), t([[1]])), 'scatter(): Expected self.dtype to be equal to src.dtype'],
    ['scatter sizes', () => torch.scatter(x(), 1, t([[0, 1]]), torch.ones([1, 1], { device })),
      'Expected index [1, 2] to be smaller than self [2, 3] apart from dimension 1 and to be smaller size than src [1, 1]'],
    ['scatter_add rank', () => torch.scatterAdd(x(), 1, t([0]), x()), 'Index tensor must have the same number of dimensions as self tensor'],
    ['index_select vector', () => torch.indexSelect(x(), 0, t([[0]])), 'index_select(): Index is supposed to be a vector'],
    ['index_select dim', () => torch.indexSelect(x(), 2, t([0])), 'Dimension out of range (expected to be in range of [-2, 1], but got 2)'],
    ['sort dim', () => torch.sort(x(), 2), 'Dimension out of range (expected to be in range of [-2, 1], but got 2)'],
    ['cumsum dim', () => torch.cumsum(x(), -3), 'Dimension out of range (expected to be in range of [-2, 1], but got -3)'],
    ['topk k', () => torch.topk(x(), 4), 'selected index k out of range'],
    ['topk bool', () => torch.topk(t([true, false]), 1), `"topk" not implemented for 'Bool'`],
    ['embedding weight', () => torch.embedding(t([1, 2], 'float32'), t([0])), "'weight' must be 2-D"],
    ['masked_fill value', () => torch.maskedFill(x(), t([true, false, true]), t([1, 2], 'float32')),
      'masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s).'],
    ['masked_fill shapes', () => torch.maskedFill(x(), t([true, false]), 1), 'The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1'],
    ['one_hot empty', () => torch.oneHot(torch.zeros([0], { device, dtype: 'int64' }), 0), 'Can not infer total number of classes from empty tensor.'],
    ['take empty', () => torch.take(torch.zeros([0], { device }), t([0])), 'take(): tried to take from an empty tensor'],
  ])('%s is checked at the call', (_what, fn, message) => {
    expect(() => scoped(fn)).toThrow(message);
  });

  /** Launches `build`, expects its result's read to fail with `message`, then checks the device still works. */
  async function failsAtSync(build: () => torch.Tensor | torch.ValuesIndices, message: string): Promise<void> {
    const out = scoped(build);
    const r = out instanceof torch.Tensor ? out : out.values;
    try {
      await expect(r.data()).rejects.toThrow(message);
    } finally {
      if (out instanceof torch.Tensor) out.dispose();
      else {
        out.values.dispose();
        out.indices.dispose();
      }
    }
    const ok = scoped(() => torch.indexSelect(x(), 1, t([2, 0])).sum());
    expect(await ok.item(), 'the next sync point after the error').toBe(10);
    ok.dispose();
  }

  it.each([
    ['index_select', () => torch.indexSelect(x(), 1, t([0, 7])), 'index_select(): index 7 is out of range for dimension 1 with size 3 (index out of range in self)'],
    ['index_select negative', () => torch.indexSelect(x(), 0, t([-1], 'int32')), 'index_select(): index -1 is out of range for dimension 0 with size 2'],
    ['gather', () => torch.gather(x(), 1, t([[0, 5]])), 'gather(): index 5 is out of bounds for dimension 1 with size 3'],
    ['gather negative', () => torch.gather(x(), 0, t([[-1]])), 'gather(): index -1 is out of bounds for dimension 0 with size 2'],
    ['gather packed', () => torch.gather(t([[1, 2, 3]], 'uint8'), 1, t([[0, 1, 3, 2, 1]])), 'gather(): index 3 is out of bounds for dimension 1 with size 3'],
    ['scatter', () => torch.scatter(x(), 1, t([[3]]), 1), 'scatter(): index 3 is out of bounds for dimension 1 with size 3'],
    ['scatter packed', () => torch.scatter(t([1, 2], 'float16'), 0, t([-3]), 1), 'scatter(): index -3 is out of bounds for dimension 0 with size 2'],
    ['scatter_add', () => torch.scatterAdd(x(), 0, t([[0, 2, 1]]), x()), 'scatter_add(): index 2 is out of bounds for dimension 0 with size 2'],
    ['embedding', () => torch.embedding(x(), t([[1, 9]])), 'embedding(): index 9 is out of range for a weight of 2 rows'],
    ['one_hot', () => torch.oneHot(t([0, 3, 1]), 3), 'one_hot(): class value 3 is out of range [0, 3)'],
    ['one_hot negative', () => torch.oneHot(t([-1]), 3), 'one_hot(): class value -1 is out of range [0, 3)'],
    ['take', () => torch.take(x(), t([6])), 'take(): out of range: tried to access index 6 on a tensor of 6 elements.'],
    ['take negative', () => torch.take(x(), t([[-7]])), 'take(): out of range: tried to access index -7 on a tensor of 6 elements.'],
  ])('an out-of-range index for %s fails the next sync point, naming the op', async (_op, build, message) => {
    await failsAtSync(build, message);
  });

  it('reports an index error at synchronize() too, then clears it', async () => {
    const out = scoped(() => torch.gather(x(), 1, t([[4]])));
    await expect(torch.gpu.synchronize(device)).rejects.toThrow('gather(): index 4 is out of bounds for dimension 1 with size 3');
    await torch.gpu.synchronize(device);
    out.dispose();
  });

  it('infers one_hot classes from the data (a sync point)', async () => {
    const idx = t([[2, 0], [1, 4]]);
    const out = await torch.oneHot(idx);
    expect(out.shape).toEqual([2, 2, 5]);
    expect(await out.tolist()).toEqual([[[0, 0, 1, 0, 0], [1, 0, 0, 0, 0]], [[0, 1, 0, 0, 0], [0, 0, 0, 0, 1]]]);
    out.dispose();
    const neg = t([-2, -1]);
    await expect(torch.oneHot(neg)).rejects.toThrow('Class values must be non-negative.');
    idx.dispose();
    neg.dispose();
  });

  it('reads expanded and sliced inputs without a copy, as methods', async () => {
    const out = scoped(() => {
      const base = t([[5, 1, 4], [2, 8, 0]], 'float32');
      const idx = t([[2, 0]]).expand([3, 2]);
      const g = base.slice(1, 0, 3).gather(0, t([[1, 0, 1]])).expand([2, 3]).gather(1, idx.slice(0, 0, 2));
      return { g, s: base.T.sort(0, true).indices, c: base.index(':', '::2').cumsum(-1), m: base.maskedFill(base.gt(3), 0) };
    });
    expect(await out.g.tolist()).toEqual([[0, 2], [0, 2]]);
    expect(await out.s.tolist()).toEqual([[0, 1], [2, 0], [1, 2]]);
    expect(await out.c.tolist()).toEqual([[5, 9], [2, 2]]);
    expect(await out.m.tolist()).toEqual([[0, 1, 0], [2, 0, 0]]);
    Object.values(out).forEach((v) => v.dispose());
  });
});

describe('index ops across devices', () => {
  const gpus = () => devices.filter((d) => d !== 'cpu');

  it('reject tensors of two devices', () => {
    if (!gpus().length) return;
    expect(() => scoped(() => torch.gather(torch.zeros([2], { device: gpus()[0] }), 0, torch.tensor([0]))))
      .toThrow(`Expected all tensors to be on the same device, but found at least two devices, ${gpus()[0]} and cpu! (when checking arguments for gather)`);
  });

  it('a copy of a GPU result with a bad index fails on both devices instead of waiting forever', async () => {
    for (const dst of devices.filter((d) => d !== gpus()[0])) {
      const src = gpus()[0];
      if (!src) return;
      const y = scoped(() => torch.indexSelect(torch.ones([3], { device: src }), 0, torch.tensor([5], { device: src })).to(dst));
      const message = 'index_select(): index 5 is out of range for dimension 0 with size 3';
      await expect(y.data(), `read on ${dst}`).rejects.toThrow(`the copy from ${src} failed`);
      await expect(torch.gpu.synchronize(src), `sync of ${src}`).rejects.toThrow(message);
      y.dispose();
    }
  });
});

afterAll(async () => {
  await torch.shutdown();
});
