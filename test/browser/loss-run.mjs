/**
 * Device loss in a page (test/browser/device-loss.test.ts): gpu:0, gpu:1 and cpu train the same
 * fixed-seed MLP; gpu:0 is lost mid-training (`lose`: the test hook, or the browser's own loss);
 * the report says what each device did next, for the test to check.
 * @param {typeof import('../../dist/webtorch.js')} torch
 * @param {() => Promise<void>} lose loses gpu:0 and resolves once it is lost
 */
export async function lossRun(torch, lose) {
  const { nn, optim } = torch;
  const trainer = (device) => {
    torch.manualSeed(3);
    const model = new nn.Sequential(new nn.Linear(8, 16), new nn.ReLU(), new nn.Linear(16, 3)).to(device);
    const opt = new optim.SGD(model.parameters(), { lr: 0.1 });
    const X = torch.tidy(() => torch.randn([32, 8]).to(device)), y = torch.tidy(() => torch.arange(32).remainder(3).to(device));
    const step = () => {
      const loss = torch.tidy(() => torch.F.crossEntropy(model.call(X), y));
      opt.zeroGrad();
      loss.backward();
      opt.step();
      return loss;
    };
    const steps = async (n) => {
      const out = [];
      for (let i = 0; i < n; i++) {
        const loss = step();
        try {
          out.push(await loss.item());
        } finally {
          loss.dispose();
        }
      }
      return out;
    };
    const dispose = () => {
      opt.zeroGrad();
      for (const p of model.parameters()) p.dispose();
      X.dispose();
      y.dispose();
    };
    return { step, steps, dispose, X };
  };
  /** What an async call raised: its name, message and the error's fields. */
  const raised = async (fn) => {
    try {
      await fn();
      return null;
    } catch (e) {
      return { name: e.name, message: e.message, device: e.device, reason: e.reason, isDeviceLost: e instanceof torch.DeviceLostError };
    }
  };
  const live = () => torch._liveStorage(torch.device('gpu:0')).count;

  const cpu = trainer('cpu'), g0 = trainer('gpu:0'), g1 = trainer('gpu:1');
  const report = { ref: await cpu.steps(6), before: { g0: await g0.steps(2), g1: await g1.steps(2) } };
  const g1Allocated = torch.gpu.memoryAllocated('gpu:1');
  await lose();
  const pending = g0.step();
  report.sync = await raised(() => pending.item());
  pending.dispose();
  const count = live();
  report.op = await raised(() => g0.step());
  report.opAllocated = live() - count;
  report.g1 = await g1.steps(4);
  report.g1Bookkeeping = torch.gpu.memoryAllocated('gpu:1') === g1Allocated;
  report.cpuSum = await torch.ones([3]).sum().item();
  await torch.gpu.init();
  report.old = await raised(() => g0.X.tolist());
  report.freshAllocated = torch.gpu.memoryAllocated('gpu:0');
  const fresh = trainer('gpu:0');
  report.fresh = await fresh.steps(3);
  for (const t of [cpu, g0, g1, fresh]) t.dispose();
  report.after = { allocated: torch.gpu.memoryAllocated('gpu:0'), live: live() };
  return report;
}
