// Does the bench's company slow webtorch's round trip? One add + read on gpu:0, alone, then with
// the suite's raw Dawn device (and tfjs-webgpu) open on the main thread, idle or after their own
// round trips. Medians of 1,000, µs.   node bench/probe-peers.mjs
import * as torch from '../dist/webtorch.js';
import { loadTf, setupDawn } from './lib/peers.mjs';

process.env.XDG_RUNTIME_DIR ??= '/tmp';
const med = (a) => a.slice().sort((p, q) => p - q)[a.length >> 1];
await torch.gpu.init();
const x = torch.ones([4], { device: 'gpu:0' });
async function rt(label, n = 1000) {
  for (let i = 0; i < 200; i++) { const y = x.add(1); await y.data(); y.dispose(); }
  const t = [];
  for (let i = 0; i < n; i++) { const t0 = performance.now(); const y = x.add(1); await y.data(); t.push(performance.now() - t0); y.dispose(); }
  console.log(`${label.padEnd(50)} ${(med(t) * 1000).toFixed(0)} µs (p10 ${(t.sort((a, b) => a - b)[n / 10 | 0] * 1000).toFixed(0)})`);
}
await rt('webtorch alone');
const dawn = await setupDawn();
await rt('with a raw Dawn device open on the main thread');
const tfjs = await loadTf({ gpu: true, cpu: false });
await tfjs.tf.setBackend('webgpu');
const a = tfjs.tf.ones([4]);
await a.data();
await rt('with tfjs-webgpu too');
// the main thread's event loop: spinning?
const t0 = process.cpuUsage(); await new Promise((r) => setTimeout(r, 500)); const u = process.cpuUsage(t0);
console.log(`process CPU during 500 ms of idle: ${((u.user + u.system) / 1000).toFixed(0)} ms`);
process.exit(0);
