/**
 * `torch.profiler` on every device: a profile of a small training step (the table's op names
 * and call counts, its sort order), the Chrome trace (each device's track, every op, the ranges,
 * flow links from ops to kernels), device times from timestamp queries, memory events, a
 * schedule's phases, NVTX and misuse.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

const { nn, optim, profiler } = torch;
const devices = suiteDevices();

/** A small MLP, its SGD optimizer and a batch on `d`; `step()` is one training step; `dispose()` frees it all. */
function trainer(d: string) {
  const model = new nn.Sequential(new nn.Linear(12, 16), new nn.ReLU(), new nn.Linear(16, 3)).to(d);
  const opt = new optim.SGD(model.parameters(), { lr: 0.1 });
  const x = torch.randn([8, 12], { device: d }), y = torch.randint(0, 3, [8], { device: d });
  const step = () => {
    opt.zeroGrad();
    const out = model(x);
    const loss = torch.F.crossEntropy(out, y);
    torch.gpu.nvtx.range('backward', () => loss.backward());
    opt.step();
    out.dispose();
    loss.dispose();
  };
  const dispose = () => {
    for (const p of model.parameters()) {
      p.grad?.dispose();
      p.dispose();
    }
    x.dispose();
    y.dispose();
  };
  return { step, dispose };
}

const STEPS = 3;

/** A profile of STEPS training steps on `d`, each in a `train_step` range. */
async function profiledTraining(d: string, options: Parameters<typeof profiler.profile>[0] = {}) {
  const t = trainer(d);
  t.step(); // warm the kernels up
  await torch.gpu.synchronize(d);
  const prof = await profiler.profile({ activities: ['cpu', 'gpu'], recordShapes: true, ...options }, async () => {
    for (let i = 0; i < STEPS; i++) profiler.recordFunction('train_step', t.step);
    await torch.gpu.synchronize(d);
  });
  t.dispose();
  return prof;
}

const callsOf = (prof: profiler.Profile) => Object.fromEntries([...prof.keyAverages()].map((r) => [r.key, r.count]));

