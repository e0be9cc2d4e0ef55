// Model parallelism, the example of the notes on GPU memory and multiple GPUs: a network split in
// two sub-networks, the first on gpu:0 and the second on gpu:1, with the activation moved between
// them in forward. to()/cuda() are differentiable, so backward carries the gradient from gpu:1
// back to gpu:0 and one optimizer trains both halves.
// With `--chunks N` (N > 1) the same model runs as a GPipe pipeline (nn.parallel.Pipe): each batch
// is cut into N micro-batches, so gpu:1 works on one micro-batch while gpu:0 computes the next.
// Run: npm run build && node examples/model-parallel.mjs [--chunks 4]   (cpu without a WebGPU adapter)
import { parseArgs } from 'node:util';
import * as torch from '../dist/webtorch.js';

const { values: args } = parseArgs({ options: { chunks: { type: 'string', default: '1' } } });
const chunks = Number(args.chunks);
if (!Number.isInteger(chunks) || chunks < 1) throw new RangeError(`--chunks must be a positive integer, got ${args.chunks}`);

const { nn, optim } = torch;

// Two logical devices (two physical GPUs where the machine has them; on one GPU, two workers).
torch.gpu.configure({ devices: 2, allowSoftware: true });
const dev0 = await torch.tryGpu(0), dev1 = await torch.tryGpu(1);
console.log(`sub_network1 on ${dev0}, sub_network2 on ${dev1}`);

class ModelParallel extends nn.Module {
  constructor() {
    super();
    this.subNetwork1 = new nn.Sequential(new nn.Linear(2, 32), new nn.ReLU(), new nn.Linear(32, 32), new nn.ReLU());
    this.subNetwork2 = new nn.Sequential(new nn.Linear(32, 2));
    this.subNetwork1.to(dev0); // Place the first sub-network on GPU 0
    this.subNetwork2.to(dev1); // Place the second sub-network on GPU 1
  }

  forward(x) {
    x = x.to(dev0);            // Move input to GPU 0
    x = this.subNetwork1(x);   // Process input through the first sub-network
    x = x.to(dev1);            // Transfer output to GPU 1
    x = this.subNetwork2(x);   // Process input through the second sub-network
    return x;
  }
}

// XOR of the quadrants: not linearly separable, so both halves must learn.
torch.manualSeed(0);
const X = torch.rand([512, 2]).mul(2).sub(1);
const y = torch.tidy(() => X.select(1, 0).mul(X.select(1, 1)).gt(0).long());

const model = new ModelParallel();
// GPipe: the two sub-networks as the stages of a pipeline of `chunks` micro-batches.
const net = chunks > 1 ? new nn.parallel.Pipe(new nn.Sequential(model.subNetwork1, model.subNetwork2), { chunks }) : model;
if (chunks > 1) console.log(`GPipe: ${chunks} micro-batches over stages on ${net.stages.map((s) => s.device).join(', ')}`);
const opt = new optim.Adam(model.parameters(), { lr: 0.02 });
const lossFn = new nn.CrossEntropyLoss();
const yOut = y.to(dev1); // the labels where the output is

let first = 0, last = 0;
for (let step = 0; step <= 150; step++) {
  opt.zeroGrad();
  const loss = torch.tidy(() => lossFn(net(X), yOut));
  loss.backward();
  opt.step();
  if (step % 50 === 0) {
    last = await loss.item();
    if (step === 0) first = last;
    console.log(`step ${String(step).padStart(3)}  loss ${last.toFixed(4)}`);
  }
  loss.dispose();
}

const acc = await torch.noGrad(() => torch.tidy(() => net(X).argmax(1).eq(yOut).float().mean())).item();
console.log(`accuracy ${(acc * 100).toFixed(1)}%, subNetwork1.grad on ${model.subNetwork1.at(0).weight.grad.device}, subNetwork2.grad on ${model.subNetwork2.at(0).weight.grad.device}`);
await torch.shutdown();
if (!(last < first / 2 && acc > 0.9)) {
  console.error(`model-parallel: did not train (loss ${first} -> ${last}, accuracy ${acc})`);
  process.exit(1);
}
