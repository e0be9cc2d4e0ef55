/**
 * Device semantics from PyTorch's CUDA notes: lazy start, the device API, `.to` identity,
 * copies between every pair of devices, the cross-device error, and bad input that fails at
 * the call without killing a worker.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const startedAtImport = torch._startedDevices();
const devices = suiteDevices();

const gpus = () => devices.filter((d) => d !== 'cpu');

describe('lazy start', () => {
  it('importing webtorch starts no worker', () => {
    expect(startedAtImport).toEqual([]);
  });
  it('using gpu:N before discovery starts discovery and queues the work (no await torch.gpu.init() needed)', async () => {
    const { execFileSync } = await import('node:child_process');
    const script = `import('./dist/webtorch.js').then(async (torch) => {
      const t = torch.zeros([1], { device: 'gpu:0' });
      console.log('started: ' + JSON.stringify(torch._startedDevices()));
      console.log('values: ' + JSON.stringify(await t.add(2).tolist()));
    })`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(out).toContain('started: ["gpu:0"]');
    expect(out).toContain('values: [2]');
  });
});

describe('the device API', () => {
  it('counts, names and describes the GPU devices', async () => {
    expect(await torch.gpu.isAvailable()).toBe(gpus().length > 0);
    expect(await torch.gpu.deviceCount()).toBe(gpus().length);
    expect(await torch.numGpus()).toBe(gpus().length);
    if (!gpus().length) return;
    const name = await torch.gpu.getDeviceName(0);
    expect(name.length).toBeGreaterThan(0);
    const p = await torch.gpu.getDeviceProperties(1);
    expect(p.index).toBe(1);
    expect(p.kind).toBe('gpu');
    expect(p.limits.maxStorageBufferBindingSize).toBeGreaterThan(0);
    expect(typeof p.nativeF16).toBe('boolean');
  });

  it('tryGpu / tryAllGpus fall back to cpu', async () => {
    expect(String(await torch.tryGpu(0))).toBe(gpus().length ? 'gpu:0' : 'cpu');
    expect(String(await torch.tryGpu(5))).toBe('cpu');
    expect((await torch.tryAllGpus()).map(String)).toEqual(gpus().length ? gpus() : ['cpu']);
  });

  it('parses device names, with cuda:N as an alias', () => {
    expect(torch.device('cpu')).toBe(torch.CPU);
    expect(() => torch.device('tpu:0')).toThrow('Expected one of cpu, gpu, cuda device type at start of device string: tpu:0');
    if (!gpus().length) return;
    expect(torch.device('cuda:1')).toBe(torch.device('gpu:1'));
    expect(torch.device(1)).toBe(torch.device('gpu:1'));
    expect(String(torch.device('gpu'))).toBe(`gpu:${torch.gpu.currentDevice()}`);
  });

  it('withDevice selects the device for "gpu", for sync and async callbacks, and restores it', async () => {
    if (!gpus().length) return;
    expect(torch.gpu.currentDevice()).toBe(0);
    const inside = torch.gpu.withDevice(1, () => torch.tidy(() => {
      const a = torch.zeros([1], { device: 'gpu' });
      const b = torch.ones([1]).cuda();
      const c = a.add(b);
      const d = torch.randn([2]).cuda(0);
      return [a, b, c, d].map((t) => t.getDevice());
    }));
    expect(inside).toEqual([1, 1, 1, 0]);
    expect(torch.gpu.currentDevice()).toBe(0);
    const v = await torch.gpu.withDevice(1, async () => {
      const t = torch.full([2], 3, { device: 'gpu' });
      const vals = await t.tolist();
      expect(t.getDevice()).toBe(1);
      t.dispose();
      return vals;
    });
    expect(v).toEqual([3, 3]);
    expect(torch.gpu.currentDevice()).toBe(0);
  });
});

describe('tensors carry a device', () => {
  it('x.to(x.device) returns x itself; to another device or dtype makes a copy', () => {
    for (const d of devices) {
      const x = torch.arange(6, undefined, 1, { device: d, dtype: 'float32' });
      expect(x.to(x.device)).toBe(x);
      expect(x.to(d)).toBe(x);
      expect(x.to({ device: d, dtype: 'float32' })).toBe(x);
      const y = x.to('int32');
      expect(y).not.toBe(x);
      expect(y.dtype).toBe('int32');
      x.dispose();
      y.dispose();
    }
  });

  it('copies between every pair of devices, keeping values', async () => {
    for (const src of devices) {
      for (const dst of devices) {
        const { y, t, b } = torch.tidy(() => {
          const x = torch.tensor([[1.5, -2, 3], [4, 5.25, -6]], { device: src });
          return { y: x.to(dst), t: x.T.to(dst), b: torch.tensor([true, false, true], { device: src }).to(dst) };
        });
        expect(String(y.device)).toBe(dst);
        expect(await y.tolist()).toEqual([[1.5, -2, 3], [4, 5.25, -6]]);
        expect(await t.tolist()).toEqual([[1.5, 4], [-2, 5.25], [3, -6]]);
        expect(await b.tolist()).toEqual([true, false, true]);
        [y, t, b].forEach((v) => v.dispose());
      }
    }
  });

  it('keeps program order when a long burst goes out in pieces behind a pending read', async () => {
    // A burst over the client's send threshold is sent while the caller is still issuing it;
    // the read issued before it must still see the values from before it.
    for (const device of devices) {
      const x = torch.zeros([8], { device });
      await x.data();
      const before = x.data();
      for (let i = 0; i < 300; i++) {
        const y = x.add(1);
        x.copy_(y);
        y.dispose();
      }
      const after = x.data();
      expect(Array.from(await before)).toEqual(new Array(8).fill(0));
      expect(Array.from(await after)).toEqual(new Array(8).fill(300));
      x.dispose();
    }
  });

  it('reads the right bytes when reads of different sizes and offsets share a staging buffer', async () => {
    // The GPU worker keeps its largest read staging buffer for later reads (see `read` in
    // ts/worker/gpu.ts): a smaller read, an unaligned slice and a read after emptyCache must
    // each see only their own bytes.
    for (const device of devices) {
      const big = torch.arange(0, 1 << 16, 1, { device, dtype: 'float32' });
      const small = torch.tensor([5, 6, 7], { device, dtype: 'float32' });
      const bytes = torch.tensor([1, 2, 3, 4, 5, 6, 7], { device, dtype: 'uint8' });
      expect((await big.data())[65535]).toBe(65535);
      expect(Array.from(await small.data())).toEqual([5, 6, 7]);
      const mid = bytes.narrow(0, 1, 5), pair = big.narrow(0, 3, 2);
      expect(Array.from(await mid.data())).toEqual([2, 3, 4, 5, 6]);
      expect(Array.from(await pair.data())).toEqual([3, 4]);
      [big, mid, pair].forEach((t) => t.dispose());
      torch.gpu.emptyCache();
      expect(Array.from(await small.data())).toEqual([5, 6, 7]);
      [small, bytes].forEach((t) => t.dispose());
    }
  });

  it('computes broadcast, transposed and misaligned operands of elementwise ops like plain JS', async () => {
    // Shapes whose innermost size is a multiple of 4 run the GPU's vec4 map kernels with strided
    // lanes (wgsl/elementwise.ts); the others, the scalar kernel. Expected values come from JS.
    const seq = (n: number, k = 1) => Array.from({ length: n }, (_, i) => ((i * 7) % 11) * k - 5);
    for (const device of devices) {
      const f = (vals: number[], shape: number[], dtype = 'float32') => {
        const flat = torch.tensor(vals, { device, dtype }), shaped = flat.reshape(shape);
        flat.dispose();
        return shaped;
      };
      const x = f(seq(40), [5, 8]), rowMax = f(seq(5, 2), [5, 1]), bias = f(seq(8, 3), [8]);
      const xs = seq(40), ms = seq(5, 2), bs = seq(8, 3);
      const scaled = x.mul(rowMax);
      const cases: [string, torch.Tensor, (i: number) => number][] = [
        ['x - rowMax', x.sub(rowMax), (i) => xs[i] - ms[Math.floor(i / 8)]],
        ['x + bias', x.add(bias), (i) => xs[i] + bs[i % 8]],
        ['x * rowMax + bias', scaled.add(bias), (i) => xs[i] * ms[Math.floor(i / 8)] + bs[i % 8]],
      ];
      const t = f(seq(32), [8, 4]), tt = t.T, y = f(seq(32, 2), [4, 8]);
      cases.push(['t.T * y', tt.mul(y), (i) => seq(32)[(i % 8) * 4 + Math.floor(i / 8)] * seq(32, 2)[i]]);
      const flat = f(seq(13), [13]), mis = flat.narrow(0, 1, 12), al = f(seq(12, 3), [12]);
      cases.push(['misaligned slice + aligned', mis.add(al), (i) => seq(13)[i + 1] + seq(12, 3)[i]]);
      const wide = f(seq(36), [4, 9]), cols = wide.narrow(1, 1, 8);
      cases.push(['column slice / 2', cols.div(2), (i) => seq(36)[Math.floor(i / 8) * 9 + 1 + (i % 8)] / 2]);
      const ia = f(seq(32), [4, 8], 'int32'), ib = f([3, -2, 5, 7], [4, 1], 'int32');
      cases.push(['int floor_divide by a column', ia.floorDivide(ib), (i) => Math.floor(seq(32)[i] / [3, -2, 5, 7][Math.floor(i / 8)])]);
      for (const [name, out, ref] of cases) {
        const got = Array.from(await out.data());
        expect(got.map((v) => Math.round(v * 1e5) / 1e5), `${name} on ${device}`).toEqual(got.map((_, i) => Math.round(ref(i) * 1e5) / 1e5));
        out.dispose();
      }
      const zero = f([1, 0, 1, 1], [4, 1], 'int32'), bad = ia.floorDivide(zero);
      await expect(bad.data(), `integer division by a broadcast zero on ${device}`).rejects.toThrow(/ZeroDivisionError/);
      [x, rowMax, bias, scaled, t, tt, y, flat, mis, al, wide, cols, ia, ib, zero, bad].forEach((v) => v.dispose());
    }
  });

  it('copy_ works across devices, into views, with dtype conversion and broadcasting', async () => {
    for (const src of devices) {
      for (const dst of devices) {
        const target = torch.zeros([2, 3], { device: dst, dtype: 'int32' });
        const col = target.select(1, 1);
        const from = torch.tensor([7.9, -8.2], { device: src });
        col.copy_(from);
        expect(await target.tolist()).toEqual([[0, 7, 0], [0, -8, 0]]);
        const row = torch.tensor([1, 2, 3], { device: src });
        target.copy_(row);
        expect(await target.tolist()).toEqual([[1, 2, 3], [1, 2, 3]]);
        [target, col, from, row].forEach((v) => v.dispose());
      }
    }
  });

  it('runs the CUDA-semantics example: tensors on gpu:0, gpu:1 and cpu, copies, read back', async () => {
    if (gpus().length < 2) return;
    const { z, c, back } = torch.tidy(() => {
      const x = torch.tensor([1, 2, 3], { device: 'gpu:0', dtype: 'float32' });
      const y = torch.tensor([10, 20, 30], { dtype: 'float32' }).cuda();
      const z = x.add(y);
      const a = torch.gpu.withDevice(1, () => torch.tensor([0.5, 0.5, 0.5], { device: 'gpu' }));
      const c = a.mul(z.to('gpu:1'));
      return { z, c, back: c.cpu() };
    });
    expect(c.getDevice()).toBe(1);
    expect(z.getDevice()).toBe(0);
    expect(back.getDevice()).toBe(-1);
    expect(await back.tolist()).toEqual([5.5, 11, 16.5]);
    expect(await z.tolist()).toEqual([11, 22, 33]);
    [z, c, back].forEach((t) => t.dispose());
  });

  it("mixing devices throws PyTorch's message at the call", () => {
    if (!gpus().length) return;
    torch.tidy(() => {
      const g = torch.ones([2], { device: 'gpu:0' });
      const c = torch.ones([2]);
      expect(() => g.add(c)).toThrow('Expected all tensors to be on the same device, but found at least two devices, gpu:0 and cpu!');
      expect(() => torch.matmul(c.reshape(1, 2), g.reshape(2, 1))).toThrow('found at least two devices, cpu and gpu:0!');
      if (gpus().length > 1) {
        const g1 = torch.ones([2], { device: 'gpu:1' });
        expect(() => torch.where(g.gt(0), g, g1)).toThrow('found at least two devices, gpu:0 and gpu:1!');
      }
    });
  });

  it('creation ops keep dtype and device: new_*, *_like', async () => {
    for (const d of devices) {
      const x = torch.tensor([[1, 2]], { device: d, dtype: 'int32' });
      const made = [x.new_zeros([2]), x.new_ones([1, 2]), x.new_full([2], 7), x.new_empty([3]), x.new_tensor([4, 5]),
        torch.zerosLike(x), torch.onesLike(x), torch.fullLike(x, 3), torch.emptyLike(x)];
      for (const m of made) {
        expect(m.dtype).toBe('int32');
        expect(String(m.device)).toBe(d);
      }
      expect(await made[2].tolist()).toEqual([7, 7]);
      expect(await made[4].tolist()).toEqual([4, 5]);
      expect(torch.tidy(() => torch.randLike(torch.zerosLike(x, { dtype: 'float32' })).dtype)).toBe('float32');
      made.forEach((m) => m.dispose());
      x.dispose();
    }
  });

  it('arange, linspace, eye, full and a seeded rand give the same values on every device', async () => {
    const seen: unknown[] = [];
    for (const d of devices) {
      const ts = [torch.arange(2, 11, 3, { device: d }), torch.linspace(0, 1, 5, { device: d }), torch.eye(2, 3, { device: d }),
        torch.full([2], true, { device: d })];
      expect(ts[0].dtype).toBe('int64');
      expect(await ts[0].tolist()).toEqual([2, 5, 8]);
      expect(await ts[1].tolist()).toEqual([0, 0.25, 0.5, 0.75, 1]);
      expect(await ts[2].tolist()).toEqual([[1, 0, 0], [0, 1, 0]]);
      expect(await ts[3].tolist()).toEqual([true, true]);
      torch.manualSeed(42);
      const r = torch.rand([5], { device: d }), n = torch.randn([4], { device: d });
      seen.push([await r.tolist(), await n.tolist()]);
      [...ts, r, n].forEach((t) => t.dispose());
    }
    for (const s of seen) expect(s).toEqual(seen[0]);
  });

  it('views share storage and slicing follows Python semantics', async () => {
    for (const d of devices) {
      const { v, last, t, flat, e } = torch.tidy(() => {
        const x = torch.arange(12, undefined, 1, { device: d }).reshape(3, 4);
        const t = x.T;
        expect(() => t.view(12)).toThrow('view size is not compatible');
        return { v: x.index('1:', '::2'), last: x.index(-1), t, flat: t.reshape(-1), e: torch.tensor([1, 2, 3], { device: d }).unsqueeze(0).expand(2, 3) };
      });
      expect(v.shape).toEqual([2, 2]);
      expect(await v.tolist()).toEqual([[4, 6], [8, 10]]);
      expect(await last.tolist()).toEqual([8, 9, 10, 11]);
      expect(t.isContiguous()).toBe(false);
      expect(await flat.tolist()).toEqual([0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]);
      expect(await e.tolist()).toEqual([[1, 2, 3], [1, 2, 3]]);
      expect(e.stride()).toEqual([0, 1]);
      [v, last, t, flat, e].forEach((z) => z.dispose());
    }
  });
});

describe('bad input fails at the call, and no worker dies', () => {
  it('rejects shapes that do not broadcast, naming them', () => {
    for (const d of devices) {
      const a = torch.zeros([2, 3], { device: d }), b = torch.zeros([4], { device: d });
      expect(() => a.add(b)).toThrow('The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1 (in add, shapes [2, 3] and [4], dtypes float32 and float32)');
      expect(() => torch.matmul(a, a)).toThrow('mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)');
      expect(() => a.reshape(4, 2)).toThrow("shape '[4, 2]' is invalid for input of size 6");
      a.dispose();
      b.dispose();
    }
  });

  it('rejects unknown options and integer division by a zero scalar', () => {
    for (const d of devices) {
      const a = torch.ones([2], { device: d }), i = torch.ones([2], { device: d, dtype: 'int64' });
      expect(() => torch.add(a, a, { alpah: 2 } as never)).toThrow("add() got an unexpected keyword argument 'alpah' (expected 'alpha')");
      expect(() => torch.div(a, a, { roundingMode: 'round' as never })).toThrow("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'");
      expect(() => torch.gelu(a, { approximate: 'fast' as never })).toThrow('approximate argument must be either none or tanh');
      expect(() => torch.zeros([2], { device: d, dtpye: 'int32' } as never)).toThrow("got an unexpected keyword argument 'dtpye'");
      expect(() => torch.div(i, 0, { roundingMode: 'floor' })).toThrow('ZeroDivisionError');
      a.dispose();
      i.dispose();
    }
  });

  it('rejects an unknown device', () => {
    expect(() => torch.zeros([1], { device: 'gpu:7' })).toThrow(`Invalid device gpu:7: webtorch has ${gpus().length} GPU device`);
    expect(() => torch.device('gpu:-1')).toThrow('Expected one of cpu, gpu, cuda device type');
    const x = torch.ones([1]);
    expect(() => x.to('gpu:7')).toThrow('Invalid device gpu:7');
    x.dispose();
  });

  it('rejects wrong dtypes', () => {
    for (const d of devices) {
      expect(() => torch.zeros([1], { device: d, dtype: 'float128' as torch.DType })).toThrow('unknown dtype "float128"');
      expect(() => torch.zeros([1], { device: d, dtype: 'float64' as torch.DType })).toThrow('float64 is not supported');
      const i = torch.ones([2, 2], { device: d, dtype: 'int64' }), f = torch.ones([2, 2], { device: d });
      const bb = torch.ones([2, 2], { device: d, dtype: 'bool' });
      expect(() => torch.matmul(bb, bb)).toThrow(`"matmul" not implemented for 'Bool'`);
      bb.dispose();
      expect(() => torch.matmul(i, f)).toThrow('expected m1 and m2 to have the same dtype, but got: int64 != float32');
      expect(() => torch.where(f, f, f)).toThrow('where expected condition to be a boolean tensor, but got a tensor with dtype Float');
      expect(() => torch.mean(i)).toThrow('mean(): could not infer output dtype');
      const b = torch.ones([2], { device: d, dtype: 'bool' });
      expect(() => b.neg()).toThrow('Negation, the `-` operator, on a bool tensor is not supported');
      expect(() => torch.tensor([3e9], { dtype: 'int32', device: d })).toThrow('value 3000000000 does not fit in int32');
      expect(() => torch.tensor([2 ** 64], { dtype: 'int64', device: d })).toThrow('value 18446744073709552000 does not fit in int64');
      expect(() => torch.tensor([300], { dtype: 'uint8', device: d })).toThrow('value 300 does not fit in uint8');
      expect(() => torch.tensor([-1], { dtype: 'uint8', device: d })).toThrow('value -1 does not fit in uint8');
      expect(() => torch.full([2], 256, { dtype: 'uint8', device: d })).toThrow('value 256 does not fit in uint8');
      [i, f, b].forEach((t) => t.dispose());
    }
  });

  it('rejects a disposed tensor, and dispose is idempotent', async () => {
    for (const d of devices) {
      const x = torch.ones([3], { device: d });
      x.dispose();
      x.dispose();
      expect(x.isDisposed).toBe(true);
      await expect(x.data()).rejects.toThrow('data: cannot use a disposed tensor (shape [3], float32, ' + d + ')');
      expect(() => x.add(1)).toThrow('cannot use a disposed tensor');
      expect(() => x.to('cpu')).toThrow('cannot use a disposed tensor');
    }
  });

  it('every device still computes after the errors above', async () => {
    for (const d of devices) {
      const y = torch.tidy(() => {
        const x = torch.tensor([1, 2, 3], { device: d, dtype: 'float32' });
        return x.mul(x).sum();
      });
      expect(await y.item()).toBe(14);
      y.dispose();
    }
  });

  it('a view keeps its storage alive after the base is disposed', async () => {
    for (const d of devices) {
      const x = torch.tensor([1, 2, 3, 4], { device: d });
      const v = x.index('1:3');
      x.dispose();
      expect(await v.tolist()).toEqual([2, 3]);
      v.dispose();
    }
  });

  it('too much memory fails at the call with OutOfMemoryError, and the device keeps working', async () => {
    for (const d of devices) {
      expect(() => torch.empty([2 ** 32], { device: d })).toThrow(torch.OutOfMemoryError);
      if (d !== 'cpu') {
        const max = (await torch.gpu.getDeviceProperties(d)).limits.maxStorageBufferBindingSize;
        // a tensor over one binding is allocated (ops split over bindings: test/device/large-tensors.test.ts)
        torch.empty([max / 4 + 1024], { device: d, dtype: 'int32' }).dispose();
      }
      const y = torch.tidy(() => torch.tensor([2, 3], { device: d, dtype: 'float32' }).mul(2));
      expect(await y.tolist()).toEqual([4, 6]);
      y.dispose();
    }
  });
});