describe('profile of a training step', () => {
  it('prints PyTorch\'s table with the ops and their calls', async () => {
    for (const d of devices) {
      const prof = await profiledTraining(d);
      const calls = callsOf(prof);
      expect(calls.train_step, d).toBe(STEPS);
      expect(calls.backward, d).toBe(STEPS);
      expect(calls.linear, d).toBe(2 * STEPS);
      expect(calls.relu, d).toBe(STEPS);
      expect(calls.cross_entropy, d).toBe(STEPS);
      // Forward matmuls (two per step) and backward ones (three per step: dW twice, dX once).
      expect(calls.matmul, d).toBe(5 * STEPS);
      const table = prof.keyAverages().table({ sortBy: 'gpu_time_total', rowLimit: 8 });
      const lines = table.split('\n');
      const label = d === 'cpu' ? 'Device' : 'GPU';
      expect(lines[1].trim().split(/ {2,}/), d).toEqual(['Name', 'Self CPU %', 'Self CPU', 'CPU total %', 'CPU total', 'CPU time avg',
        `Self ${label}`, `Self ${label} %`, `${label} total`, `${label} time avg`, '# of Calls']);
      expect(lines[0]).toBe(lines[2]);
      const rows = lines.slice(3, lines.indexOf(lines[0], 3));
      expect(rows.length).toBe(8);
      // Sorted by device total, descending; the alias cuda_time_total sorts the same.
      const sorted = [...prof.keyAverages()].sort((a, b) => b.deviceTimeTotal - a.deviceTimeTotal).slice(0, 8).map((r) => r.key);
      // (names wider than the name column, at most 55, are clipped with '...' as PyTorch's are)
      const width = Math.min(Math.max(4, ...sorted.map((k) => k.length)) + 4, 55);
      const clip = (k: string) => (k.length > width ? `${k.slice(0, width - 3)}...` : k);
      expect(rows.map((r) => r.trim().split(/ {2,}/)[0])).toEqual(sorted.map(clip));
      expect(prof.keyAverages().table({ sortBy: 'cuda_time_total', rowLimit: 8 })).toBe(table);
      expect(prof.keyAverages(false).table('cuda_time_total', 8)).toBe(table); // PyTorch's positional arguments
      // The training step holds every op: 100% of the CPU total.
      const step = lines.find((l) => l.trim().startsWith('train_step'));
      expect(step!.trim().split(/ {2,}/)[3]).toBe('100.00%');
      expect(table).toMatch(new RegExp(`Self CPU time total: [\\d.]+(us|ms|s)\\nSelf ${label} time total: [\\d.]+(us|ms|s)\\n$`));
    }
  });

  it('groups by input shape, and sorts by any of PyTorch\'s keys', async () => {
    for (const d of devices) {
      const prof = await profiledTraining(d);
      const avg = prof.keyAverages({ groupByInputShape: true });
      const linear = [...avg].filter((r) => r.key === 'linear').map((r) => [r.inputShapes, r.count]);
      expect(linear.sort(), d).toEqual([['[[8, 12], [16, 12], [16]]', STEPS], ['[[8, 16], [3, 16], [3]]', STEPS]]);
      expect(avg.table().split('\n')[1].trimEnd().endsWith('Input Shapes')).toBe(true);
      const byCalls = prof.keyAverages().table({ sortBy: 'count', rowLimit: 1 }).split('\n')[3];
      const most = Math.max(...[...prof.keyAverages()].map((r) => r.count));
      expect(Number(byCalls.trim().split(/ +/).at(-1))).toBe(most);
      expect(() => prof.keyAverages().table({ sortBy: 'gpu_time_totl' })).toThrow(/unknown sortBy 'gpu_time_totl'/);
    }
  });

  it('times kernels on the device: timestamp queries on the GPUs, the worker on the cpu', async () => {
    for (const d of devices) {
      const prof = await profiledTraining(d);
      const { ops, kernels } = prof.events();
      expect(kernels.length, d).toBeGreaterThan(0);
      expect(kernels.every((k) => k.device === d && k.deviceMs !== null && k.deviceMs >= 0), d).toBe(true);
      expect(kernels.reduce((s, k) => s + k.deviceMs!, 0), d).toBeGreaterThan(0);
      // Every kernel is linked to a caller op of the profile; each matmul op to one matmul kernel.
      const byId = new Map(ops.map((o) => [o.id, o]));
      expect(kernels.every((k) => byId.has(k.op)), d).toBe(true);
      const matmulKernels = kernels.filter((k) => byId.get(k.op)!.name === 'matmul');
      expect(matmulKernels.length, d).toBe(5 * STEPS);
      expect(matmulKernels.every((k) => k.name.startsWith(d === 'cpu' ? 'wasm:matmul' : 'wgsl:matmul:')), d).toBe(true);
      if (d !== 'cpu') {
        const props = await torch.gpu.getDeviceProperties(d);
        expect(props.features).toContain('timestamp-query'); // lavapipe has it; the test needs it
        const mm = [...prof.keyAverages()].find((r) => r.key === 'matmul')!;
        expect(mm.selfDeviceTimeTotal).toBeGreaterThan(0);
      }
    }
  });
});

