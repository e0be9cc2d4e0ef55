// The no-tidy loop at the full length (issue 31): a tiny GPT trained as PyTorch code is,
// with no tidy or dispose, under a small memory budget: 10,000 steps on cpu and 2,000 on gpu:0.
// Reports the time per step, the forced collections (ts/runtime/collect.ts) and their cost, and
// checks what test/habits/no-tidy-loop.test.ts checks on fewer steps: no OutOfMemoryError, the
// loss falls, memoryAllocated flat after warm-up (the peak of the last half no higher than the
// peak of steps 100..half, plus 64 KiB). For comparison, the same step wrapped in tidy.
// Run: node bench/no-tidy-loop.mjs [--cpu-steps 10000] [--gpu-steps 2000] [--budget-mib 32] [--json FILE]
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import * as torch from '../dist/webtorch.js';
import { TinyGpt, countingBatch, step } from '../test/habits/fixtures/tiny-gpt.mjs';

const { values: args } = parseArgs({
  options: { 'cpu-steps': { type: 'string', default: '10000' }, 'gpu-steps': { type: 'string', default: '2000' }, 'budget-mib': { type: 'string', default: '32' }, json: { type: 'string' } },
});
const MiB = 1024 ** 2, GiB = 1024 * MiB, budget = Number(args['budget-mib']) * MiB;
torch.gpu.configure({ allowSoftware: true });
const runs = [['cpu', Number(args['cpu-steps'])], ...((await torch.gpu.isAvailable()) ? [['gpu:0', Number(args['gpu-steps'])]] : [])].filter(([, n]) => n > 0);
const results = [];
let failed = false;

async function train(dev, steps, tidy) {
  torch.manualSeed(0);
  torch.gpu.setPerProcessMemoryFraction(budget / (dev === 'cpu' ? 2 * GiB : 8 * GiB), dev);
  const model = new TinyGpt().to(dev);
  const opt = new torch.optim.AdamW(model.parameters(), { lr: 1e-2 });
  const { x, y } = countingBatch(4, 8, 16, dev);
  const allocated = [], losses = [], before = torch._collectorStats();
  const t0 = performance.now();
  for (let s = 0; s < steps; s++) {
    const loss = tidy ? torch.tidy(() => step(model, opt, x, y)) : step(model, opt, x, y);
    allocated.push(torch.gpu.memoryAllocated(dev));
    if (s % 100 === 0 || s === steps - 1) losses.push(await loss.item());
    if (tidy) loss.dispose();
  }
  await torch.gpu.synchronize(dev);
  const ms = performance.now() - t0, after = torch._collectorStats();
  torch.gpu.setPerProcessMemoryFraction(1, dev);
  const half = steps >> 1;
  const early = Math.max(...allocated.slice(100, half)), late = Math.max(...allocated.slice(half));
  const collections = after.collections - before.collections, gcMs = after.ms - before.ms;
  return {
    device: dev, tidy, steps, msPerStep: ms / steps, firstLoss: losses[0], lastLoss: losses[losses.length - 1],
    peakAllocated: Math.max(...allocated), early, late, flat: late <= early + 64 * 1024,
    collections, gcMsEach: collections ? gcMs / collections : 0, gcMaxMs: after.maxMs, gcShareOfTime: gcMs / ms,
    stepsPerCollection: collections ? steps / collections : Infinity,
  };
}

for (const [dev, steps] of runs) {
  for (const tidy of [false, true]) {
    const r = await train(dev, tidy ? Math.min(steps, 1000) : steps, tidy);
    results.push(r);
    const ok = r.flat && r.lastLoss < r.firstLoss / 10;
    if (!ok) failed = true;
    console.log(
      `${dev} ${tidy ? 'tidy   ' : 'no tidy'} ${r.steps} steps: ${r.msPerStep.toFixed(2)} ms/step, loss ${r.firstLoss.toFixed(3)} → ${r.lastLoss.toExponential(2)}, ` +
        `peak allocated ${(r.peakAllocated / MiB).toFixed(2)} MiB (steps 100..half ${(r.early / MiB).toFixed(2)}, last half ${(r.late / MiB).toFixed(2)}), ` +
        `${r.collections} forced collections (${r.gcMsEach.toFixed(1)} ms each, max ${r.gcMaxMs.toFixed(1)}; one every ${r.stepsPerCollection.toFixed(0)} steps; ${(100 * r.gcShareOfTime).toFixed(1)}% of the time)${ok ? '' : '  FAILED'}`,
    );
  }
}
if (args.json) writeFileSync(args.json, JSON.stringify(results, null, 2));
await torch.shutdown();
process.exit(failed ? 1 : 0);
