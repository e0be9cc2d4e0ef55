// Where a 16 MiB transfer's time goes (issue 6's lavapipe transfer rows), in one process:
// the caller's copy of its array (`torch.tensor` copies, so the caller may reuse it at once),
// then, per rep: creating the tensor (that copy plus queueing), the sync that waits for the
// worker's `writeBuffer`, and `data()` (copy to staging, map, copy out, hand back).
// Run: node bench/probe-transfer.mjs [gpu:0|cpu] [MiB]   (after npm run build)
import * as torch from '../dist/webtorch.js';

const dev = process.argv[2] ?? 'gpu:0';
const n = (Number(process.argv[3] ?? 16) << 20) / 4;
if (dev.startsWith('gpu')) await torch.gpu.init();
const x = new Float32Array(n).map((_, i) => i % 97);
const median = (a) => a.slice().sort((p, q) => p - q)[a.length >> 1].toFixed(2);
const slice = [], create = [], sync = [], read = [];
for (let r = 0; r < 9; r++) {
  let t = performance.now();
  x.slice();
  slice.push(performance.now() - t);
  t = performance.now();
  const y = torch.tensor(x, { device: dev, dtype: 'float32' });
  create.push(performance.now() - t);
  t = performance.now();
  await torch.gpu.synchronize(dev);
  sync.push(performance.now() - t);
  t = performance.now();
  const back = await y.data();
  read.push(performance.now() - t);
  if (back[n - 1] !== x[n - 1]) throw new Error('read back the wrong values');
  y.dispose();
}
console.log(`${dev}, ${(4 * n) / 2 ** 20} MiB, medians of 9 reps (ms):`);
console.log(`  Float32Array.slice() alone       ${median(slice)}`);
console.log(`  torch.tensor (the copy, queued)  ${median(create)}`);
console.log(`  synchronize (worker writeBuffer) ${median(sync)}`);
console.log(`  data() (staging, map, copy out)  ${median(read)}`);
await torch.shutdown();
