/**
 * The name list's smaller names on every device: `torch.nn.init` (the distributions' statistics,
 * PyTorch's gains and errors, parameters written in place under autograd), `torch.normal` in its
 * three forms, `t_()`, `type()`, `Module.addModule`. (cosh, sinh and swapaxes have goldens in
 * surface.test.ts.) After each test the allocated bytes and live storages are back where they were.
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck, testDevices } from '../devices.js';

const devices = await testDevices();
leakCheck(() => devices);
afterAll(async () => {
  await torch.shutdown();
});
const init = torch.nn.init;

/** Mean, standard deviation, min and max of a tensor's values. */
async function stats(t: torch.Tensor): Promise<{ mean: number; std: number; min: number; max: number }> {
  const v = (await t.values()) as number[];
  const mean = v.reduce((a, b) => a + b, 0) / v.length;
  const std = Math.sqrt(v.reduce((a, b) => a + (b - mean) ** 2, 0) / (v.length - 1));
  return { mean, std, min: Math.min(...v), max: Math.max(...v) };
}

describe('nn.init', () => {
  it('has PyTorch\'s gains', () => {
    expect(init.calculateGain('linear')).toBe(1);
    expect(init.calculateGain('conv2d')).toBe(1);
    expect(init.calculateGain('tanh')).toBeCloseTo(5 / 3, 12);
    expect(init.calculateGain('relu')).toBeCloseTo(Math.SQRT2, 12);
    expect(init.calculateGain('leaky_relu')).toBeCloseTo(Math.sqrt(2 / (1 + 0.01 ** 2)), 12);
    expect(init.calculateGain('leaky_relu', 0.2)).toBeCloseTo(Math.sqrt(2 / 1.04), 12);
    expect(init.calculateGain('selu')).toBe(0.75);
    expect(() => init.calculateGain('swish' as 'relu')).toThrow('Unsupported nonlinearity swish');
  });

  it('refuses what PyTorch refuses, with its messages', () => {
    const v = torch.zeros([5]), w = torch.zeros([4, 3]);
    expect(() => init.xavierUniform_(v)).toThrow('Fan in and fan out can not be computed for tensor with fewer than 2 dimensions');
    expect(() => init.kaimingNormal_(w, { mode: 'fan_avg' as 'fan_in' })).toThrow('Mode fan_avg not supported, please use one of fan_in, fan_out');
    expect(() => init.constant_(w)).toThrow("constant_() missing 1 required argument: 'val'");
    expect(() => init.normal_(w, { sd: 1 } as never)).toThrow("normal_() got an unexpected keyword argument 'sd'");
    [v, w].forEach((t) => t.dispose());
  });

  describe.each(devices)('on %s', (device) => {
    it('draws with the formulas\' spread, in place, on a parameter that requires grad', async () => {
      const conv = new torch.nn.Conv2d(16, 32, 3).to(device);
      const w = conv.weight as torch.Tensor; // [32, 16, 3, 3]: fan_in 144, fan_out 288
      const version = w._version;
      expect(init.kaimingNormal_(w, { mode: 'fan_out', nonlinearity: 'relu' })).toBe(w);
      expect(w._version).toBeGreaterThan(version);
      expect(w.requiresGrad && w.isLeaf).toBe(true);
      let s = await stats(w);
      expect(Math.abs(s.mean)).toBeLessThan(0.01);
      expect(s.std / Math.sqrt(2 / 288)).toBeGreaterThan(0.95);
      expect(s.std / Math.sqrt(2 / 288)).toBeLessThan(1.05);
      init.xavierUniform_(w, 2);
      s = await stats(w);
      const bound = 2 * Math.sqrt(6 / (144 + 288));
      expect(s.max).toBeLessThanOrEqual(bound);
      expect(s.min).toBeGreaterThanOrEqual(-bound);
      expect(s.max).toBeGreaterThan(0.95 * bound);
      init.kaimingUniform_(w, Math.sqrt(5));
      s = await stats(w);
      expect(s.max).toBeLessThanOrEqual(1 / Math.sqrt(144) + 1e-7);
      expect(s.max).toBeGreaterThan(0.95 / Math.sqrt(144));
      init.xavierNormal_(w);
      expect((await stats(w)).std / Math.sqrt(2 / 432)).toBeCloseTo(1, 1);
      init.normal_(w, 3, 0.5);
      s = await stats(w);
      expect(s.mean).toBeCloseTo(3, 1);
      expect(s.std).toBeCloseTo(0.5, 1);
      init.uniform_(w, -10, 10);
      s = await stats(w);
      expect(s.min).toBeGreaterThanOrEqual(-10);
      expect(s.max).toBeGreaterThan(9);
      init.constant_(conv.bias as torch.Tensor, 0.25);
      expect(new Set(await (conv.bias as torch.Tensor).values())).toEqual(new Set([0.25]));
      init.ones_(w);
      expect(new Set(await w.values())).toEqual(new Set([1]));
      init.zeros_(w);
      expect(new Set(await w.values())).toEqual(new Set([0]));
      conv.parameters().forEach((p) => p.dispose());
    });
  });
});

