// Real models, timed as users train them (issue 29): nanoGPT's GPT in its Shakespeare-character
// configuration (6 layers, 6 heads, 384 wide, context 256, batch 64, AdamW, gradient clipping) and
// torchvision's ResNet-18 on 32×32 images (batch 128, SGD with momentum), eager, under autocast, or
// with `--graph` one step captured (`torch.gpu.graph`) after the eager ones and replayed.
// The models are examples/models/*.mjs. Before timing, the run saves its initial weights and batch
// with torch.save; bench/models_torch.py loads them into PyTorch's copy of each model, checks that
// its first losses match webtorch's, and times the same steps (side by side in one device call).
//
//   node bench/models.mjs --model gpt|resnet18 [--device gpu:0] [--amp] [--amp-dtype bfloat16|float16] [--graph] [--steps 20] [--warmup 5] [--dir DIR] [--profile]
// (`--amp-dtype float16` times autocast in float16 without a GradScaler: a speed row, not a recipe.)
// prints one JSON line: losses of the first steps, steps/s, tokens or images per second. With
// --profile (eager) the line also says where a step's time goes: the caller's synchronous share
// (autograd, nn, optim, encoding commands), and from `torch._profileWorker` over the same number of
// steps the worker's time by command kind, its waits, and the GPU's time inside the dispatches.
//
// As a rank of `webtorch-run --nproc N [--threads] bench/models.mjs …` (WORLD_SIZE set) the model is
// wrapped in DistributedDataParallel on gpu:LOCAL_RANK (gpu:0 where the process has one device) and
// every rank trains the same batch (weak scaling, PyTorch's way: the same batch per GPU; with equal
// batches the averaged gradient is one GPU's, so the losses must equal the 1-GPU run's). Rank 0
// prints the line, with `world` and the throughput of all ranks together.
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { makeGpt, gptOptimizer } from '../examples/models/nanogpt.mjs';
import { makeResNet18 } from '../examples/models/resnet18.mjs';

const { values: o } = parseArgs({
  options: {
    model: { type: 'string', default: 'gpt' }, device: { type: 'string', default: 'gpu:0' }, amp: { type: 'boolean', default: false }, 'amp-dtype': { type: 'string', default: 'bfloat16' }, graph: { type: 'boolean', default: false },
    steps: { type: 'string', default: '20' }, warmup: { type: 'string', default: '5' }, dir: { type: 'string', default: join(tmpdir(), 'webtorch-models') },
    batch: { type: 'string' },
    profile: { type: 'boolean', default: false },
  },
});
if (!['bfloat16', 'float16'].includes(o['amp-dtype'])) throw new Error(`models.mjs: --amp-dtype must be bfloat16 or float16, got ${o['amp-dtype']}`);
if (o.profile && (o.graph || !o.device.startsWith('gpu'))) throw new Error('models.mjs: --profile times eager steps on a gpu device (not with --graph, nor on the cpu)');
const torch = await import('../dist/webtorch.js');
const { F } = torch;
if (o.device.startsWith('gpu')) await torch.gpu.init();
const world = Number(process.env.WORLD_SIZE ?? 0);
let rank = 0;
if (world) {
  if (o.graph) throw new Error('models.mjs: --graph with DDP ranks is not measured here');
  const local = Number(process.env.LOCAL_RANK ?? 0);
  o.device = local < (await torch.gpu.deviceCount()) ? `gpu:${local}` : 'gpu:0';
  torch.gpu.setDevice(o.device);
  await torch.distributed.initProcessGroup({ backend: 'nccl', timeout: 600_000 }); // PyTorch's NCCL default: a slow adapter's first step compiles its shaders
  rank = torch.distributed.getRank();
}
mkdirSync(o.dir, { recursive: true });
torch.manualSeed(1337);

/** nanoGPT's config/train_shakespeare_char.py (dropout 0 here, so both sides compute the same step). */
export const GPT = { blockSize: 256, vocabSize: 65, nLayer: 6, nHead: 6, nEmbd: 384, dropout: 0, bias: false, batch: 64, lr: 1e-3, betas: [0.9, 0.99], weightDecay: 0.1, gradClip: 1 };
const RESNET = { batch: 128, classes: 10, lr: 0.1, momentum: 0.9, weightDecay: 5e-4 };

