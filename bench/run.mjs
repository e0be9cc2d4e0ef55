// webtorch's benchmark suite: `npm run bench` (builds, then runs this). Every case runs on webtorch
// and, in the same process on the same hardware, on TensorFlow.js (WebGPU on the same Dawn adapter,
// or WASM for cpu), on raw Dawn where a floor makes sense, and on PyTorch through
// bench/torch_peer.py when a Python with torch is found. Prints a table; `--json FILE` also writes
// the results and an SVG chart next to them. `--browser` adds the browser column: the same cases
// in headless Chromium against TensorFlow.js in the same page (bench/lib/browser.mjs). See
// BENCHMARKS.md for how to read it.
import { spawnSync } from 'node:child_process';
import { writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CASES, PENDING } from './cases/index.mjs';
import { renderChart } from './chart.mjs';
import { BUDGETS, measureRow } from './lib/harness.mjs';
import { findPython, hostInfo, loadTf, setupDawn, tfSync } from './lib/peers.mjs';
import { addRatios, figureOf, fmt, geomean, PEERS, speedRatio, table } from './lib/report.mjs';
import { browserTable, mergeBrowser, runBrowser } from './lib/browser.mjs';
import { runTorchPeer, torchHasCuda } from './lib/torch.mjs';

const HELP = `usage: node bench/run.mjs [--quick] [--device gpu|cpu|all] [--cases a,b] [--browser] [--json FILE]
  --quick        small sizes and short budgets (smoke runs, CI; ~2 min on 2 cores)
  --device D     gpu, cpu or all (default all; gpu rows need a WebGPU adapter)
  --cases a,b    cases or groups: ${[...new Set(CASES.flatMap((c) => [c.group, c.name]))].join(', ')}
  --browser      also run the cases in headless Chromium (/usr/bin/chromium) against tfjs-webgpu,
                 tfjs-wasm and the page's raw WebGPU device: the browser column (about as long
                 again as the Node run; not in the default run)
  --json FILE    also write the results as JSON, and FILE's name with .svg as a chart
environment: WEBTORCH_BENCH_ONLY=webtorch,dawn,... (only those implementations), WEBTORCH_BENCH_PYTHON=python|off (default: the first python3 that imports torch),
  WEBTORCH_BENCH_TORCH_DEVICE=cpu (PyTorch on the CPU even with CUDA), WEBTORCH_BENCH_TORCH_THREADS=N`;

