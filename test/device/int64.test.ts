/**
 * int64 results that leave the 32 bits webtorch stores int64 in raise; they never wrap
 * (issue 19's `torch.tensor([2e9, 2e9], {dtype: 'int64'}).sum()` gave -294967296). The sum and
 * product kernels check on the device and the next sync point raises, naming the op; results
 * that fit, including sums whose partial sums wrap on the way, stay exact.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const devices = suiteDevices();
const OVERFLOW = 'int64 overflow';

describe('int64 sum and prod never wrap', () => {
  it("issue 19's example: the sum of [2e9, 2e9] as int64 raises instead of giving -294967296", async () => {
    for (const device of devices) {
      const t = torch.tensor([2e9, 2e9], { dtype: 'int64', device });
      const s = t.sum();
      await expect(s.item(), device).rejects.toThrow(`"sum": ${OVERFLOW}`);
      // the device keeps working, and a sum that fits is exact
      const u = torch.tensor([2e9, 1e8], { dtype: 'int64', device }), v = u.sum();
      expect(await v.item(), device).toBe(2.1e9);
      [t, s, u, v].forEach((x) => x.dispose());
    }
  });

  it('int32 and uint8 sums give int64 and are checked too; negative overflow raises', async () => {
    for (const device of devices) {
      const a = torch.tensor([2147483647, 1], { dtype: 'int32', device }), sa = a.sum();
      expect(sa.dtype).toBe('int64');
      await expect(sa.data(), device).rejects.toThrow(OVERFLOW);
      const b = torch.tensor([-2147483647, -2], { dtype: 'int64', device }), sb = b.sum();
      await expect(sb.data(), device).rejects.toThrow(OVERFLOW);
      [a, sa, b, sb].forEach((x) => x.dispose());
    }
  });

  it('sums whose partial sums wrap but whose result fits stay exact (every row form: short, long, along a dim)', async () => {
    for (const device of devices) {
      for (const n of [4, 40, 4000]) {
        // n/2 values of 2e9 then n/2 of -2e9, +7: every prefix past the first two leaves the i32 range
        const vals = Array.from({ length: n }, (_, i) => (i < n / 2 ? 2e9 : -2e9));
        vals[n - 1] += 7;
        const t = torch.tensor(vals, { dtype: 'int64', device }), s = t.sum();
        expect(await s.item(), `${device} n=${n}`).toBe(7);
        const m = torch.tensor([vals, vals.map((v) => -v)], { dtype: 'int64', device }), r = m.sum(1);
        expect(await r.data(), `${device} n=${n} dim 1`).toEqual(new Int32Array([7, -7]));
        [t, s, m, r].forEach((x) => x.dispose());
      }
    }
  });

  it('long rows that overflow raise in every row form, also along a dim', async () => {
    for (const device of devices) {
      for (const n of [8, 100, 70000]) {
        // each read before the next launch: a sync point raises the first failure since the last one
        const t = torch.full([2, n], 1e9, { dtype: 'int64', device }), s = t.sum(1);
        await expect(s.data(), `${device} n=${n}`).rejects.toThrow(`"sum": ${OVERFLOW}`);
        const all = t.sum();
        await expect(all.data(), `${device} n=${n} all`).rejects.toThrow(OVERFLOW);
        [t, s, all].forEach((x) => x.dispose());
      }
    }
  });

  it('prod raises past the int64 storage range, and is exact when a zero factor comes after', async () => {
    for (const device of devices) {
      const cases: [number[], number | null][] = [
        [[65536, 65536], null], // 2^32 wraps to 0 in 32 bits
        [[-1, -2147483648], null], // INT_MIN * -1
        [[46341, 46341], null],
        [[65536, 65536, 0], 0],
        [[0, 65536, 65536], 0],
        [[46340, 46340], 46340 * 46340],
        [[-2, 3, -5, 7, 11, 13, -17], -2 * 3 * -5 * 7 * 11 * 13 * -17],
      ];
      for (const [vals, want] of cases) {
        const t = torch.tensor(vals, { dtype: 'int64', device }), p = t.prod();
        if (want === null) await expect(p.item(), `${device} ${vals}`).rejects.toThrow(`"prod": ${OVERFLOW}`);
        else expect(await p.item(), `${device} ${vals}`).toBe(want);
        [t, p].forEach((x) => x.dispose());
      }
      // long rows (tree and subgroup forms): 2^10 · 2^10 · 2^10 · 2 overflows
      const vals = Array.from({ length: 100 }, (_, i) => (i < 4 ? (i === 3 ? 2 : 1024) : 1));
      const t = torch.tensor(vals, { dtype: 'int64', device }), p = t.prod();
      await expect(p.item(), device).rejects.toThrow(OVERFLOW);
      vals[3] = 1;
      const u = torch.tensor(vals, { dtype: 'int64', device }), q = u.prod();
      expect(await q.item(), device).toBe(2 ** 30);
      [t, p, u, q].forEach((x) => x.dispose());
    }
  });

  it('float sums are not checked (no int64 output)', async () => {
    for (const device of devices) {
      const t = torch.tensor([2e9, 2e9], { dtype: 'float32', device }), s = t.sum();
      expect(await s.item()).toBe(4e9);
      [t, s].forEach((x) => x.dispose());
    }
  });
});

describe('int64 add, sub and mul never wrap', () => {
  const OPS: [string, (a: torch.Tensor, b: torch.Tensor | number) => torch.Tensor][] = [
    ['add', (a, b) => torch.add(a, b)],
    ['sub', (a, b) => torch.sub(a, b)],
    ['mul', (a, b) => torch.mul(a, b)],
  ];
  const big: Record<string, [number[], number[]]> = {
    add: [[2e9, -5], [2e9, 1]],
    sub: [[-2e9, 5], [2e9, 1]],
    mul: [[65536, 3], [65536, 4]],
  };
  it.each(OPS)('%s: a result outside the storage range raises at the next read; one that fits is exact', async (name, fn) => {
    for (const device of devices) {
      const [av, bv] = big[name];
      // contiguous rows of 4+ (the cpu's SIMD path) and a broadcast scalar operand
      for (const [x, y] of [[av, bv], [[...av, ...av, ...av], [...bv, ...bv, ...bv]]]) {
        const a = torch.tensor(x, { dtype: 'int64', device }), b = torch.tensor(y, { dtype: 'int64', device }), r = fn(a, b);
        await expect(r.data(), `${device} ${name} ${x}`).rejects.toThrow(`"${name}": ${OVERFLOW}`);
        [a, b, r].forEach((t) => t.dispose());
      }
      const a = torch.tensor([1e9, -1e9, 46340, -7, 0], { dtype: 'int64', device }), b = torch.tensor([1e9, -1e9, 46340, 3, 5], { dtype: 'int64', device });
      const r = fn(a, b), want = { add: [2e9, -2e9, 92680, -4, 5], sub: [0, 0, 0, -10, -5], mul: [1e18, 1e18, 46340 * 46340, -21, 0] }[name]!;
      if (name === 'mul') await expect(r.data(), device).rejects.toThrow(OVERFLOW); // 1e9 * 1e9
      else expect(await r.data(), `${device} ${name}`).toEqual(new Int32Array(want));
      [a, b, r].forEach((t) => t.dispose());
    }
  });

  it('alpha and JS scalars are checked; int32 keeps wrapping as PyTorch does', async () => {
    for (const device of devices) {
      const a = torch.tensor([2e9, 0, 0, 0], { dtype: 'int64', device }), b = torch.tensor([1, 1, 1, 1], { dtype: 'int64', device });
      const r = torch.add(a, b, { alpha: 2e8 });
      await expect(r.data(), device).rejects.toThrow(`"add": ${OVERFLOW}`);
      const s = torch.mul(a, 2);
      await expect(s.data(), device).rejects.toThrow(`"mul": ${OVERFLOW}`);
      const c = torch.tensor([2147483647, 1, 2, 3], { dtype: 'int32', device }), w = torch.add(c, c);
      expect(await w.data(), device).toEqual(new Int32Array([-2, 2, 4, 6]));
      [a, b, r, s, c, w].forEach((t) => t.dispose());
    }
  });
});

describe('int64 cumsum and cumprod never wrap', () => {
  it('a running value outside the storage range raises, naming the op; values that fit are exact', async () => {
    for (const device of devices) {
      for (const [name, fn, vals] of [
        ['cumsum', (t: torch.Tensor) => torch.cumsum(t, 0), [2e9, 2e9, -2e9]],
        ['cumprod', (t: torch.Tensor) => torch.cumprod(t, 0), [65536, 65536, 0]],
      ] as const) {
        for (const dtype of ['int64', 'int32'] as const) {
          const t = torch.tensor([...vals], { dtype, device }), r = fn(t);
          expect(r.dtype).toBe('int64');
          await expect(r.data(), `${device} ${name} ${dtype}`).rejects.toThrow(`"${name}": ${OVERFLOW}`);
          [t, r].forEach((x) => x.dispose());
        }
      }
      const t = torch.tensor([[2e9, -2e9, 5], [-2e9, 2e8, 3]], { dtype: 'int64', device });
      const s = torch.cumsum(t, 1);
      expect(await s.data(), device).toEqual(new Int32Array([2e9, 0, 5, -2e9, -18e8, -18e8 + 3]));
      const p = torch.cumprod(t, 0);
      await expect(p.data(), device).rejects.toThrow(`"cumprod": ${OVERFLOW}`);
      const u = torch.tensor([-46340, 46340, -1], { dtype: 'int64', device }), q = torch.cumprod(u, 0);
      expect(await q.data(), device).toEqual(new Int32Array([-46340, -46340 * 46340, 46340 * 46340]));
      [t, s, p, u, q].forEach((x) => x.dispose());
    }
  });
});

describe('casts to int64 never saturate', () => {
  it('float -> int64 raises on NaN, infinities and values outside the storage range; values that fit truncate as PyTorch', async () => {
    for (const device of devices) {
      for (const dtype of ['float32', 'float16', 'bfloat16'] as const) {
        const bad = dtype === 'float32' ? [3e9, -3e9, 2147483648, NaN, Infinity, -Infinity] : [NaN, Infinity, -Infinity, ...(dtype === 'bfloat16' ? [3e9, -1e20] : [])];
        for (const v of bad) {
          // rows of 8: the GPU's vec4 path and the scalar path
          const t = torch.tensor([1.5, v, 0, 0, 0, 0, 0, 0], { dtype, device }), r = t.to('int64');
          await expect(r.data(), `${device} ${dtype} ${v}`).rejects.toThrow('cast from');
          [t, r].forEach((x) => x.dispose());
        }
      }
      const vals = [2147483520, -2147483648, -2.9, 2.9, -0.5, 1e9];
      const t = torch.tensor(vals, { dtype: 'float32', device }), r = t.to('int64');
      expect(await r.data(), device).toEqual(new Int32Array(vals.map(Math.trunc)));
      // int32 casts keep PyTorch's unchecked behaviour; int -> int64 always fits
      const u = torch.tensor([-7, 2147483647], { dtype: 'int32', device }), w = u.to('int64');
      expect(await w.data(), device).toEqual(new Int32Array([-7, 2147483647]));
      [t, r, u, w].forEach((x) => x.dispose());
    }
  });
});

describe('int64 from BigInts', () => {
  it('nested BigInts and BigInt64Array make int64 tensors; BigInts outside the storage range raise', async () => {
    for (const device of devices) {
      const a = torch.tensor([[1n, -2n], [2147483647n, -2147483648n]], { device });
      expect(a.dtype).toBe('int64');
      expect(await a.data(), device).toEqual(new Int32Array([1, -2, 2147483647, -2147483648]));
      const b = torch.tensor(new BigInt64Array([5n, -6n]), { device });
      expect(b.dtype).toBe('int64');
      expect(await b.tolist()).toEqual([5, -6]);
      const c = torch.tensor([3n, 1.5], { device }); // a float among them: float32, as PyTorch's tensor([3, 1.5])
      expect(c.dtype).toBe('float32');
      expect(await c.data()).toEqual(new Float32Array([3, 1.5]));
      for (const bad of [2147483648n, -2147483649n, 2n ** 63n - 1n]) {
        expect(() => torch.tensor([bad], { device }), `${device} ${bad}`).toThrow(`value ${bad} does not fit in int64`);
        expect(() => torch.tensor(new BigInt64Array([bad]), { device }), `${device} ${bad}`).toThrow(`value ${bad} does not fit in int64`);
      }
      expect(() => torch.tensor([2 ** 53 + 2], { dtype: 'int64', device })).toThrow('does not fit in int64');
      [a, b, c].forEach((x) => x.dispose());
    }
  });
});

describe('int64 neg, abs and square never wrap', () => {
  const M = -2147483648;
  const OPS: [string, (t: torch.Tensor) => torch.Tensor, number[], number[], number[]][] = [
    ['neg', (t) => torch.neg(t), [M], [5, -7, 2147483647, 0], [-5, 7, -2147483647, 0]],
    ['abs', (t) => torch.abs(t), [M], [5, -7, -2147483647, 0], [5, 7, 2147483647, 0]],
    ['square', (t) => torch.square(t), [46341], [46340, -46340, -3, 0], [46340 * 46340, 46340 * 46340, 9, 0]],
  ];
  it.each(OPS)('%s raises where the result leaves the storage range, and is exact elsewhere', async (name, fn, bad, good, want) => {
    for (const device of devices) {
      const t = torch.tensor([1, 2, 3, ...bad], { dtype: 'int64', device }), r = fn(t);
      await expect(r.data(), `${device} ${name}`).rejects.toThrow(`"${name}": ${OVERFLOW}`);
      const u = torch.tensor(good, { dtype: 'int64', device }), s = fn(u);
      expect(await s.data(), `${device} ${name}`).toEqual(new Int32Array(want));
      // int32 keeps PyTorch's wrapping
      const v = torch.tensor(bad, { dtype: 'int32', device }), w = fn(v);
      expect(await w.data(), `${device} ${name} int32`).toEqual(new Int32Array(bad.map((x) => (name === 'square' ? Math.imul(x, x) : name === 'neg' ? -x | 0 : Math.abs(x) | 0))));
      [t, r, u, s, v, w].forEach((x) => x.dispose());
    }
  });
});

describe('int64 pow never wraps', () => {
  it('raises where the power leaves the storage range; exact powers at the edges', async () => {
    for (const device of devices) {
      for (const [base, exp] of [[2, 31], [65536, 2], [-3, 20], [46341, 2], [3, 1000]]) {
        const t = torch.tensor([2, base], { dtype: 'int64', device }), e = torch.tensor([3, exp], { dtype: 'int64', device }), r = torch.pow(t, e);
        await expect(r.data(), `${device} ${base}^${exp}`).rejects.toThrow(`"pow": ${OVERFLOW}`);
        [t, e, r].forEach((x) => x.dispose());
      }
      const t = torch.tensor([-2, 2, 3, -1, 1, 0, 46340], { dtype: 'int64', device }), e = torch.tensor([31, 30, 19, 12345, 1000, 0, 2], { dtype: 'int64', device });
      const r = torch.pow(t, e);
      expect(await r.data(), device).toEqual(new Int32Array([-(2 ** 31), 2 ** 30, 3 ** 19, -1, 1, 1, 46340 * 46340]));
      const s = torch.pow(t, 2);
      expect(await s.data(), device).toEqual(new Int32Array([4, 4, 9, 1, 1, 0, 46340 * 46340]));
      const big = torch.tensor([65536], { dtype: 'int64', device }), p = torch.pow(big, 2);
      await expect(p.data(), device).rejects.toThrow(OVERFLOW);
      [t, e, r, s, big, p].forEach((x) => x.dispose());
    }
  });
});

describe('int64 floor and trunc division never wrap', () => {
  const M = -2147483648;
  const OPS: [string, (a: torch.Tensor, b: torch.Tensor) => torch.Tensor][] = [
    ['floor_divide', (a, b) => torch.floorDivide(a, b)],
    ['trunc_divide', (a, b) => torch.div(a, b, { roundingMode: 'trunc' })],
  ];
  it.each(OPS)('%s of -2^31 by -1 raises the overflow; a zero divisor still raises ZeroDivisionError; other quotients are exact', async (name, fn) => {
    for (const device of devices) {
      const a = torch.tensor([M, 7, -7, M], { dtype: 'int64', device }), b = torch.tensor([-1, 2, 2, 1], { dtype: 'int64', device }), r = fn(a, b);
      await expect(r.data(), `${device} ${name}`).rejects.toThrow(`"${name}": ${OVERFLOW}`);
      const z = torch.tensor([0, 2, 2, 1], { dtype: 'int64', device }), q = fn(a, z);
      await expect(q.data(), `${device} ${name}`).rejects.toThrow('ZeroDivisionError');
      const c = torch.tensor([-2, 2, 2, 1], { dtype: 'int64', device }), s = fn(a, c);
      const want = name === 'floor_divide' ? [M / -2, 3, -4, M] : [M / -2, 3, -3, M];
      expect(await s.data(), `${device} ${name}`).toEqual(new Int32Array(want));
      // int32 keeps PyTorch's wrapping
      const a32 = torch.tensor([M], { dtype: 'int32', device }), b32 = torch.tensor([-1], { dtype: 'int32', device }), w = fn(a32, b32);
      expect(await w.data(), `${device} ${name} int32`).toEqual(new Int32Array([M]));
      [a, b, r, z, q, c, s, a32, b32, w].forEach((t) => t.dispose());
    }
  });
});
