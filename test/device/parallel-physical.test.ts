/**
 * gpu:N on distinct physical GPUs (ts/runtime/physical.ts). This machine has no GPU, so what runs
 * here is the fallback and the parts that do not need two GPUs: the detection of identical
 * display controllers on a fake sysfs tree, the DRI_PRIME form, the logical devices kept where
 * there is no mapping (`pciBusId` null), and a forced mapping (`WEBTORCH_GPU_BUSES`) in a child
 * process: the workers start one after another with DRI_PRIME set, report their bus, and compute
 * (on lavapipe the device-select layer finds no such bus and keeps the one adapter). The real
 * two-GPU path has not run here (see README "Many GPUs").
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

logicalGpuSuite(2, 'physical GPU tests');
const DIST = new URL('../../dist/webtorch.js', import.meta.url).href;

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

  it('a forced mapping (WEBTORCH_GPU_BUSES) starts each worker with its DRI_PRIME and reports the bus', async () => {
    const script = `import * as torch from '${DIST}';
torch.gpu.configure({ devices: 2 });
await torch.gpu.init();
const p = await Promise.all([0, 1].map((i) => torch.gpu.getDeviceProperties(i)));
const x = torch.ones([4], { device: 'gpu:0' }).to('gpu:1').mul(3);
console.log(JSON.stringify({ buses: p.map((q) => q.pciBusId), vals: await x.tolist(), dri: process.env.DRI_PRIME ?? null, starts: torch._physicalStarts() }));
await torch.shutdown();`;
    const out = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, ['--input-type=module', '-e', script], {
        env: { ...process.env, WEBTORCH_GPU_BUSES: '0000:00:07.0,0000:00:08.0', MESA_VK_DEVICE_SELECT_DEBUG: '1' }, timeout: 60_000,
      }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(`${stdout}\n--stderr--\n${stderr}`)));
    });
    const line = out.split('\n').find((l) => l.startsWith('{'))!;
    const r = JSON.parse(line);
    expect({ ...r, starts: undefined }).toEqual({ buses: ['0000:00:07.0', '0000:00:08.0'], vals: [3, 3, 3, 3], dri: null, starts: undefined });
    // Each worker started with its own DRI_PRIME set, the second only after the first had its adapter.
    expect(r.starts.map((s: { index: number; driPrime: string }) => [s.index, s.driPrime])).toEqual([[0, 'pci-0000_00_07_0'], [1, 'pci-0000_00_08_0']]);
    expect(r.starts[1].t0).toBeGreaterThanOrEqual(r.starts[0].t1);
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
