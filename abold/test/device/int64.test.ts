/**
 * int64 is a real 64-bit integer on every device (issue 19: `torch.tensor([2e9, 2e9], {dtype:
 * 'int64'}).sum()` gave -294967296). Results beyond 32 bits are exact; past int64's own range
 * they wrap as PyTorch's do; values int64 cannot represent (a BigInt beyond ±2^63, a float cast
 * of NaN, ±Inf or out of range) raise. `data()` gives a BigInt64Array; `item()`/`tolist()` give
 * numbers and raise on a value a number would round.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const devices = suiteDevices();
const P32 = 2n ** 32n, P40 = 2n ** 40n, P62 = 2n ** 62n, MAX = 2n ** 63n - 1n, MIN = -(2n ** 63n);
const wrap = (v: bigint) => BigInt.asIntN(64, v);
const big = (t: torch.Tensor) => t.data().then((d) => Array.from(d as BigInt64Array));
/** Every `long` tensor of a test, disposed by `done` with the test's other tensors (the leak check follows each test). */
const made: torch.Tensor[] = [];
const long = (v: (number | bigint)[], device: string) => {
  const t = torch.tensor(v.map(BigInt), { dtype: 'int64', device });
  made.push(t);
  return t;
};
const done = (...ts: torch.Tensor[]) => [...ts, ...made.splice(0)].forEach((t) => t.dispose());
/** A BigInt rounded to the nearest float32 (ties to even) in one step, as PyTorch's cast does. */
function f32Of(x: bigint): number {
  const neg = x < 0n, m = neg ? -x : x, bits = m.toString(2).length;
  if (bits <= 24) return Number(x);
  const shift = BigInt(bits - 24), half = 1n << (shift - 1n);
  let q = m >> shift;
  const rem = m - (q << shift);
  if (rem > half || (rem === half && (q & 1n) === 1n)) q += 1n;
  return (neg ? -1 : 1) * Number(q) * 2 ** Number(shift);
}

describe('int64 storage and transfer', () => {
  it("issue 19's example: the sum of [2e9, 2e9] as int64 is 4e9", async () => {
    for (const device of devices) {
      const t = torch.tensor([2e9, 2e9], { dtype: 'int64', device }), s = t.sum();
      expect(await s.item(), device).toBe(4e9);
      expect(await s.data(), device).toEqual(new BigInt64Array([4000000000n]));
      done(t, s);
    }
  });

  it('takes numbers, BigInts and BigInt64Arrays exactly; values beyond int64 raise', async () => {
    for (const device of devices) {
      const a = torch.tensor([[1n, -2n], [P62, MIN]], { device });
      expect(a.dtype).toBe('int64');
      expect(a.elementSize()).toBe(8);
      expect(await a.data(), device).toEqual(new BigInt64Array([1n, -2n, P62, MIN]));
      const b = torch.tensor(new BigInt64Array([MAX, -6n]), { device });
      expect(await big(b), device).toEqual([MAX, -6n]);
      const c = torch.tensor([2 ** 40, -(2 ** 53) + 1, 2 ** 62], { dtype: 'int64', device });
      expect(await big(c), device).toEqual([P40, -(2n ** 53n) + 1n, P62]);
      const d = torch.tensor([3n, 1.5], { device }); // a float among them: float32, as PyTorch's tensor([3, 1.5])
      expect(d.dtype).toBe('float32');
      for (const bad of [2n ** 63n, MIN - 1n]) {
        expect(() => torch.tensor([bad], { device }), `${device} ${bad}`).toThrow(`value ${bad} does not fit in int64`);
      }
      expect(() => torch.tensor([2 ** 63], { dtype: 'int64', device })).toThrow('does not fit in int64');
      expect(() => torch.tensor([2 ** 31], { dtype: 'int32', device })).toThrow('does not fit in int32');
      expect(() => torch.full([2], Infinity, { dtype: 'int64', device })).toThrow('not finite');
      const f = torch.full([3], 2 ** 40, { dtype: 'int64', device });
      expect(await big(f), device).toEqual([P40, P40, P40]);
      const g = torch.full([2], MAX, { device }), h = torch.full([2], -(2n ** 53n) - 1n, { device });
      expect(g.dtype).toBe('int64');
      expect([...(await big(g)), ...(await big(h))], device).toEqual([MAX, MAX, -(2n ** 53n) - 1n, -(2n ** 53n) - 1n]);
      expect(() => torch.full([1], 2n ** 63n, { device })).toThrow('does not fit in int64');
      done(a, b, c, d, f, g, h);
    }
  });

  it('item() and tolist() give numbers, and raise on a value a number would round; print shows it exactly', async () => {
    for (const device of devices) {
      const t = long([2n ** 53n - 1n, -(2n ** 53n) + 1n], device);
      expect(await t.tolist(), device).toEqual([2 ** 53 - 1, -(2 ** 53) + 1]);
      const u = long([2n ** 53n + 1n], device);
      await expect(u.item(), device).rejects.toThrow(/int64 value 9007199254740993 is not a safe JavaScript number.*data\(\)/);
      await expect(u.tolist(), device).rejects.toThrow('9007199254740993');
      expect(await u.toStringAsync(), device).toContain('9007199254740993');
      done(t, u);
    }
  });
});