let model, net, opt, inputs, forward, unit, perStep, clip = 0; // net: the model, or its DDP wrapper
if (o.model === 'gpt') {
  const cfg = { ...GPT, batch: Number(o.batch ?? GPT.batch) };
  model = makeGpt(torch, cfg).to(o.device);
  opt = gptOptimizer(torch, model, { ...cfg, capturable: o.graph }); // a captured step keeps Adam's step count on the device, as PyTorch's
  // token ids of a fixed pseudo-text (a character model's step costs the same whatever the text)
  const ids = Array.from({ length: cfg.batch * (cfg.blockSize + 1) }, (_, i) => (i * 7919 + (i >> 5) * 31) % cfg.vocabSize);
  const x = torch.tensor(ids, { dtype: 'int64' }).view([cfg.batch, cfg.blockSize + 1]);
  inputs = { x: x.narrow(1, 0, cfg.blockSize).contiguous().to(o.device), y: x.narrow(1, 1, cfg.blockSize).contiguous().to(o.device) };
  forward = () => net(inputs.x, inputs.y)[1];
  [unit, perStep, clip] = ['tokens/s', cfg.batch * cfg.blockSize, cfg.gradClip];
} else if (o.model === 'resnet18') {
  const batch = Number(o.batch ?? RESNET.batch);
  model = makeResNet18(torch, RESNET.classes).to(o.device);
  opt = new torch.optim.SGD(model.parameters(), { lr: RESNET.lr, momentum: RESNET.momentum, weightDecay: RESNET.weightDecay });
  inputs = { x: torch.randn([batch, 3, 32, 32], { device: o.device }), y: torch.randint(0, RESNET.classes, [batch], { device: o.device }) };
  forward = () => F.crossEntropy(net(inputs.x), inputs.y);
  [unit, perStep] = ['images/s', batch];
} else throw new Error(`--model must be gpt or resnet18, not ${o.model}`);
model.train();
if (rank === 0) {
  await torch.save(model.stateDict(), join(o.dir, `${o.model}-init.pt`));
  await torch.save(inputs, join(o.dir, `${o.model}-batch.pt`));
}
net = world ? new torch.nn.parallel.DistributedDataParallel(model) : model;

/** A training step without the zeroing of the gradients (what a graph captures); returns the loss (not read). */
function update() {
  const loss = torch.tidy(() => {
    const l = o.amp ? torch.autocast('gpu', { dtype: o['amp-dtype'] }, forward) : forward();
    l.backward();
    return l;
  });
  if (clip) torch.nn.utils.clipGradNorm_(model.parameters(), clip).dispose();
  opt.step();
  return loss;
}

const traceSteps = !!process.env.WEBTORCH_TRACE_COLLECTIVES; // beside the collectives' trace lines: when each step was issued
/** One training step as the user writes it. */
function step() {
  if (traceSteps) console.error(JSON.stringify({ step: 'issued', rank, t: performance.timeOrigin + performance.now() }));
  const loss = update();
  opt.zeroGrad();
  return loss;
}

const losses = [];
for (let i = 0; i < 3; i++) {
  const l = step();
  losses.push(await l.item());
  l.dispose();
}
for (let i = 0; i < Number(o.warmup); i++) step().dispose();
await torch.gpu.synchronize?.();
const n = Number(o.steps);
let last, seconds, lastLoss;
if (o.graph) {
  // PyTorch's whole-step recipe: one more eager step (PyTorch's side-stream warm-up), the gradients
  // unset, one step captured (capture runs nothing), replays repeating it
  step().dispose();
  const ns = o.device.startsWith('gpu') ? torch.gpu : torch.cpu;
  const g = new ns.Graph();
  await ns.graph(g, () => void (last = update()));
  g.replay();
  await last.item();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) g.replay();
  lastLoss = await last.item();
  seconds = (performance.now() - t0) / 1000;
  g.reset();
} else {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    last?.dispose();
    last = step();
  }
  lastLoss = await last.item();
  seconds = (performance.now() - t0) / 1000;
}
last.dispose();
let profile;
if (o.profile) {
  const wt = torch.device(o.device);
  let caller = 0;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const c0 = performance.now();
    step().dispose();
    caller += performance.now() - c0;
  }
  await torch.gpu.synchronize(wt);
  const plainMs = (performance.now() - t0) / n;
  await torch._profileWorker(wt, true);
  const p0 = performance.now();
  for (let i = 0; i < n; i++) step().dispose();
  await torch.gpu.synchronize(wt);
  const profiledMs = (performance.now() - p0) / n;
  const prof = await torch._profileWorker(wt, false);
  const per = (x) => x / n;
  const table = (m) => Object.entries(m ?? {}).map(([kind, v]) => ({ kind, perStep: per(v.count), msPerStep: per(v.ms) })).sort((a, b) => b.msPerStep - a.msPerStep);
  const commands = table(prof.commands), gpu = prof.gpu ? table(prof.gpu) : null;
  profile = {
    stepMs: plainMs, callerMs: caller / n, profiledStepMs: profiledMs, batchesPerStep: per(prof.batches),
    commandsPerStep: commands.reduce((s, k) => s + k.perStep, 0), workerRunMs: commands.reduce((s, k) => s + k.msPerStep, 0),
    workerFlushMs: per(prof.flushMs), workerWaitMs: per(prof.waitMs), gpuMs: gpu ? gpu.reduce((s, k) => s + k.msPerStep, 0) : null,
    commands: commands.slice(0, 12), gpu: gpu?.slice(0, 25),
  };
}
const props = o.device.startsWith('gpu') ? await torch.gpu.getDeviceProperties(o.device) : null;
if (rank === 0) {
  console.log(JSON.stringify({
    impl: 'webtorch', model: o.model, device: props?.name ?? o.device, amp: o.amp, ampDtype: o.amp ? o['amp-dtype'] : null, graph: o.graph, world: world || 1, losses, lastLoss, steps: n,
    stepsPerSec: n / seconds, [unit]: ((world || 1) * n * perStep) / seconds,
    peakMiB: props ? torch.gpu.maxMemoryAllocated(o.device) / 2 ** 20 : undefined, profile,
  }));
}
if (world) torch.distributed.destroyProcessGroup();
await torch.shutdown();
