/**
 * Issue 31's `autograd.Function` (PyTorch's custom-op tutorial: Exp, and a two-input op with a
 * non-tensor argument) and `autograd.gradcheck`, on cpu and gpu:0.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

const { autograd } = torch;
logicalGpuSuite(1, 'surface-autograd');

class Exp extends autograd.Function {
  static override forward(ctx: torch.autograd.FunctionCtx, i: torch.Tensor) {
    const result = i.exp();
    ctx.saveForBackward(result);
    return result;
  }

  static override backward(ctx: torch.autograd.FunctionCtx, gradOutput: torch.Tensor) {
    const [result] = ctx.savedTensors;
    return gradOutput.mul(result!);
  }
}

/** `a·x + y·k` with a number k: the gradient for k is null, as PyTorch requires for a non-tensor. */
class MulAdd extends autograd.Function {
  static override forward(ctx: torch.autograd.FunctionCtx, a: torch.Tensor, x: torch.Tensor, k: number) {
    ctx.saveForBackward(a, x);
    ctx.k = k;
    return torch.tidy(() => a.mul(x).add(x.mul(k)));
  }

  static override backward(ctx: torch.autograd.FunctionCtx, g: torch.Tensor) {
    const [a, x] = ctx.savedTensors as torch.Tensor[];
    expect(ctx.needsInputGrad).toEqual([true, true, false]);
    return [g.mul(x), torch.tidy(() => g.mul(a.add(ctx.k as number))), null];
  }
}

describe.each(['cpu', 'gpu:0'])('autograd.Function on %s', (device) => {
  it('Exp: forward value, backward through the saved output', async () => {
    const x = torch.tensor([0, 1, -2], { device, dtype: 'float32' }).requiresGrad_();
    const y = Exp.apply<torch.Tensor>(x);
    expect(y.requiresGrad).toBe(true);
    const loss = y.sum();
    loss.backward();
    const want = [1, Math.E, Math.exp(-2)];
    ((await y.tolist()) as number[]).forEach((v, i) => expect(v).toBeCloseTo(want[i], 5));
    ((await x.grad!.tolist()) as number[]).forEach((v, i) => expect(v).toBeCloseTo(want[i], 5));
    expect(() => loss.backward()).toThrow('Trying to backward through the graph a second time');
    [x.grad!, x, y, loss].forEach((t) => t.dispose());
  });

  it('several inputs, a non-tensor argument, and gradcheck', async () => {
    const a = torch.tensor([0.5, -1.5], { device, dtype: 'float32' }).requiresGrad_(), x = torch.tensor([2, 3], { device, dtype: 'float32' }).requiresGrad_();
    const y = MulAdd.apply<torch.Tensor>(a, x, 3);
    const loss = y.sum();
    loss.backward();
    expect(await a.grad!.tolist()).toEqual([2, 3]);
    expect(await x.grad!.tolist()).toEqual([3.5, 1.5]);
    expect(await autograd.gradcheck((p, q) => MulAdd.apply(p, q, 3), [a, x])).toBe(true);
    expect(await autograd.gradcheck((p) => Exp.apply(p), a)).toBe(true);
    [a.grad!, x.grad!, a, x, y, loss].forEach((t) => t.dispose());
  });

  it('gradcheck finds a wrong backward; a wrong number of gradients raises', async () => {
    class Wrong extends autograd.Function {
      static override forward(_ctx: torch.autograd.FunctionCtx, x: torch.Tensor) {
        return x.mul(x);
      }

      static override backward(_ctx: torch.autograd.FunctionCtx, g: torch.Tensor) {
        return g.mul(3);
      }
    }
    class TooMany extends autograd.Function {
      static override forward(_ctx: torch.autograd.FunctionCtx, x: torch.Tensor) {
        return x.mul(2);
      }

      static override backward(_ctx: torch.autograd.FunctionCtx, g: torch.Tensor) {
        return [g, g];
      }
    }
    const x = torch.tensor([0.5, 2], { device, dtype: 'float32' }).requiresGrad_();
    expect(await autograd.gradcheck((p) => Wrong.apply(p), x, { raiseException: false })).toBe(false);
    await expect(autograd.gradcheck((p) => Wrong.apply(p), x)).rejects.toThrow('Jacobian mismatch for output 0 with respect to input 0');
    const y = TooMany.apply<torch.Tensor>(x), s = y.sum();
    expect(() => s.backward()).toThrow('function TooManyBackward returned an incorrect number of gradients (expected 1, got 2)');
    [x, y, s].forEach((t) => t.dispose());
  });
});