describe('int64 arithmetic is exact beyond 32 bits and wraps past 64 bits as PyTorch', () => {
  it('add, sub (with alpha), mul, neg, abs, square, pow', async () => {
    for (const device of devices) {
      const a = long([P40 + 5n, -P40, 3n, P62, MAX, MIN], device), b = long([P40, 7n, -P32, P62, 1n, -1n], device);
      const av = [P40 + 5n, -P40, 3n, P62, MAX, MIN], bv = [P40, 7n, -P32, P62, 1n, -1n];
      const cases: [string, torch.Tensor, bigint[]][] = [
        ['add', torch.add(a, b), av.map((x, i) => wrap(x + bv[i]))],
        ['sub alpha', torch.sub(a, b, { alpha: 3 }), av.map((x, i) => wrap(x - 3n * bv[i]))],
        ['mul', torch.mul(a, b), av.map((x, i) => wrap(x * bv[i]))],
        ['mul scalar', torch.mul(a, 3), av.map((x) => wrap(x * 3n))],
        ['add big scalar', torch.add(a, 2 ** 40), av.map((x) => wrap(x + P40))],
        ['neg', torch.neg(a), av.map((x) => wrap(-x))],
        ['abs', torch.abs(a), av.map((x) => wrap(x < 0n ? -x : x))],
        ['square', torch.square(b), bv.map((x) => wrap(x * x))],
      ];
      for (const [name, r, want] of cases) {
        expect(r.dtype).toBe('int64');
        expect(await big(r), `${device} ${name}`).toEqual(want);
      }
      const p = torch.pow(long([2, -3, 7, 2, -1, 5], device), long([62, 39, 22, 64, 12345, -1], device));
      expect(await big(p), `${device} pow`).toEqual([P62, (-3n) ** 39n, wrap(7n ** 22n), 0n, -1n, 0n]);
      done(a, b, p, ...cases.map((c) => c[1]));
    }
  });

  it('floor division, trunc division and remainder follow Python/PyTorch signs; a zero divisor raises', async () => {
    for (const device of devices) {
      const xs = [P40 + 5n, -(P40 + 5n), 7n, -7n, P62, MIN, 1000000000000000007n];
      const ys = [3n, 3n, -2n, 2n, -(P32 + 1n), 7n, -1000000007n];
      const a = long(xs, device), b = long(ys, device);
      const fdiv = (x: bigint, y: bigint) => { const q = x / y; return (x % y !== 0n && (x < 0n) !== (y < 0n)) ? q - 1n : q; };
      const mod = (x: bigint, y: bigint) => { const r = x % y; return r !== 0n && (r < 0n) !== (y < 0n) ? r + y : r; };
      const f = torch.floorDivide(a, b), t = torch.div(a, b, { roundingMode: 'trunc' }), r = torch.remainder(a, b);
      expect(await big(f), `${device} floor_divide`).toEqual(xs.map((x, i) => fdiv(x, ys[i])));
      expect(await big(t), `${device} trunc`).toEqual(xs.map((x, i) => x / ys[i]));
      expect(await big(r), `${device} remainder`).toEqual(xs.map((x, i) => mod(x, ys[i])));
      const z = long([1, 0, 2, 3, 4, 5, 6], device), q = torch.floorDivide(a, z);
      await expect(q.data(), device).rejects.toThrow('ZeroDivisionError');
      done(a, b, f, t, r, z, q);
    }
  });

  it('comparisons, maximum/minimum and clamp see all 64 bits', async () => {
    for (const device of devices) {
      // equal low words, different high words: a 32-bit comparison would call them equal
      const a = long([P32 + 1n, -1n, P40, MIN, 5n], device), b = long([1n, P32 - 1n, P40, MAX, 5n + P32], device);
      const lt = torch.lt(a, b), eq = torch.eq(a, b), ge = torch.ge(a, b), mx = torch.maximum(a, b), mn = torch.minimum(a, b);
      expect(await lt.tolist(), device).toEqual([false, true, false, true, true]);
      expect(await eq.tolist(), device).toEqual([false, false, true, false, false]);
      expect(await ge.tolist(), device).toEqual([true, false, true, false, false]);
      expect(await big(mx), device).toEqual([P32 + 1n, P32 - 1n, P40, MAX, 5n + P32]);
      expect(await big(mn), device).toEqual([1n, -1n, P40, MIN, 5n]);
      const c = torch.clamp(a, -(2 ** 40), 2 ** 33);
      expect(await big(c), device).toEqual([P32 + 1n, -1n, 2n ** 33n, -P40, 5n]);
      // bounds that float32 would round (2^40 + 1 is 2^40 in f32) are exact
      const e = torch.clamp(a, 2 ** 40 + 1), f = torch.clamp(b, null, 2 ** 32 + 3);
      expect(await big(e), device).toEqual([P40 + 1n, P40 + 1n, P40 + 1n, P40 + 1n, P40 + 1n]);
      expect(await big(f), device).toEqual([1n, P32 - 1n, P32 + 3n, P32 + 3n, P32 + 3n]);
      const i = torch.tensor([0, 2147483647], { dtype: 'int32', device }), j = torch.clamp(i, 16777217, 2147483646);
      expect(Array.from((await j.data()) as Int32Array), device).toEqual([16777217, 2147483646]);
      done(a, b, lt, eq, ge, mx, mn, c, e, f, i, j);
    }
  });
});

