// One add + read on gpu:0 (or cpu), 2,000 times: median, p10, p90 in µs. For A/B runs of two
// builds or settings in separate processes, interleaved: node bench/probe-roundtrip.mjs [gpu:0|cpu]
import * as torch from '../dist/webtorch.js';

const dev = process.argv[2] ?? 'gpu:0';
if (dev !== 'cpu') await torch.gpu.init();
const x = torch.ones([4], { device: dev });
const t = [];
for (let i = 0; i < 2300; i++) {
  const t0 = performance.now();
  const y = x.add(1);
  await y.data();
  if (i >= 300) t.push(performance.now() - t0);
  y.dispose();
}
t.sort((a, b) => a - b);
const q = (f) => (t[Math.floor(f * t.length)] * 1000).toFixed(0);
console.log(`${dev}: one add + read median ${q(0.5)} µs, p10 ${q(0.1)}, p90 ${q(0.9)}`);
process.exit(0);
