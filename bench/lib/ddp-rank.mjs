// One rank of the `ddp_proc` bench rows (bench/cases/parallel.mjs): a separate Node process,
// forked with an IPC channel and torchrun's environment (RANK, WORLD_SIZE, MASTER_ADDR, …).
// It joins the process group, builds the MLP under DistributedDataParallel on its GPU
// (gpu:LOCAL_RANK where the process has that many devices, else gpu:0) and its share of the
// batch, says `ready`, then queues one training step per `step` message and answers each `sync`
// once everything queued has run (with the loss). `stop` frees everything and leaves.
import * as torch from '../../dist/webtorch.js';

const p = JSON.parse(process.argv[2]);
const dist = torch.distributed;
await torch.gpu.init();
const local = Number(process.env.LOCAL_RANK ?? 0);
torch.gpu.setDevice(local < (await torch.gpu.deviceCount()) ? local : 0);
await dist.initProcessGroup({ backend: 'nccl' });
const rank = dist.getRank(), k = dist.getWorldSize(), per = p.b / k;
torch.manualSeed(0);
const { nn } = torch;
const net = new nn.Sequential(new nn.Linear(p.din, p.h), new nn.ReLU(), new nn.Linear(p.h, p.h), new nn.ReLU(), new nn.Linear(p.h, p.dout)).to('cuda');
const ddp = new nn.parallel.DistributedDataParallel(net);
const X = torch.randn([per, p.din], { device: 'cuda' });
const Y = torch.randint(0, p.dout, [per], { device: 'cuda' });
const opt = new torch.optim.SGD(net.parameters(), { lr: 0.01 });
const lossFn = new nn.CrossEntropyLoss();
let loss = null;
process.on('message', async (m) => {
  if (m.step) {
    for (let s = 0; s < m.step; s++) {
      loss?.dispose();
      opt.zeroGrad();
      loss = torch.tidy(() => lossFn(ddp(X), Y));
      loss.backward();
      opt.step();
    }
  } else if (m.sync !== undefined) {
    const v = loss ? await loss.item() : 0;
    process.send({ synced: m.sync, loss: v, rank });
  } else if (m.stop) {
    loss?.dispose();
    opt.zeroGrad();
    [X, Y, ...net.parameters()].forEach((t) => t.dispose());
    dist.destroyProcessGroup();
    await torch.shutdown();
    process.disconnect();
  }
});
process.send({ ready: true, rank, k });
