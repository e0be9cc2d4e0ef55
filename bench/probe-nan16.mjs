// Where do NaNs of 16-bit tensors get lost on an adapter? Prints each stage's bits (hex) for
// [NaN, inf, -inf, 1.5, -0, 3] in bfloat16 and float16, on gpu:0. Run: node bench/probe-nan16.mjs
import * as torch from '../dist/webtorch.js';
torch.gpu.configure({ allowSoftware: true });
await torch.gpu.init();
const vals = [NaN, Infinity, -Infinity, 1.5, -0, 3];
const hex = async (t) => {
  const d = await t.data();
  const u = d instanceof Float32Array ? new Uint32Array(d.buffer, d.byteOffset, d.length) : new Uint16Array(d.buffer, d.byteOffset, d.length);
  return [...u].map((x) => x.toString(16)).join(' ');
};
for (const dtype of ['bfloat16', 'float16']) {
  const cpu = torch.tensor(vals, { dtype });
  const g = cpu.to('gpu:0');
  const f = torch.tensor(vals, { device: 'gpu:0' });
  const rows = {
    'cpu tensor': cpu, 'cpu → gpu:0': g, 'made on gpu:0': torch.tensor(vals, { dtype, device: 'gpu:0' }),
    'f32 on gpu:0 .to(dtype)': f.to(dtype), 'gpu:0 .float()': g.float(), 'neg': g.neg(), 'abs': g.abs(), 'relu': g.relu(),
    'exp': g.exp(), 'add 0': g.add(0), 'mul 1': g.mul(1), 'f32 relu': f.relu(), 'f32 neg': f.neg(),
  };
  console.log(`== ${dtype}`);
  for (const [k, t] of Object.entries(rows)) console.log(k.padEnd(26), await hex(t));
}
await torch.shutdown();
