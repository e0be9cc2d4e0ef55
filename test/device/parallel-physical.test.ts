/**
 * gpu:N on distinct physical GPUs (ts/runtime/physical.ts). This machine has no GPU, so what runs
 * here is the fallback and the parts that do not need two GPUs: the detection of identical
 * display controllers on a fake sysfs tree, the DRI_PRIME form, the logical devices kept where
 * there is no mapping (`pciBusId` null), and a forced mapping (`WEBTORCH_GPU_BUSES`) in a child
 * process, in one process and as the rank threads of `webtorch-run --threads`.
 *
 * What makes the forced mapping's tests able to fail: Mesa's device-select layer reads DRI_PRIME
 * natively when a GPU worker's Dawn instance is made, and with `MESA_VK_DEVICE_SELECT_DEBUG=1` it
 * prints `device_select_find_dri_prime_tag_default selected 0` to the process's stderr when the
 * variable names the bus of a device it lists. lavapipe has no PCI bus, and the layer gives it the
 * tag `pci-0000_00_00_0`. So a forced list with `0000:00:00.0` at one position and made-up buses
 * elsewhere makes exactly the worker started for that position print those lines: the tests count
 * them per start (markers on stderr between starts) and per launcher run. A DRI_PRIME that stays
 * in a thread's copy of the environment prints none; a device given another position's bus prints
 * them in the wrong place or too often. Each start also records the value the process's own
 * environment held (read back there, `processEnv`).
 *
 * Mutations tried (2026-11-28), each failing the tests named:
 * - the code before the fix (dist/ and bin/webtorch-run.mjs from main at d2b99f3, where a rank
 *   thread set DRI_PRIME in its own copy of the environment): 'a forced mapping…' (pciBusId gave
 *   the requested bus; no `processEnv`), 'as the rank threads…' (both ranks threw from inside
 *   their thread: the process's environment held no DRI_PRIME), 'a worker thread…' (it ran, on
 *   whatever adapter Dawn lists first).
 * - a rank thread setting its own `process.env` again but recording that value as the process's
 *   (`via: 'launcher'`): 'as the rank threads…' failed on the native count alone (0 selection
 *   lines where one start's 2 were expected).
 * - `busOf` off by one (`b[(index + 1) % b.length]`): 'a forced mapping…' and 'as the rank threads…'.
 * - GPU discovery starting gpu:0 in every process (ts/device.ts `init` as before 2026-11-28, with
 *   `getDeviceProperties` and `initProcessGroup({backend: 'nccl'})` asking before naming their
 *   device): 'as the rank threads…' (rank 1's starts were gpu:0 and gpu:1), 'the ranks of
 *   webtorch-run (processes)…' (rank 1 had started ["gpu:0", "gpu:1"]), 'a worker thread…' (the
 *   refusal named gpu:0, a device the thread never asked for).
 * The real two-GPU path has not run here (see README "Many GPUs").
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

logicalGpuSuite(2, 'physical GPU tests');
const DIST = new URL('../../dist/webtorch.js', import.meta.url).href;
const RUN = fileURLToPath(new URL('../../bin/webtorch-run.mjs', import.meta.url));

/** What `torch._physicalStarts()` gives for one start. */
interface PhysicalStart { index: number; driPrime: string; processEnv: string | null; via: string; t0: number; t1: number }

/** The layer's selection lines seen by one worker start whose bus is lavapipe's (set by the first forced-mapping test). */
let perStart: number | undefined;

/** Runs node with `args` and extra environment variables (DRI_PRIME left out), resolving with its output; rejects on a failure. */
function node(args: string[], extra: Record<string, string>): Promise<{ stdout: string; stderr: string }> {
  const env: Record<string, string | undefined> = { ...process.env, ...extra };
  delete env.DRI_PRIME;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { env, timeout: 110_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
      (err ? reject(new Error(`${err.message}\n${stdout}\n${stderr}`)) : resolve({ stdout, stderr })));
  });
}

/** The device-select layer's selection lines, counted between the `--- ` markers on stderr (the first count is before any marker). */
function selectionsPerSegment(stderr: string): number[] {
  return stderr.split('--- ').map((seg) => (seg.match(/device_select_find_dri_prime_tag_default selected/g) ?? []).length);
}

/** A fake /sys/bus/pci/devices: [bus, class, vendor, device]. */
function fakeSysfs(devs: [string, string, string, string][]): string {
  const root = fs.mkdtempSync(join(tmpdir(), 'wt-pci-'));
  for (const [bus, cls, vendor, device] of devs) {
    fs.mkdirSync(join(root, bus));
    fs.writeFileSync(join(root, bus, 'class'), `${cls}\n`);
    fs.writeFileSync(join(root, bus, 'vendor'), `${vendor}\n`);
    fs.writeFileSync(join(root, bus, 'device'), `${device}\n`);
  }
  return root;
}

