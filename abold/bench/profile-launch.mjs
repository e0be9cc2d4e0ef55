// Where the time goes on the launch path: 20 × 1,000 chained tiny adds on a device.
// Prints the caller's time to issue an op (the synchronous loop), the time to result per op
// (the loop, the worker and the device; the worker side is the difference while it is the
// bottleneck), then, under V8's sampling profiler, the caller's functions with the most self time.
// Run: node bench/profile-launch.mjs [cpu|gpu:0] [scalar|tensor]   (after npm run build)
//   scalar: x = x.add(1) (a JS scalar operand); tensor: x = x.add(one) (two tensors).
// To profile a worker itself, start an inspector Session inside it (node:inspector works in
// worker threads) and write the profile when the device closes.
import { Session } from 'node:inspector/promises';
import * as torch from '../dist/webtorch.js';

const dev = process.argv[2] ?? 'cpu';
const operand = process.argv[3] ?? 'scalar';
await torch.gpu.init();
const one = torch.ones([4], { device: dev });
let x = torch.ones([4], { device: dev });
await x.data();

/** One rep: 1,000 chained adds, then a read; returns [issue ms, to-result ms]. */
async function rep() {
  const t0 = performance.now();
  for (let i = 0; i < 1000; i++) {
    const y = operand === 'scalar' ? x.add(1) : x.add(one);
    x.dispose();
    x = y;
  }
  const t1 = performance.now();
  await x.data();
  return [t1 - t0, performance.now() - t0];
}

for (let i = 0; i < 5; i++) await rep();
const times = [];
for (let i = 0; i < 20; i++) times.push(await rep());
const median = (a) => a.slice().sort((p, q) => p - q)[a.length >> 1];
const issue = median(times.map((t) => t[0])), result = median(times.map((t) => t[1]));
console.log(`${dev}, ${operand} operand: issue ${issue.toFixed(2)} µs/op (caller), to result ${result.toFixed(2)} µs/op (median of 20 × 1,000 ops)`);

// The round trip (one add, then a read), split by the worker's own profile: the worker's time
// running and submitting commands, its wait for the device (the copy and the buffer mapping),
// and the rest, which is messaging between the threads and the caller's own code.
{
  const ROUND = 200;
  await torch._profileWorker(dev, true);
  const t0 = performance.now();
  for (let i = 0; i < ROUND; i++) {
    const y = x.add(1);
    await y.data();
    y.dispose();
  }
  const total = (performance.now() - t0) / ROUND * 1000;
  const p = await torch._profileWorker(dev, false);
  const run = Object.values(p.commands).reduce((a, c) => a + c.ms, 0) / ROUND * 1000;
  const flush = p.flushMs / ROUND * 1000, wait = p.waitMs / ROUND * 1000;
  console.log(`round trip (one add + read, ${ROUND}×, under the worker's profile): ${total.toFixed(0)} µs = worker running ${run.toFixed(0)} + ending batches ${flush.toFixed(0)} + waiting for the device ${wait.toFixed(0)} + messaging and the caller ${(total - run - flush - wait).toFixed(0)}`);
}

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.start');
const t0 = performance.now();
for (let i = 0; i < 20; i++) await rep();
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
console.log(`under the profiler: ${(ms / 20000 * 1000).toFixed(1)} µs per op to result (20,000 ops); caller self time:`);
for (const [k, t] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`${(100 * t / total).toFixed(1).padStart(5)}%  ${k}`);
x.dispose();
one.dispose();
await torch.shutdown();
