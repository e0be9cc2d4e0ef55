/**
 * The seeds' examples of several GPUs in one process, translated as setup.ts says: seed 001's
 * DataParallel (whose `gpu_ids=` is not a keyword of PyTorch's DataParallel: word for word it
 * raises PyTorch's TypeError, and with `deviceIds` it trains) and its model-parallel class;
 * seed 003's "DataParallel when there is more than one GPU" and its DistributedDataParallel loop,
 * each rank a `torch.distributed.spawn` task (the launcher's part: rank r on cuda:r, RANK and
 * WORLD_SIZE given to initProcessGroup) with `backend: 'nccl'` as written ('webtorch''s alias).
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { habitsSetup } from './setup.js';

const { nn, optim } = torch;
habitsSetup();

class MyNet extends nn.Module {
  fc1 = new nn.Linear(6, 12);
  fc2 = new nn.Linear(12, 3);
  forward(x: torch.Tensor): torch.Tensor {
    return torch.tidy(() => this.fc2(torch.relu(this.fc1(x))));
  }
}

describe('seed 001: data parallelism', () => {
  it('nn.DataParallel(myNet, gpu_ids=[0, 1, 2]), forward, loss.mean().backward(), optimizer.step()', async () => {
    torch.manualSeed(0);
    const myNet = new MyNet();
    // the article's keyword is not PyTorch's: DataParallel(myNet, gpu_ids=[0, 1, 2]) raises there too
    expect(() => new nn.DataParallel(myNet, { gpuIds: [0, 1, 2] } as never)).toThrow("DataParallel() got an unexpected keyword argument 'gpuIds'");
    let parallelNet = new nn.DataParallel(myNet, { deviceIds: [0, 1, 2] });
    const optimizer = new optim.SGD(parallelNet.parameters(), { lr: 0.1 });
    const lossFunction = new nn.CrossEntropyLoss();
    let input = torch.randn([10, 6]);
    const labels = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1, 2, 0], { device: 'cuda:0' });
    const cpuInput = input;
    input = input.to(0); // Move the input tensor to GPU 0
    parallelNet = parallelNet.to(0); // Make sure the DataParallel object is on GPU 0
    const inputs = input;
    const before = (await myNet.fc1.weight.values()) as number[];
    const losses: number[] = [];
    for (let i = 0; i < 5; i++) {
      optimizer.zeroGrad();
      const predictions = parallelNet(inputs); // Forward pass on multi-GPUs
      expect(String(predictions.device)).toBe('gpu:0');
      const loss = lossFunction(predictions, labels); // Compute the loss
      const mean = loss.mean();
      mean.backward(); // Average GPU losses + backward pass
      optimizer.step(); // Update the model
      losses.push((await loss.item()) as number);
      for (const t of [predictions, loss, mean]) t.dispose();
    }
    expect(losses[4]).toBeLessThan(losses[0]);
    const after = (await myNet.fc1.weight.values()) as number[];
    expect(after.some((v, i) => v !== before[i])).toBe(true);
    optimizer.zeroGrad();
    for (const t of [cpuInput, input, labels, ...myNet.parameters()]) t.dispose();
  });
});

describe('seed 001: model parallelism with dependencies', () => {
  it('sub_network1 on GPU 0, sub_network2 on GPU 1, x.cuda(1) in forward; gradients cross back', async () => {
    class ModelParallel extends nn.Module {
      subNetwork1: torch.nn.Module;
      subNetwork2: torch.nn.Module;
      constructor() {
        super();
        this.subNetwork1 = new nn.Sequential(new nn.Linear(4, 8), new nn.ReLU());
        this.subNetwork2 = new nn.Linear(8, 2);
        this.subNetwork1.cuda(0); // Place the first sub-network on GPU 0
        this.subNetwork2.cuda(1); // Place the second sub-network on GPU 1
      }
      forward(x: torch.Tensor): torch.Tensor {
        return torch.tidy(() => {
          x = x.cuda(0); // Move input to GPU 0
          x = this.subNetwork1(x); // Process input through the first sub-network
          x = x.cuda(1); // Transfer output to GPU 1
          x = this.subNetwork2(x); // Process input through the second sub-network
          return x;
        });
      }
    }
    torch.manualSeed(1);
    const model = new ModelParallel();
    const x = torch.randn([5, 4]);
    const out = model(x);
    expect(String(out.device)).toBe('gpu:1');
    const loss = out.sum();
    loss.backward();
    const [w1, , w2] = model.parameters();
    expect(String(w1.device)).toBe('gpu:0');
    expect(String(w1.grad!.device)).toBe('gpu:0');
    expect(String(w2.grad!.device)).toBe('gpu:1');
    // the gradient reached the first sub-network: not all zeros
    const g1 = torch.tidy(() => w1.grad!.abs().sum());
    expect((await g1.item()) as number).toBeGreaterThan(0);
    g1.dispose();
    model.zeroGrad();
    for (const t of [x, out, loss, ...model.parameters()]) t.dispose();
  });
});

describe('seed 003: multi-GPU training', () => {
  it('if torch.cuda.device_count() > 1: model = torch.nn.DataParallel(model); model = model.cuda()', async () => {
    torch.manualSeed(2);
    let model: torch.nn.Module = new MyNet();
    const inner = model;
    const logs: string[] = [];
    if ((await torch.gpu.deviceCount()) > 1) {
      logs.push(`Using ${await torch.gpu.deviceCount()} GPUs`);
      model = new torch.nn.DataParallel(model);
    }
    model = model.cuda();
    expect(logs).toEqual(['Using 4 GPUs']);
    expect((model as torch.nn.DataParallel).deviceIds.map(String)).toEqual(['gpu:0', 'gpu:1', 'gpu:2', 'gpu:3']);
    const x = torch.randn([8, 6], { device: 'cuda' });
    const y = model(x);
    const ref = inner(x);
    expect(y.shape).toEqual([8, 3]);
    const [a, b] = [(await y.values()) as number[], (await ref.values()) as number[]];
    a.forEach((v, i) => expect(Math.abs(v - b[i])).toBeLessThan(1e-5));
    for (const t of [x, y, ref, ...inner.parameters()]) t.dispose();
  });
});

describe('seed 003: DistributedDataParallel', () => {
  it('dist.init_process_group(backend=\'nccl\'); model = DDP(MyModel().cuda()); the training loop', async () => {
    const dist = torch.distributed;
    const DDP = torch.nn.parallel.DistributedDataParallel;
    torch.manualSeed(4);
    const X = torch.randn([16, 6]), Y = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0]);
    const finals = await dist.spawn(async (rank: number) => {
      // Initialize process group
      await dist.initProcessGroup({ backend: 'nccl' });
      // Create model and move to GPU
      torch.manualSeed(10 + rank); // each rank builds its own model: DDP starts them all from rank 0's
      let model: torch.nn.Module = new MyNet().cuda();
      const net = model;
      model = new DDP(model);
      const optimizer = new optim.SGD(model.parameters(), { lr: 0.1 });
      const criterion = new nn.CrossEntropyLoss();
      // this rank's half of the data, in batches of 4
      const ds = new torch.TensorDataset(X.narrow(0, rank * 8, 8), Y.narrow(0, rank * 8, 8));
      const dataloader = new torch.DataLoader(ds, { batchSize: 4 });
      // Training loop
      for await (const [input, target] of dataloader) {
        // torch.tidy frees the cuda() copies and the output once the loss is made
        const loss = torch.tidy(() => {
          const output = model(input.cuda());
          return criterion(output, target.cuda());
        });
        loss.backward();
        optimizer.step();
        for (const t of [input, target, loss]) t.dispose();
        optimizer.zeroGrad(); // (the seed leaves it out; without it the gradients accumulate)
      }
      const w = (await net.parameters()[0].values()) as number[];
      net.parameters().forEach((p) => p.dispose());
      ds.tensors.forEach((t: torch.Tensor) => t.dispose());
      return w;
    }, { nprocs: 2 });
    // DDP keeps the replicas equal: both ranks end with the same weights
    expect(finals[1]).toEqual(finals[0]);
    X.dispose();
    Y.dispose();
  });
});
