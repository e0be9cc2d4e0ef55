/**
 * int64 beyond 32 bits on every device: each case of test/fixtures/goldens-int64.json (made by
 * PyTorch, see make_goldens_int64.py) holds values across the 32-bit boundary, near 2^62 and at
 * int64's ends, and the harness compares int64 exactly (as BigInts). Issue 19: int64 is a real
 * 64-bit integer (two words per element in WGSL, i64 in AssemblyScript).
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck, testDevices } from '../devices.js';
import { goldenTests, loadGoldens, RUN, T, type Runner } from '../golden.js';

const goldens = loadGoldens('goldens-int64.json');
const devices = await testDevices();
leakCheck(() => devices);

const RUNNERS: Record<string, Runner> = {
  ...RUN,
  cast: ([x], kw) => T(x).to(kw.dtype),
  index_select: ([x, i], kw) => torch.indexSelect(T(x), kw.dim, T(i)),
  gather: ([x, i], kw) => torch.gather(T(x), kw.dim, T(i)),
  scatter_add: ([x, i, s], kw) => torch.scatterAdd(T(x), kw.dim, T(i), T(s)),
  cumsum: ([x], kw) => torch.cumsum(T(x), kw.dim),
  cumprod: ([x], kw) => torch.cumprod(T(x), kw.dim),
  sort: ([x], kw) => torch.sort(T(x), kw.dim),
  embedding: ([w, i]) => torch.embedding(T(w), T(i)),
  one_hot: ([i], kw) => torch.oneHot(T(i), kw.num_classes),
};

describe.each(devices)(`int64 beyond 32 bits on %s (goldens from PyTorch ${goldens.torch})`, (device) => {
  goldenTests(goldens.cases, device, RUNNERS);
});

describe('the int64 goldens', () => {
  it('hold values beyond 32 bits and near 2^62 for the ops of issue 19', () => {
    const ops = new Set(goldens.cases.map((c) => c.op));
    for (const op of ['add', 'sub', 'mul', 'floor_divide', 'remainder', 'lt', 'eq', 'sum', 'cumsum', 'prod', 'argmax', 'cast', 'index_select', 'gather', 'embedding']) {
      expect(ops.has(op), op).toBe(true);
    }
    const values = goldens.cases.flatMap((c) => c.args.flatMap((a) => ('data' in a ? a.data : [])));
    expect(values.some((v) => typeof v === 'string' && BigInt(v) > 2n ** 61n)).toBe(true);
  });
});