describe('int64 reductions and scans', () => {
  it('sum, prod, max, min, argmax, argmin, all, any of values beyond 32 bits (rows of every length)', async () => {
    for (const device of devices) {
      for (const n of [3, 100, 5000]) {
        const vals = Array.from({ length: n }, (_, i) => (i === n - 2 ? P62 : BigInt(i) * P32 - 7n));
        const t = long(vals, device), flat = long([...vals, ...vals.map((v) => -v)], device), m = flat.reshape([2, n]);
        const sum = vals.reduce((x, y) => x + y, 0n);
        const s = t.sum(), sr = m.sum(1), mx = t.max(), am = torch.argmax(t), an = torch.argmin(m, 1), ar = torch.argmax(m, 1);
        expect(await big(s), `${device} n=${n} sum`).toEqual([wrap(sum)]);
        expect(await big(sr), `${device} n=${n} sum(1)`).toEqual([wrap(sum), wrap(-sum)]);
        expect(await big(mx), `${device} n=${n} max`).toEqual([P62]);
        expect(await big(am), `${device} n=${n} argmax`).toEqual([BigInt(n - 2)]);
        expect(await big(an), `${device} n=${n} argmin(1)`).toEqual([0n, BigInt(n - 2)]);
        expect(await big(ar), `${device} n=${n} argmax(1)`).toEqual([BigInt(n - 2), 0n]);
        done(t, m, s, sr, mx, am, an, ar);
      }
      const p = long([65536, 65536, 3, -5], device), pr = p.prod();
      expect(await big(pr), device).toEqual([-15n * P32]);
      const w = long([P32, P32, 7], device), pw = w.prod(); // 2^64 * 7 wraps to 0, as PyTorch
      expect(await big(pw), device).toEqual([0n]);
      const i32 = torch.tensor([2147483647, 2147483647, 2], { dtype: 'int32', device }), s32 = i32.sum();
      expect(s32.dtype).toBe('int64');
      expect(await big(s32), device).toEqual([2n ** 32n]);
      const z = long([0, P32], device), all = torch.all(z), any = torch.any(z);
      expect([await all.item(), await any.item()], device).toEqual([false, true]);
      done(p, pr, w, pw, i32, s32, z, all, any);
    }
  });

  it('cumsum and cumprod run in 64 bits (int64 and int32 inputs)', async () => {
    for (const device of devices) {
      for (const dtype of ['int64', 'int32'] as const) {
        const t = torch.tensor([2e9, 2e9, -2e9, 7], { dtype, device }), s = torch.cumsum(t, 0);
        expect(s.dtype).toBe('int64');
        expect(await big(s), `${device} ${dtype} cumsum`).toEqual([2000000000n, 4000000000n, 2000000000n, 2000000007n]);
        const u = torch.tensor([65536, 65536, 3, 0], { dtype, device }), p = torch.cumprod(u, 0);
        expect(await big(p), `${device} ${dtype} cumprod`).toEqual([65536n, P32, 3n * P32, 0n]);
        done(t, s, u, p);
      }
      const flat = long([P40, -1n, P40, 1n, 2n, 3n], device), m = flat.reshape([2, 3]), c = torch.cumsum(m, 1);
      expect(await big(c), device).toEqual([P40, P40 - 1n, 2n * P40 - 1n, 1n, 3n, 6n]);
      done(m, c);
    }
  });
});

