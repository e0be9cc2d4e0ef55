// Fused scaled dot product attention against the composed form (matmul, where, softmax) and, with
// --torch python3, PyTorch's F.scaled_dot_product_attention in the same call: per shape the
// largest |fused − composed| (output and dq/dk/dv), then ms per forward and per forward+backward
// (median of the timed rounds), and the bytes a forward keeps for the backward.
//   node bench/attention.mjs [--device gpu:0] [--torch python3]
import { execFileSync } from 'node:child_process';
import * as torch from '../dist/webtorch.js';

const F = torch.nn.functional;
const arg = (name, dflt) => { const i = process.argv.indexOf(name); return i > 0 ? process.argv[i + 1] : dflt; };
const d = arg('--device', 'gpu:0'), py = arg('--torch', null);
const SHAPES = process.env.ATTN_SMALL ? [[2, 2, 64, 16, true], [4, 4, 128, 32, true]] : [[32, 6, 256, 64, true], [16, 12, 512, 64, true], [8, 8, 1024, 64, true], [32, 6, 256, 64, false], [4, 16, 512, 128, true]].slice(0, Number(process.env.ATTN_N ?? 5));

function composed(q, k, v, causal) {
  const L = q.shape.at(-2), S = k.shape.at(-2);
  return torch.tidy(() => {
    let s = torch.matmul(q, k.transpose(-2, -1)).mul(1 / Math.sqrt(q.shape.at(-1)));
    if (causal) s = torch.where(torch.ones([L, S], { dtype: 'bool', device: q.device }).tril(), s, -Infinity);
    return torch.matmul(torch.softmax(s, -1), v);
  });
}
async function maxDiff(a, b) { const t = torch.tidy(() => a.sub(b).abs().max()); const v = await t.item(); t.dispose(); return v; }
async function time(fn, rounds = 10) {
  for (let i = 0; i < 2; i++) { fn(); await torch.gpu.synchronize(d); }
  const ts = [];
  for (let i = 0; i < rounds; i++) { const t0 = performance.now(); fn(); await torch.gpu.synchronize(d); ts.push(performance.now() - t0); }
  return ts.sort((a, b) => a - b)[rounds >> 1];
}
const rows = [];
for (const [B, H, L, E, causal] of SHAPES) {
  torch.manualSeed(0);
  const q = torch.randn([B, H, L, E], { device: d, requiresGrad: true }), k = torch.randn([B, H, L, E], { device: d, requiresGrad: true });
  const v = torch.randn([B, H, L, E], { device: d, requiresGrad: true }), g = torch.randn([B, H, L, E], { device: d });
  const fused = () => F.scaledDotProductAttention(q, k, v, { isCausal: causal });
  const comp = () => composed(q, k, v, causal);
  const a = fused(), b = comp();
  const ga = torch.autograd.grad([a], [q, k, v], [g]), gb = torch.autograd.grad([b], [q, k, v], [g]);
  const diffs = [await maxDiff(a, b), ...(await Promise.all([0, 1, 2].map((i) => maxDiff(ga[i], gb[i]))))];
  [a, b, ...ga, ...gb].forEach((t) => t.dispose());
  const run = (f, back) => () => torch.tidy(() => { const o = f(); if (back) torch.autograd.grad([o], [q, k, v], [g]).forEach((t) => t.dispose()); o.dispose(); });
  const noGrad = (f) => () => torch.noGrad(() => f().dispose());
  await torch.gpu.synchronize(d);
  const base = torch.gpu.memoryAllocated(d);
  const kf = fused(); const keptF = torch.gpu.memoryAllocated(d) - base; kf.dispose();
  const kc = comp(); const keptC = torch.gpu.memoryAllocated(d) - base; kc.dispose();
  const row = { shape: `${B}x${H}x${L}x${E}${causal ? ' causal' : ''}`, diffs: diffs.map((x) => x.toExponential(1)).join(' '),
    fusedFwd: await time(noGrad(fused)), composedFwd: await time(noGrad(comp)), fusedBoth: await time(run(fused, true)), composedBoth: await time(run(comp, true)),
    keptMiB: `${(keptF / 2 ** 20).toFixed(1)} / ${(keptC / 2 ** 20).toFixed(1)}` };
  if (py) {
    const code = `import torch,time,torch.nn.functional as F
q,k,v,g=[torch.randn(${B},${H},${L},${E},device='cuda',requires_grad=i<3) for i in range(4)]
def t(f,n=10):
  for _ in range(3): f()
  torch.cuda.synchronize(); ts=[]
  for _ in range(n):
    t0=time.perf_counter(); f(); torch.cuda.synchronize(); ts.append((time.perf_counter()-t0)*1e3)
  return sorted(ts)[n//2]
def fwd():
  with torch.no_grad(): F.scaled_dot_product_attention(q,k,v,is_causal=${causal ? 'True' : 'False'})
def both():
  o=F.scaled_dot_product_attention(q,k,v,is_causal=${causal ? 'True' : 'False'}); torch.autograd.grad([o],[q,k,v],[g])
print(t(fwd), t(both))`;
    try { const [f, b2] = execFileSync(py, ['-c', code]).toString().trim().split(/\s+/).map(Number); row.torchFwd = f; row.torchBoth = b2; } catch (e) { row.torch = String(e).slice(0, 80); }
  }
  rows.push(row);
  console.log(JSON.stringify(row));
  [q, k, v, g].forEach((t) => t.dispose());
}
await torch.shutdown();
