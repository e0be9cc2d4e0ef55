// A Vite app that imports webtorch as a package: `vite build` must carry the device workers,
// the cpu helper thread and the kernels' .wasm into its output (test/browser/bundlers.test.ts).
import * as torch from 'webtorch';

try {
  torch.gpu.configure({ allowSoftware: true });
  await torch.gpu.init();
  const x = torch.arange(6, { dtype: 'float32' }).reshape(2, 3);
  const out = { isolated: self.crossOriginIsolated, cpu: await x.matmul(x.T).values(), cpuThreads: (await torch.backends.summary()).cpuThreads };
  if (torch.gpu.isAvailable()) {
    const g = x.to('gpu:0');
    out.gpu = await g.matmul(g.T).values();
  }
  x.dispose();
  window.__result = out;
} catch (e) {
  window.__result = { error: String(e?.stack ?? e) };
}