describe('int64 casts', () => {
  it('float -> int64 truncates exactly beyond 32 bits and raises on NaN, infinities and values beyond int64', async () => {
    for (const device of devices) {
      const t = torch.tensor([3e12, -2.9, 2 ** 62, -(2 ** 63), 2147483648], { dtype: 'float32', device }), r = t.to('int64');
      expect(await big(r), device).toEqual([3000000053248n, -2n, P62, MIN, 2147483648n]);
      for (const dtype of ['float32', 'float16', 'bfloat16'] as const) {
        const bad = dtype === 'float16' ? [NaN, Infinity, -Infinity] : [NaN, Infinity, -Infinity, 2 ** 63, -1e20];
        for (const v of bad) {
          const x = torch.tensor([1.5, v, 0, 0, 0, 0, 0, 0], { dtype, device }), y = x.to('int64');
          await expect(y.data(), `${device} ${dtype} ${v}`).rejects.toThrow('cast from');
          done(x, y);
        }
      }
      done(t, r);
    }
  });

  it('int64 -> float rounds to nearest, int64 -> int32 keeps the low word (PyTorch wraps), int32 -> int64 sign-extends', async () => {
    for (const device of devices) {
      const v = [2n ** 24n + 1n, 2n ** 24n + 3n, P62 + 2n ** 38n + 1n, -(P40 + 1n), MIN];
      const t = long(v, device), f = t.to('float32'), i = t.to('int32');
      expect(Array.from((await f.data()) as Float32Array), device).toEqual(v.map(f32Of));
      expect(Array.from((await i.data()) as Int32Array), device).toEqual(v.map((x) => Number(BigInt.asIntN(32, x))));
      const s = torch.tensor([-7, 2147483647], { dtype: 'int32', device }), w = s.to('int64');
      expect(await big(w), device).toEqual([-7n, 2147483647n]);
      done(t, f, i, s, w);
    }
  });
});

