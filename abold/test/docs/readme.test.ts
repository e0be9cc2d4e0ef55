/**
 * Every ```js block of README.md and docs/*.md runs, as written, in its own `node` process against
 * the built package: `import ... from 'webtorch'` resolves through a temporary directory whose
 * node_modules/webtorch links to this repository (its package.json `exports` → dist/). A block
 * that is not meant to run is marked ```js no-run (rare). A block fails the test on a non-zero exit.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const files = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

interface Block { file: string; line: number; code: string; run: boolean }

/** The fenced ```js blocks of a markdown file, with the line each starts on. */
export function jsBlocks(file: string): Block[] {
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  const out: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^```(js|javascript|mjs)\b(.*)$/.exec(lines[i]);
    if (!m) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !lines[i].startsWith('```'); i++) body.push(lines[i]);
    out.push({ file, line: start + 1, code: body.join('\n'), run: !/\bno-run\b/.test(m[2]) });
  }
  return out;
}

const dir = mkdtempSync(join(tmpdir(), 'webtorch-readme-'));
mkdirSync(join(dir, 'node_modules'));
symlinkSync(root, join(dir, 'node_modules', 'webtorch'), 'dir');
writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const blocks = files.flatMap(jsBlocks);

describe('documentation snippets run as written', () => {
  it('the README has runnable blocks, and no-run marks are rare', () => {
    expect(blocks.filter((b) => b.file === 'README.md' && b.run).length).toBeGreaterThanOrEqual(2);
    expect(blocks.filter((b) => !b.run).length).toBeLessThanOrEqual(1);
  });

  for (const [i, b] of blocks.entries()) {
    it.runIf(b.run)(`${b.file}:${b.line}`, async () => {
      const path = join(dir, `block-${i}.mjs`);
      writeFileSync(path, b.code);
      const run = promisify(execFile);
      const env = { ...process.env, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? '/tmp' };
      const r = await run(process.execPath, [path], { cwd: dir, env, timeout: 120_000 }).catch((e: { code: number; stdout: string; stderr: string }) => e);
      const code = 'code' in r ? r.code : 0;
      expect(code, `${b.file}:${b.line} exited with ${code}\n${r.stderr}`).toBe(0);
      expect(r.stderr).not.toMatch(/Error/);
    }, 150_000);
  }
});
