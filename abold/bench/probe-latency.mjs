// Latency floors under the round trip (issue 6, BENCHMARKS.md "Where launch time goes"): a bare
// postMessage ping-pong to a worker, the same with a Dawn device in the worker (idle, replying after
// onSubmittedWorkDone, and doing one dispatch + copy + mapAsync per message, as a read does), then
// webtorch's own: an empty synchronize on cpu and gpu:0, and one add + read on gpu:0.
// Medians of 300–500 round trips, in µs. Run: node bench/probe-latency.mjs   (after npm run build)
import { Worker } from 'node:worker_threads';
import * as torch from '../dist/webtorch.js';
import { median } from './lib/harness.mjs';

process.env.XDG_RUNTIME_DIR ??= '/tmp';

async function timeIt(label, f, n = 300) {
  for (let i = 0; i < 50; i++) await f();
  const t = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await f();
    t.push(performance.now() - t0);
  }
  console.log(`${label.padEnd(58)} ${(median(t) * 1000).toFixed(0).padStart(6)} µs`);
}

async function worker(label, data) {
  const w = new Worker(new URL('./lib/probe-worker.mjs', import.meta.url), { workerData: data });
  await new Promise((r) => w.once('message', r));
  await timeIt(label, () => new Promise((r) => { w.once('message', r); w.postMessage(1); }), 500);
  w.postMessage('close');
  await new Promise((r) => w.once('message', r));
  await w.terminate();
}

await worker('postMessage ping-pong, plain worker', {});
await worker('  worker holding an idle Dawn device', { dawn: true });
await worker('  reply after onSubmittedWorkDone', { dawn: true, onDone: true });
await worker('  one dispatch + copy + mapAsync per message (raw Dawn)', { dawn: true, roundTrip: true });
await torch.gpu.init();
const x = torch.ones([4], { device: 'gpu:0' });
await x.data();
await torch.ones([1]).data();
await timeIt('webtorch: synchronize(cpu), nothing queued', () => torch.gpu.synchronize('cpu'));
await timeIt('webtorch: synchronize(gpu:0), nothing queued', () => torch.gpu.synchronize('gpu:0'));
await timeIt('webtorch: one add + read on gpu:0', async () => {
  const y = x.add(1);
  await y.data();
  y.dispose();
});
x.dispose();
await torch.shutdown();
