/**
 * The devices every shared suite runs on: `cpu`, `gpu:0` and `gpu:1` (two logical devices on
 * the one adapter). GPU suites never skip under CI: with `CI` set and no adapter, this throws.
 */
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest';
import * as torch from '../dist/webtorch.js';

/** Starts the GPU runtime with two logical devices and returns the device names to test. */
export async function testDevices(): Promise<string[]> {
  torch.gpu.configure({ devices: 2 });
  if (!(await torch.gpu.isAvailable())) {
    const why = 'no WebGPU adapter found (run .ci/run, or shared/gpu/software-webgpu.sh, to install lavapipe)';
    if (process.env.CI) throw new Error(`GPU tests cannot run under CI: ${why}`);
    console.warn(`webtorch tests: ${why}; testing cpu only`);
    return ['cpu'];
  }
  const props = await torch.gpu.getDeviceProperties(0);
  console.log(`webtorch tests: GPU adapter: ${props.description} (vendor ${props.vendor}), features: ${props.features.join(' ')}`);
  return ['cpu', 'gpu:0', 'gpu:1'];
}

/** Allocated bytes and live storages per device, for the leak check after each test. */
export function liveCounts(devices: string[]): Record<string, [number, number]> {
  return Object.fromEntries(devices.map((d) => [d, [torch.gpu.memoryAllocated(d), torch._liveStorage(torch.device(d)).count]]));
}

/** Registers the leak check: after each test, every device's allocated bytes and live storages are back where they were. */
export function leakCheck(devices: () => string[]): void {
  let before: Record<string, [number, number]>;
  beforeEach(() => {
    before = liveCounts(devices());
  });
  afterEach(async () => {
    await torch.gpu.synchronize();
    expect(liveCounts(devices()), 'allocated bytes and live storages after the test (leak check)').toEqual(before);
  });
}

/**
 * The setup a device suite shares: the devices, found before the tests (the array is filled in
 * `beforeAll`), the leak check after each test, and `torch.shutdown()` at the end.
 */
export function suiteDevices(): string[] {
  const devices: string[] = [];
  beforeAll(async () => {
    devices.push(...(await testDevices()));
  });
  leakCheck(() => devices);
  afterAll(async () => {
    await torch.shutdown();
  });
  return devices;
}

/**
 * The setup of a suite that needs `gpus` logical GPU devices on the one adapter (habits, multi-GPU
 * suites): the devices (`cpu`, `gpu:0` … filled in `beforeAll`), the leak check after each test,
 * and `torch.shutdown()` at the end. Under CI, no adapter is an error, never a skip.
 */
export function logicalGpuSuite(gpus: number, what: string): string[] {
  const devices: string[] = [];
  beforeAll(async () => {
    torch.gpu.configure({ devices: gpus });
    const ok = await torch.gpu.isAvailable();
    if (!ok && process.env.CI) throw new Error(`${what} cannot run under CI without a WebGPU adapter`);
    expect(ok, 'a WebGPU adapter (run .ci/run to install lavapipe)').toBe(true);
    devices.push('cpu', ...Array.from({ length: gpus }, (_, i) => `gpu:${i}`));
  });
  leakCheck(() => devices);
  afterAll(async () => {
    await torch.shutdown();
  });
  return devices;
}