describe.each(devices)('normal, t_, type, addModule on %s', (device) => {
  it('torch.normal: numbers with a size, or tensors that broadcast (differentiable in both)', async () => {
    const a = torch.normal(2, 0.5, [4000], { device, requiresGrad: true });
    expect([a.shape, a.requiresGrad, a.isLeaf, String(a.device)]).toEqual([[4000], true, true, device]);
    const s = await stats(a);
    expect(s.mean).toBeCloseTo(2, 1);
    expect(s.std).toBeCloseTo(0.5, 1);
    expect(() => torch.normal(0, -1, [2])).toThrow('normal expects std >= 0.0, but found std -1');
    expect(() => torch.normal(0, 1)).toThrow("normal() missing 1 required argument: 'size'");
    const mean = torch.tensor([[0], [100]], { device, dtype: 'float32' }).requiresGrad_(), std = torch.full([3], 0.01, { device }).requiresGrad_();
    const b = torch.normal(mean, std);
    expect(b.shape).toEqual([2, 3]);
    const v = (await b.values()) as number[];
    v.forEach((x, i) => expect(Math.abs(x - (i < 3 ? 0 : 100))).toBeLessThan(0.1));
    const total = b.sum();
    total.backward();
    expect(await mean.grad!.tolist()).toEqual([[3], [3]]);
    expect(std.grad!.shape).toEqual([3]);
    [a, mean, std, b, total, mean.grad!, std.grad!].forEach((t) => t.dispose());
  });

  it('t_() transposes the handle in place; type() names and converts', async () => {
    const x = torch.tensor([[1, 2, 3], [4, 5, 6]], { device, dtype: 'float32' });
    expect(x.t_()).toBe(x);
    expect(x.shape).toEqual([3, 2]);
    expect(await x.tolist()).toEqual([[1, 4], [2, 5], [3, 6]]);
    expect(x.type()).toBe(device === 'cpu' ? 'torch.FloatTensor' : 'torch.cuda.FloatTensor');
    const l = x.type('int64');
    expect([l.dtype, await l.tolist()]).toEqual(['int64', [[1, 4], [2, 5], [3, 6]]]);
    expect(x.type('float32')).toBe(x);
    expect(() => x.type('double' as 'float32')).toThrow("type(): expected a dtype such as 'float32', got double");
    const c = torch.zeros([2, 2, 2], { device }), leaf = torch.zeros([2, 2], { device, requiresGrad: true });
    expect(() => c.t_()).toThrow('t_() expects a tensor with <= 2 dimensions, but self is 3D');
    expect(() => leaf.t_()).toThrow('a leaf Variable that requires grad is being used in an in-place operation. (t_)');
    [x, l, c, leaf].forEach((t) => t.dispose());
  });

  it('scatter_ takes value as a keyword (the tutorial\'s one-hot target transform)', async () => {
    const y = torch.tensor([3], { device });
    const t = torch.zeros([5], { device }).scatter_(0, y, { value: 1 });
    expect(await t.tolist()).toEqual([0, 0, 0, 1, 0]);
    expect(() => t.scatter_(0, y)).toThrow('scatter_(): expects exactly one of src (a Tensor or number) and value (a number)');
    expect(() => t.scatter_(0, y, 2, { value: 1 })).toThrow('scatter_(): expects exactly one of src');
    [y, t].forEach((x) => x.dispose());
  });

  it('lazy layers take their input channels from the first call, on its device, under PyTorch\'s names', async () => {
    const conv = new torch.nn.LazyConv2d(4, 3, { padding: 1 });
    expect([conv.weight, conv.parameters().length]).toEqual([null, 0]);
    const x = torch.randn([2, 3, 5, 5], { device });
    const y = conv.call(x) as torch.Tensor;
    const w = conv.weight as torch.Tensor, b = conv.bias as torch.Tensor;
    expect([y.shape, w.shape, b.shape, String(w.device)]).toEqual([[2, 4, 5, 5], [4, 3, 3, 3], [4], device]);
    expect(Object.keys(conv.stateDict())).toEqual(['weight', 'bias']);
    const ref = torch.F.conv2d(x, w, b, { padding: 1 });
    expect(await y.tolist()).toEqual(await ref.tolist());
    const bn = new torch.nn.LazyBatchNorm2d({ momentum: 0.5 });
    const out = bn.call(y) as torch.Tensor;
    expect(Object.keys(bn.stateDict())).toEqual(['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']);
    const rm = bn.stateDict().running_mean;
    const batchMean = y.mean([0, 2, 3]);
    const want = (await batchMean.values()) as number[];
    ((await rm.values()) as number[]).forEach((v, i) => expect(v).toBeCloseTo(want[i] * 0.5, 5));
    bn.eval();
    const evalOut = bn.call(y) as torch.Tensor;
    const evalRef = torch.F.batchNorm(y, rm, bn.stateDict().running_var, bn.stateDict().weight, bn.stateDict().bias, false);
    expect(await evalOut.tolist()).toEqual(await evalRef.tolist());
    const bn1 = new torch.nn.LazyBatchNorm1d({ affine: false });
    const v = torch.randn([6, 5], { device });
    const o1 = bn1.call(v) as torch.Tensor;
    expect([o1.shape, bn1.parameters().length, bn1.stateDict().running_var.shape]).toEqual([[6, 5], 0, [5]]);
    [x, y, ref, out, batchMean, evalOut, evalRef, v, o1, ...conv.parameters(), ...conv.buffers(), ...bn.parameters(), ...bn.buffers(), ...bn1.buffers()].forEach((t) => t.dispose());
  });

  it('Module.addModule registers a submodule, as add_module does', () => {
    const seq = new torch.nn.Module();
    const lin = new torch.nn.Linear(2, 3);
    seq.addModule('block0', lin);
    expect([...seq.namedChildren()].map(([n]) => n)).toEqual(['block0']);
    expect(seq.parameters().length).toBe(2);
    lin.parameters().forEach((p) => p.dispose());
  });
});

