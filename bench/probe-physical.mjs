// Whether gpu:0 and gpu:1 land on different physical GPUs (ts/runtime/physical.ts), for a machine
// with two identical GPUs and Mesa's device-select layer (the 2×H200 kit installs it):
//   source .devkit/prelude.sh && MESA_VK_DEVICE_SELECT_DEBUG=1 node bench/probe-physical.mjs
// It prints each device's name and the PCI bus it asked for, then holds 4 GiB on gpu:1 and 1 GiB on gpu:0
// while `nvidia-smi` reports the memory used per GPU: with the mapping, GPU 1 shows the larger
// figure; without it (one adapter), GPU 0 shows both. Then a quick DataParallel and DDP step rate.
import { execFileSync } from 'node:child_process';
import * as torch from '../dist/webtorch.js';

torch.gpu.configure({ devices: 2, allowSoftware: true });
await torch.gpu.init();
for (const i of [0, 1]) {
  const p = await torch.gpu.getDeviceProperties(i);
  // The bus asked for (DRI_PRIME) and the adapter's own (null: WebGPU adapters name none); nvidia-smi below is the measurement.
  console.log(`gpu:${i}: ${p.name}, requested bus ${p.requestedPciBusId}, adapter's pciBusId ${p.pciBusId}`);
}
// 256 MiB blocks (one buffer each): GiB (PROBE_GIB, default 4) on gpu:1, a quarter of it on gpu:0.
const gib = Number(process.env.PROBE_GIB ?? 4);
const blocks = (dev, n) => Array.from({ length: n }, () => torch.ones([1 << 26], { device: dev }));
const big = blocks('gpu:1', Math.round(gib * 4)), small = blocks('gpu:0', Math.max(1, Math.round(gib)));
await torch.gpu.synchronize();
try {
  console.log(execFileSync('nvidia-smi', ['--query-gpu=index,pci.bus_id,memory.used', '--format=csv'], { encoding: 'utf8' }));
} catch (e) {
  console.log(`nvidia-smi: ${e.message}`);
}
[...big, ...small].forEach((t) => t.dispose());

const { nn, optim } = torch;
for (const n of [1, 2]) {
  torch.manualSeed(0);
  const net = new nn.Sequential(new nn.Linear(784, 1024), new nn.ReLU(), new nn.Linear(1024, 1024), new nn.ReLU(), new nn.Linear(1024, 10)).to('gpu:0');
  const model = n > 1 ? new nn.DataParallel(net, [0, 1]) : net;
  const X = torch.randn([512, 784], { device: 'gpu:0' }), Y = torch.randint(0, 10, [512], { device: 'gpu:0' });
  const opt = new optim.SGD(net.parameters(), { lr: 0.01 }), lossFn = new nn.CrossEntropyLoss();
  const step = () => {
    opt.zeroGrad();
    const l = torch.tidy(() => lossFn(model(X), Y));
    l.backward();
    opt.step();
    return l;
  };
  for (let i = 0; i < Math.min(5, Number(process.env.PROBE_STEPS ?? 50)); i++) step().dispose();
  await torch.gpu.synchronize();
  const t0 = performance.now(), steps = Number(process.env.PROBE_STEPS ?? 50);
  let last;
  for (let i = 0; i < steps; i++) {
    last?.dispose();
    last = step();
  }
  await last.item();
  console.log(`DataParallel MLP 784-1024-1024-10 b512, ${n} device(s): ${(steps / ((performance.now() - t0) / 1000)).toFixed(1)} steps/s`);
  last.dispose();
  opt.zeroGrad();
  [X, Y, ...net.parameters()].forEach((t) => t.dispose());
}
await torch.shutdown();