describe('backward', () => {
  const EVAL = 'autograd::engine::evaluate_function: ';
  it("has PyTorch's evaluate_function range around each autograd node, with its ops and their kernels inside", async () => {
    for (const d of devices) {
      const prof = await profiledTraining(d);
      const calls = callsOf(prof);
      // Per step: two linear layers (MmBackward0 and AddBackward0 each) and a ReLU (the loss's nodes differ by device).
      expect(calls[`${EVAL}MmBackward0`], d).toBe(2 * STEPS);
      expect(calls.MmBackward0, d).toBe(2 * STEPS);
      expect(calls[`${EVAL}ReluBackward0`], d).toBe(STEPS);
      expect(calls[`${EVAL}AddBackward0`], d).toBeGreaterThanOrEqual(2 * STEPS);
      // Every evaluate_function range holds exactly its node's range.
      for (const [k, n] of Object.entries(calls)) if (k.startsWith(EVAL)) expect(calls[k.slice(EVAL.length)], k).toBe(n);
      const { ops, kernels } = prof.events();
      const byId = new Map(ops.map((o) => [o.id, o]));
      // The backward matmuls (three per step) run inside MmBackward0, itself inside its evaluate_function range.
      const mmNodes = ops.filter((o) => o.name === 'MmBackward0');
      for (const n of mmNodes) expect(byId.get(n.parent)!.name, d).toBe(`${EVAL}MmBackward0`);
      const inNode = ops.filter((o) => o.name === 'matmul' && byId.get(o.parent)?.name === 'MmBackward0');
      expect(inNode.length, d).toBe(3 * STEPS);
      // ... and their kernels are linked to them, so the node's range has device time.
      const ids = new Set(inNode.map((o) => o.id));
      expect(kernels.filter((k) => ids.has(k.op)).length, d).toBe(3 * STEPS);
      const row = [...prof.keyAverages()].find((r) => r.key === `${EVAL}MmBackward0`)!;
      expect(row.deviceTimeTotal, d).toBeGreaterThan(0);
      expect(row.cpuTimeTotal, d).toBeGreaterThan(0);
      // In the trace: PyTorch's cpu_op category, and the node ops nest in time inside their range.
      const ev: any[] = JSON.parse(await prof.exportChromeTrace()).traceEvents;
      const ranges = ev.filter((e) => e.name === `${EVAL}MmBackward0`);
      expect(ranges.length, d).toBe(2 * STEPS);
      expect(ranges.every((e) => e.cat === 'cpu_op' && e.ph === 'X')).toBe(true);
      const nodes = ev.filter((e) => e.name === 'MmBackward0');
      for (const n of nodes) expect(ranges.some((r) => r.ts <= n.ts && n.ts + n.dur <= r.ts + r.dur + 0.002), d).toBe(true);
    }
  });

  it('records no backward range outside a profile', async () => {
    const t = trainer('cpu');
    try {
      t.step();
      const prof = await profiler.profile({ activities: ['cpu'] }, () => undefined);
      expect(Object.keys(callsOf(prof)).filter((k) => k.includes('Backward'))).toEqual([]);
    } finally {
      t.dispose();
    }
  });
});

describe('activities', () => {
  it('CPU records the calling thread only; CUDA the kernels, with no CPU times or caller track', async () => {
    for (const d of devices) {
      const x = torch.ones([16], { device: d });
      const run = (activities: string[]) => profiler.profile({ activities }, async () => {
        x.exp().dispose();
        await torch.gpu.synchronize(d);
      });
      const cpuOnly = await run([profiler.ProfilerActivity.CPU]);
      expect(cpuOnly.events().kernels, d).toEqual([]);
      expect(cpuOnly.keyAverages().table().split('\n')[1]).not.toMatch(/GPU|Device/);
      expect([...cpuOnly.keyAverages()].find((r) => r.key === 'exp')!.cpuTimeTotal).toBeGreaterThan(0);
      const gpuOnly = await run([profiler.ProfilerActivity.CUDA]);
      expect(gpuOnly.events().kernels.map((k) => k.name), d).toEqual([d === 'cpu' ? 'wasm:unary' : 'wgsl:unary:exp']);
      expect([...gpuOnly.keyAverages()].every((r) => r.cpuTimeTotal === 0)).toBe(true);
      const ev: any[] = JSON.parse(await gpuOnly.exportChromeTrace()).traceEvents;
      expect(ev.filter((e) => e.pid === 0 && e.ph !== 'M'), d).toEqual([]);
      expect(ev.filter((e) => e.cat === 'kernel').length).toBe(1);
      x.dispose();
    }
  });
});

