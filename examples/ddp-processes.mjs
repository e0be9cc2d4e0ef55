// DistributedDataParallel with each rank a separate Node process, as torchrun runs PyTorch's:
//   npx webtorch-run --nproc 2 examples/ddp-processes.mjs [--device cpu|gpu]
// webtorch-run sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT; initProcessGroup reads them
// (env://), rank 0 hosts the TCPStore, and the ranks exchange gradients over sockets. Each rank
// trains on its share of the data (DistributedSampler, reshuffled each epoch by setEpoch).
import { parseArgs } from 'node:util';
import * as torch from '../dist/webtorch.js';

const { nn, optim, distributed: dist } = torch;
const { values: args } = parseArgs({ options: { device: { type: 'string', default: 'cpu' } } });
const onGpu = args.device.startsWith('gpu');
if (onGpu) {
  torch.gpu.configure({ allowSoftware: true });
  await torch.gpu.init();
  // As PyTorch's torch.cuda.set_device(local_rank): on a machine with several GPUs (mapped to
  // gpu:N, see README), rank r takes gpu:r; with one GPU every process drives its own gpu:0.
  torch.gpu.setDevice(Number(process.env.LOCAL_RANK ?? 0) % Math.max(1, await torch.gpu.deviceCount()));
}
await dist.initProcessGroup({ backend: onGpu ? 'nccl' : 'gloo' });
const rank = dist.getRank(), dev = onGpu ? 'cuda' : 'cpu';

torch.manualSeed(0);                                        // the same data on every rank
const X = torch.randn([1000, 8]);
const Y = torch.tidy(() => X.matmul(torch.linspace(-1, 1, 8).reshape([8, 1])).add(0.5));
const ds = new torch.TensorDataset(X, Y);
const sampler = new torch.utils.data.DistributedSampler({ dataset: ds, shuffle: true, seed: 0 });
const loader = new torch.DataLoader(ds, { batchSize: 50, sampler });

torch.manualSeed(1 + rank);                                 // DDP starts every rank from rank 0's weights
const model = new nn.parallel.DistributedDataParallel(new nn.Linear(8, 1).to(dev));
const opt = new optim.SGD(model.parameters(), { lr: 0.1 });
let first = null, last = 0;
for (let epoch = 0; epoch < 5; epoch++) {
  sampler.setEpoch(epoch);                                  // a new shuffle each epoch, the same on every rank
  for (const [x, y] of loader) {
    opt.zeroGrad();
    const loss = torch.tidy(() => model(x.to(dev)).sub(y.to(dev)).square().mean());
    loss.backward();                                        // each bucket's all-reduce starts here
    opt.step();
    last = await loss.item();
    first ??= last;
    [x, y, loss].forEach((t) => t.dispose());
  }
}
const w = await model.module.weight.tolist();
console.log(`rank ${rank}: ${sampler.length} samples per epoch, loss ${first.toFixed(4)} -> ${last.toFixed(6)}, weight[0][0] ${w[0][0].toFixed(6)}`);
dist.destroyProcessGroup();
await torch.shutdown();
if (!(last < first / 100)) {
  console.error(`rank ${rank}: did not train (loss ${first} -> ${last})`);
  process.exit(1);
}
