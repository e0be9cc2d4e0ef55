// A GPU-side profile of webtorch's own WGSL kernels (issue 6): runs the shader generators of
// build/js/wgsl/ (`npm run build` writes them) directly on a Dawn device, checks each kernel
// against a float64 CPU reference, and times it on the GPU with timestamp queries. Optionally
// adds the same shape's caller-side time through the runtime (dist/webtorch.js, default kernel
// choice) and PyTorch's kernel time from CUDA events (bench/torch_kernels.py), so that the
// comparison is GPU time against GPU time.
//
//   node bench/profile-kernels.mjs [--quick] [--cases matmul,elementwise,reduce] [--variants 1,3,4]
//       [--runtime] [--torch] [--dawn-flags FLAGS] [--json FILE]
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { create, globals } from 'webgpu';

const HELP = `usage: node bench/profile-kernels.mjs [options]
  --quick          small sizes and budgets (lavapipe)
  --cases a,b      matmul, batched, skinny, mlp, elementwise, reduce (default: all)
                   (mlp: the MLP training step's products, each under its old and new
                   variant and alternatives)
  --mlp-variants a variants for the mlp case (default: per shape; v/s = v split over s slices of K)
  --variants 1,4   matmul variants (default: every one that fits the adapter)
  --runtime        also time each shape through webtorch (caller side, default kernel choice)
  --torch          also time each shape in PyTorch with CUDA events (bench/torch_kernels.py)
  --dawn-flags F   flags for Dawn's create(), comma-separated lists joined by ';'
                   (e.g. "enable-dawn-features=allow_unsafe_apis,disable_robustness")
  --sizes a,b      square matmul sizes (default 1024,2048,4096; quick 256,512)
  --min-ms N       GPU time per sample (default 20, quick 5)
  --json FILE      write the results as JSON`;

let opts;
try {
  ({ values: opts } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      cases: { type: 'string', default: 'matmul,batched,skinny,mlp,elementwise,reduce' },
      variants: { type: 'string' },
      runtime: { type: 'boolean', default: false },
      torch: { type: 'boolean', default: false },
      'dawn-flags': { type: 'string', default: '' },
      'min-ms': { type: 'string' },
      sizes: { type: 'string' },
      'mlp-variants': { type: 'string' },
      json: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }));
} catch (e) {
  console.error(`${e.message}\n${HELP}`);
  process.exit(2);
}
if (opts.help) { console.log(HELP); process.exit(0); }
process.env.XDG_RUNTIME_DIR ??= '/tmp';
const log = (...a) => console.error(...a);
const cases = new Set(opts.cases.split(','));
const minMs = Number(opts['min-ms'] ?? (opts.quick ? 5 : 20));
const SAMPLES = opts.quick ? 3 : 7;

const root = new URL('..', import.meta.url);
const { StorageCode } = await import(new URL('build/js/ts/dtype.js', root));
const mm = await import(new URL('build/js/wgsl/matmul.js', root));
const ew = await import(new URL('build/js/wgsl/elementwise.js', root));
const { reduceShader } = await import(new URL('build/js/wgsl/reduce.js', root));
const { ReduceOp } = await import(new URL('build/js/ts/ir/ops.js', root));
const { ELEMENTWISE, WGSL_PRELUDE } = await import(new URL('build/js/ts/ops/table.js', root));
const F32 = StorageCode.F32;

// ---- the device ----
Object.assign(globalThis, globals);
const flags = ['disable-dawn-features=timestamp_quantization', ...opts['dawn-flags'].split(';').filter(Boolean)];
const gpu = create(flags);
const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
if (!adapter) { console.error('no WebGPU adapter'); process.exit(1); }
if (!adapter.features.has('timestamp-query')) { console.error('the adapter lacks timestamp-query'); process.exit(1); }
const limitNames = ['maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize', 'maxComputeInvocationsPerWorkgroup'];
const device = await adapter.requestDevice({
  requiredFeatures: ['timestamp-query', ...(adapter.features.has('subgroups') ? ['subgroups'] : [])],
  requiredLimits: Object.fromEntries(limitNames.map((l) => [l, adapter.limits[l]])),
});
device.addEventListener?.('uncapturederror', (e) => log('uncaptured:', e.error?.message));
const adapterName = `${adapter.info.vendor}: ${adapter.info.description || adapter.info.device}`;
log(`adapter ${adapterName}; workgroup storage ${device.limits.maxComputeWorkgroupStorageSize} B; flags ${flags.join(' ')}`);

// ---- buffers, pipelines, timing ----
const S = GPUBufferUsage.STORAGE, CD = GPUBufferUsage.COPY_DST, CS = GPUBufferUsage.COPY_SRC;

/** Deterministic uniform [-1, 1) floats. */
function rand(n, seed) {
  const out = new Float32Array(n);
  let s = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    out[i] = (s / 4294967296) * 2 - 1;
  }
  return out;
}

function buffer(data, bytes = data.byteLength) {
  const b = device.createBuffer({ size: Math.max(16, Math.ceil(bytes / 16) * 16), usage: S | CD | CS });
  if (data) device.queue.writeBuffer(b, 0, data);
  return b;
}

