// The digits classifier of examples/train-digits.mjs, as the app runs it: the data goes to the
// chosen device once, each step picks its batch there (indexSelect), and the page only queues
// ops: the kernels run in the device's worker. Each step awaits its loss (a sync point), so the
// page's event loop, and its frames, run between steps. `profileSteps` profiles a few steps.
// With `deviceIds` (two GPU devices or more), the model is wrapped in nn.DataParallel on `device`
// (deviceIds[0]): each forward scatters the batch over the devices, runs a replica on each (in
// their workers) and gathers the logits on `device`, where the loss is taken; backward sums
// every replica's gradient into the model's parameters there, which the optimizer steps.

/** Loads data/digits.u8 (65 bytes an image: 64 pixels 0..16, the label) into a train/test split. */
export async function loadDigits(torch, url = '/data/digits.u8') {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`could not load ${url}: HTTP ${res.status}`);
  const raw = new Uint8Array(await res.arrayBuffer());
  const n = raw.length / 65;
  const pixels = new Float32Array(n * 64), labels = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < 64; j++) pixels[i * 64 + j] = raw[i * 65 + j] / 16;
    labels[i] = raw[i * 65 + 64];
  }
  // The demo's split: a fixed shuffle, 20% for testing.
  const order = [...Array(n).keys()];
  const r = new torch.Generator().manualSeed(1234).words(n);
  for (let i = n - 1; i > 0; i--) {
    const j = r[i] % (i + 1);
    [order[i], order[j]] = [order[j], order[i]];
  }
  const nTest = Math.round(n * 0.2);
  const pick = (idx) => ({
    X: Float32Array.from(idx.flatMap((i) => Array.from(pixels.subarray(i * 64, i * 64 + 64)))),
    y: Int32Array.from(idx.map((i) => labels[i])),
    n: idx.length,
  });
  return { train: pick(order.slice(nTest)), test: pick(order.slice(0, nTest)) };
}

/**
 * The demo's model, optimizer and data on `device`, and one training step: `step(idx)` trains
 * on the images `idx` (an int32 tensor on `device`) and resolves with the loss. `dispose()` frees
 * it all. The forward, backward and optimizer step are profiler ranges (they cost nothing when
 * no profile records). With `deviceIds`, the model is `nn.DataParallel` over them (see above).
 */
function setup(torch, data, { device, deviceIds, lr, seed }) {
  torch.manualSeed(seed);
  const net = new torch.nn.Sequential(
    new torch.nn.Linear(64, 128), new torch.nn.ReLU(),
    new torch.nn.Linear(128, 64), new torch.nn.ReLU(),
    new torch.nn.Linear(64, 10),
  ).to(device);
  const model = deviceIds?.length > 1 ? new torch.nn.DataParallel(net, { deviceIds }) : net;
  const opt = new torch.optim.SGD(model.parameters(), { lr, momentum: 0.9 });
  const tensors = (part) => [torch.tensor(part.X).reshape(part.n, 64).to(device), torch.tensor(part.y, { dtype: 'int64' }).to(device)];
  const [X, y] = tensors(data.train), [testX, testY] = tensors(data.test);
  const { recordFunction } = torch.profiler;
  const step = async (idx) => {
    const loss = recordFunction('forward', () => torch.tidy(() => torch.F.crossEntropy(model.call(X.indexSelect(0, idx)), y.indexSelect(0, idx))));
    recordFunction('backward', () => {
      opt.zeroGrad();
      loss.backward();
    });
    recordFunction('optimizer.step', () => opt.step());
    try {
      return await loss.item();
    } finally {
      loss.dispose();
    }
  };
  const dispose = () => {
    opt.zeroGrad();
    for (const t of [X, y, testX, testY, ...model.parameters()]) t.dispose();
  };
  return { model, opt, testX, testY, step, dispose };
}

/**
 * Trains on `device` (with `deviceIds`, DataParallel over them from `device`), calling
 * `onStep({ epoch, step, loss })` after every step and `onEpoch({ epoch, loss, accuracy })`
 * after every epoch; stops early when `shouldStop()`.
 */
export async function train(torch, data, { device, deviceIds, epochs, batchSize, lr, seed = 0 }, { onStep, onEpoch, shouldStop }) {
  const { model, opt, testX, testY, step, dispose } = setup(torch, data, { device, deviceIds, lr, seed });
  const sched = new torch.optim.lrScheduler.CosineAnnealingLR(opt, epochs);
  const steps = Math.ceil(data.train.n / batchSize);
  const g = new torch.Generator().manualSeed(seed);
  try {
    for (let epoch = 0; epoch < epochs && !shouldStop(); epoch++) {
      const perm = g.words(data.train.n);
      const order = [...Array(data.train.n).keys()].sort((a, b) => perm[a] - perm[b]);
      let total = 0;
      for (let s = 0; s < steps && !shouldStop(); s++) {
        const idx = torch.tensor(Int32Array.from(order.slice(s * batchSize, (s + 1) * batchSize)), { device });
        const value = await step(idx);
        idx.dispose();
        total += value;
        onStep({ epoch: epoch + (s + 1) / steps, step: epoch * steps + s + 1, loss: value });
      }
      sched.step();
      model.eval();
      const correct = torch.noGrad(() => torch.tidy(() => model.call(testX).argmax(1).eq(testY).sum()));
      model.train();
      const accuracy = (await correct.item()) / data.test.n;
      correct.dispose();
      onEpoch({ epoch: epoch + 1, loss: total / steps, accuracy });
    }
  } finally {
    dispose();
  }
}

/**
 * Profiles `steps` training steps on `device` (with `deviceIds`, DataParallel over them) with
 * `torch.profiler` (the calling thread's ops and ranges, the devices' kernels) after one
 * unprofiled step (so the trace shows steady steps, not the kernels' first compilation), and
 * resolves with the finished profile: `exportChromeTrace` gives its Chrome trace.
 */
export async function profileSteps(torch, data, { device, deviceIds, batchSize, lr, steps = 5, seed = 0 }) {
  const { step, dispose } = setup(torch, data, { device, deviceIds, lr, seed });
  const { profile, ProfilerActivity, recordFunction } = torch.profiler;
  const batch = (s) => torch.tensor(Int32Array.from({ length: batchSize }, (_, i) => (s * batchSize + i) % data.train.n), { device });
  const run = async (s) => {
    const idx = batch(s);
    try {
      return await step(idx);
    } finally {
      idx.dispose();
    }
  };
  try {
    await run(0);
    return await profile({ activities: [ProfilerActivity.CPU, ProfilerActivity.CUDA], recordShapes: true }, async () => {
      for (let s = 1; s <= steps; s++) await recordFunction(`step ${s}`, () => run(s));
    });
  } finally {
    dispose();
  }
}