describe('torch.accelerator', () => {
  it('names the GPU the way the tutorials ask for it', async () => {
    const gpus = devices.filter((d) => d.startsWith('gpu')).length;
    expect(await torch.accelerator.isAvailable()).toBe(gpus > 0);
    expect(await torch.accelerator.deviceCount()).toBe(gpus);
    const acc = await torch.accelerator.currentAccelerator({ checkAvailable: true });
    // The tutorials' line: device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
    const device = (await torch.accelerator.isAvailable()) ? acc!.type : 'cpu';
    expect(device).toBe(gpus ? 'gpu' : 'cpu');
    expect(torch.accelerator.currentDeviceIndex()).toBe(0);
    const x = torch.ones([2], { device });
    expect(x.device.type).toBe(device);
    x.dispose();
    expect(() => torch.accelerator.setDeviceIndex('cpu')).toThrow('Expected a gpu device, but got: cpu');
    expect(() => (torch.accelerator.setDeviceIndex as () => void)()).toThrow("set_device_index() missing 1 required argument: 'device'");
    await torch.accelerator.synchronize();
  });
});

describe('torch.compile', () => {
  it('returns the module itself (PyTorch\'s eager backend), checking its keywords', async () => {
    const model = new torch.nn.Linear(3, 2);
    expect(torch.compile(model)).toBe(model);
    expect(torch.compile(model, { mode: 'reduce-overhead', fullgraph: true })).toBe(model);
    const f = (x: torch.Tensor) => x.mul(2);
    expect(torch.compile(f)).toBe(f);
    expect(() => torch.compile(model, { mode: 'fastest' as 'default' })).toThrow('compile(): Unrecognized mode=fastest');
    expect(() => torch.compile(model, { fullGraph: true } as never)).toThrow("compile() got an unexpected keyword argument 'fullGraph'");
    expect(() => torch.compile(null)).toThrow('compile(): expected a Module or a function, got null');
    model.parameters().forEach((p) => p.dispose());
  });
});