async function readBack(b, bytes) {
  const r = device.createBuffer({ size: Math.ceil(bytes / 4) * 4, usage: GPUBufferUsage.MAP_READ | CD });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(b, 0, r, 0, r.size);
  device.queue.submit([enc.finish()]);
  await r.mapAsync(GPUMapMode.READ);
  const out = new Float32Array(r.getMappedRange().slice(0));
  r.destroy();
  return out;
}

const pipelines = new Map();
async function pipeline(code) {
  let p = pipelines.get(code);
  if (!p) {
    device.pushErrorScope('validation');
    p = device.createComputePipeline({ layout: 'auto', compute: { module: device.createShaderModule({ code }), entryPoint: 'main' } });
    const err = await device.popErrorScope();
    if (err) throw new Error(`pipeline: ${err.message.slice(0, 600)}`);
    pipelines.set(code, p);
  }
  return p;
}

/** One kernel launch: WGSL, params words, storage buffers (output first) and grid. */
async function kernel(code, params, storages, grid) {
  const p = await pipeline(code);
  const pb = buffer(new Uint8Array(params));
  const group = device.createBindGroup({
    layout: p.getBindGroupLayout(0),
    entries: [pb, ...storages].map((b, i) => ({ binding: i, resource: { buffer: b } })),
  });
  return { p, group, grid, pb };
}

function grid1d(invocations, wg = ew.WG) {
  const groups = Math.max(1, Math.ceil(invocations / wg));
  return groups <= ew.MAX_X ? [groups, 1, 1] : [ew.MAX_X, Math.ceil(groups / ew.MAX_X), 1];
}

async function runOnce(launches) {
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass();
  for (const l of launches) { pass.setPipeline(l.p); pass.setBindGroup(0, l.group); pass.dispatchWorkgroups(...l.grid); }
  pass.end();
  device.queue.submit([enc.finish()]);
  await device.queue.onSubmittedWorkDone();
}

/**
 * GPU seconds of one run of `launches` (dispatched in order in one compute pass): passes of `reps`
 * runs with timestamps at their start and end; the median over samples, divided by `reps`.
 */
