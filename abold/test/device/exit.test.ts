/**
 * Programs exit cleanly, with code 0, whether or not they awaited their GPU work or called
 * `torch.shutdown()`. Node used to terminate the device workers at exit wherever they were, and a
 * GPU worker stopped inside a Dawn call (a shader `compile`) aborted the process with
 * `FATAL ERROR: Error::ThrowAsJavaScriptException napi_throw` (exit 134), in about 1 run in 10 on
 * lavapipe. Now webtorch stops its workers when the program has nothing left to do
 * (`onProgramEnd` in ts/platform.ts), and a program that leaves through `process.exit()` or an
 * uncaught exception first waits for each GPU worker to be between two Dawn calls (`exitGuard`).
 * Each script runs many times, in parallel batches.
 */
import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const DIST = new URL('../../dist/webtorch.js', import.meta.url).href;

/** Script bodies: each ends without awaiting or shutting down, in its own way. */
const VARIANTS: Record<string, string> = {
  // The script: GPU work still queued (and being compiled) when the program ends.
  queued: `await torch.gpu.init();
const t = torch.ones([4], { device: 'gpu:0' }).mul(2).exp();`,
  // Ends right after a sync point.
  awaited: `await torch.gpu.init();
const t = torch.ones([4], { device: 'gpu:0' }).mul(2).exp();
if ((await t.tolist())[0] < 7) throw new Error('wrong value');`,
  // Queued work on the cpu and on two GPU devices, with a copy between them.
  cpuToo: `torch.gpu.configure({ devices: 2 });
await torch.gpu.init();
const c = torch.ones([64, 64]).matmul(torch.ones([64, 64])).relu();
const g = torch.ones([64, 64], { device: 'gpu:0' }).matmul(torch.ones([64, 64], { device: 'gpu:0' })).to('gpu:1').sigmoid();
const h = c.to('gpu:1').add(g);`,
  // process.exit() while GPU work is queued: beforeExit does not run.
  exits: `await torch.gpu.init();
const t = torch.ones([4], { device: 'gpu:0' }).mul(2).exp();
setTimeout(() => process.exit(0), 0);`,
  // process.exit() with a chain of products running and a read in flight.
  exitsMidRead: `await torch.gpu.init();
let t = torch.ones([64, 64], { device: 'gpu:0' });
for (let i = 0; i < 50; i++) t = t.matmul(t).mul(0.01).exp();
t.data();
setTimeout(() => process.exit(0), 3);`,
  // An uncaught exception while GPU work is queued: exit code 1, Node's report, no abort.
  throws: `await torch.gpu.init();
const t = torch.ones([4], { device: 'gpu:0' }).mul(2).exp();
throw new Error('the user program failed');`,
};
const EXPECTED_CODE: Record<string, number> = { throws: 1 };

interface Run {
  variant: string;
  code: number | null;
  signal: string | null;
  stderr: string;
}

function runScript(variant: string): Promise<Run> {
  const script = `import * as torch from '${DIST}';\n${VARIANTS[variant]}\n`;
  const env = { ...process.env, WEBTORCH_ALLOW_SOFTWARE_GPU: '1' };
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ['--input-type=module', '-e', script], { env, encoding: 'utf8', timeout: 30_000 }, (_err, _stdout, stderr) => {
      resolve({ variant, code: child.exitCode, signal: child.signalCode, stderr });
    });
  });
}

describe('a program exits with code 0 however it ends', () => {
  it('65 runs: queued GPU work, after an await, with cpu and two GPU devices, process.exit, an uncaught error', async () => {
    const plan = [...Array(30).fill('queued'), ...Array(10).fill('awaited'), ...Array(10).fill('cpuToo'), ...Array(5).fill('exits'),
      ...Array(5).fill('exitsMidRead'), ...Array(5).fill('throws')] as string[];
    const runs: Run[] = [];
    const BATCH = 5;
    for (let i = 0; i < plan.length; i += BATCH) runs.push(...(await Promise.all(plan.slice(i, i + BATCH).map(runScript))));
    const bad = runs.filter((r) => r.code !== (EXPECTED_CODE[r.variant] ?? 0) || /FATAL/.test(r.stderr)
      || (r.variant === 'throws' ? !r.stderr.includes('Error: the user program failed') : /Error/.test(r.stderr)));
    expect(bad.map((r) => `${r.variant}: code ${r.code} signal ${r.signal}\n${r.stderr.slice(0, 2000)}`)).toEqual([]);
    expect(runs.length).toBe(65);
  }, 120_000);
});