let opts;
try {
  ({ values: opts } = parseArgs({
    options: {
      json: { type: 'string' },
      quick: { type: 'boolean', default: false },
      cases: { type: 'string' },
      device: { type: 'string', default: 'all' },
      browser: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }));
} catch (e) {
  console.error(`${e.message}\n${HELP}`);
  process.exit(2);
}
if (opts.help) { console.log(HELP); process.exit(0); }
if (!['gpu', 'cpu', 'all'].includes(opts.device)) { console.error(`--device must be gpu, cpu or all\n${HELP}`); process.exit(2); }
const wanted = opts.cases ? opts.cases.split(',').map((s) => s.trim()).filter(Boolean) : null;
const unknown = (wanted ?? []).filter((w) => !CASES.some((c) => c.name === w || c.group === w));
if (unknown.length) { console.error(`unknown case(s): ${unknown.join(', ')}\n${HELP}`); process.exit(2); }
const cases = CASES.filter((c) => !wanted || wanted.includes(c.name) || wanted.includes(c.group));

process.env.XDG_RUNTIME_DIR ??= '/tmp'; // Dawn's Vulkan loader warns without it
const log = (...a) => console.error(...a);

/** The commit the run measured, and whether the sources differed from it (null outside git). */
function gitInfo() {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const git = (...args) => spawnSync('git', args, { cwd: root, encoding: 'utf8' });
  const head = git('rev-parse', '--short', 'HEAD');
  if (head.status !== 0) return null;
  const dirty = git('status', '--porcelain', '--', 'ts', 'wgsl', 'assembly').stdout.trim();
  return { commit: head.stdout.trim(), modifiedSources: dirty ? dirty.split('\n').length : 0 };
}
const budget = opts.quick ? BUDGETS.quick : BUDGETS.full;
const started = new Date();

const torch = await import('../dist/webtorch.js');

// ---- devices and peers ----
let devices = opts.device === 'all' ? ['gpu', 'cpu'] : [opts.device];
const deviceInfo = {};
let dawn = null;
if (devices.includes('gpu')) {
  torch.gpu.configure({ allowSoftware: true }); // the benchmark times whatever adapter there is, lavapipe too
  const dev = await torch.tryGpu(0);
  dawn = await setupDawn().catch((e) => (log(`raw Dawn: ${e.message}`), null));
  if (dev.type !== 'gpu') {
    if (opts.device === 'gpu') { console.error('no WebGPU adapter (on a machine without a GPU: bash scripts/software-webgpu.sh)'); process.exit(1); }
    log('no WebGPU adapter: gpu rows skipped');
    devices = devices.filter((d) => d !== 'gpu');
  } else {
    deviceInfo.gpu = { webtorch: await torch.gpu.getDeviceName(0), dawn: dawn?.description ?? null };
  }
}
const tfjs = await loadTf({ gpu: devices.includes('gpu'), cpu: devices.includes('cpu'), gradients: cases.some((c) => c.group === 'train' && !c.requires?.(torch)) });
if (deviceInfo.gpu) deviceInfo.gpu.tfjs = tfjs.adapterInfo;
const host = hostInfo();
if (devices.includes('cpu')) deviceInfo.cpu = { name: `${host.cpuModel} ×${host.cpus}`, webtorch: 'cpu device (AssemblyScript kernels in a worker)', tfjs: `wasm, ${tfjs.wasmThreads} thread(s), simd ${tfjs.wasmSimd}` };

let py = process.env.WEBTORCH_BENCH_PYTHON === 'off' ? { error: 'WEBTORCH_BENCH_PYTHON=off' } : findPython();
const torchDevice = py.python ? (torchHasCuda(py.python) ? 'gpu' : 'cpu') : null;
log(`gpu: ${deviceInfo.gpu?.webtorch ?? '—'} | cpu: ${deviceInfo.cpu?.name ?? '—'} | tfjs ${tfjs.version} (webgpu ${tfjs.webgpu}, wasm ${tfjs.wasm}) | PyTorch: ${py.python ? `${py.version} via ${py.python} on ${torchDevice}` : py.error}`);

// ---- the cases ----
// WEBTORCH_BENCH_ONLY=webtorch,dawn: only these implementations (a diagnosis: does the company change a row?)
const onlyImpls = process.env.WEBTORCH_BENCH_ONLY?.split(',') ?? null;
const rows = [], jobs = [];
for (const device of devices) {
  const backend = device === 'gpu' ? 'webgpu' : 'wasm';
  const tfOk = tfjs[backend] && (await tfjs.tf.setBackend(backend));
  // tfjs-webgpu runs ops on tiny host-resident tensors on its CPU backend; gpu rows time its GPU path
  if (tfOk && device === 'gpu') tfjs.tf.env().set('WEBGPU_CPU_FORWARD', false);
  const wt = device === 'gpu' ? torch.device('gpu:0') : torch.CPU;
  const ctx = {
    device, torch, wt,
    wtSync: () => torch.gpu.synchronize(wt),
    tf: tfOk ? tfjs.tf : null,
    tfSync: () => tfSync(tfjs.tf),
    dawn: device === 'gpu' ? dawn?.device ?? null : null,
  };
  for (const c of cases) {
    if (c.requires?.(torch)) continue;
    for (const spec of c.rows(opts.quick, device, ctx)) {
      const inputs = c.inputs?.(spec.params);
      const check = c.check?.(spec.params, inputs) ?? null;
      const toUnit = (sec) => c.figure(spec.params, sec);
      const row = { case: c.name, label: spec.label, size: spec.size, device, unit: c.unit, higherIsBetter: c.higherIsBetter, params: spec.params, webtorch: null, peers: {}, refs: {} };
      const impls = [];
      for (const [who, make] of Object.entries(c.impls)) {
        if (onlyImpls && !onlyImpls.includes(who.replace(/^ref:/, ''))) continue;
        try {
          const impl = make(ctx, spec.params, inputs);
          if (impl) impls.push([who, impl]);
        } catch (e) {
          impls.push([who, { launch() { throw e; }, sync: async () => {} }]);
        }
      }
      const rowBudget = c.warmupMs && !opts.quick ? { ...budget, warmupMs: Math.max(budget.warmupMs, c.warmupMs) } : budget;
      const measured = await measureRow(impls, check, rowBudget, device === 'gpu' ? c.block ?? 1 : 1);
      for (const [who, r] of Object.entries(measured)) {
        const fig = figureOf(r, toUnit);
        if (who === 'webtorch') row.webtorch = fig;
        else if (who.startsWith('ref:')) row.refs[who.slice(4)] = fig;
        else row.peers[who] = fig;
      }
      const job = torchDevice === device ? c.torchJob?.(spec.params, device) : null;
      if (job) jobs.push({ key: `${rows.length}`, ...job, warmupMs: rowBudget.warmupMs });
      rows.push(addRatios(row));
      log(`[${device}] ${row.label} ${row.size}: webtorch ${fmt(row.webtorch?.value)}${row.webtorch?.error ? ' (error)' : ''} ${row.unit}` +
        Object.entries(row.peers).map(([p, f]) => `, ${p} ${f?.error ? 'error' : fmt(f?.value)}`).join(''));
    }
  }
}

// ---- PyTorch, after the JS cases ----
let torchInfo = py.python ? { python: py.python, version: py.version, device: torchDevice } : { skipped: py.error };
if (jobs.length) {
  log(`PyTorch: ${jobs.length} jobs on ${torchDevice}…`);
  try {
    const res = await runTorchPeer(py.python, jobs, budget);
    torchInfo = { ...torchInfo, device: res.device, deviceName: res.deviceName, threads: res.threads, tf32: res.tf32, blas: res.blas };
    for (const j of jobs) {
      const row = rows[Number(j.key)];
      row.peers.torch = figureOf(res.results[j.key], (sec) => CASES.find((c) => c.name === row.case).figure(row.params, sec));
      addRatios(row);
    }
  } catch (e) {
    torchInfo.error = e.message;
    log(`PyTorch peer failed: ${e.message}`);
  }
}
// Builds before 7a88a94 did not keep the process alive while shutdown() waited for their idle
// (unref'd) workers: Node exited with 13 mid-await. A timer holds the loop until it resolves.
const hold = setInterval(() => {}, 1000);
await Promise.race([torch.shutdown(), new Promise((r) => setTimeout(r, 10_000))]);
clearInterval(hold);

// ---- the browser column, once Node's devices are closed (both may share the machine's cores) ----
let browserInfo = null;
if (opts.browser) {
  try {
    const b = await runBrowser({ quick: opts.quick, devices, cases: wanted, log });
    mergeBrowser(rows, b, speedRatio);
    browserInfo = b.info;
  } catch (e) {
    browserInfo = { error: e.message };
    log(`browser column failed: ${e.message}`);
  }
}

// ---- report ----
const pending = [
  ...cases.filter((c) => c.requires?.(torch)).map((c) => {
    const specs = c.rows(opts.quick, devices[0] ?? 'cpu', {});
    return { label: specs[0]?.label ?? c.name, size: specs.map((s) => s.size).join(', '), needs: c.requires(torch), status: `needs ${c.requires(torch)}: not yet available` };
  }),
  ...PENDING.map(({ present, ...p }) => ({ ...p, status: present(torch) ? `${p.needs}: exported now, the case is still to write` : `needs ${p.needs}: not yet available` })),
];
const summary = {};
for (const d of devices) {
  summary[d] = {};
  for (const p of PEERS) {
    const g = geomean(rows.filter((r) => r.device === d), p);
    if (g) summary[d][p] = g;
  }
}
const result = {
  suite: 'webtorch bench',
  webtorch: gitInfo(),
  date: started.toISOString(),
  command: `node bench/run.mjs ${process.argv.slice(2).join(' ')}`.trim(),
  quick: opts.quick,
  host: { ...host, loadavgAtEnd: os.loadavg().map((x) => +x.toFixed(2)) },
  devices: deviceInfo,
  peers: { tfjs: { version: tfjs.version, webgpu: tfjs.webgpu, webgpuCpuForward: false, wasm: tfjs.wasm, wasmThreads: tfjs.wasmThreads, errors: tfjs.errors }, torch: torchInfo, dawn: dawn ? 'main-thread GPUDevice on the same adapter' : null },
  budget,
  ...(browserInfo ? { browser: browserInfo } : {}),
  summary,
  rows,
  pending,
};

console.log(`\nwebtorch bench, ${result.date}${opts.quick ? ' (quick)' : ''}${result.webtorch ? `, webtorch ${result.webtorch.commit}${result.webtorch.modifiedSources ? ` + ${result.webtorch.modifiedSources} modified source files` : ''}` : ''}`);
if (deviceInfo.gpu) console.log(`gpu: ${deviceInfo.gpu.webtorch}  (webtorch gpu:0, tfjs-webgpu and raw Dawn on the same adapter)`);
if (deviceInfo.cpu) console.log(`cpu: ${deviceInfo.cpu.name}  (webtorch ${deviceInfo.cpu.webtorch}; tfjs ${deviceInfo.cpu.tfjs})`);
console.log(`load average at start ${result.host.loadavgAtStart.join(' ')}, at end ${result.host.loadavgAtEnd.join(' ')} (${host.cpus} cores)`);
console.log(`PyTorch: ${torchInfo.version ? `${torchInfo.version} on ${torchInfo.deviceName ?? torchInfo.device}${torchInfo.threads ? `, ${torchInfo.threads} thread(s)` : ''}${torchInfo.blas ? `, BLAS ${torchInfo.blas}` : ''}${torchInfo.tf32 === false ? ', TF32 off' : ''}` : torchInfo.skipped ?? torchInfo.error}`);
console.log('figures: medians; (×) = webtorch speed / peer speed, > 1 means webtorch is faster\n');
console.log(table(rows, pending));
for (const d of devices) {
  const s = Object.entries(summary[d]).map(([p, g]) => `${p} ${fmt(g)}×`).join(', ');
  if (s) console.log(`geometric mean of the ratios on ${d}: ${s}`);
}
// A case's own summary of its rows (bench/cases/parallel.mjs: the scaling ratios, 2 devices over 1).
for (const c of cases) {
  const lines = c.summary?.(rows.filter((r) => r.case === c.name)) ?? [];
  if (lines.length) (result.caseSummaries ??= {})[c.name] = lines;
  for (const l of lines) console.log(`${c.name}: ${l}`);
}

if (browserInfo) {
  console.log(`\nbrowser column: ${browserInfo.error ? `failed: ${browserInfo.error}` : `Chromium ${browserInfo.chromium}, gpu adapter ${browserInfo.adapter ?? '—'}, cross-origin isolated ${browserInfo.crossOriginIsolated}, tfjs ${browserInfo.tfjs} (wasm ${browserInfo.tfjsWasmThreadedBuild ? 'threaded build, ' : ''}${browserInfo.tfjsWasmThreads ?? '—'} thread(s)); (×) = webtorch / peer in the page`}`);
  if (!browserInfo.error) {
    console.log(browserTable(rows, fmt));
    for (const d of devices) {
      const s = ['tfjs', 'dawn'].map((p) => [p, geomean(rows.filter((r) => r.device === d && r.browser).map((r) => r.browser), p)]).filter(([, g]) => g).map(([p, g]) => `${p} ${fmt(g)}×`).join(', ');
      if (s) console.log(`geometric mean of the browser's ratios on ${d}: ${s}`);
    }
  }
}

if (opts.json) {
  mkdirSync(path.dirname(path.resolve(opts.json)), { recursive: true });
  writeFileSync(opts.json, JSON.stringify(result, null, 1) + '\n');
  const svg = opts.json.replace(/\.json$/i, '') + '.svg';
  writeFileSync(svg, renderChart(result));
  console.log(`\nwrote ${opts.json} and ${svg}`);
}
// exit once stdout is flushed (Dawn's instance would keep the process alive otherwise)
const failed = rows.filter((r) => r.webtorch?.error);
process.stdout.write('', () => process.exit(failed.length ? 1 : 0));