async function gpuTime(launches) {
  const qs = device.createQuerySet({ type: 'timestamp', count: 2 * SAMPLES });
  const resolve = device.createBuffer({ size: 16 * SAMPLES, usage: GPUBufferUsage.QUERY_RESOLVE | CS });
  const read = device.createBuffer({ size: 16 * SAMPLES, usage: GPUBufferUsage.MAP_READ | CD });
  const measure = async (reps, samples) => {
    const enc = device.createCommandEncoder();
    for (let s = 0; s < samples; s++) {
      const pass = enc.beginComputePass({ timestampWrites: { querySet: qs, beginningOfPassWriteIndex: 2 * s, endOfPassWriteIndex: 2 * s + 1 } });
      for (let r = 0; r < reps; r++) for (const l of launches) { pass.setPipeline(l.p); pass.setBindGroup(0, l.group); pass.dispatchWorkgroups(...l.grid); }
      pass.end();
    }
    enc.resolveQuerySet(qs, 0, 2 * samples, resolve, 0);
    enc.copyBufferToBuffer(resolve, 0, read, 0, 16 * samples);
    device.queue.submit([enc.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    const t = new BigInt64Array(read.getMappedRange().slice(0));
    read.unmap();
    const secs = [];
    for (let s = 0; s < samples; s++) secs.push(Number(t[2 * s + 1] - t[2 * s]) * 1e-9 / reps);
    return secs.sort((a, b) => a - b);
  };
  await measure(1, 1); // warm-up
  const one = (await measure(1, 1))[0];
  const reps = Math.max(1, Math.min(500, Math.ceil((minMs * 1e-3) / Math.max(one, 1e-7))));
  const secs = await measure(reps, SAMPLES);
  qs.destroy(); resolve.destroy(); read.destroy();
  return { seconds: secs[secs.length >> 1], min: secs[0], reps, samples: SAMPLES };
}

// ---- checks ----
function checkClose(got, want, tol, what) {
  for (let i = 0; i < want.length; i++) {
    const t = typeof tol === 'function' ? tol(i) : tol;
    if (!(Math.abs(got[i] - want[i]) <= t)) throw new Error(`${what}: element ${i} is ${got[i]}, expected ${want[i]} (±${t})`);
  }
}

/** matmul entries (row, col) of batch 0 in float64, with the tolerance from Σ|a·b|. */
function matmulRef(a, b, m, n, k, picks) {
  return picks.map(([r, c]) => {
    let s = 0, abs = 0;
    for (let j = 0; j < k; j++) { const p = a[r * k + j] * b[j * n + c]; s += p; abs += Math.abs(p); }
    return [s, 1e-5 * abs + 1e-6];
  });
}

// ---- matmul ----
const results = [];
function record(row) {
  results.push(row);
  const fig = row.figure.toPrecision(3);
  log(`${row.case.padEnd(10)} ${row.shape.padEnd(18)} ${row.kernel.padEnd(26)} ${(row.gpuSeconds * 1e6).toFixed(1).padStart(10)} µs  ${fig.padStart(7)} ${row.unit}`);
}

const limit = device.limits.maxComputeWorkgroupStorageSize;
const skinnyVariants = Object.keys(mm.SKINNY_TILINGS).map(Number);
/** Variants that take any strides (26: direct, 29 and up: skinny), as opposed to the vec4 tiles' contiguous rows. */
const strided = (v) => v === 1 || v === mm.DIRECT || skinnyVariants.includes(v);
const allVariants = [1, 2, 3, ...Object.keys(mm.MATMUL_TILINGS).map(Number), mm.DIRECT, ...skinnyVariants].sort((a, b) => a - b);
const variants = (opts.variants ? opts.variants.split(',').map(Number) : allVariants)
  .filter((v) => v <= 3 || strided(v) || (mm.MATMUL_TILINGS[v] && mm.tilingStorage(mm.MATMUL_TILINGS[v]) <= limit));

/**
 * A matmul launch of variant v over buffers (A, B, out), `batch` products of m×k · k×n; A and B
 * row-major unless `strides` says otherwise (aBS, aRS, aCS, bBS, bRS, bCS).
 */
function matmulLaunch(v, bufs, m, n, k, batch = 1, strides = {}) {
  const code = mm.matmulVariantShader(v, F32, 1, 2, 3, false, false, m, n);
  const p = new Uint32Array([m, n, k, 0, strides.aBS ?? (batch > 1 ? m * k : 0), strides.aRS ?? k, strides.aCS ?? 1,
    0, strides.bBS ?? (batch > 1 ? k * n : 0), strides.bRS ?? n, strides.bCS ?? 1, 0]);
  return kernel(code, p.buffer, [bufs.out, bufs.a, bufs.b], mm.matmulVariantGrid(v, m, n, batch));
}

/** Every output of `batch` products against float64, A and B read through `strides` (elements), or throws. */
async function checkStrided(v, m, n, k, batch, st) {
  const aLen = (batch - 1) * st.aBS + (m - 1) * st.aRS + (k - 1) * st.aCS + 1, bLen = (batch - 1) * st.bBS + (k - 1) * st.bRS + (n - 1) * st.bCS + 1;
  const a = rand(aLen, 11), b = rand(bLen, 12);
  const bufs = { a: buffer(a), b: buffer(b), out: buffer(null, batch * m * n * 4) };
  await runOnce([await matmulLaunch(v, bufs, m, n, k, batch, st)]);
  const got = await readBack(bufs.out, batch * m * n * 4);
  Object.values(bufs).forEach((x) => x.destroy());
  for (let z = 0; z < batch; z++) {
    for (let r = 0; r < m; r++) {
      for (let c = 0; c < n; c++) {
        let s = 0, abs = 0;
        for (let j = 0; j < k; j++) { const p = a[z * st.aBS + r * st.aRS + j * st.aCS] * b[z * st.bBS + j * st.bRS + c * st.bCS]; s += p; abs += Math.abs(p); }
        const g = got[(z * m + r) * n + c];
        if (!(Math.abs(g - s) <= 1e-5 * abs + 1e-6)) throw new Error(`matmul variant ${v} (${batch}×${m}×${k}×${n}, strides ${JSON.stringify(st)}): [${z}, ${r}, ${c}] is ${g}, expected ${s}`);
      }
    }
  }
}

/** Row-major, or transposed (`t`: the operand is the transpose of a row-major matrix), strides of an r×c operand in a batch. */
const layout = (r, c, t, batched) => (t ? { RS: 1, CS: r, BS: batched ? r * c : 0 } : { RS: c, CS: 1, BS: batched ? r * c : 0 });

/**
 * The strided variants (1, 26, skinny) on the shapes they are chosen for and odd ones (1, 15, 17,
 * 300; K not a multiple of their split), each with A or B transposed and in a batch of 2 with B
 * broadcast.
 */
async function checkSkinny(v) {
  const shapes = [[256, 1024, 10], [10, 256, 1024], [1, 300, 17], [15, 17, 1], [17, 300, 15], [300, 129, 3], [3, 513, 300], [16, 200, 16]];
  for (const [m, k, n] of shapes) {
    for (const [aT, bT, batch] of [[false, false, 1], [true, false, 1], [false, true, 2]]) {
      const A = layout(m, k, aT, batch > 1), B = layout(k, n, bT, false);
      await checkStrided(v, m, n, k, batch, { aBS: A.BS, aRS: A.RS, aCS: A.CS, bBS: B.BS, bRS: B.RS, bCS: B.CS });
    }
  }
}

/** Checks variant v on an awkward small shape (edges of tiles, batch 2) against float64. */
async function checkMatmul(v) {
  const [m, n, k, batch] = [200, 136, 76, 2];
  const a = rand(batch * m * k, 1), b = rand(batch * k * n, 2);
  const bufs = { a: buffer(a), b: buffer(b), out: buffer(null, batch * m * n * 4) };
  await runOnce([await matmulLaunch(v, bufs, m, n, k, batch)]);
  const got = await readBack(bufs.out, batch * m * n * 4);
  for (let z = 0; z < batch; z++) {
    const picks = [];
    for (let r = 0; r < m; r++) for (let c = 0; c < n; c++) picks.push([r, c]);
    const ref = matmulRef(a.subarray(z * m * k), b.subarray(z * k * n), m, n, k, picks);
    checkClose(got.subarray(z * m * n), ref.map((x) => x[0]), (i) => ref[i][1], `matmul variant ${v} (${batch}×${m}×${k}×${n})`);
  }
  Object.values(bufs).forEach((x) => x.destroy());
}

async function timeMatmul(sizeName, caseName, m, n, k, vs, batch = 1) {
  const a = rand(batch * m * k, 3), b = rand(batch * k * n, 4);
  const bufs = { a: buffer(a), b: buffer(b), out: buffer(null, batch * m * n * 4) };
  const picks = Array.from({ length: 64 }, (_, i) => [(i * 7919) % m, (i * 104729) % n]);
  const ref = matmulRef(a, b, m, n, k, picks);
  for (const v of vs) {
    try {
      const l = await matmulLaunch(v, bufs, m, n, k, batch);
      await runOnce([l]);
      const got = await readBack(bufs.out, m * n * 4);
      checkClose(picks.map(([r, c]) => got[r * n + c]), ref.map((x) => x[0]), (i) => ref[i][1], `matmul variant ${v} ${sizeName}`);
      const t = await gpuTime([l]);
      record({ case: caseName, shape: sizeName, kernel: `matmul v${v}`, variant: v, batch, m, n, k, gpuSeconds: t.seconds, gpuMinSeconds: t.min, reps: t.reps, figure: (2 * batch * m * n * k) / t.seconds / 1e12, unit: 'TFLOP/s' });
      l.pb.destroy();
    } catch (e) {
      log(`matmul v${v} ${sizeName}: ${e.message}`);
      results.push({ case: caseName, shape: sizeName, kernel: `matmul v${v}`, variant: v, error: e.message });
    }
  }
  Object.values(bufs).forEach((x) => x.destroy());
}

/**
 * The skinny product as the runtime runs it (ts/ops/matmul.ts): `split` partial products over
 * slices of K as a batch, then their sum as ones[1, split] · parts[split, m·n]; and unsplit.
 */
async function timeSkinny(m, n, k, splits, vs) {
  const a = rand(m * k, 5), b = rand(k * n, 6);
  const bufs = { a: buffer(a), b: buffer(b), out: buffer(null, m * n * 4) };
  const most = Math.max(...splits);
  const parts = buffer(null, most * m * n * 4), ones = buffer(new Float32Array(most).fill(1)), out = buffer(null, m * n * 4);
  const picks = Array.from({ length: 32 }, (_, i) => [(i * 7919) % m, (i * 104729) % n]);
  const ref = matmulRef(a, b, m, n, k, picks);
  const name = `${m}×${k}×${n}`;
  for (const v of vs) {
    try {
      for (const s of splits) {
        const ks = k / s;
        let launches;
        if (s === 1) launches = [await matmulLaunch(v, bufs, m, n, k)];
        else {
          // Partials: batch s over K slices (batch strides ks along A's columns and B's rows).
          const first = await matmulLaunch(v, { a: bufs.a, b: bufs.b, out: parts }, m, n, ks, s, { aBS: ks, aRS: k, bBS: ks * n, bRS: n });
          const sum = await kernel(mm.matmulShader(F32, 1, 2, 3), new Uint32Array([1, m * n, s, 0, 0, s, 1, 0, 0, m * n, 1, 0]).buffer, [out, ones, parts], [Math.ceil((m * n) / 64), 1, 1]);
          launches = [first, sum];
        }
        await runOnce(launches);
        const got = await readBack(s === 1 ? bufs.out : out, m * n * 4);
        checkClose(picks.map(([r, c]) => got[r * n + c]), ref.map((x) => x[0]), (i) => ref[i][1], `skinny v${v} split ${s}`);
        const t = await gpuTime(launches);
        record({ case: 'skinny', shape: name, kernel: `matmul v${v}${s > 1 ? ` split-K ${s}` : ''}`, variant: v, split: s, m, n, k, gpuSeconds: t.seconds, gpuMinSeconds: t.min, reps: t.reps, figure: (2 * m * n * k) / t.seconds / 1e12, unit: 'TFLOP/s' });
      }
    } catch (e) {
      log(`skinny v${v}: ${e.message}`);
      results.push({ case: 'skinny', shape: name, kernel: `matmul v${v}`, variant: v, error: e.message });
    }
  }
  [...Object.values(bufs), parts, ones, out].forEach((x) => x.destroy());
}

// ---- the MLP step's products (784-1024-1024-10, batch 256: bench/cases/train.mjs) ----
/**
 * m, k, n, A transposed, B transposed, as the GPU worker runs them: x·W1ᵀ and h·W2ᵀ (B copied
 * row-major first, `rowMajorCopy`), their gradients (Aᵀ copied likewise), and the last layer's
 * h2·W3ᵀ (B read transposed) and weight gradient g3ᵀ·h2 (A read transposed).
 */
const MLP_SHAPES = [[256, 1024, 1024, false, false], [256, 784, 1024, false, false], [1024, 256, 1024, false, false],
  [1024, 256, 784, false, false], [256, 1024, 10, false, true], [10, 256, 1024, true, false]];
/** Variants tried per shape (`v/s`: v over s slices of K, then their sum by variant 26, as ts/ops/matmul.ts splits K). */
const mlpVariants = (m, n) => (n < 16 ? [26, 29, 30, 31] : m < 16 ? [26, 32, 33, 34] : [10, 35, 7, 9, 24, 27, 28, '10/2', '10/4', '35/2']);
/** Variant 26 and 10: what chooseMatmul picked for these shapes before the skinny and small-tile variants. */
const oldChoice = (m, n) => (m < 16 || n < 16 ? mm.DIRECT : 10);

async function timeMlp(specs) {
  for (const [m, k, n, aT, bT] of MLP_SHAPES) {
    const A = layout(m, k, aT, false), B = layout(k, n, bT, false);
    const a = rand(m * k, 13), b = rand(k * n, 14);
    const most = 8, bufs = { a: buffer(a), b: buffer(b), out: buffer(null, m * n * 4) };
    const parts = buffer(null, most * m * n * 4), ones = buffer(new Float32Array(most).fill(1));
    const picks = Array.from({ length: 64 }, (_, i) => [(i * 7919) % m, (i * 104729) % n]);
    const ref = picks.map(([r, c]) => {
      let sum = 0, abs = 0;
      for (let j = 0; j < k; j++) { const p = a[r * A.RS + j * A.CS] * b[j * B.RS + c * B.CS]; sum += p; abs += Math.abs(p); }
      return [sum, 1e-5 * abs + 1e-6];
    });
    const shape = `${m}×${k}×${n}${aT ? ' Aᵀ' : ''}${bT ? ' Bᵀ' : ''}`;
    const chosen = mm.chooseMatmul(m, n, k, 1, mm.tiledEligible(k, n, { offset: 0, strides: [0, A.RS, A.CS] }, { offset: 0, strides: [0, B.RS, B.CS] }, 0), 0, limit, false);
    for (const spec of specs ?? mlpVariants(m, n)) {
      const [v, split] = String(spec).split('/').map(Number);
      const tag = `v${spec}${v === chosen && !split ? ' (chosen)' : ''}${v === oldChoice(m, n) && !split ? ' (old)' : ''}`;
      try {
        let launches;
        if (!split) launches = [await matmulLaunch(v, bufs, m, n, k, 1, { aRS: A.RS, aCS: A.CS, bRS: B.RS, bCS: B.CS })];
        else {
          const ks = k / split;
          launches = [await matmulLaunch(v, { a: bufs.a, b: bufs.b, out: parts }, m, n, ks, split, { aBS: ks * A.CS, aRS: A.RS, aCS: A.CS, bBS: ks * B.RS, bRS: B.RS, bCS: B.CS }),
            // the sum, row by row (a batch of m: ones[1, split] · parts[split, row z]) to keep the grid within 65,535
            await kernel(mm.matmulVariantShader(mm.DIRECT, F32, 1, 2, 3), new Uint32Array([1, n, split, 0, 0, split, 1, 0, n, m * n, 1, 0]).buffer, [bufs.out, ones, parts], mm.matmulVariantGrid(mm.DIRECT, 1, n, m))];
        }
        await runOnce(launches);
        const got = await readBack(bufs.out, m * n * 4);
        checkClose(picks.map(([r, c]) => got[r * n + c]), ref.map((x) => x[0]), (i) => ref[i][1], `mlp ${shape} v${spec}`);
        const t = await gpuTime(launches);
        record({ case: 'mlp', shape, kernel: tag, variant: v, split: split || 1, m, n, k, gpuSeconds: t.seconds, gpuMinSeconds: t.min, reps: t.reps, figure: (2 * m * n * k) / t.seconds / 1e12, unit: 'TFLOP/s' });
        bufs.out.destroy();
        bufs.out = buffer(null, m * n * 4); // the next variant must write every checked output itself
      } catch (e) {
        log(`mlp ${shape} v${spec}: ${e.message}`);
        results.push({ case: 'mlp', shape, kernel: `v${spec}`, variant: v, error: e.message });
      }
    }
    [...Object.values(bufs), parts, ones].forEach((x) => x.destroy());
  }
}

// ---- elementwise and reduce ----
const op = (name) => ELEMENTWISE.find((o) => o.name === name);

/** A map kernel of webtorch's elementwise family over n contiguous f32 elements. */
function mapLaunch(expr, ins, out, n, vec4, scalars = []) {
  const k = {
    rank: 1, slots: 1 + ins.length, outDt: F32, expr, exprType: 'f32', prelude: WGSL_PRELUDE,
    inputs: ins.map((_, j) => ({ dt: F32, contiguous: true, slot: j + 1 })),
  };
  const params = ew.mapParams(n, [n], 0, ins.map(() => ({ strides: [1], offset: 0 })), scalars);
  return vec4
    ? kernel(ew.mapVec4Shader(k), params, [out, ...ins], grid1d(Math.ceil(n / 4)))
    : kernel(ew.mapShader(k), params, [out, ...ins], grid1d(n));
}

/**
 * The floor a map kernel is held to: the plainest vec4 WGSL for `out = a * b` (no params, no
 * dtype handling), with the same workgroup size and grid as webtorch's.
 */
const PLAIN_MUL = `@group(0) @binding(0) var<storage, read> P: array<u32>;
@group(0) @binding(1) var<storage, read_write> o: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> y: array<vec4<f32>>;
@compute @workgroup_size(${ew.WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let w = (wid.y * nwg.x + wid.x) * ${ew.WG}u + li;
  if (w * 4u >= P[0]) { return; }
  o[w] = x[w] * y[w];
}`;

async function timeElementwise(n) {
  const xs = [rand(n, 7), rand(n, 8), rand(n, 9)];
  const [a, b, c] = xs.map((x) => buffer(x));
  const t1 = buffer(null, n * 4), t2 = buffer(null, n * 4);
  const size = `2^${Math.log2(n)} (${(n * 4) / 2 ** 20} MiB)`;
  const mul = op('mul').wgsl.f32, add = op('add').wgsl.f32, relu = op('relu').wgsl.f32;
  const checkN = Math.min(n, 1 << 16);
  for (const vec4 of [true, false]) {
    const path = vec4 ? 'vec4' : 'scalar';
    const cases = [
      { name: 'relu', kernel: `unary relu (${path})`, bytes: 8 * n, launches: [await mapLaunch(relu, [a], t1, n, vec4)], out: t1, ref: (i) => Math.max(xs[0][i], 0) },
      { name: 'mul', kernel: `binary mul (${path})`, bytes: 12 * n, launches: [await mapLaunch(mul, [a, b], t1, n, vec4)], out: t1, ref: (i) => Math.fround(xs[0][i] * xs[1][i]) },
      {
        name: 'a*b+c', kernel: `mul + add, 2 kernels (${path})`, bytes: 16 * n, out: t2, ref: (i) => Math.fround(Math.fround(xs[0][i] * xs[1][i]) + xs[2][i]),
        launches: [await mapLaunch(mul, [a, b], t1, n, vec4), await mapLaunch(add, [t1, c], t2, n, vec4, [1])],
      },
    ];
    if (vec4) {
      cases.push({ name: 'mul', kernel: 'plain vec4 WGSL a * b (floor)', bytes: 12 * n, out: t1, ref: (i) => Math.fround(xs[0][i] * xs[1][i]),
        launches: [await kernel(PLAIN_MUL, new Uint32Array([n]).buffer, [t1, a, b], grid1d(Math.ceil(n / 4)))] });
    }
    for (const k of cases) {
      try {
        await runOnce(k.launches);
        const got = await readBack(k.out, checkN * 4);
        checkClose(got, Array.from({ length: checkN }, (_, i) => k.ref(i)), 1e-6, k.kernel);
        const t = await gpuTime(k.launches);
        record({ case: k.name, shape: size, kernel: k.kernel, path, n, gpuSeconds: t.seconds, gpuMinSeconds: t.min, reps: t.reps, figure: k.bytes / t.seconds / 1e9, unit: 'GB/s' });
      } catch (e) {
        log(`${k.kernel}: ${e.message}`);
        results.push({ case: k.name, shape: size, kernel: k.kernel, error: e.message });
      }
    }
  }
  [a, b, c, t1, t2].forEach((x) => x.destroy());
}

async function timeSum(rows, cols) {
  const x = rand(rows * cols, 10);
  const a = buffer(x), out = buffer(null, rows * 4);
  const l = await kernel(reduceShader(ReduceOp.Sum, F32, 1, 2), new Uint32Array([rows, cols, 0, 0]).buffer, [out, a], grid1d(rows, 1));
  const size = `${rows}×${cols}`;
  try {
    await runOnce([l]);
    const got = await readBack(out, rows * 4);
    const ref = [], tol = [];
    for (let r = 0; r < rows; r++) {
      let s = 0, abs = 0;
      for (let c = 0; c < cols; c++) { s += x[r * cols + c]; abs += Math.abs(x[r * cols + c]); }
      ref.push(s); tol.push(1e-5 * abs + 1e-5);
    }
    checkClose(got, ref, (i) => tol[i], `sum ${size}`);
    const t = await gpuTime([l]);
    record({ case: 'sum(-1)', shape: size, kernel: 'reduce sum (1 workgroup/row)', rows, cols, gpuSeconds: t.seconds, gpuMinSeconds: t.min, reps: t.reps, figure: (4 * rows * cols + 4 * rows) / t.seconds / 1e9, unit: 'GB/s' });
  } catch (e) {
    log(`sum ${size}: ${e.message}`);
    results.push({ case: 'sum(-1)', shape: size, kernel: 'reduce sum', error: e.message });
  }
  [a, out].forEach((b) => b.destroy());
}

// ---- the run ----
const started = new Date();
const squares = opts.sizes ? opts.sizes.split(',').map(Number) : opts.quick ? [256, 512] : [1024, 2048, 4096];
// m, k, n, and the splits to try (the first split > 1 is the one ts/ops/matmul.ts picks today).
const skinnies = opts.quick ? [[32, 1024, 256, [1, 4, 8]]] : [[32, 4096, 4096, [1, 4, 8, 16]], [256, 16384, 256, [1, 16, 32]]];
const elemN = opts.quick ? 1 << 20 : 1 << 25;
const sums = opts.quick ? [[256, 1024], [16, 16384]] : [[4096, 4096], [32768, 1024], [64, 524288]];

if (cases.has('matmul') || cases.has('skinny') || cases.has('mlp')) {
  for (const v of variants) {
    try {
      await checkMatmul(v);
      if (strided(v)) await checkSkinny(v);
      log(`matmul variant ${v}: checked on 2×200×76×136${strided(v) ? ' and skinny, odd and transposed shapes' : ''}`);
    } catch (e) { log(e.message); results.push({ case: 'matmul check', kernel: `matmul v${v}`, variant: v, error: e.message }); }
  }
}
const good = variants.filter((v) => !results.some((r) => r.case === 'matmul check' && r.variant === v));
// Clocks up: a GPU left idle runs its first kernels slowly (run 2 on the H100 timed v1 at 1024³ 5× slow).
if (good.length) {
  const n = opts.quick ? 256 : 2048, x = buffer(rand(n * n, 1)), out = buffer(null, n * n * 4);
  const l = await matmulLaunch(good[0], { a: x, b: x, out }, n, n, n);
  const until = performance.now() + (opts.quick ? 100 : 1000);
  while (performance.now() < until) await runOnce([l, l, l, l]);
  [x, out].forEach((b) => b.destroy());
}
// The direct and skinny variants time only where asked for (`--variants`) or on the MLP's shapes.
const tiles = opts.variants ? good : good.filter((v) => v === 1 || !strided(v));
if (cases.has('matmul')) for (const s of squares) await timeMatmul(`${s}³`, 'matmul', s, s, s, tiles);
if (cases.has('batched')) await timeMatmul(opts.quick ? '4×128³' : '32×512³', 'batched', ...(opts.quick ? [128, 128, 128] : [512, 512, 512]), tiles, opts.quick ? 4 : 32);
if (cases.has('skinny')) for (const [m, k, n, splits] of skinnies) await timeSkinny(m, n, k, splits, tiles);
if (cases.has('mlp')) await timeMlp(opts['mlp-variants']?.split(','));
if (cases.has('elementwise')) await timeElementwise(elemN);
if (cases.has('reduce')) for (const [r, c] of sums) await timeSum(r, c);
device.destroy();

// Caller-side times through the runtime: the default kernel choice, samples of back-to-back launches.
const runtime = {};
if (opts.runtime) {
  const torch = await import(new URL('dist/webtorch.js', root));
  await torch.gpu.init();
  const dev = 'gpu:0';
  const sync = () => torch.gpu.synchronize(dev);
  const time = async (fn) => {
    for (let i = 0; i < 3; i++) fn().dispose();
    await sync();
    let inner = 1, secs = [];
    for (;;) {
      const t0 = performance.now();
      for (let i = 0; i < inner; i++) fn().dispose();
      await sync();
      const dt = performance.now() - t0;
      if (dt >= minMs * 2 || inner >= 256) { secs.push(dt / 1e3 / inner); break; }
      inner *= 2;
    }
    for (let s = 1; s < SAMPLES; s++) {
      const t0 = performance.now();
      for (let i = 0; i < inner; i++) fn().dispose();
      await sync();
      secs.push((performance.now() - t0) / 1e3 / inner);
    }
    return secs.sort((x, y) => x - y)[secs.length >> 1];
  };
  const t = (shape, seed) => torch.tensor(rand(shape.reduce((x, y) => x * y), seed), { device: dev }).reshape(shape);
  const put = async (key, shape, fn, inputs) => {
    try { runtime[key] = await time(() => fn(...inputs)); } catch (e) { log(`runtime ${key}: ${e.message}`); }
    inputs.forEach((x) => x.dispose());
  };
  if (cases.has('matmul')) for (const s of squares) await put(`matmul|${s}³`, null, torch.matmul, [t([s, s], 3), t([s, s], 4)]);
  if (cases.has('skinny')) for (const [m, k, n] of skinnies) await put(`skinny|${m}×${k}×${n}`, null, torch.matmul, [t([m, k], 5), t([k, n], 6)]);
  if (cases.has('elementwise')) {
    const size = `2^${Math.log2(elemN)} (${(elemN * 4) / 2 ** 20} MiB)`;
    await put(`relu|${size}`, null, (x) => torch.relu(x), [t([elemN], 7)]);
    await put(`mul|${size}`, null, (x, y) => x.mul(y), [t([elemN], 7), t([elemN], 8)]);
    await put(`a*b+c|${size}`, null, (x, y, z) => torch.tidy(() => x.mul(y).add(z)), [t([elemN], 7), t([elemN], 8), t([elemN], 9)]);
  }
  if (cases.has('reduce')) for (const [r, c] of sums) await put(`sum(-1)|${r}×${c}`, null, (x) => x.sum(-1), [t([r, c], 10)]);
  await torch.shutdown?.();
}

// PyTorch kernel times (CUDA events) for the same shapes.
let torchInfo = null;
if (opts.torch) {
  const jobs = [];
  if (cases.has('matmul')) for (const s of squares) jobs.push({ key: `matmul|${s}³`, op: 'matmul', m: s, k: s, n: s });
  if (cases.has('skinny')) for (const [m, k, n] of skinnies) jobs.push({ key: `skinny|${m}×${k}×${n}`, op: 'matmul', m, k, n });
  if (cases.has('batched')) jobs.push({ key: `batched|${opts.quick ? '4×128³' : '32×512³'}`, op: 'matmul', m: opts.quick ? 128 : 512, k: opts.quick ? 128 : 512, n: opts.quick ? 128 : 512, batch: opts.quick ? 4 : 32 });
  if (cases.has('elementwise')) {
    const size = `2^${Math.log2(elemN)} (${(elemN * 4) / 2 ** 20} MiB)`;
    for (const o of ['relu', 'mul', 'a*b+c']) jobs.push({ key: `${o}|${size}`, op: o, n: elemN });
  }
  if (cases.has('reduce')) for (const [r, c] of sums) jobs.push({ key: `sum(-1)|${r}×${c}`, op: 'sum', rows: r, cols: c });
  const script = fileURLToPath(new URL('bench/torch_kernels.py', root));
  const python = process.env.WEBTORCH_BENCH_PYTHON ?? 'python3';
  const r = spawnSync(python, [script], { input: JSON.stringify({ jobs, minMs, samples: SAMPLES }), encoding: 'utf8', timeout: 600_000 });
  if (r.status !== 0) log(`torch_kernels.py failed (${r.status}): ${r.stderr.slice(-800)}`);
  else torchInfo = JSON.parse(r.stdout);
}

// ---- the report ----
const best = {};
for (const row of results) {
  if (row.error) continue;
  const key = `${row.case}|${row.shape}`;
  if (!best[key] || row.gpuSeconds < best[key].gpuSeconds) best[key] = row;
}
const us = (x) => (x == null ? '' : (x * 1e6).toFixed(1));
console.log(`\n${adapterName}; ${started.toISOString()}; flags: ${flags.join(' ')}`);
console.log('| case | shape | kernel | GPU µs | figure | PyTorch GPU µs | × PyTorch |');
console.log('|---|---|---|--:|--:|--:|--:|');
for (const row of results) {
  if (row.error) { console.log(`| ${row.case} | ${row.shape ?? ''} | ${row.kernel} | error | ${row.error.slice(0, 80)} | | |`); continue; }
  const pt = torchInfo?.results?.[`${row.case}|${row.shape}`]?.seconds;
  console.log(`| ${row.case} | ${row.shape} | ${row.kernel} | ${us(row.gpuSeconds)} | ${row.figure.toPrecision(3)} ${row.unit} | ${us(pt)} | ${pt ? (pt / row.gpuSeconds).toFixed(3) : ''} |`);
}
if (Object.keys(runtime).length) {
  console.log('\nThe runtime (dist/webtorch.js, its default kernel choice), caller side: back-to-back launches, then a sync.');
  console.log('| case | shape | runtime µs per op | fastest kernel here, GPU µs | PyTorch GPU µs |');
  console.log('|---|---|--:|--:|--:|');
  for (const [key, secs] of Object.entries(runtime)) {
    const [c, shape] = key.split('|');
    console.log(`| ${c} | ${shape} | ${us(secs)} | ${us(best[key]?.gpuSeconds)} (${best[key]?.kernel ?? ''}) | ${us(torchInfo?.results?.[key]?.seconds)} |`);
  }
}
if (opts.json) {
  mkdirSync(path.dirname(path.resolve(opts.json)), { recursive: true });
  writeFileSync(opts.json, JSON.stringify({
    date: started.toISOString(), command: `node bench/profile-kernels.mjs ${process.argv.slice(2).join(' ')}`,
    adapter: adapterName, adapterInfo: { ...adapter.info, vendor: adapter.info.vendor, architecture: adapter.info.architecture, device: adapter.info.device, description: adapter.info.description },
    limits: Object.fromEntries(limitNames.map((l) => [l, device.limits[l]])), flags, minMs, samples: SAMPLES,
    results, runtime, torch: torchInfo,
  }, null, 1));
  log(`wrote ${opts.json}`);
}
process.exit(results.some((r) => r.error) ? 1 : 0);
