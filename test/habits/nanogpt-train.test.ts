/**
 * nanoGPT's train.py, translated into camelCase and `await` (issue 31), on a character-level text
 * as `data/shakespeare_char/prepare.py` makes it: `get_batch` from the token array, `estimate_loss`
 * (`model.eval()`, `torch.no_grad()`, `eval_iters` batches per split), `get_lr` (linear warm-up,
 * cosine decay to `min_lr`), the learning rate set on every param group each iteration, gradient
 * accumulation over `gradient_accumulation_steps` micro-steps, `torch.amp.autocast` with a
 * `GradScaler` (enabled only for float16, as train.py has it), `clip_grad_norm_` after
 * `scaler.unscale_`, `zero_grad(set_to_none=True)`, the checkpoint dict saved with `torch.save`
 * and training resumed from it with `torch.load`, then model.py's `generate` sampling from it.
 * The model is examples/models/nanogpt.mjs (model.py; its lm_head is not tied to wte).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';
// @ts-expect-error: a JavaScript module without types
import { gptOptimizer, makeGpt } from '../../examples/models/nanogpt.mjs';

logicalGpuSuite(1, 'nanoGPT train.py');

// data/shakespeare_char/prepare.py: the characters of the text are the vocabulary
const TEXT = 'First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\nFirst Citizen:\nYou are all resolved rather to die than to famish?\n\n'.repeat(8);
const chars = [...new Set(TEXT)].sort();
const stoi = new Map(chars.map((c, i) => [c, i]));
const encode = (s: string) => [...s].map((c) => stoi.get(c)!);
const decode = (l: number[]) => l.map((i) => chars[i]).join('');
const data = encode(TEXT), n = data.length;
const trainData = Uint16Array.from(data.slice(0, Math.floor(n * 0.9))), valData = Uint16Array.from(data.slice(Math.floor(n * 0.9)));

describe.each(['cpu', 'gpu:0'])('nanoGPT train.py on %s', (device) => {
  it('trains with warm-up and cosine decay, accumulation, autocast and GradScaler, clipping; checkpoints, resumes and samples', async () => {
    // config/train_shakespeare_char.py, shrunk to a test
    const [gradientAccumulationSteps, batchSize, blockSize] = [2, 4, 16];
    const [nLayer, nHead, nEmbd, dropout, bias] = [2, 2, 32, 0.0, false];
    const [learningRate, maxIters, weightDecay, beta1, beta2, gradClip] = [1e-2, 40, 1e-1, 0.9, 0.99, 1.0];
    const [decayLr, warmupIters, lrDecayIters, minLr] = [true, 5, 40, 1e-3];
    const [evalInterval, evalIters] = [20, 2];
    // dtype = 'bfloat16' if cuda and is_bf16_supported() else 'float16': float16 here, so the scaler runs
    const dtype = 'float16';
    const deviceType = device.startsWith('gpu') ? 'gpu' : 'cpu';
    torch.manualSeed(1337);
    const dir = mkdtempSync(join(tmpdir(), 'nanogpt-'));

    // def get_batch(split): ix = torch.randint(len(data) - block_size, (batch_size,)); x, y = the rows
    // starting there, moved to the device. Reading ix is a sync point here (await), as `for i in ix` is.
    async function getBatch(split: 'train' | 'val'): Promise<[torch.Tensor, torch.Tensor]> {
      const d = split === 'train' ? trainData : valData;
      const ix = torch.randint(d.length - blockSize, [batchSize]);
      const rows = (await ix.tolist()) as number[];
      ix.dispose();
      return torch.tidy(() => {
        const x = torch.stack(rows.map((i) => torch.tensor(Array.from(d.subarray(i, i + blockSize)), { dtype: 'int64' })));
        const y = torch.stack(rows.map((i) => torch.tensor(Array.from(d.subarray(i + 1, i + 1 + blockSize)), { dtype: 'int64' })));
        return [x.to(device), y.to(device)];
      });
    }

    const modelArgs = { nLayer, nHead, nEmbd, blockSize, bias, vocabSize: chars.length, dropout };
    let model = makeGpt(torch, modelArgs).to(device);
    // scaler = torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))
    const scaler = new torch.amp.GradScaler(deviceType, { enabled: dtype === 'float16' });
    // optimizer = model.configure_optimizers(weight_decay, learning_rate, (beta1, beta2), device_type)
    let optimizer = gptOptimizer(torch, model, { lr: learningRate, weightDecay, betas: [beta1, beta2] });
    // ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, dtype=ptdtype)
    const ctx = <T>(fn: () => T): T => (deviceType === 'cpu' ? fn() : torch.autocast(deviceType, { dtype }, fn));

    // @torch.no_grad() def estimate_loss():
    async function estimateLoss(): Promise<{ train: number; val: number }> {
      const out = { train: 0, val: 0 };
      model.eval();
      for (const split of ['train', 'val'] as const) {
        let sum = 0;
        for (let k = 0; k < evalIters; k++) {
          const [X, Y] = await getBatch(split);
          const loss = torch.noGrad(() => torch.tidy(() => ctx(() => model(X, Y)[1])));
          sum += (await loss.item()) as number;
          [X, Y, loss].forEach((t) => t.dispose());
        }
        out[split] = sum / evalIters;
      }
      model.train();
      return out;
    }

    // def get_lr(it):
    function getLr(it: number): number {
      if (it < warmupIters) return (learningRate * (it + 1)) / (warmupIters + 1);
      if (it > lrDecayIters) return minLr;
      const decayRatio = (it - warmupIters) / (lrDecayIters - warmupIters);
      const coeff = 0.5 * (1.0 + Math.cos(Math.PI * decayRatio));
      return minLr + coeff * (learningRate - minLr);
    }

    /** The training loop from `iter_num` to `until`; returns the last loss and the evaluations. */
    async function train(iterNum: number, until: number, bestValLoss: number) {
      const evals: { train: number; val: number }[] = [];
      let [X, Y] = await getBatch('train');
      let lossf = NaN;
      while (true) {
        const lr = decayLr ? getLr(iterNum) : learningRate;
        for (const paramGroup of optimizer.paramGroups) paramGroup.lr = lr;
        if (iterNum % evalInterval === 0) {
          const losses = await estimateLoss();
          evals.push(losses);
          if (losses.val < bestValLoss) bestValLoss = losses.val;
          if (iterNum > 0) {
            const checkpoint = { model: model.stateDict(), optimizer: optimizer.stateDict(), model_args: modelArgs, iter_num: iterNum, best_val_loss: bestValLoss };
            await torch.save(checkpoint, join(dir, 'ckpt.pt'));
          }
        }
        let last: torch.Tensor | null = null;
        for (let microStep = 0; microStep < gradientAccumulationSteps; microStep++) {
          last?.dispose();
          last = torch.tidy(() => {
            const loss = ctx(() => model(X, Y)[1]).div(gradientAccumulationSteps);
            scaler.scale(loss).backward();
            return loss;
          });
          [X, Y].forEach((t) => t.dispose());
          [X, Y] = await getBatch('train');
        }
        if (gradClip !== 0.0) {
          scaler.unscale_(optimizer);
          torch.nn.utils.clipGradNorm_(model.parameters(), gradClip).dispose();
        }
        await scaler.step(optimizer);
        scaler.update();
        optimizer.zeroGrad(true);
        lossf = ((await last!.item()) as number) * gradientAccumulationSteps;
        last!.dispose();
        iterNum += 1;
        if (iterNum > until) break;
      }
      [X, Y].forEach((t) => t.dispose());
      return { lossf, evals, bestValLoss, iterNum };
    }

    const first = await train(0, maxIters / 2, 1e9);
    expect(first.evals.length).toBe(2);
    // the character model learns the repeated text: the loss falls well below ln(vocab)
    expect(first.evals[0].train).toBeCloseTo(Math.log(chars.length), 0);
    expect(first.evals[1].train).toBeLessThan(0.75 * first.evals[0].train);
    expect(await scaler.getScale()).toBeGreaterThan(0);

    // init_from == 'resume': a fresh model and optimizer from the checkpoint, and the run goes on
    const checkpoint = await torch.load(join(dir, 'ckpt.pt'), { mapLocation: device });
    expect(checkpoint.iter_num).toBe(evalInterval);
    expect(checkpoint.model_args).toEqual(modelArgs);
    const resumed = makeGpt(torch, checkpoint.model_args).to(device);
    resumed.loadStateDict(checkpoint.model);
    for (const t of Object.values(checkpoint.model) as torch.Tensor[]) t.dispose();
    for (const s of optimizer.state.values()) for (const v of Object.values(s)) if (v instanceof torch.Tensor) v.dispose();
    for (const p of model.parameters()) [p.grad, p].forEach((t) => t?.dispose());
    model = resumed;
    optimizer = gptOptimizer(torch, model, { lr: learningRate, weightDecay, betas: [beta1, beta2] });
    optimizer.loadStateDict(checkpoint.optimizer);
    for (const s of Object.values(checkpoint.optimizer.state ?? {}) as Record<string, unknown>[]) for (const v of Object.values(s)) if (v instanceof torch.Tensor) v.dispose();
    const second = await train(checkpoint.iter_num, maxIters, checkpoint.best_val_loss);
    expect(second.evals.length).toBe(2); // at iterations 20 and 40
    expect(second.evals[1].train).toBeLessThan(0.75 * first.evals[0].train);
    expect(second.bestValLoss).toBeLessThanOrEqual(checkpoint.best_val_loss);

    // model.py's generate, from the resumed model
    model.eval();
    const start = torch.tensor([encode('F')], { dtype: 'int64', device });
    const y = model.generate(start, 12, 0.8, 5);
    const sample = decode(((await y.tolist()) as number[][])[0]);
    expect(sample.length).toBe(13);
    expect(sample[0]).toBe('F');
    expect([...sample].every((c) => stoi.has(c))).toBe(true);
    [start, y].forEach((t) => t.dispose());

    for (const s of optimizer.state.values()) for (const v of Object.values(s)) if (v instanceof torch.Tensor) v.dispose();
    for (const p of model.parameters()) [p.grad, p].forEach((t) => t?.dispose());
    scaler.dispose();
    rmSync(dir, { recursive: true, force: true });
  }, 180_000);
});
