/**
 * Seed 003, the torch.cuda overview's "Mixed Precision Training" section, line by line
 * (snake_case → camelCase; `torch.cuda` is `torch.gpu`, kept as the seed writes it; `with
 * autocast():` as a callback; `await` at `scaler.step`, its sync point). The seed leaves
 * `MyModel`, `num_epochs`, `dataloader` and `criterion` to the reader: a small classifier, five
 * epochs of random data, cross entropy. `torch.tidy` frees what the example leaves to the garbage
 * collector (the batch on the CPU, the output, the scaled loss). Also its "TF32 and BF16 Support"
 * section's bf16 part (TF32 is not webtorch's: WebGPU has no TF32 switch).
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { habitsSetup } from './setup.js';

habitsSetup();

class MyModel extends torch.nn.Module {
  fc1 = new torch.nn.Linear(8, 16);
  fc2 = new torch.nn.Linear(16, 3);
  forward(x: torch.Tensor) {
    return this.fc2.call(torch.relu(this.fc1.call(x)));
  }
}

describe('torch.cuda overview: mixed precision training', () => {
  it('autocast and GradScaler, as the seed writes them', async () => {
    torch.manualSeed(0);
    const numEpochs = 5;
    const data = new torch.data.TensorDataset(...torch.tidy(() => [torch.randn([32, 8]), torch.arange(32).remainder(3)]));
    const dataloader = new torch.data.DataLoader(data, { batchSize: 8 });
    const criterion = new torch.nn.CrossEntropyLoss();
    const losses: number[] = [];

    const { autocast, GradScaler } = torch.cuda.amp;

    const model = new MyModel().cuda();
    const optimizer = new torch.optim.Adam(model.parameters());
    const scaler = new GradScaler();

    for (let epoch = 0; epoch < numEpochs; epoch++) {
      for (let [input, target] of dataloader) {
        const batch = [input, target];
        input = input.cuda();
        target = target.cuda();

        optimizer.zeroGrad();

        // Automatic mixed precision
        const loss = autocast(() => torch.tidy(() => {
          const output = model(input);
          expect(output.dtype).toBe('float16'); // linear layers run in float16
          return criterion(output, target);
        }));
        expect(loss.dtype).toBe('float32');     // losses in float32

        // Scale loss and backward
        torch.tidy(() => scaler.scale(loss).backward());
        await scaler.step(optimizer);
        scaler.update();

        losses.push((await loss.item()) as number);
        for (const t of [input, target, loss, ...batch]) t.dispose();
      }
    }
    expect(await scaler.getScale()).toBe(65536);  // no inf: the scale stays (growth only after 2000 steps)
    expect(model.fc1.weight.dtype).toBe('float32');
    expect(model.fc1.weight.grad!.dtype).toBe('float32');
    const epochMean = (e: number) => losses.slice(e * 4, e * 4 + 4).reduce((a, b) => a + b) / 4;
    expect(epochMean(numEpochs - 1)).toBeLessThan(epochMean(0));
    optimizer.zeroGrad();
    for (const st of optimizer.state.values()) for (const v of Object.values(st)) if (v instanceof torch.Tensor) v.dispose();
    for (const p of model.parameters()) p.dispose();
    for (const t of data.tensors) t.dispose();
    scaler.dispose();
  });

  it('TF32 and BF16 support: is_bf16_supported', async () => {
    // Check BF16 support
    if (torch.cuda.isBf16Supported()) {
      const tensorBf16 = torch.randn([100, 100], { dtype: 'bfloat16', device: 'cuda' });
      expect(tensorBf16.dtype).toBe('bfloat16');
      expect(String(tensorBf16.device)).toBe('gpu:0');
      tensorBf16.dispose();
    } else {
      throw new Error('bfloat16 is supported (as 16-bit storage) on every WebGPU device');
    }
  });
});
