// Mixed precision, a quick comparison: an MLP training step (784-256-256-10, batch 64, SGD) and a
// small CNN step in float32 and under autocast + GradScaler, and square matmuls (512² and 2048² by
// default, `--sizes`) in float32, float16 and bfloat16, on each device. Figures are steps (or
// matmuls) per second, from the caller to the sync point, over a fixed number of iterations after
// a warm-up; a matmul row also gives TFLOP/s. Each GPU's float16 path is printed
// (`getDeviceProperties().f16Path`: 'shader-f16' or 'storage'; `WEBTORCH_F16=storage` forces the
// latter). PyTorch's figures for the same cases come from bench/amp_torch.py (cpu or cuda): with
// `--torch PYTHON` this script runs it after its own runs (webtorch's devices released first) and
// prints PyTorch's figure beside each row (cpu rows beside PyTorch's CPU, gpu rows beside CUDA).
//
// Run: npm run build && node bench/amp.mjs [--devices cpu,gpu:0] [--iters 30] [--sizes 512,2048] [--torch python3]
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import * as torch from '../dist/webtorch.js';

const { values: args } = parseArgs({ options: { devices: { type: 'string', default: 'cpu,gpu:0' }, iters: { type: 'string', default: '30' }, sizes: { type: 'string', default: '512,2048' }, torch: { type: 'string' } } });
const iters = Number(args.iters);
torch.gpu.configure({ allowSoftware: true });
await torch.gpu.init();
const { nn, F } = torch;

/** Per second over `iters` calls of `step` after `warm` of them; `step` returns a tensor to sync on. */
async function rate(step, warm = 5) {
  for (let i = 0; i < warm; i++) { const t = await step(); await t.item(); t.dispose(); }
  const t0 = performance.now();
  let last = null;
  for (let i = 0; i < iters; i++) { last?.dispose(); last = await step(); }
  await last.item();
  last.dispose();
  return iters / ((performance.now() - t0) / 1000);
}

function trainer(dev, makeModel, x, y, amp, dtype) {
  torch.manualSeed(0);
  const model = makeModel().to(dev);
  const opt = new torch.optim.SGD(model.parameters(), { lr: 0.01 });
  const scaler = new torch.amp.GradScaler(dev.startsWith('gpu') ? 'gpu' : 'cpu', { enabled: amp });
  const type = dev.startsWith('gpu') ? 'gpu' : 'cpu';
  const step = async () => {
    opt.zeroGrad();
    const loss = torch.autocast(type, { enabled: amp, dtype }, () => torch.tidy(() => F.crossEntropy(model.call(x), y)));
    torch.tidy(() => scaler.scale(loss).backward());
    await scaler.step(opt);
    scaler.update();
    return loss;
  };
  const free = () => {
    opt.zeroGrad();
    scaler.dispose();
    for (const st of opt.state.values()) for (const v of Object.values(st)) if (v instanceof torch.Tensor) v.dispose();
    model.parameters().forEach((p) => p.dispose());
  };
  return { step, free };
}

const mlp = () => new nn.Sequential(new nn.Linear(784, 256), new nn.ReLU(), new nn.Linear(256, 256), new nn.ReLU(), new nn.Linear(256, 10));
const cnn = () => new nn.Sequential(new nn.Conv2d(1, 8, 3, { padding: 1 }), new nn.ReLU(), new nn.MaxPool2d(2), new nn.Conv2d(8, 16, 3, { padding: 1 }), new nn.ReLU(),
  new nn.MaxPool2d(2), new nn.Flatten(), new nn.Linear(16 * 7 * 7, 10));

const rows = [];
for (const dev of args.devices.split(',')) {
  const low = dev.startsWith('gpu') ? 'float16' : 'bfloat16';
  const xm = torch.randn([64, 784], { device: dev }), xc = torch.randn([32, 1, 28, 28], { device: dev });
  const ym = torch.randint(0, 10, [64], { device: dev }), yc = torch.randint(0, 10, [32], { device: dev });
  for (const [name, make, x, y] of [['MLP step', mlp, xm, ym], ['CNN step', cnn, xc, yc]]) {
    for (const amp of [false, true]) {
      const t = trainer(dev, make, x, y, amp, low);
      rows.push({ case: name, dev, mode: amp ? `AMP ${low}` : 'float32', perSec: await rate(t.step) });
      t.free();
    }
  }
  for (const size of args.sizes.split(',').map(Number)) {
    for (const dt of ['float32', 'float16', 'bfloat16']) {
      const a = torch.tidy(() => torch.randn([size, size], { device: dev }).to(dt)), b = torch.tidy(() => torch.randn([size, size], { device: dev }).to(dt));
      const perSec = await rate(() => torch.tidy(() => a.matmul(b).sum()));
      rows.push({ case: `matmul ${size}²`, dev, mode: dt, perSec, tflops: (2 * size ** 3 * perSec) / 1e12 });
      [a, b].forEach((t) => t.dispose());
    }
  }
  [xm, xc, ym, yc].forEach((t) => t.dispose());
}
for (const dev of args.devices.split(',').filter((d) => d.startsWith('gpu'))) {
  const p = await torch.gpu.getDeviceProperties(dev);
  console.log(`${dev}: ${p.name}, shader-f16 ${p.shaderF16 ? 'offered' : 'not offered'}, float16 path: ${p.f16Path}`);
}
await torch.shutdown();

/** PyTorch's rows from bench/amp_torch.py on `dev` ('cpu' or 'cuda'), by "case|mode". */
function torchRows(dev) {
  let out;
  try {
    out = execFileSync(args.torch, [new URL('./amp_torch.py', import.meta.url).pathname, String(iters), dev, args.sizes], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    console.log(`PyTorch on ${dev} did not run: ${String(e.stderr ?? e.message).trim().split('\n').pop()}`);
    return new Map();
  }
  const found = new Map();
  for (const line of out.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length >= 5 && cells[2] === `torch ${dev}`) found.set(`${cells[1]}|${cells[3]}`, Number(cells[4]));
  }
  return found;
}
const torchBy = new Map();
if (args.torch) for (const t of new Set(rows.map((r) => (r.dev === 'cpu' ? 'cpu' : 'cuda')))) torchBy.set(t, torchRows(t));
const fmt = (v) => (v === undefined || Number.isNaN(v) ? '—' : v.toPrecision(3));
console.log(`| case | device | mode | per second | TFLOP/s |${args.torch ? ' PyTorch per second |' : ''}\n|---|---|---|---|---|${args.torch ? '---|' : ''}`);
for (const r of rows) {
  const peer = torchBy.get(r.dev === 'cpu' ? 'cpu' : 'cuda')?.get(`${r.case}|${r.mode}`);
  console.log(`| ${r.case} | ${r.dev} | ${r.mode} | ${fmt(r.perSec)} | ${r.tflops ? r.tflops.toPrecision(3) : ''} |${args.torch ? ` ${fmt(peer)} |` : ''}`);
}
