// GradScaler's check: the fused `ampUnscale` command (one dispatch per device) against the
// composed check it replaced (a mul per gradient, then cat · 0, sum, ne: many kernels and a
// temporary as large as all the gradients), over a model-like list of float32 gradients.
// Prints the median milliseconds to result (issue, run, flag read) of each, and the kernels each runs.
// Run: node bench/amp-unscale.mjs [gpu:0|cpu] [gradients] [elements each]   (after npm run build)
import * as torch from '../dist/webtorch.js';

const dev = process.argv[2] ?? 'gpu:0';
const count = Number(process.argv[3] ?? 64), size = Number(process.argv[4] ?? 262_144);
await torch.gpu.init();
const grads = Array.from({ length: count }, () => torch.randn([size], { device: dev }));
const found = torch.zeros([1], { device: dev }), inv = torch.full([1], 1, { device: dev, dtype: 'float32' });

function fused() {
  torch._ampForeachNonFiniteCheckAndUnscale_(grads, found, inv);
  return found;
}

function composed() {
  return torch.tidy(() => {
    for (const g of grads) {
      const u = g.mul(inv);
      g.copy_(u);
    }
    const total = torch.cat(grads.map((g) => g.reshape([-1]))).mul(0).sum();
    return total.ne(total).to('float32');
  });
}

async function time(fn, reps = 20) {
  const ms = [];
  for (let i = 0; i < reps + 3; i++) {
    const t0 = performance.now();
    const f = fn();
    await f.item();
    if (f !== found) f.dispose();
    if (i >= 3) ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  return ms[ms.length >> 1];
}

async function kernels(fn) {
  await torch._profileWorker(dev, true);
  const f = fn();
  await f.item();
  if (f !== found) f.dispose();
  const p = await torch._profileWorker(dev, false);
  const gpu = p.gpu ? Object.values(p.gpu).reduce((s, v) => s + v.count, 0) : null;
  return { commands: Object.entries(p.commands).filter(([k]) => !['record', 'mark', 'call', 'opTag', 'wait'].includes(k)).reduce((s, [, v]) => s + v.count, 0), dispatches: gpu };
}

console.log(`${dev}: ${count} float32 gradients of ${size} elements (${(count * size * 4 / 2 ** 20).toFixed(0)} MiB)`);
for (const [name, fn] of [['fused (ampUnscale)', fused], ['composed (before)', composed]]) {
  console.log(`${name.padEnd(20)} ${(await time(fn)).toFixed(3)} ms   ${JSON.stringify(await kernels(fn))}`);
}
[...grads, found, inv].forEach((t) => t.dispose());
await torch.shutdown();