describe('indexing with int64 indices', () => {
  it('index_select, gather and embedding read int64 indices; an index beyond 32 bits is named exactly', async () => {
    for (const device of devices) {
      const x = torch.arange(10, { dtype: 'float32', device }), idx = long([3, -1 + 10, 0], device);
      const r = torch.indexSelect(x, 0, idx);
      expect(await r.tolist(), device).toEqual([3, 9, 0]);
      const vals = long([P62, -P40, 5], device), g = torch.gather(vals, 0, long([1, 0, 0, 2], device));
      expect(await big(g), device).toEqual([-P40, P62, P62, 5n]);
      const bad = long([1, P32 + 1n], device), b = torch.indexSelect(x, 0, bad);
      await expect(b.data(), device).rejects.toThrow(`index ${P32 + 1n} is out of range`);
      const w = torch.ones([4, 2], { device }), e = torch.F.embedding(long([3, -P40], device), w);
      await expect(e.data(), device).rejects.toThrow(`index ${-P40} is out of range`);
      done(x, idx, r, vals, g, bad, b, w, e);
    }
  });

  it('scatter_add carries into the high word; one_hot and sort give int64', async () => {
    for (const device of devices) {
      const target = long([P32 - 1n, 0n], device), src = long([1n, P40, P32 - 1n, -1n], device);
      const s = torch.scatterAdd(target, 0, long([0, 1, 0, 1], device), src);
      expect(await big(s), device).toEqual([P32 - 1n + 1n + P32 - 1n, P40 - 1n]);
      const o = torch.F.oneHot(long([2, 0], device), 3);
      expect(await big(o), device).toEqual([0n, 0n, 1n, 1n, 0n, 0n]);
      const v = long([5, -3, 9, 0], device), sorted = torch.sort(v);
      expect(await big(sorted.values), device).toEqual([-3n, 0n, 5n, 9n]);
      expect(await big(sorted.indices), device).toEqual([1n, 3n, 0n, 2n]);
      done(target, src, s, o, v, sorted.values, sorted.indices);
    }
  });

  it('sort orders int64 keys beyond 32 bits, ascending and descending (equal low words, both signs, int64 ends, lines past one workgroup block)', async () => {
    for (const device of devices) {
      const vals = [P40, 1n, -P40, P40 + 1n, MIN, MAX, P32 + 1n, 1n, -1n];
      const v = long(vals, device), s = torch.sort(v), d = torch.sort(v, 0, true);
      const order = vals.map((_, i) => i).sort((p, q) => (vals[p] < vals[q] ? -1 : vals[p] > vals[q] ? 1 : p - q));
      expect(await big(s.indices), device).toEqual(order.map(BigInt));
      expect(await big(s.values), device).toEqual(order.map((i) => vals[i]));
      const desc = vals.map((_, i) => i).sort((p, q) => (vals[p] > vals[q] ? -1 : vals[p] < vals[q] ? 1 : p - q));
      expect(await big(d.indices), device).toEqual(desc.map(BigInt));
      // 1,500 keys: the GPU's global merge steps too; many share their low word or their high word
      const many = Array.from({ length: 1500 }, (_, i) => (BigInt((i * 7919) % 31) - 15n) * P32 + BigInt((i * 104729) % 5));
      const w = long(many, device), ws = torch.sort(w);
      const want = many.map((_, i) => i).sort((p, q) => (many[p] < many[q] ? -1 : many[p] > many[q] ? 1 : p - q));
      expect(await big(ws.indices), device).toEqual(want.map(BigInt));
      done(s.values, s.indices, d.values, d.indices, ws.values, ws.indices);
    }
  });
});
