// Profiles the digits demo's training step (examples/train-digits.mjs) with torch.profiler, the
// way PyTorch's profiler recipe does: a schedule (1 step waiting, 1 warming up, 3 recorded),
// ranges around the forward, backward and optimizer step, the table sorted by GPU time, and
// a Chrome trace that Perfetto (https://ui.perfetto.dev) or chrome://tracing opens.
//
// Run: node examples/profile-digits.mjs [--device cpu|gpu:0] [--trace digits-trace.json] [--memory]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import * as torch from '../dist/webtorch.js';

const { values: args } = parseArgs({
  options: {
    device: { type: 'string' },
    trace: { type: 'string', default: 'digits-trace.json' },
    'batch-size': { type: 'string', default: '64' },
    memory: { type: 'boolean', default: false },
  },
});

await torch.gpu.init();
const device = args.device ? torch.device(args.device) : await torch.tryGpu(0);
torch.manualSeed(0);

// The demo's data: 64 pixel intensities (0..16) and a label per image.
const raw = readFileSync(new URL('../data/digits.u8', import.meta.url));
const n = raw.length / 65;
const pixels = new Float32Array(n * 64), labels = new Int32Array(n);
for (let i = 0; i < n; i++) {
  for (let j = 0; j < 64; j++) pixels[i * 64 + j] = raw[i * 65 + j] / 16;
  labels[i] = raw[i * 65 + 64];
}
const X = torch.tensor(pixels).reshape(n, 64), y = torch.tensor(labels, { dtype: 'int64' });
const loader = new torch.DataLoader(new torch.TensorDataset(X, y), { batchSize: Number(args['batch-size']), shuffle: true });

// The demo's model and optimizer.
class Net extends torch.nn.Module {
  constructor() {
    super();
    this.layers = new torch.nn.Sequential(
      new torch.nn.Linear(64, 128), new torch.nn.ReLU(),
      new torch.nn.Linear(128, 64), new torch.nn.ReLU(),
      new torch.nn.Linear(64, 10),
    );
  }
  forward(x) {
    return this.layers.call(x);
  }
}
const model = new Net().to(device);
const opt = new torch.optim.SGD(model.parameters(), { lr: 0.05, momentum: 0.9 });

const { profile, schedule, ProfilerActivity, recordFunction } = torch.profiler;
const prof = profile({
  activities: [ProfilerActivity.CPU, ProfilerActivity.CUDA],
  schedule: schedule({ wait: 1, warmup: 1, active: 3, repeat: 1 }),
  onTraceReady: async (p) => {
    await p.exportChromeTrace(args.trace);
    console.log(`trace of ${device}'s training steps written to ${args.trace} (open it in https://ui.perfetto.dev)\n`);
  },
  recordShapes: true,
  profileMemory: args.memory,
});

prof.start();
let steps = 0;
for (const [Xb, yb] of loader) {
  if (steps++ === 5) {
    [Xb, yb].forEach((v) => v.dispose());
    break;
  }
  const Xd = Xb.to(device), yd = yb.to(device);
  const loss = recordFunction('forward', () => torch.tidy(() => torch.F.crossEntropy(model(Xd), yd)));
  recordFunction('backward', () => {
    opt.zeroGrad();
    loss.backward();
  });
  recordFunction('optimizer.step', () => opt.step());
  await loss.item();                       // the step's sync point, as the demo's loss readout
  [Xb, yb, Xd, yd, loss].forEach((v) => v.dispose());
  await prof.step();
}
await prof.stop();

console.log(prof.keyAverages().table({ sortBy: 'gpu_time_total', rowLimit: 15 }));
for (const p of model.parameters()) {
  p.grad?.dispose();
  p.dispose();
}
X.dispose();
y.dispose();
await torch.shutdown();
