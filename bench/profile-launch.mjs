// Where the caller's time goes on the launch path: 20 × 1,000 chained tiny adds on a device,
// under V8's sampling profiler; prints the functions with the most self time.
// Run: node bench/profile-launch.mjs [cpu|gpu:0]   (after npm run build)
import { Session } from 'node:inspector/promises';
import * as torch from '../dist/webtorch.js';

const dev = process.argv[2] ?? 'cpu';
await torch.gpu.init();
const session = new Session();
session.connect();
let x = torch.ones([4], { device: dev });
await x.data();
await session.post('Profiler.enable');
await session.post('Profiler.start');
const t0 = performance.now();
for (let rep = 0; rep < 20; rep++) {
  for (let i = 0; i < 1000; i++) {
    const y = x.add(1);
    x.dispose();
    x = y;
  }
  await x.data();
}
const ms = performance.now() - t0;
const { profile } = await session.post('Profiler.stop');
const self = new Map();
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
profile.samples.forEach((id, i) => {
  const f = byId.get(id).callFrame;
  const key = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber}`;
  self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const total = [...self.values()].reduce((a, b) => a + b, 0);
console.log(`${dev}: ${(ms / 20000 * 1000).toFixed(1)} µs per op to result (20,000 ops)`);
for (const [k, t] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`${(100 * t / total).toFixed(1).padStart(5)}%  ${k}`);
x.dispose();
await torch.shutdown();
