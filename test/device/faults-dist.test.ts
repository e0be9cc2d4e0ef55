/**
 * Faults between ranks (issue 33): a rank process killed with SIGKILL in the middle of a
 * collective, and a rank thread that throws under `webtorch-run --threads`.
 *
 * The ranks are started here (test/fixtures/dist-fault.mjs, each with its own RANK and the
 * group's MASTER_ADDR/MASTER_PORT), so the test knows their pids and can kill one with SIGKILL:
 * no `bye`, no exit handler, just a socket the kernel closes. The survivors must raise naming the
 * dead rank as a dead rank (not the time-out, which would name it too), well within the
 * collective's timeout, and then exit on their own; every process must have exited before the
 * test's hard timeout.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const RUN = fileURLToPath(new URL('../../bin/webtorch-run.mjs', import.meta.url));
const RANK = fileURLToPath(new URL('../fixtures/dist-fault.mjs', import.meta.url));
/** The collectives' timeout: short, yet far above what a dead rank's error should take. */
const TIMEOUT_MS = 8000;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

interface Rank {
  child: ChildProcess;
  lines: string[];
  stderr: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once a line passes `test` (or rejects when the process exits first). */
  until(test: (line: string) => boolean): Promise<string>;
}

function startRank(rank: number, world: number, port: number, mode: string, dev: string, env: Record<string, string>): Rank {
  const child = spawn(process.execPath, [RANK, mode, dev], {
    env: { ...process.env, RANK: String(rank), WORLD_SIZE: String(world), MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), DIST_TIMEOUT: String(TIMEOUT_MS), ...env },
  });
  const lines: string[] = [];
  const watchers: { test: (l: string) => boolean; resolve: (l: string) => void }[] = [];
  let buf = '';
  child.stdout!.on('data', (d) => {
    buf += d;
    const parts = buf.split('\n');
    buf = parts.pop()!;
    for (const l of parts) {
      lines.push(l);
      for (const w of watchers.splice(0)) (w.test(l) ? w.resolve(l) : watchers.push(w));
    }
  });
  const r: Rank = {
    child, lines, stderr: '',
    exited: new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal }))),
    until: (test) => {
      const seen = lines.find(test);
      if (seen) return Promise.resolve(seen);
      return Promise.race([
        new Promise<string>((resolve) => watchers.push({ test, resolve })),
        r.exited.then(({ code, signal }) => { throw new Error(`rank ${rank} exited (${code ?? signal}) before the line it was waited for:\n${lines.join('\n')}\n${r.stderr}`); }),
      ]);
    },
  };
  child.stderr!.on('data', (d) => (r.stderr += d));
  return r;
}

const result = (r: Rank) => {
  const l = r.lines.find((x) => x.startsWith('RESULT '));
  return l ? JSON.parse(l.slice(7)) : null;
};

/**
 * Starts `world` ranks, waits until `ready` says the victim should die, kills it with SIGKILL, and
 * returns the survivors' results once every process has exited (each is killed at the end if not,
 * and the test then fails).
 */
async function killRun(world: number, victim: number, mode: 'park' | 'stream', dev: string, ready: (ranks: Rank[]) => Promise<unknown>) {
  const port = await freePort();
  const ranks = Array.from({ length: world }, (_, r) => startRank(r, world, port, mode, dev, { VICTIM: String(victim), PARK_AT: '3' }));
  try {
    await ready(ranks);
    const killedAt = performance.now();
    expect(process.kill(ranks[victim].child.pid!, 'SIGKILL')).toBe(true);
    const exits = await Promise.race([
      Promise.all(ranks.map((r) => r.exited)),
      new Promise<null>((resolve) => setTimeout(() => resolve(null), 4 * TIMEOUT_MS)),
    ]);
    expect(exits, `every rank exits (stderr: ${ranks.map((r) => r.stderr).join('\n')})`).not.toBeNull();
    const waited = performance.now() - killedAt;
    return { ranks, exits: exits!, waited };
  } finally {
    for (const r of ranks) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
  }
}

