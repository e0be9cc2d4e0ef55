// Trains a small classifier on the 8×8 handwritten digits (data/digits.u8, 1,797 images from
// scikit-learn's copy of the UCI set), the training loop of PyTorch's GPU notes:
//
//   device = tryGpu(0); model = Net().to(device); opt = SGD(model.parameters(), …)
//   for X, y in loader: X, y = X.to(device), y.to(device); loss = …; backward(); step()
//
// Run: npm run demo [-- --device cpu|gpu:0] [--epochs N]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import * as torch from '../dist/webtorch.js';

const { values: args } = parseArgs({
  options: {
    device: { type: 'string' },
    epochs: { type: 'string', default: '20' },
    'batch-size': { type: 'string', default: '64' },
    lr: { type: 'string', default: '0.05' },
    seed: { type: 'string', default: '0' },
  },
});

const started = performance.now();
await torch.gpu.init();                                   // discovers the WebGPU adapter, if any
const device = args.device ? torch.device(args.device) : await torch.tryGpu(0);
const name = device.type === 'gpu' ? await torch.gpu.getDeviceName(device.index) : 'WebAssembly (SIMD) worker';
console.log(`webtorch digits demo on ${device} (${name})`);
torch.manualSeed(Number(args.seed));

// The data: 64 pixel intensities (0..16) and a label per image.
const raw = readFileSync(new URL('../data/digits.u8', import.meta.url));
const n = raw.length / 65;
const pixels = new Float32Array(n * 64), labels = new Int32Array(n);
for (let i = 0; i < n; i++) {
  for (let j = 0; j < 64; j++) pixels[i * 64 + j] = raw[i * 65 + j] / 16;
  labels[i] = raw[i * 65 + 64];
}
const order = [...Array(n).keys()];
const g = new torch.Generator().manualSeed(1234);
const r = g.words(n);
for (let i = n - 1; i > 0; i--) { const j = r[i] % (i + 1); [order[i], order[j]] = [order[j], order[i]]; }
const nTest = Math.round(n * 0.2);
const pick = (idx) => ({
  X: torch.tensor(Float32Array.from(idx.flatMap((i) => Array.from(pixels.subarray(i * 64, i * 64 + 64))))).reshape(idx.length, 64),
  y: torch.tensor(Int32Array.from(idx.map((i) => labels[i])), { dtype: 'int64' }),
});
const train = pick(order.slice(nTest)), test = pick(order.slice(0, nTest));
console.log(`${n} images: ${n - nTest} for training, ${nTest} for testing`);

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
const opt = new torch.optim.SGD(model.parameters(), { lr: Number(args.lr), momentum: 0.9 });
const epochs = Number(args.epochs);
const sched = new torch.optim.lrScheduler.CosineAnnealingLR(opt, epochs);
const loader = new torch.DataLoader(new torch.TensorDataset(train.X, train.y), { batchSize: Number(args['batch-size']), shuffle: true, numWorkers: 1 });
const testX = test.X.to(device), testY = test.y.to(device);

async function accuracy() {
  model.eval();
  const correct = torch.noGrad(() => torch.tidy(() => model.call(testX).argmax(1).eq(testY).sum()));
  model.train();
  const c = await correct.item();
  correct.dispose();
  return c / nTest;
}

const bars = new cliProgress.MultiBar({
  format: ' epoch {epoch} |{bar}| {value}/{total} batches | loss {loss} | test acc {acc}',
  hideCursor: true, clearOnComplete: false, noTTYOutput: true, notTTYSchedule: 60_000,
}, cliProgress.Presets.shades_classic);
for (let epoch = 1; epoch <= epochs; epoch++) {
  const label = String(epoch).padStart(2);
  const bar = bars.create(loader.length, 0, { epoch: label, loss: '…', acc: '…' });
  let total = torch.zeros([], { device });
  for (const [Xb, yb] of loader) {
    const X = Xb.to(device), y = yb.to(device);
    const loss = torch.tidy(() => torch.F.crossEntropy(model.call(X), y));
    opt.zeroGrad();
    loss.backward();
    opt.step();
    const t = torch.noGrad(() => total.add(loss.detach()));
    total.dispose();
    total = t;
    [Xb, yb, X, y, loss].forEach((v) => v.dispose());
    bar.increment();
  }
  sched.step();
  const mean = (await total.item()) / loader.length;
  total.dispose();
  bar.update(loader.length, { epoch: label, loss: mean.toFixed(4), acc: `${(100 * (await accuracy())).toFixed(1)}%` });
  bar.stop();
}
bars.stop();

const acc = await accuracy();
const seconds = (performance.now() - started) / 1000;
console.log(`\ntest accuracy ${(100 * acc).toFixed(2)}% after ${epochs} epochs in ${seconds.toFixed(1)} s`);
console.log('\ndevice placement:');
for (const [k, p] of model.namedParameters()) console.log(`  ${k.padEnd(18)} [${p.shape.join(', ')}] on ${p.device}`);
console.log(`\n${torch.gpu.memorySummary(device)}`);
await torch.shutdown();
if (acc < 0.95) {
  console.error(`accuracy ${(100 * acc).toFixed(2)}% is below 95%`);
  process.exit(1);
}
