// Reserved and allocated memory over a training-like loop (issue 3): an MLP trained for a few
// steps on each device, sampling the caching allocator after every step. A steady state
// (allocated back to the same value after each step, reserved flat) means no leak and full reuse.
// Run: node bench/memory-loop.mjs [--steps N] [--json FILE]   (after npm run build)
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import * as torch from '../dist/webtorch.js';

const { values: args } = parseArgs({ options: { steps: { type: 'string', default: '20' }, json: { type: 'string' } } });
const steps = Number(args.steps);
torch.gpu.configure({ allowSoftware: true }); // any adapter, lavapipe too
await torch.gpu.init();
const devices = ['cpu', ...(await torch.gpu.isAvailable() ? ['gpu:0'] : [])];
const MiB = 1024 * 1024, results = [];
for (const d of devices) {
  torch.manualSeed(0);
  const model = new torch.nn.Sequential(new torch.nn.Linear(784, 512), new torch.nn.ReLU(), new torch.nn.Linear(512, 10)).to(d);
  const opt = new torch.optim.Adam(model.parameters(), { lr: 1e-3 });
  const X = torch.randn([128, 784], { device: d }), y = torch.tidy(() => torch.arange(128, undefined, 1, { device: d }).remainder(10));
  const samples = [];
  for (let s = 0; s < steps; s++) {
    const loss = torch.tidy(() => torch.F.crossEntropy(model.call(X), y));
    opt.zeroGrad();
    loss.backward();
    opt.step();
    loss.dispose();
    await torch.gpu.synchronize(d);
    samples.push({ step: s + 1, allocated: torch.gpu.memoryAllocated(d), reserved: torch.gpu.memoryReserved(d) });
  }
  const stats = torch.gpu.memoryStats(d);
  const r = {
    device: d, steps, first: samples[0], last: samples[samples.length - 1],
    maxAllocated: torch.gpu.maxMemoryAllocated(d), maxReserved: torch.gpu.maxMemoryReserved(d),
    allocations: stats['allocation.all.allocated'], segmentsCreated: stats['segment.all.allocated'], samples,
  };
  results.push(r);
  console.log(`${d}: after step 1 allocated ${(r.first.allocated / MiB).toFixed(2)} MiB, reserved ${(r.first.reserved / MiB).toFixed(2)} MiB; ` +
    `after step ${steps} allocated ${(r.last.allocated / MiB).toFixed(2)} MiB, reserved ${(r.last.reserved / MiB).toFixed(2)} MiB; ` +
    `peak allocated ${(r.maxAllocated / MiB).toFixed(2)} MiB, peak reserved ${(r.maxReserved / MiB).toFixed(2)} MiB; ` +
    `${r.allocations} blocks handed out from ${r.segmentsCreated} segments`);
  opt.zeroGrad();
  for (const s of opt.state.values()) for (const v of Object.values(s)) if (typeof v === 'object') v.dispose();
  [...model.parameters(), X, y].forEach((t) => t.dispose());
}
if (args.json) writeFileSync(args.json, JSON.stringify({ date: new Date().toISOString(), results }, null, 1));
await torch.shutdown();
