/**
 * The shipped types compile in a consumer project under `tsc --strict` WITHOUT skipLibCheck.
 *
 * `npm pack` makes the tarball; it is unpacked into a temporary project's node_modules/webtorch,
 * as `npm install` would (the machine is offline, so each of the tarball's `dependencies` is
 * linked from this repository's node_modules instead of fetched). The consumer's tsconfig has
 * `"types": []`, so the package must bring every global type its declarations use.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'webtorch-consumer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const consumer = `
import * as torch from 'webtorch';

async function main(): Promise<void> {
  const dev = await torch.tryGpu(0);
  const x = torch.randn([4, 3], { device: dev });
  const model = new torch.nn.Sequential(new torch.nn.Linear(3, 2), new torch.nn.ReLU());
  model.to(dev);
  const opt = new torch.optim.Adam(model.parameters(), { lr: 1e-2 });
  const y: torch.Tensor = model(x);
  const same: torch.Tensor = model.forward(x);
  const loss = torch.F.mseLoss(y, torch.zeros([4, 2], { device: dev }));
  loss.backward();
  opt.step();
  opt.zeroGrad();
  const v: number | boolean = await loss.item();
  const s: string = await same.toStringAsync();
  await y.print();
  torch.tidy(() => x.mul(2).sum());
  {
    const t = torch.ones([2]);
    t[Symbol.dispose]();
  }
  const props = await torch.gpu.getDeviceProperties(0);
  const info = props.description;
  const bytes: number = torch.gpu.memoryAllocated(dev);
  console.log(v, s, info, bytes, torch.gpu.memorySummary(dev), model instanceof torch.nn.Module);
  await torch.shutdown();
}
void main();
`;

describe('the packed types under tsc --strict', () => {
  it('a consumer using tensor, nn, optim, gpu and memory compiles without skipLibCheck', () => {
    execFileSync('npm', ['pack', '--pack-destination', dir], { cwd: root, stdio: 'pipe' });
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string; dependencies: Record<string, string> };
    const modules = join(dir, 'node_modules');
    mkdirSync(modules);
    execFileSync('tar', ['xzf', join(dir, `webtorch-${pkg.version}.tgz`), '-C', dir]);
    execFileSync('mv', [join(dir, 'package'), join(modules, 'webtorch')]);
    for (const dep of Object.keys(pkg.dependencies)) {
      mkdirSync(join(modules, dep, '..'), { recursive: true });
      symlinkSync(join(root, 'node_modules', dep), join(modules, dep), 'dir');
    }
    expect(Object.keys(pkg.dependencies), 'the WebGPU types are a dependency, not a devDependency').toContain('@webgpu/types');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', types: [] }, files: ['main.ts'] }),
    );
    writeFileSync(join(dir, 'main.ts'), consumer);
    expect(existsSync(join(modules, 'webtorch', 'dist', 'types', 'ts', 'index.d.ts'))).toBe(true);
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    let out = '';
    try {
      execFileSync(process.execPath, [tsc, '-p', dir], { cwd: dir, stdio: 'pipe' });
    } catch (e) {
      out = String((e as { stdout: Buffer }).stdout);
    }
    expect(out, 'tsc --strict errors in the consumer').toBe('');
  }, 120_000);
});
