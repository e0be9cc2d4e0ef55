/**
 * `torch.setDefaultDevice` / `torch.getDefaultDevice` (PyTorch 2.x's `set_default_device`): the
 * factories create on the default device when no `device` is given; an explicit `device` wins;
 * `*_like`, `new_*` and ops follow their tensors; a bare 'gpu' default follows the current GPU
 * (`setDevice` / `withDevice`), which is a different setting; `null` resets to the cpu. A layer
 * built after `setDefaultDevice('gpu:0')` has its parameters there and trains as on the cpu.
 */
import { afterEach, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const devices = suiteDevices();
const made: torch.Tensor[] = [];
const keep = <T extends torch.Tensor>(t: T): T => (made.push(t), t);
afterEach(() => {
  torch.setDefaultDevice(null);
  made.splice(0).forEach((t) => t.dispose());
});
const where = (t: torch.Tensor) => String(keep(t).device);

/** Every factory PyTorch's default device covers, called without a `device`. */
const FACTORIES: [string, () => torch.Tensor][] = [
  ['tensor', () => torch.tensor([1, 2, 3])],
  ['zeros', () => torch.zeros([2, 3])],
  ['ones', () => torch.ones(2, 3)],
  ['empty', () => torch.empty([4])],
  ['full', () => torch.full([2], 7)],
  ['arange', () => torch.arange(5)],
  ['linspace', () => torch.linspace(0, 1, 5)],
  ['eye', () => torch.eye(3)],
  ['rand', () => torch.rand([3])],
  ['randn', () => torch.randn(3)],
  ['randint', () => torch.randint(0, 10, [3])],
  ['randperm', () => torch.randperm(6)],
];

describe('torch.setDefaultDevice', () => {
  it('is the cpu until set, and null resets it', () => {
    expect(String(torch.getDefaultDevice())).toBe('cpu');
    for (const device of devices) {
      torch.setDefaultDevice(device);
      expect(torch.getDefaultDevice(), device).toBe(torch.device(device));
      torch.setDefaultDevice(null);
      expect(torch.getDefaultDevice()).toBe(torch.CPU);
    }
  });

  it.each(FACTORIES)('%s creates on the default device', async (_name, make) => {
    for (const device of ['cpu', 'gpu:0']) {
      torch.setDefaultDevice(device);
      const t = keep(make());
      expect(String(t.device), device).toBe(device);
      await t.values(); // the kernel ran there
    }
  });

  it('an explicit device wins; *_like, new_* and ops follow their tensor', () => {
    torch.setDefaultDevice('gpu:0');
    expect(where(torch.zeros([2], { device: 'cpu' }))).toBe('cpu');
    expect(where(torch.tensor([1, 2], { device: 'cpu' }))).toBe('cpu');
    expect(where(torch.randn([2], { device: 'cpu' }))).toBe('cpu');
    const c = keep(torch.ones([2], { device: 'cpu' }));
    expect(where(torch.zerosLike(c))).toBe('cpu');
    expect(where(torch.randnLike(c))).toBe('cpu');
    expect(where(c.newZeros([3]))).toBe('cpu');
    expect(where(c.add(1))).toBe('cpu');
    expect(where(torch.zeros([2]))).toBe('gpu:0');
  });

  it("a bare 'gpu' default is the current GPU at each call, as PyTorch's 'cuda' is", () => {
    torch.setDefaultDevice('gpu');
    expect(where(torch.zeros([1]))).toBe('gpu:0');
    torch.gpu.withDevice(1, () => {
      expect(String(torch.getDefaultDevice())).toBe('gpu:1');
      expect(where(torch.zeros([1]))).toBe('gpu:1');
    });
    expect(String(torch.getDefaultDevice())).toBe('gpu:0');
    // setDevice alone changes what 'gpu' means, not the default device
    torch.setDefaultDevice(null);
    torch.gpu.withDevice(1, () => expect(where(torch.zeros([1]))).toBe('cpu'));
  });

  it('refuses what is not a device, and a missing argument', () => {
    expect(() => torch.setDefaultDevice('tpu')).toThrow(/Expected one of cpu, gpu, cuda device type/);
    expect(() => (torch.setDefaultDevice as () => void)()).toThrow(/set_default_device.*device/);
    expect(String(torch.getDefaultDevice())).toBe('cpu');
  });

  it('a distribution of numbers makes its tensors there (broadcast_all through torch.tensor)', async () => {
    torch.setDefaultDevice('gpu:0');
    const n = new torch.distributions.Normal(0, 1);
    expect(String(n.loc.device)).toBe('gpu:0');
    const s = keep(n.sample([3]));
    expect(String(s.device)).toBe('gpu:0');
    await s.values();
    n.dispose();
  });

  it('a layer built after setDefaultDevice has its parameters and buffers there', () => {
    torch.setDefaultDevice('gpu:0');
    const lin = new torch.nn.Linear(3, 2), bn = new torch.nn.BatchNorm1d(2), cpuLin = new torch.nn.Linear(3, 2, { device: 'cpu' });
    const all = [...lin.parameters(), ...bn.parameters(), ...bn.buffers()];
    expect(all.map((p) => String(p.device))).toEqual(all.map(() => 'gpu:0'));
    expect(cpuLin.parameters().map((p) => String(p.device))).toEqual(['cpu', 'cpu']);
    [...all, ...cpuLin.parameters()].forEach((t) => t.dispose());
  });

  it('an nn.Linear built after setDefaultDevice(gpu:0) trains one step as the same model does on the cpu', async () => {
    const step = async (device: string) => {
      torch.setDefaultDevice(device);
      torch.manualSeed(5);
      const model = new torch.nn.Linear(4, 3);
      const x = torch.tensor([[0.5, -1, 2, 0.25], [1.5, 0, -0.5, 1]]), y = torch.tensor([[1, 0, -1], [0.5, 0.5, 0]]);
      const opt = new torch.optim.SGD(model.parameters(), { lr: 0.1 });
      const loss = torch.tidy(() => torch.F.mseLoss(model.call(x), y));
      loss.backward();
      opt.step();
      const devs = [...model.parameters(), x, loss].map((t) => String(t.device));
      const w = [...(await model.weight.values()), ...(await model.bias!.values())] as number[];
      const l = (await loss.item()) as number;
      opt.zeroGrad();
      [...model.parameters(), x, y, loss].forEach((t) => t.dispose());
      torch.setDefaultDevice(null);
      return { devs, w, l };
    };
    const cpu = await step('cpu'), gpu = await step('gpu:0');
    expect(gpu.devs).toEqual(gpu.devs.map(() => 'gpu:0'));
    expect(cpu.devs).toEqual(cpu.devs.map(() => 'cpu'));
    expect(gpu.l).toBeCloseTo(cpu.l, 5);
    gpu.w.forEach((v, i) => expect(v, `parameter element ${i}`).toBeCloseTo(cpu.w[i], 5));
  });
});
