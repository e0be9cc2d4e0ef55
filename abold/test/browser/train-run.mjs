/**
 * A fixed-seed training run that Node and the browser both make (test/browser/browser.test.ts
 * compares their losses): a small MLP on the first 512 digits of data/digits.u8, full batches of
 * 64 in order, SGD with momentum. `torch` is webtorch as each side imports it, `bytes` the
 * contents of digits.u8 (65 bytes an image: 64 pixels and the label).
 * @param {typeof import('../../dist/webtorch.js')} torch
 * @param {Uint8Array} bytes
 * @param {string} device
 * @param {{ steps?: number }} [opts]
 * @returns {Promise<number[]>} the loss of every step
 */
export async function trainRun(torch, bytes, device, { steps = 16 } = {}) {
  const n = 512, batch = 64;
  const pixels = new Float32Array(n * 64), labels = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < 64; j++) pixels[i * 64 + j] = bytes[i * 65 + j] / 16;
    labels[i] = bytes[i * 65 + 64];
  }
  if (device !== 'cpu') await torch.gpu.init();
  torch.manualSeed(7);
  const model = new torch.nn.Sequential(new torch.nn.Linear(64, 32), new torch.nn.ReLU(), new torch.nn.Linear(32, 10)).to(device);
  const opt = new torch.optim.SGD(model.parameters(), { lr: 0.1, momentum: 0.9 });
  const X = torch.tensor(pixels).reshape(n, 64).to(device), y = torch.tensor(labels, { dtype: 'int64' }).to(device);
  const losses = [];
  for (let s = 0; s < steps; s++) {
    const at = (s * batch) % n;
    const loss = torch.tidy(() => torch.F.crossEntropy(model.call(X.narrow(0, at, batch)), y.narrow(0, at, batch)));
    opt.zeroGrad();
    loss.backward();
    opt.step();
    losses.push(await loss.item());
    loss.dispose();
  }
  opt.zeroGrad();
  for (const p of model.parameters()) p.dispose();
  X.dispose();
  y.dispose();
  return losses;
}
