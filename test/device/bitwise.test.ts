/**
 * The bitwise ops beyond their goldens (test/fixtures/make_goldens*.py, run by ops.test.ts and
 * int64.test.ts): the methods and the in-place forms give what the functions give, `~mask` and
 * `a & b` on the masks comparisons make, and the refusals name what PyTorch names (the kernel
 * with the device type, the dtypes, the in-place cast).
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const devices = suiteDevices();
const made: torch.Tensor[] = [];
const keep = <T extends torch.Tensor>(t: T): T => (made.push(t), t);
const done = () => made.splice(0).forEach((t) => t.dispose());
const ints = (device: string, dtype: torch.DType = 'int32') => keep(torch.tensor([[-7, 0, 5], [3, -1, 12]], { dtype, device }));
const mask = (device: string) => keep(torch.tensor([[true, false, true], [false, false, true]], { device }));
const values = (t: torch.Tensor) => keep(t).values();

describe('bitwise methods and in-place forms', () => {
  it('x.bitwiseAnd(y) and the other methods are the functions', async () => {
    for (const device of devices) {
      const a = ints(device), b = ints(device, 'int64').flip(1);
      keep(b);
      for (const [m, f] of [['bitwiseAnd', torch.bitwiseAnd], ['bitwiseOr', torch.bitwiseOr], ['bitwiseXor', torch.bitwiseXor]] as const) {
        for (const other of [b, 6, -3, true]) {
          const got = keep(a[m](other)), want = keep(f(a, other));
          expect(got.dtype, `${device} ${m}`).toBe(want.dtype);
          expect(await got.values(), `${device} ${m}(${other})`).toEqual(await want.values());
        }
      }
      expect(await values(a.bitwiseNot()), device).toEqual(await values(torch.bitwiseNot(a)));
      done();
    }
  });

  it('x.bitwiseAnd_(y) writes the out-of-place result into x, and returns x', async () => {
    for (const device of devices) {
      for (const [m, f] of [['bitwiseAnd_', torch.bitwiseAnd], ['bitwiseOr_', torch.bitwiseOr], ['bitwiseXor_', torch.bitwiseXor]] as const) {
        const x = ints(device), y = ints(device, 'int64').flip(0);
        keep(y);
        const want = await values(f(x, y));
        expect(x[m](y), `${device} ${m} returns x`).toBe(x);
        expect(x.dtype, 'int32 & int64 in place stays int32').toBe('int32');
        expect(await x.values(), `${device} ${m}`).toEqual(want);
      }
      const x = ints(device), want = await values(torch.bitwiseNot(x));
      expect(x.bitwiseNot_()).toBe(x);
      expect(await x.values(), `${device} bitwiseNot_`).toEqual(want);
      const m = mask(device), notM = await values(torch.logicalNot(m));
      m.bitwiseNot_();
      expect(await m.values(), `${device}: ~ on a bool mask is logical not`).toEqual(notM);
      done();
    }
  });

  it('the mask habits: ~mask, (a > 0) & (b < 0), and a mask from them selects as logicalAnd does', async () => {
    for (const device of devices) {
      const x = keep(torch.randn([4, 5], { device })), y = keep(torch.randn([4, 5], { device }));
      const pos = keep(x.gt(0)), neg = keep(y.lt(0));
      expect(await values(pos.bitwiseNot()), device).toEqual(await values(pos.logicalNot()));
      const both = keep(torch.bitwiseAnd(pos, neg));
      expect(both.dtype).toBe('bool');
      expect(await both.values(), device).toEqual(await values(torch.logicalAnd(pos, neg)));
      expect(await values(pos.bitwiseOr(neg)), device).toEqual(await values(pos.logicalOr(neg)));
      expect(await values(pos.bitwiseXor(neg)), device).toEqual(await values(pos.logicalXor(neg)));
      const filled = keep(x.maskedFill(keep(both.bitwiseNot()), 0)), viaLogical = keep(x.maskedFill(keep(keep(torch.logicalAnd(pos, neg)).logicalNot()), 0));
      expect(await filled.values(), device).toEqual(await viaLogical.values());
      done();
    }
  });
});

describe('bitwise refusals', () => {
  it("a float input: PyTorch's message, the kernel named by the device type", () => {
    for (const device of devices) {
      const kernel = device === 'cpu' ? 'cpu' : 'gpu';
      const f = keep(torch.ones([2, 3], { device })), i = ints(device);
      expect(() => torch.bitwiseAnd(f, i)).toThrow(`"bitwise_and_${kernel}" not implemented for 'Float'`);
      expect(() => torch.bitwiseOr(i, 1.5)).toThrow(`"bitwise_or_${kernel}" not implemented for 'Float'`);
      expect(() => f.bitwiseNot()).toThrow(`"bitwise_not_${kernel}" not implemented for 'Float'`);
      expect(() => keep(f.half()).bitwiseXor(i)).toThrow(`"bitwise_xor_${kernel}" not implemented for 'Half'`);
      expect(() => i.bitwiseAnd_(2.5)).toThrow(`"bitwise_and_${kernel}" not implemented for 'Float'`);
      done();
    }
  });

  it('in place, a result that does not fit the tensor: bool &= int raises as PyTorch does', () => {
    for (const device of devices) {
      const m = mask(device), i = ints(device, 'int64');
      expect(() => m.bitwiseAnd_(i)).toThrow("result type Long can't be cast to the desired output type Bool");
      done();
    }
  });

  it('mismatched shapes name the op, the shapes and the dtypes', () => {
    const a = keep(torch.ones([2, 3], { dtype: 'int32' })), b = keep(torch.ones([4], { dtype: 'int32' }));
    expect(() => torch.bitwiseXor(a, b)).toThrow(/size of tensor a \(3\) must match the size of tensor b \(4\).*bitwise_xor.*\[2, 3\].*\[4\].*int32/);
    done();
  });

  it('a scalar the dtype cannot hold raises, never wraps; an unknown argument raises', () => {
    const u8 = keep(torch.tensor([1, 2], { dtype: 'uint8' })), i32 = ints('cpu');
    expect(() => torch.bitwiseAnd(u8, 300)).toThrow(/uint8/);
    expect(() => torch.bitwiseOr(i32, 2 ** 40)).toThrow(/int32/);
    expect(() => (torch.bitwiseNot as (x: torch.Tensor, o: object) => torch.Tensor)(i32, { out: null })).toThrow(/bitwise_not/);
    expect(() => (i32.bitwiseAnd_ as (o: number, x: object) => torch.Tensor)(1, { alpha: 2 })).toThrow(/bitwise_and_/);
    done();
  });
});
