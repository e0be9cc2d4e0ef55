/**
 * `torch.nn.init` (nanoGPT's `_init_weights`: `normal_(w, {mean: 0, std: 0.02})`, `zeros_(b)`):
 * in place on parameters that require grad, on cpu and gpu:0, with PyTorch's bounds, gains and errors.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

const { nn } = torch;
const init = nn.init;
logicalGpuSuite(1, 'surface-init');

const stats = (v: number[]) => {
  const mean = v.reduce((a, b) => a + b, 0) / v.length;
  return { mean, std: Math.sqrt(v.reduce((a, b) => a + (b - mean) ** 2, 0) / v.length), min: Math.min(...v), max: Math.max(...v) };
};

describe.each(['cpu', 'gpu:0'])('nn.init on %s', (device) => {
  it('normal_, zeros_, ones_, constant_ write parameters in place (grad mode off)', async () => {
    const lin = new nn.Linear(64, 32).to(device);
    const w = lin.weight;
    expect(init.normal_(w, { mean: 0, std: 0.02 })).toBe(w);
    init.zeros_(lin.bias!);
    const s = stats(((await w.tolist()) as number[][]).flat());
    expect(Math.abs(s.mean)).toBeLessThan(0.003);
    expect(Math.abs(s.std - 0.02)).toBeLessThan(0.002);
    expect(await lin.bias!.tolist()).toEqual(Array(32).fill(0));
    expect(w.requiresGrad && w.isLeaf).toBe(true);
    init.constant_(lin.bias!, 0.5);
    expect(await lin.bias!.tolist()).toEqual(Array(32).fill(0.5));
    init.ones_(lin.bias!);
    expect(await lin.bias!.tolist()).toEqual(Array(32).fill(1));
    lin.parameters().forEach((p) => p.dispose());
  });

  it('xavier and kaiming bounds; trunc_normal_ stays in [a, b]', async () => {
    const w = torch.empty([50, 30, 2], { device });
    init.xavierUniform_(w, { gain: init.calculateGain('relu') });
    const bound = Math.SQRT2 * Math.sqrt(6 / (60 + 100));
    let s = stats(((await w.tolist()) as number[][][]).flat(2));
    expect(s.max).toBeLessThanOrEqual(bound);
    expect(s.min).toBeGreaterThanOrEqual(-bound);
    expect(s.max).toBeGreaterThan(0.9 * bound);
    init.kaimingNormal_(w, { mode: 'fan_out', nonlinearity: 'relu' });
    s = stats(((await w.tolist()) as number[][][]).flat(2));
    expect(Math.abs(s.std - Math.SQRT2 / Math.sqrt(100)) / (Math.SQRT2 / 10)).toBeLessThan(0.06);
    init.kaimingUniform_(w, Math.sqrt(5));
    s = stats(((await w.tolist()) as number[][][]).flat(2));
    expect(s.max).toBeLessThanOrEqual(1 / Math.sqrt(60) + 1e-7);
    init.truncNormal_(w, { std: 1, a: -0.5, b: 0.5 });
    s = stats(((await w.tolist()) as number[][][]).flat(2));
    expect(s.max).toBeLessThanOrEqual(0.5);
    expect(s.min).toBeGreaterThanOrEqual(-0.5);
    w.dispose();
  });
});

describe('nn.init refusals', () => {
  it('fan of a 1-D tensor, unknown nonlinearity and mode, gains', () => {
    const v = torch.zeros([3]);
    expect(() => init.xavierUniform_(v)).toThrow('Fan in and fan out can not be computed for tensor with fewer than 2 dimensions');
    expect(() => init.calculateGain('swish' as never)).toThrow('Unsupported nonlinearity swish');
    const w = torch.zeros([3, 3]);
    expect(() => init.kaimingUniform_(w, { mode: 'fan_avg' as never })).toThrow('Mode fan_avg not supported, please use one of fan_in, fan_out');
    expect(() => init.normal_(w, { sd: 1 } as never)).toThrow("unexpected keyword argument 'sd'");
    expect(init.calculateGain('tanh')).toBeCloseTo(5 / 3, 12);
    expect(init.calculateGain('leaky_relu', 0.2)).toBeCloseTo(Math.sqrt(2 / 1.04), 12);
    [v, w].forEach((t) => t.dispose());
  });
});
