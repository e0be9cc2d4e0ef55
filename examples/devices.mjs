// The CUDA-semantics example from PyTorch's notes, on webtorch's devices:
// tensors on gpu:0 and gpu:1, a copy between them, and the cross-device error.
// Run: npm run demo   (falls back to cpu when there is no WebGPU adapter)
import * as torch from '../dist/webtorch.js';

// Two logical devices, even on one GPU; a software adapter (lavapipe) is fine for showing the semantics.
torch.gpu.configure({ devices: 2, allowSoftware: true });
const dev = await torch.tryGpu(0);
console.log(`webtorch on ${dev}${dev.type === 'gpu' ? ` (${await torch.gpu.getDeviceName(0)})` : ' (no WebGPU adapter found)'}`);

if (dev.type === 'gpu') {
  const x = torch.tensor([1, 2, 3], { device: 'gpu:0', dtype: 'float32' });
  const y = torch.tensor([10, 20, 30], { dtype: 'float32' }).cuda();      // cpu → current device (gpu:0)
  const [a, b, c] = torch.gpu.withDevice(1, () => {
    const a = torch.ones([3], { device: 'gpu' });                          // allocated on gpu:1
    const b = x.add(y).to('gpu:1');                                        // gpu:0 → gpu:1, worker to worker
    return [a, b, a.mul(b)];                                               // computed on gpu:1
  });
  console.log(`x + y on ${x.device}, copied to ${b.device}:`, await b.tolist());
  console.log(`a * b on ${c.device}:`, await c.tolist(), `(c.getDevice() = ${c.getDevice()})`);
  try {
    x.add(a);
  } catch (e) {
    console.log('x + a:', e.message);
  }
  const m = torch.randn([256, 256], { device: 'gpu:1' });
  const s = m.matmul(m.T).sum(1).cpu();
  console.log('sum(m @ m.T, 1)[:4] on cpu:', (await s.tolist()).slice(0, 4).map((v) => v.toFixed(3)));
} else {
  const x = torch.tensor([[1, 2], [3, 4]], { dtype: 'float32' });
  console.log('x @ x on cpu:', await x.matmul(x).tolist());
}
await torch.shutdown();
