// The index kernels with int64 indices, two builds interleaved (issue 19: what 8-byte int64
// indices cost gather, index_select and embedding against the old 4-byte storage).
//
//   node bench/index-int64.mjs [--device gpu:0|cpu] [--rounds N] [--batch N] [--quick] BUILD_DIR...
//
// Each BUILD_DIR is a webtorch checkout with a built dist/ (e.g. a worktree of the previous
// commit, and this one). Every round runs each build in its own process, in turn, so drift of
// the machine lands on both; the table gives each case's median over the rounds, in µs per op
// (time to result of a batch of ops, divided by the batch; `--batch`, default 20, 10 quick) and
// GB/s of logical traffic (the output written plus the indices read at the build's index width,
// plus the rows read), and the fastest round's µs, which a busy shared machine disturbs least.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = args.indexOf(name);
  if (i < 0) return dflt;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
};
const device = flag('--device', 'gpu:0');
const rounds = Number(flag('--rounds', '5'));
const batchFlag = flag('--batch', '');
const quick = args.includes('--quick');
const builds = args.filter((a) => !a.startsWith('--'));

/** The cases: [name, make(torch, dev) -> { run(), bytes(indexBytes) }]. */
function cases(torch, dev, small) {
  const f32 = (shape) => torch.rand(shape, { device: dev });
  const idx = (n, high) => torch.randint(0, high, [n], { device: dev });
  const rows = small ? 8192 : 65536, width = 128;
  return [
    ['index_select rows', () => {
      const x = f32([rows, width]), i = idx(rows, rows);
      return { run: () => torch.indexSelect(x, 0, i), bytes: (ib) => rows * width * 8 + rows * ib, inputs: [x, i] };
    }],
    ['gather dim 1', () => {
      const n = small ? 512 : 2048, x = f32([n, n]), i = torch.randint(0, n, [n, n], { device: dev });
      return { run: () => torch.gather(x, 1, i), bytes: (ib) => n * n * (8 + ib), inputs: [x, i] };
    }],
    ['embedding', () => {
      const vocab = 50000, dim = 64, b = small ? 16 : 64, s = 256, w = f32([vocab, dim]), i = torch.randint(0, vocab, [b, s], { device: dev });
      return { run: () => torch.F.embedding(i, w), bytes: (ib) => b * s * (dim * 8 + ib), inputs: [w, i] };
    }],
  ];
}

/** One build's figures: { case: µs per op }. Runs in a child process (`--child`). */
async function child(dist, dev, small, batchArg) {
  const torch = await import(`${dist}/dist/webtorch.js`);
  if (dev.startsWith('gpu')) {
    torch.gpu.configure?.({ allowSoftware: true });
    await torch.gpu.init?.();
  }
  const out = {};
  for (const [name, make] of cases(torch, dev, small)) {
    const c = make();
    const batch = Number(batchArg) || (small ? 10 : 20);
    const once = async () => {
      const t0 = performance.now();
      for (let k = 0; k < batch; k++) c.run().dispose();
      await torch.gpu.synchronize(dev).catch(async () => { const y = c.run(); await y.data(); y.dispose(); });
      return (performance.now() - t0) / batch;
    };
    await once();
    const samples = [];
    for (let r = 0; r < (small ? 3 : 5); r++) samples.push(await once());
    samples.sort((a, b) => a - b);
    out[name] = { us: samples[samples.length >> 1] * 1000, gb: c.bytes(torch.tensor([1], { dtype: 'int64' }).elementSize()) };
    c.inputs.forEach((t) => t.dispose());
  }
  await torch.shutdown();
  return out;
}

if (args.includes('--child')) {
  const [dist, dev, small, batchArg] = args.filter((a) => a !== '--child');
  console.log(JSON.stringify(await child(dist, dev, small === '1', batchArg)));
  process.exit(0);
}

if (!builds.length) {
  console.error('usage: node bench/index-int64.mjs [--device gpu:0|cpu] [--rounds N] [--quick] BUILD_DIR...');
  process.exit(2);
}
const self = fileURLToPath(import.meta.url);
const results = builds.map(() => ({}));
for (let r = 0; r < rounds; r++) {
  for (let b = 0; b < builds.length; b++) {
    const json = execFileSync(process.execPath, [self, '--child', builds[b], device, quick ? '1' : '0', batchFlag || '0'], { encoding: 'utf8', env: { ...process.env, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? '/tmp' } });
    const res = JSON.parse(json.trim().split('\n').pop());
    for (const [k, v] of Object.entries(res)) (results[b][k] ??= []).push(v);
  }
}
const med = (xs) => xs.slice().sort((a, b) => a - b)[xs.length >> 1];
console.log(`device ${device}, ${rounds} interleaved rounds${quick ? ', quick sizes' : ''}${batchFlag ? `, batch ${batchFlag}` : ''}, ${new Date().toISOString()}`);
console.log(`| case | ${builds.map((b) => `${b}: median µs/op (GB/s), fastest`).join(' | ')} | ratio of medians (last / first) | ratio of fastest |`);
console.log(`|---|${builds.map(() => '---|').join('')}---|---|`);
for (const name of Object.keys(results[0])) {
  const us = results.map((r) => med(r[name].map((v) => v.us)));
  const fast = results.map((r) => Math.min(...r[name].map((v) => v.us)));
  const gb = results.map((r, i) => r[name][0].gb / (us[i] * 1e-6) / 1e9);
  const cell = (i) => `${us[i].toFixed(1)} (${gb[i].toFixed(2)}), ${fast[i].toFixed(1)}`;
  console.log(`| ${name} | ${us.map((_, i) => cell(i)).join(' | ')} | ${(us[us.length - 1] / us[0]).toFixed(2)}× | ${(fast[fast.length - 1] / fast[0]).toFixed(2)}× |`);
}