/** What a survivor must report: the dead rank named as dead, within the timeout; its device still computes. */
function checkSurvivor(r: Rank, rank: number, victim: number, minIters: number, inside = true) {
  const got = result(r);
  expect(got, `rank ${rank}'s RESULT (stdout: ${r.lines.join(' | ')}; stderr: ${r.stderr})`).not.toBeNull();
  expect(got.rank).toBe(rank);
  expect(got.iters).toBeGreaterThanOrEqual(minIters);
  // Named as a dead rank, not as one that never came (the time-out's message); raised by the
  // collective it was inside (or, where the kill fell between two collectives, by the next call).
  const where = inside ? `allReduce \\(collective ${got.iters + 1}\\)` : `allReduce( \\(collective ${got.iters + 1}\\))?`;
  expect(got.error).toMatch(new RegExp(`^${where}: rank ${victim} exited or lost its connection \\(its socket to rank ${rank} closed\\)$`));
  expect(got.error).not.toMatch(/timed out/);
  expect(got.ms).toBeLessThan(TIMEOUT_MS);
  // A later collective raises at once, naming the dead rank, and the device computes right.
  expect(got.later).toMatch(new RegExp(`^allReduce: rank ${victim} exited or lost its connection`));
  expect(got.after).toEqual([0, 3, 6, 9, 12]);
  if (typeof got.first === 'string') expect(got.first).toContain(`rank ${victim} exited or lost its connection`);
  else expect(got.first).toEqual([0, 3, 6, 9, 12]);
}

describe('a rank process killed with SIGKILL mid-collective', () => {
  it('3 ranks on cpu, rank 2 killed while 0 and 1 wait inside allReduce 3: both raise naming rank 2, within the timeout, and exit', async () => {
    const { ranks, exits, waited } = await killRun(3, 2, 'park', 'cpu', async (rs) => {
      await rs[2].until((l) => l === 'PARKED');
      await Promise.all([rs[0], rs[1]].map((r) => r.until((l) => l === 'ENTER 3')));
      await new Promise((r) => setTimeout(r, 200)); // well inside the await of allReduce 3
    });
    expect(exits[2]).toEqual({ code: null, signal: 'SIGKILL' });
    expect(ranks[2].lines).not.toContain('NOT KILLED');
    for (const r of [0, 1]) {
      expect(exits[r], ranks[r].stderr).toEqual({ code: 0, signal: null });
      checkSurvivor(ranks[r], r, 2, 2);
      expect(result(ranks[r]).iters).toBe(2);
    }
    expect(waited).toBeLessThan(TIMEOUT_MS + 5000);
  }, 60_000);

  it.each([['cpu', 1], ['cpu', 0], ['gpu:0', 1]] as const)('2 ranks on %s streaming 4 MB allReduces, rank %i killed mid-stream: the survivor raises naming it within the timeout, and exits', async (dev, victim) => {
    const { ranks, exits, waited } = await killRun(2, victim, 'stream', dev, async (rs) => {
      await Promise.all(rs.map((r) => r.until((l) => l === 'ITER 2')));
    });
    expect(exits[victim]).toEqual({ code: null, signal: 'SIGKILL' });
    const s = 1 - victim;
    expect(exits[s], ranks[s].stderr).toEqual({ code: 0, signal: null });
    checkSurvivor(ranks[s], s, victim, 2, false);
    expect(waited).toBeLessThan(TIMEOUT_MS + 5000);
  }, 60_000);
});

describe('a rank thread that throws (webtorch-run --threads)', () => {
  it('the launcher reports the error, rank 0 raises naming rank 1, and the launcher exits non-zero without hanging', async () => {
    const t0 = performance.now();
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string; killed: boolean }>((resolve) => {
      execFile(process.execPath, [RUN, '--threads', '--nproc', '2', '--grace', '20', RANK, 'throw'], { env: { ...process.env, DIST_TIMEOUT: String(TIMEOUT_MS) }, timeout: 50_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr, killed: !!err?.killed });
      });
    });
    expect(r.killed, 'the launcher hung').toBe(false);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/webtorch-run: rank 1 \(thread \d+\) threw: Error: webtorch fault test: rank 1 threw/);
    expect(r.stderr).toMatch(/webtorch-run: rank 1 \(pid \d+, thread \d+\) failed first: exit code 1$/m);
    const res = r.stdout.split('\n').filter((l) => l.startsWith('RESULT ')).map((l) => JSON.parse(l.slice(7)));
    expect(res).toEqual([{ rank: 0, error: 'allReduce (collective 1): rank 1 exited or lost its connection (its thread ended)' }]);
    expect(performance.now() - t0).toBeLessThan(TIMEOUT_MS + 20_000);
  }, 60_000);
});
