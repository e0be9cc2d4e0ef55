/**
 * torchvision's ResNet-18 (`torchvision/models/resnet.py`: BasicBlock, `_make_layer`, the 7×7 stem
 * and 3×3 max pool, `nn.ReLU(inplace=True)`, `out += identity`), translated into camelCase, on cpu
 * and gpu:0 (issue 31). The model is examples/models/resnet18.mjs (shared with bench/models.mjs).
 *
 * Against PyTorch: test/fixtures/make_resnet18.py writes the same network at width 4 (torchvision's
 * is 64; the state dict stays at 220 KB), its initial state dict as a `.pt`, and for a batch of 4
 * images of 64×64 the train-mode logits, loss and gradients, the logits after one SGD step
 * (momentum, weight decay) and the batch norms' running stats, and the eval-mode logits. Here the
 * `.pt` is loaded with `torch.load` and every figure compared.
 *
 * At torchvision's width (11.2M parameters) two SGD steps run on each device on a fixed batch of
 * 32×32 images and the loss goes down.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { habitsSetup } from './setup.js';
// @ts-expect-error: a JavaScript module without types
import { makeResNet18 } from '../../examples/models/resnet18.mjs';

const { nn, F } = torch;
habitsSetup();

const FIX = new URL('../fixtures/resnet/', import.meta.url);
const G = JSON.parse(readFileSync(new URL('resnet18.json', FIX), 'utf8')) as {
  width: number; params: number; keys: string[]; x: { shape: number[] }; y: number[]; logits: number[]; loss: number;
  grads: Record<string, number[]>; after_step: number[]; buffers_after_two_forwards: Record<string, number[]>; eval: number[];
};

// The model: torchvision's resnet.py in camelCase (examples/models/resnet18.mjs, which bench/models.mjs times too).
const resnet18 = (numClasses = 1000, width = 64): torch.nn.Module => makeResNet18(torch, numClasses, width);

/** The fixture's input: sin(0.37·i) in float64, rounded to float32 (make_resnet18.py makes the same). */
function images(shape: number[]): Float32Array {
  const n = shape.reduce((a, b) => a * b, 1);
  return Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37));
}

/** Largest |got - want| relative to the largest |want| (plus an absolute floor). */
function closeTo(got: ArrayLike<number>, want: number[], tol: number, what: string): void {
  expect(got.length, `${what}: length`).toBe(want.length);
  const scale = Math.max(1e-3, ...want.map(Math.abs));
  let worst = 0, at = 0;
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(Number(got[i]) - want[i]);
    if (d > worst) [worst, at] = [d, i];
  }
  expect(worst / scale, `${what}: worst at [${at}]: ${got[at]} against PyTorch's ${want[at]}`).toBeLessThan(tol);
}

const DEVICES = ['cpu', 'gpu:0'];

/** Disposes a model's parameters, gradients and buffers, an optimizer's state and `tensors`. */
function free(model: torch.nn.Module, opt: torch.optim.Optimizer, tensors: torch.Tensor[]): void {
  tensors.forEach((t) => t.dispose());
  for (const s of opt.state.values()) for (const v of Object.values(s)) if (v instanceof torch.Tensor) v.dispose();
  for (const p of model.parameters()) [p.grad, p].forEach((t) => t?.dispose());
  for (const [, b] of model.namedBuffers()) b.dispose();
}

describe("torchvision's ResNet-18", () => {
  it.each(DEVICES)("at width 4 with PyTorch's weights on %s: logits, loss, gradients, an SGD step, running stats, eval", async (device) => {
    const model = resnet18(10, G.width).to(device);
    expect(model.parameters().reduce((a, p) => a + p.numel(), 0)).toBe(G.params);
    expect(Object.keys(model.stateDict())).toEqual(G.keys);
    const sd = await torch.load(new URL(`resnet18-w${G.width}.pt`, FIX).pathname, { mapLocation: device });
    model.loadStateDict(sd);
    for (const t of Object.values(sd)) (t as torch.Tensor).dispose();
    const x = torch.tidy(() => torch.tensor(images(G.x.shape), { device }).reshape(G.x.shape));
    const y = torch.tensor(G.y, { dtype: 'int64', device });
    const opt = new torch.optim.SGD(model.parameters(), { lr: 0.1, momentum: 0.9, weightDecay: 5e-4 });
    try {
      model.train();
      opt.zeroGrad();
      const [logits, loss] = torch.tidy(() => {
        const out = model(x);
        const l = F.crossEntropy(out, y);
        l.backward();
        return [out, l];
      });
      closeTo(await logits.data(), G.logits, 1e-4, 'train-mode logits');
      expect(Math.abs((await loss.item()) - G.loss)).toBeLessThan(1e-5);
      const named = Object.fromEntries(model.namedParameters());
      for (const [name, want] of Object.entries(G.grads)) closeTo(await named[name].grad!.data(), want, 1e-3, `${name}.grad`);
      opt.step();
      [logits, loss].forEach((t) => t.dispose());
      const after = torch.tidy(() => torch.noGrad(() => model(x)));
      closeTo(await after.data(), G.after_step, 1e-3, 'logits after one SGD step');
      after.dispose();
      const buffers = Object.fromEntries(model.namedBuffers());
      for (const [name, want] of Object.entries(G.buffers_after_two_forwards)) closeTo(await buffers[name].data(), want, 1e-4, name);
      model.eval();
      const evaluated = torch.tidy(() => torch.noGrad(() => model(x)));
      closeTo(await evaluated.data(), G.eval, 1e-3, 'eval-mode logits');
      evaluated.dispose();
    } finally {
      free(model, opt, [x, y]);
    }
  }, 120_000);

  it.each(DEVICES)("at torchvision's width (11.2M parameters) on %s: two SGD steps on a fixed batch lower the loss", async (device) => {
    torch.manualSeed(0);
    const model = resnet18(10).to(device);
    expect(model.parameters().reduce((a, p) => a + p.numel(), 0)).toBe(11_181_642);
    const x = torch.randn([2, 3, 32, 32], { device }), y = torch.tensor([3, 8], { dtype: 'int64', device });
    const opt = new torch.optim.SGD(model.parameters(), { lr: 0.01, momentum: 0.9 });
    const losses: number[] = [];
    try {
      for (let step = 0; step < 3; step++) {
        const loss = torch.tidy(() => {
          opt.zeroGrad();
          const l = F.crossEntropy(model(x), y);
          l.backward();
          return l;
        });
        opt.step();
        losses.push(await loss.item());
        loss.dispose();
      }
      expect(losses.every(Number.isFinite), String(losses)).toBe(true);
      expect(losses[2], `losses ${losses}`).toBeLessThan(losses[0]);
    } finally {
      free(model, opt, [x, y]);
    }
  }, 300_000);
});
