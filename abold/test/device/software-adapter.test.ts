/**
 * A software adapter (lavapipe here) is not a GPU to `isAvailable`/`deviceCount`/`numGpus`/
 * `tryGpu`/`tryAllGpus` unless the user opts in (`torch.gpu.configure({allowSoftware: true})` or
 * `WEBTORCH_ALLOW_SOFTWARE_GPU=1`); `'gpu:0'` by name still works. The suites opt in through
 * vitest.config.mjs, so each case runs in a child process with the environment it names.
 * On a machine with a hardware adapter, every form reports the GPU.
 */
import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { suiteDevices } from '../devices.js';

suiteDevices();

const SCRIPT = `
import * as torch from './dist/webtorch.js';
if (process.argv.includes('configure')) torch.gpu.configure({ allowSoftware: true });
const out = {
  available: await torch.gpu.isAvailable(),
  count: await torch.gpu.deviceCount(),
  numGpus: await torch.numGpus(),
  tryGpu: String(await torch.tryGpu(0)),
  tryAll: (await torch.tryAllGpus()).map(String),
};
const t = torch.ones([3], { device: 'gpu:0' }).mul(2);   // by name: whatever adapter there is
out.named = [String(t.device), await t.tolist()];
out.software = (await torch.gpu.getDeviceProperties(0)).isSoftware;
console.log(JSON.stringify(out));
await torch.shutdown();
`;

function child(env: Record<string, string | undefined>, arg = ''): Promise<Record<string, unknown>> {
  const childEnv = { ...process.env, ...env };
  for (const k of Object.keys(env)) if (env[k] === undefined) delete childEnv[k];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', SCRIPT, arg], { env: childEnv, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`));
      else resolve(JSON.parse(stdout.trim().split('\n').pop()!));
    });
  });
}

describe('a software adapter needs an opt-in', () => {
  it('without it: not available, tryGpu gives cpu, and gpu:0 by name still works', async () => {
    const got = await child({ WEBTORCH_ALLOW_SOFTWARE_GPU: undefined });
    expect(got.named).toEqual(['gpu:0', [2, 2, 2]]);
    if (got.software) {
      expect(got).toMatchObject({ available: false, count: 0, numGpus: 0, tryGpu: 'cpu', tryAll: ['cpu'] });
    } else {
      expect(got).toMatchObject({ available: true, tryGpu: 'gpu:0' });
    }
  });

  it('with WEBTORCH_ALLOW_SOFTWARE_GPU=1, or configure({allowSoftware: true}): available', async () => {
    for (const [env, arg] of [[{ WEBTORCH_ALLOW_SOFTWARE_GPU: '1' }, ''], [{ WEBTORCH_ALLOW_SOFTWARE_GPU: undefined }, 'configure']] as const) {
      const got = await child(env, arg);
      expect(got).toMatchObject({ available: true, count: 1, numGpus: 1, tryGpu: 'gpu:0', tryAll: ['gpu:0'], named: ['gpu:0', [2, 2, 2]] });
    }
  });

  it('configure({allowSoftware}) applies at once, and is checked', async () => {
    const p = await torch.gpu.getDeviceProperties(0);
    const software = p.isSoftware;
    expect(software).toBe(p.cpuAdapter || p.architecture === 'software');
    try {
      torch.gpu.configure({ allowSoftware: false });
      expect(await torch.gpu.isAvailable()).toBe(!software);
      expect(String(await torch.tryGpu(0))).toBe(software ? 'cpu' : 'gpu:0');
      torch.gpu.configure({ allowSoftware: true });
      expect(await torch.gpu.isAvailable()).toBe(true);
      expect(String(await torch.tryGpu(1))).toBe('gpu:1');
      expect(String(await torch.tryGpu(-1))).toBe('cpu');
    } finally {
      torch.gpu.configure({ allowSoftware: true });
    }
    expect(() => torch.gpu.configure({ allowSoftware: 'yes' as never })).toThrow('allowSoftware must be a boolean');
    expect(() => torch.gpu.configure({ allowSofware: true } as never)).toThrow("torch.gpu.configure() got an unexpected keyword argument 'allowSofware'");
  });
});