describe('physical GPUs', () => {
  it('finds two or more identical display controllers, in bus order; none for one GPU or different models', () => {
    const two = fakeSysfs([
      ['0000:00:08.0', '0x030200', '0x10de', '0x2335'], ['0000:00:00.0', '0x060000', '0x8086', '0x0d57'],
      ['0000:00:07.0', '0x030200', '0x10de', '0x2335'], ['0000:00:03.0', '0x020000', '0x1af4', '0x1041'],
    ]);
    expect(torch._identicalGpus(fs, two)).toEqual(['0000:00:07.0', '0000:00:08.0']);
    const one = fakeSysfs([['0000:00:07.0', '0x030200', '0x10de', '0x2335'], ['0000:00:09.0', '0x030000', '0x1234', '0x1111']]);
    expect(torch._identicalGpus(fs, one)).toEqual([]);
    expect(torch._identicalGpus(fs, join(tmpdir(), 'no-such-sysfs'))).toEqual([]);
    expect(torch._driPrime('0000:00:07.0')).toBe('pci-0000_00_07_0');
  });

  it('without a mapping gpu:N are logical devices on the one adapter (pciBusId null)', async () => {
    const [a, b] = await Promise.all([torch.gpu.getDeviceProperties(0), torch.gpu.getDeviceProperties(1)]);
    expect(a.pciBusId).toBeNull();
    expect(b.pciBusId).toBeNull();
    expect(b.name).toBe(a.name);
  });

  it('a forced mapping (WEBTORCH_GPU_BUSES) sets DRI_PRIME where the driver reads it, for each worker in turn; pciBusId is not the request', async () => {
    // gpu:1's bus is lavapipe's tag: only gpu:1's start may make the layer select.
    const buses = ['0000:00:07.0', '0000:00:00.0', '0000:00:08.0'];
    const script = `import * as torch from '${DIST}';
torch.gpu.configure({ devices: 3 });
await torch.gpu.init();
const p = [];
for (const i of [0, 1, 2]) {
  console.error('--- gpu:' + i + ' starts');
  p.push(await torch.gpu.getDeviceProperties(i));
}
console.error('--- started');
const x = torch.ones([4], { device: 'gpu:0' }).to('gpu:1').mul(3).to('gpu:2');
console.log(JSON.stringify({ buses: p.map((q) => q.pciBusId), requested: p.map((q) => q.requestedPciBusId), vals: await x.tolist(), dri: process.env.DRI_PRIME ?? null, starts: torch._physicalStarts() }));
await torch.shutdown();`;
    const { stdout, stderr } = await node(['--input-type=module', '-e', script], { WEBTORCH_GPU_BUSES: buses.join(','), MESA_VK_DEVICE_SELECT_DEBUG: '1' });
    const r = JSON.parse(stdout.split('\n').find((l) => l.startsWith('{'))!);
    // The adapter names no bus: pciBusId is null, and the request is reported as one.
    expect({ ...r, starts: undefined }).toEqual({ buses: [null, null, null], requested: buses, vals: [3, 3, 3, 3], dri: null, starts: undefined });
    // What the native layer saw, per start: it selected lavapipe for gpu:1 alone.
    const counts = selectionsPerSegment(stderr);
    // Segments: discovery, gpu:0's start, gpu:1's, gpu:2's, the work after.
    expect(counts[2], stderr).toBeGreaterThan(0);
    expect(counts, stderr).toEqual([0, 0, counts[2], 0, 0]);
    perStart = counts[2];
    // Each worker started with its own DRI_PRIME in the process's environment, the next only after the previous had its adapter.
    expect(r.starts.map((s: PhysicalStart) => [s.index, s.driPrime, s.processEnv, s.via])).toEqual(
      buses.map((b, i) => [i, torch._driPrime(b), torch._driPrime(b), 'main thread']));
    for (let i = 1; i < 3; i++) expect(r.starts[i].t0).toBeGreaterThanOrEqual(r.starts[i - 1].t1);
  }, 90_000);

  it('as the rank threads of webtorch-run --threads, each rank\'s GPU worker starts with its DRI_PRIME in the process\'s environment', async () => {
    // Rank r runs on gpu:r and starts no other GPU: GPU discovery goes through the first GPU the
    // rank names (ts/device.ts `init`; it used to start gpu:0 in every rank).
    // gpu:1's bus is lavapipe's tag: rank 1's gpu:1 is the one start that may make the layer select.
    const buses = ['0000:00:07.0', '0000:00:00.0'];
    const dir = fs.mkdtempSync(join(tmpdir(), 'wt-phys-'));
    const file = join(dir, 'rank.mjs');
    fs.writeFileSync(file, `import * as torch from '${DIST}';
const rank = Number(process.env.RANK);
const p = await torch.gpu.getDeviceProperties(rank);
const x = torch.ones([4], { device: 'gpu:' + rank }).mul(rank + 1);
const starts = torch._physicalStarts();
console.log(JSON.stringify({ rank, vals: await x.tolist(), requested: p.requestedPciBusId, starts, dri: process.env.DRI_PRIME ?? null }));
// Asked inside the rank thread: each of its GPU workers started while the process's environment held its bus.
const buses = ${JSON.stringify(buses)};
if (!starts.some((s) => s.index === rank)) throw new Error('rank ' + rank + ': gpu:' + rank + ' was not started through the mapping');
for (const s of starts) {
  const want = torch._driPrime(buses[s.index]);
  if (s.processEnv !== want || s.via !== 'launcher')
    throw new Error('rank ' + rank + ': the process environment held DRI_PRIME=' + s.processEnv + ' (via ' + s.via + ') while its gpu:' + s.index + ' started, not ' + want);
}
await torch.shutdown();`);
    const env = { WEBTORCH_GPU_BUSES: buses.join(','), MESA_VK_DEVICE_SELECT_DEBUG: '1' };
    // One start on lavapipe's tag (when the test above did not run): the lines one start prints.
    perStart ??= selectionsPerSegment((await node(['--input-type=module', '-e', `import * as torch from '${DIST}'; await torch.gpu.getDeviceProperties(0); await torch.shutdown();`],
      { ...env, WEBTORCH_GPU_BUSES: '0000:00:00.0,0000:00:07.0' })).stderr)[0];
    expect(perStart).toBeGreaterThan(0);
    const { stdout, stderr } = await node([RUN, '--threads', '--nproc', '2', file], env);
    const ranks = stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).sort((a, b) => a.rank - b.rank);
    expect(ranks.map((q) => [q.rank, q.vals, q.requested, q.dri])).toEqual([[0, [1, 1, 1, 1], buses[0], null], [1, [2, 2, 2, 2], buses[1], null]]);
    // The native layer selected for one start alone, rank 1's gpu:1 (none when the variable stays
    // in the threads' copies; more when another start is given gpu:1's bus).
    expect(selectionsPerSegment(stderr)[0], stderr).toBe(perStart);
    expect(ranks.map((q) => q.starts.map((s: PhysicalStart) => [s.index, s.processEnv, s.via]))).toEqual([
      [[0, torch._driPrime(buses[0]), 'launcher']],
      [[1, torch._driPrime(buses[1]), 'launcher']],
    ]);
  }, 120_000);

  it('the ranks of webtorch-run (processes) that set their device and join an nccl group start their own GPU alone', async () => {
    const dir = fs.mkdtempSync(join(tmpdir(), 'wt-rank-'));
    const file = join(dir, 'rank.mjs');
    fs.writeFileSync(file, `import * as torch from '${DIST}';
const rank = Number(process.env.LOCAL_RANK);
torch.gpu.setDevice(rank);
await torch.distributed.initProcessGroup({ backend: 'nccl' });
const t = torch.ones([2], { device: 'cuda' }).mul(rank + 1);
await torch.distributed.allReduce(t);
console.log(JSON.stringify({ rank, vals: await t.tolist(), started: torch._startedDevices() }));
torch.distributed.destroyProcessGroup();
await torch.shutdown();`);
    const { stdout } = await node([RUN, '--nproc', '2', file], { WEBTORCH_GPU_DEVICES: '2', WEBTORCH_PHYSICAL_GPUS: '0' });
    const ranks = stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).sort((a, b) => a.rank - b.rank);
    expect(ranks.map((q) => [q.rank, q.vals, q.started.filter((d: string) => d.startsWith('gpu'))])).toEqual([[0, [3, 3], ['gpu:0']], [1, [3, 3], ['gpu:1']]]);
  }, 120_000);

  it('a worker thread that is not a launcher\'s rank raises rather than run a mapped gpu:N on the first GPU', async () => {
    const inner = `import * as torch from '${DIST}'; await torch.gpu.getDeviceProperties(1);`;
    const script = `import { Worker } from 'node:worker_threads';
const w = new Worker(${JSON.stringify(inner)}, { eval: true, type: 'module' });
w.on('error', (e) => { console.log(JSON.stringify({ error: e.message })); process.exit(0); });
w.on('exit', () => { console.log(JSON.stringify({ error: null })); process.exit(0); });`;
    const { stdout } = await node(['--input-type=module', '-e', script], { WEBTORCH_GPU_BUSES: '0000:00:07.0,0000:00:08.0' });
    const r = JSON.parse(stdout.split('\n').find((l) => l.startsWith('{'))!);
    // GPU discovery starts the GPU named first, gpu:1, so the refusal names it.
    expect(r.error).toContain('webtorch: gpu:1 should run on the GPU at PCI bus 0000:00:08.0, but this is a worker thread, whose process.env is a copy that Dawn never reads');
  }, 90_000);

  it('a malformed WEBTORCH_GPU_BUSES raises naming it', async () => {
    const script = `import * as torch from '${DIST}'; await torch.gpu.init(); torch.ones([1], { device: 'gpu:0' });`;
    const r = await new Promise<{ code: number; err: string; out: string }>((resolve) => {
      execFile(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, WEBTORCH_GPU_BUSES: 'gpu7' }, timeout: 60_000 },
        (err, stdout, stderr) => resolve({ code: err ? 1 : 0, err: stderr, out: stdout }));
    });
    expect(r.code).toBe(1);
    expect(r.err).toContain("no WebGPU adapter: WEBTORCH_GPU_BUSES: 'gpu7' is not a PCI bus id such as 0000:00:07.0");
  }, 90_000);
});