describe('Chrome trace', () => {
  it('has a track per device and stream, every op, the ranges, and flows from ops to kernels', async () => {
    for (const d of devices) {
      const prof = await profiledTraining(d);
      const trace = JSON.parse(await prof.exportChromeTrace());
      const ev: any[] = trace.traceEvents;
      const names = ev.filter((e) => e.ph === 'M' && e.name === 'process_name');
      const pidOf = (n: string) => names.find((e) => e.args.name === n)?.pid;
      expect(pidOf('caller'), d).toBe(0);
      const dpid = pidOf(d);
      expect(dpid, d).toBeGreaterThan(0);
      expect(ev.some((e) => e.ph === 'M' && e.name === 'thread_name' && e.pid === dpid && e.tid === 0 && e.args.name === 'stream 0'), d).toBe(true);
      // Every op and range of the profile is on the caller's track, once.
      const { ops, kernels } = prof.events();
      const callerX = ev.filter((e) => e.ph === 'X' && e.pid === 0);
      expect(callerX.map((e) => e.args['External id']).sort((a, b) => a - b)).toEqual(ops.map((o) => o.id).sort((a, b) => a - b));
      expect(callerX.filter((e) => e.name === 'train_step' && e.cat === 'user_annotation').length).toBe(STEPS);
      expect(callerX.filter((e) => e.name === 'backward' && e.cat === 'user_annotation').length).toBe(STEPS);
      expect(callerX.find((e) => e.name === 'linear')!.args['Input Dims']).toEqual([[8, 12], [16, 12], [16]]);
      // Kernels on the device's track; one flow (s at the op, f at the kernel) per kernel.
      const kernelX = ev.filter((e) => e.ph === 'X' && e.cat === 'kernel');
      expect(kernelX.length).toBe(kernels.length);
      expect(kernelX.every((e) => e.pid === dpid)).toBe(true);
      const starts = new Map(ev.filter((e) => e.ph === 's').map((e) => [e.id, e]));
      const ends = ev.filter((e) => e.ph === 'f');
      expect(ends.length).toBe(kernels.length);
      for (const f of ends) {
        const s = starts.get(f.id);
        expect(s && s.pid === 0 && f.pid === dpid).toBe(true);
        expect(callerX.some((e) => e.ts === s.ts)).toBe(true);
      }
      expect(ev.every((e) => e.ph === 'M' || (Number.isFinite(e.ts) && e.ts >= 0))).toBe(true);
    }
  });

  it('puts a side stream\'s kernels on that stream\'s track', async () => {
    for (const d of devices.filter((x) => x !== 'cpu')) {
      const x = torch.ones([32, 32], { device: d });
      const side = new torch.gpu.Stream(d);
      const prof = await profiler.profile({}, async () => {
        x.neg().dispose();
        torch.gpu.stream(side, () => x.exp().dispose());
        await torch.gpu.synchronize(d);
      });
      const ev: any[] = JSON.parse(await prof.exportChromeTrace()).traceEvents;
      const pid = ev.find((e) => e.ph === 'M' && e.name === 'process_name' && e.args.name === d).pid;
      const threads = ev.filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.pid === pid).map((e) => [e.tid, e.args.name]);
      expect(threads.sort(), d).toEqual([[0, 'stream 0'], [side.streamId, `stream ${side.streamId}`]].sort());
      const kernel = (name: string) => ev.find((e) => e.cat === 'kernel' && e.name === name);
      expect(kernel('wgsl:unary:neg').tid, d).toBe(0);
      expect(kernel('wgsl:unary:exp').tid, d).toBe(side.streamId);
      const exp = prof.events().ops.find((o) => o.name === 'exp')!;
      expect(exp.stream).toBe(side.streamId);
      x.dispose();
    }
  });

  it('withStack: each op carries the caller\'s stack, without webtorch\'s frames', async () => {
    const x = torch.ones([4]);
    for (const withStack of [true, false]) {
      const prof = await profiler.profile({ withStack }, () => x.exp().dispose());
      const exp = prof.events().ops.find((o) => o.name === 'exp')!;
      if (withStack) {
        expect(exp.stack).toMatch(/profiler\.test\.ts/);
        expect(exp.stack).not.toMatch(/webtorch\.js/);
        const ev = JSON.parse(await prof.exportChromeTrace()).traceEvents.find((e: any) => e.name === 'exp');
        expect(ev.args['Call stack']).toBe(exp.stack);
      } else expect(exp.stack).toBeNull();
    }
    x.dispose();
  });

  it('writes the file in Node; puts two devices of one profile on their own tracks', async () => {
    const gpus = devices.filter((d) => d !== 'cpu');
    const used = ['cpu', ...gpus];
    const xs = used.map((d) => torch.ones([64, 64], { device: d }));
    const prof = await profiler.profile({}, async () => {
      const ys = xs.map((x) => x.matmul(x));
      await torch.gpu.synchronize();
      ys.forEach((y) => y.dispose());
    });
    const path = `${process.env.TMPDIR ?? '/tmp'}/webtorch-profiler-test-${process.pid}.json`;
    const json = await prof.exportChromeTrace(path);
    const { readFileSync, rmSync } = await import('node:fs');
    expect(readFileSync(path, 'utf8')).toBe(json);
    rmSync(path);
    const ev: any[] = JSON.parse(json).traceEvents;
    const tracks = ev.filter((e) => e.ph === 'M' && e.name === 'process_name').map((e) => e.args.name);
    expect(tracks.sort()).toEqual(['caller', ...used].sort());
    for (const d of used) {
      const pid = ev.find((e) => e.ph === 'M' && e.name === 'process_name' && e.args.name === d).pid;
      expect(ev.filter((e) => e.cat === 'kernel' && e.pid === pid).map((e) => e.name.split(':').slice(0, 2).join(':')), d).toEqual([d === 'cpu' ? 'wasm:matmul' : 'wgsl:matmul']);
    }
    xs.forEach((x) => x.dispose());
  });
});

