// Where a training step's time goes (issue 6): the bench's own training cases (mlp_train,
// cnn_train; the same models, data and check as `npm run bench`), run on one webtorch device.
// Three figures per step, each from its own run of N steps:
//   1. the step to result (N steps launched back to back, then the sync point), as the bench times it;
//   2. the caller's share: the synchronous JS of issuing a step (autograd, nn, optim, op checks,
//      allocation, encoding commands); the rest of the step is the worker and the device;
//   3. under the worker's profile (`torch._profileWorker`): the worker thread's time by command
//      kind, its time ending batches (GPU: encoding passes, submitting them), its time waiting for
//      the device at the sync point, and the GPU's own time inside the passes (timestamp queries,
//      written around each pass; they cost a little, so this run's step is quoted too).
// The step is bound by whichever of caller, worker and GPU is busiest; the others overlap with it.
//
//   node bench/profile-step.mjs [--device gpu:0|cpu] [--cases mlp_train,cnn_train] [--quick]
//       [--steps N] [--json FILE]          (after npm run build)
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import * as torch from '../dist/webtorch.js';
import { CASES } from './cases/index.mjs';
import { median } from './lib/harness.mjs';

const { values: opts } = parseArgs({
  options: {
    device: { type: 'string', default: 'gpu:0' },
    cases: { type: 'string', default: 'mlp_train,cnn_train' },
    quick: { type: 'boolean', default: false },
    steps: { type: 'string' },
    json: { type: 'string' },
  },
});
process.env.XDG_RUNTIME_DIR ??= '/tmp';
const log = (...a) => console.error(...a);
if (opts.device.startsWith('gpu')) await torch.gpu.init();
const wt = torch.device(opts.device);
const ctx = { device: wt.type, torch, wt, wtSync: () => torch.gpu.synchronize(wt), tf: null, dawn: null };
const props = wt.type === 'gpu' ? await torch.gpu.getDeviceProperties(wt) : null;
const deviceName = props ? `${props.vendor}: ${props.description}` : 'cpu (AssemblyScript kernels in a worker)';
const steps = Number(opts.steps ?? (opts.quick ? 20 : 100));

/** N steps launched back to back, then the sync point; returns [ms per step to result, caller ms per step]. */
async function run(impl, n) {
  let caller = 0;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const c0 = performance.now();
    impl.launch();
    caller += performance.now() - c0;
  }
  await impl.sync();
  return [(performance.now() - t0) / n, caller / n];
}

const results = [];
for (const c of CASES.filter((k) => opts.cases.split(',').includes(k.name))) {
  for (const spec of c.rows(opts.quick, wt.type, ctx)) {
    const inputs = c.inputs(spec.params);
    const impl = c.impls.webtorch(ctx, spec.params, inputs);
    impl.launch();
    await impl.sync();
    const why = c.check(spec.params, inputs)(await impl.output());
    if (why) throw new Error(`${c.name}: wrong result: ${why}`);
    await run(impl, Math.max(5, steps >> 2));
    const plain = [];
    for (let r = 0; r < 5; r++) plain.push(await run(impl, steps));
    await torch._profileWorker(wt, true);
    const [profiledMs] = await run(impl, steps);
    const prof = await torch._profileWorker(wt, false);
    impl.dispose();
    const per = (x) => x / steps;
    const commands = Object.entries(prof.commands).map(([kind, v]) => ({ kind, perStep: per(v.count), msPerStep: per(v.ms) }))
      .sort((a, b) => b.msPerStep - a.msPerStep);
    const gpu = prof.gpu && Object.entries(prof.gpu).map(([kind, v]) => ({ kind, perStep: per(v.count), msPerStep: per(v.ms) }))
      .sort((a, b) => b.msPerStep - a.msPerStep);
    const runMs = commands.reduce((s, k) => s + k.msPerStep, 0);
    const r = {
      case: c.name, label: spec.label, size: spec.size, steps,
      stepMs: median(plain.map((p) => p[0])), callerMs: median(plain.map((p) => p[1])),
      profiled: {
        stepMs: profiledMs, wallMsPerStep: per(prof.wallMs), batchesPerStep: per(prof.batches),
        commandsPerStep: commands.reduce((s, k) => s + k.perStep, 0), workerRunMs: runMs, workerFlushMs: per(prof.flushMs),
        workerWaitMs: per(prof.waitMs), gpuMs: gpu ? gpu.reduce((s, k) => s + k.msPerStep, 0) : null, commands, gpu,
      },
    };
    results.push(r);
    const p = r.profiled, f = (x) => (x === null ? '—' : x.toFixed(3));
    console.log(`\n${spec.label} ${spec.size} on ${opts.device} (${deviceName}), ${steps} steps, ms per step:`);
    console.log(`  to result ${f(r.stepMs)} (${(1000 / r.stepMs).toFixed(1)} steps/s), median of 5 runs`);
    console.log(`  caller (issuing the step)            ${f(r.callerMs)}`);
    console.log(`  under the worker's profile: to result ${f(p.stepMs)}; ${p.commandsPerStep.toFixed(0)} commands in ${p.batchesPerStep.toFixed(1)} batches`);
    console.log(`  worker running commands              ${f(p.workerRunMs)}`);
    console.log(`  worker ending batches (encode+submit) ${f(p.workerFlushMs)}`);
    console.log(`  worker waiting for the device         ${f(p.workerWaitMs)}`);
    console.log(`  GPU inside the dispatches (timestamps) ${f(p.gpuMs)}`);
    console.log('  worker time by command:');
    for (const k of commands.slice(0, 8)) console.log(`    ${k.kind.padEnd(10)} ${k.perStep.toFixed(1).padStart(6)} per step  ${f(k.msPerStep)} ms`);
    if (gpu) {
      console.log('  GPU time by dispatch (command: op, reduce rows×length, matmul batch×m×k×n):');
      for (const k of gpu.slice(0, 12)) console.log(`    ${k.kind.padEnd(28)} ${k.perStep.toFixed(1).padStart(6)} per step  ${f(k.msPerStep)} ms`);
    }
  }
}
if (opts.json) {
  writeFileSync(opts.json, JSON.stringify({ date: new Date().toISOString(), device: opts.device, deviceName, command: `node bench/profile-step.mjs ${process.argv.slice(2).join(' ')}`, results }, null, 2));
  log(`wrote ${opts.json}`);
}
await torch.shutdown();