describe('memory, schedule and ranges', () => {
  it('records the allocator\'s allocations and frees with profileMemory, and none without', async () => {
    for (const d of devices) {
      const a = torch.ones([256], { device: d });
      const record = (profileMemory: boolean) => profiler.profile({ profileMemory }, () => {
        const b = a.mul(2);
        b.dispose();
      });
      const prof = await record(true);
      const mem = prof.events().memory;
      expect(mem.map((m) => [m.device, m.bytes]), d).toEqual([[d, 1024], [d, -1024]]);
      const mul = prof.events().ops.find((o) => o.name === 'mul')!;
      expect(mem[0].op).toBe(mul.id);
      expect(mem[0].total - mem[1].total).toBe(1024); // the device's allocated bytes went up, then down
      expect(mem[1].op).not.toBe(mul.id); // the free (dispose) is not part of mul
      const row = [...prof.keyAverages()].find((r) => r.key === 'mul')!;
      expect(d === 'cpu' ? row.selfCpuMemoryUsage : row.selfDeviceMemoryUsage).toBe(1024);
      const table = prof.keyAverages().table();
      expect(table.split('\n')[1]).toMatch(/CPU Mem +Self CPU Mem +(GPU|Device) Mem +Self (GPU|Device) Mem +# of Calls/);
      expect(table).toMatch(/1\.00 Kb/);
      const trace = JSON.parse(await prof.exportChromeTrace());
      expect(trace.traceEvents.filter((e: any) => e.name === '[memory]').map((e: any) => e.args.Bytes)).toEqual([1024, -1024]);
      expect((await record(false)).events().memory).toEqual([]);
      a.dispose();
    }
  });

  it('follows a schedule: wait, warmup, active, repeat, with onTraceReady per cycle', async () => {
    const s = profiler.schedule({ wait: 1, warmup: 1, active: 2, repeat: 2 });
    const A = profiler.ProfilerAction;
    // PyTorch's schedule_fn(wait=1, warmup=1, active=2, repeat=2) over steps 0..9.
    expect(Array.from({ length: 10 }, (_, i) => s(i))).toEqual([A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE,
      A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE, A.NONE, A.NONE]);
    expect(profiler.schedule({ wait: 0, warmup: 0, active: 1, skipFirst: 2 })(1)).toBe(A.NONE);
    for (const d of devices) {
      const x = torch.ones([16], { device: d });
      const cycles: string[][] = [];
      const prof = profiler.profile({
        schedule: s,
        onTraceReady: (p) => {
          cycles.push(p.events().ops.filter((e) => e.kind === 'range').map((e) => e.name));
        },
      });
      prof.start();
      for (let i = 0; i < 10; i++) {
        profiler.recordFunction(`work${i}`, () => x.add(i).dispose());
        await prof.step();
      }
      await prof.stop();
      // Warmup steps (1, 5) are recorded and thrown away; each cycle is its two active steps.
      expect(cycles, d).toEqual([
        ['ProfilerStep#2', 'work2', 'ProfilerStep#3', 'work3'],
        ['ProfilerStep#6', 'work6', 'ProfilerStep#7', 'work7'],
      ]);
      expect(prof.finished).toBe(true);
      expect(callsOf(prof).add, d).toBe(2);
      x.dispose();
    }
  });

  it('nests ops in recordFunction and NVTX ranges, sync and async', async () => {
    for (const d of devices) {
      const x = torch.ones([4], { device: d });
      const prof = await profiler.profile({}, async () => {
        await profiler.recordFunction('outer', async () => {
          torch.gpu.nvtx.rangePush('inner');
          x.neg().dispose();
          expect(torch.gpu.nvtx.rangePop()).toBe(0); // NVTX's own stack: 'inner' was its only range
          await torch.gpu.synchronize(d);
        });
        torch.gpu.nvtx.mark('done');
      });
      const { ops } = prof.events();
      const outer = ops.find((o) => o.name === 'outer')!, inner = ops.find((o) => o.name === 'inner')!, neg = ops.find((o) => o.name === 'neg')!;
      expect(inner.parent, d).toBe(outer.id);
      expect(neg.parent, d).toBe(inner.id);
      expect(ops.some((o) => o.name === 'done' && o.kind === 'range')).toBe(true);
      const avg = [...prof.keyAverages()];
      const o = avg.find((r) => r.key === 'outer')!, n = avg.find((r) => r.key === 'neg')!;
      expect(o.cpuTimeTotal).toBeGreaterThanOrEqual(n.cpuTimeTotal);
      expect(o.deviceTimeTotal).toBeCloseTo(n.deviceTimeTotal, 6);
      x.dispose();
    }
  });
});

describe('misuse', () => {
  it('rangePop without rangePush returns -1 (as PyTorch) and the profiler carries on', async () => {
    expect(torch.gpu.nvtx.rangePop()).toBe(-1);
    expect(torch.cuda.nvtx.rangePush('a')).toBe(0);
    expect(torch.cuda.nvtx.rangePush('b')).toBe(1);
    expect(torch.cuda.nvtx.rangePop()).toBe(1);
    expect(torch.cuda.nvtx.rangePop()).toBe(0);
    const prof = await profiler.profile({}, () => {
      expect(torch.gpu.nvtx.rangePop()).toBe(-1);
      torch.gpu.nvtx.rangePush('left open');
    });
    expect(torch.gpu.nvtx.rangePop()).toBe(0); // the range outlived the profile; the stack still pops it
    expect(prof.events().ops.map((o) => o.name)).toEqual(['left open']);
  });

  it('reading or exporting a profile that has not finished is a clear error', async () => {
    const prof = profiler.profile({ activities: [profiler.ProfilerActivity.CPU] });
    const msg = /the profile has not finished/;
    await expect(prof.exportChromeTrace('x.json')).rejects.toThrow(msg);
    prof.start();
    expect(() => prof.keyAverages()).toThrow(msg);
    await expect(prof.exportChromeTrace()).rejects.toThrow(msg);
    expect(() => profiler.profile({}).start()).toThrow(/already enabled/);
    await prof.stop();
    expect(() => prof.start()).toThrow(/already stopped/);
    await expect(prof.stop()).rejects.toThrow(/not running/);
    await expect(prof.step()).rejects.toThrow(/not running/);
    expect(prof.keyAverages().table()).toMatch(/Self CPU time total/);
  });

  it('a failing onTraceReady does not reject step() (PyTorch\'s is synchronous); stop() raises it', async () => {
    const prof = profiler.profile({
      schedule: profiler.schedule({ wait: 0, warmup: 0, active: 1 }),
      onTraceReady: () => {
        throw new Error('handler failed');
      },
    });
    prof.start();
    await expect(prof.step()).resolves.toBeUndefined();
    await expect(prof.step()).resolves.toBeUndefined();
    await expect(prof.stop()).rejects.toThrow('handler failed');
  });

  it('rejects unknown options, activities and schedules with PyTorch\'s wording', async () => {
    expect(() => profiler.profile({ activities: ['tpu'] } as any)).toThrow(/unknown activity 'tpu'/);
    expect(() => profiler.profile({ recordShape: true } as any)).toThrow(/unexpected keyword argument 'recordShape'/);
    expect(() => profiler.schedule({ wait: 1, warmup: 1, active: 0 })).toThrow(/Invalid profiler schedule arguments/);
    expect(() => profiler.schedule({ wait: -1, warmup: 0, active: 1 })).toThrow(/Invalid profiler schedule arguments/);
    await expect(profiler.profile({}, () => {
      throw new Error('boom');
    })).rejects.toThrow('boom');
    // The failed profile stopped: a new one starts.
    const p = await profiler.profile({}, () => undefined);
    expect(p.finished).toBe(true);
    const prof = await profiler.profile({ recordShapes: false }, () => undefined);
    expect(() => prof.keyAverages({ groupByInputShape: true })).toThrow(/recordShapes: true/);
  });
});
