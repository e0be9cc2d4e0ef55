/**
 * A failed collective must not hang what comes after it (ranks in one process, ts/distributed/
 * group.ts): a call that differs between ranks (shape, numel, dtype), a rank that throws between
 * collectives, a rank that comes after the collective's timeout, and a rank whose device worker
 * dies inside a collective, on 2 and 3 ranks.
 *
 * What each test checks, every step raced against a 20 s timer so that a hang is a failure with a
 * message and not a stuck suite: every rank's collective rejects (a mismatch names both calls);
 * a later collective on the group rejects at once with NCCL's "communicator was aborted" wording;
 * each rank's device then syncs (a `recv` the failed collective had queued is released, its error
 * surfacing at that sync point), computes right, and leaks nothing (the suite's leak check).
 *
 * MUTATION RECORD (2026-11-28; each test run alone with `-t`, built from the code before the fix,
 * 91a56fb): every test failed. The mismatches, the throw and the time-out: "Process 0 terminated
 * … HANG: rank 0's sync after the failure did not settle within 15000 ms" (rank 0 had queued its
 * side; its `recv` held gpu:0's stream forever, and the suite's leak check then timed out on
 * `synchronize()`). The dead worker: "Process 0 terminated … HANG: rank 0's read did not settle"
 * (its `recv` from the dead gpu waited forever). With the fix but without a failed receive's
 * error forwarded in the device's later sends (ts/worker/peers.ts, `failedRecv`), the 3-rank dead
 * worker test failed: "rank 1: expected 'ok' to be 'recv failed on device: the copy from gpu:0
 * failed: the copy from gpu:2 failed: …'": rank 1 read a sum built from bytes rank 0 never got.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

const { distributed: dist } = torch;
logicalGpuSuite(3, 'failed-collective tests');

/** How long a step may take before it counts as a hang (a whole `spawn`: three times as long, so a rank's step names itself first). */
const HANG_MS = 15_000;

/** `p`, or a rejection naming `what` once `ms` have passed. */
async function within<T>(p: Promise<T>, what: string, ms = HANG_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hang = new Promise<never>((_, rej) => {
    timer = setTimeout(() => rej(new Error(`HANG: ${what} did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, hang]);
  } finally {
    clearTimeout(timer);
  }
}

/** The message `p` rejects with, or 'ok' (a hang rejects `within`'s race, not this). */
async function outcome(p: () => unknown, what: string): Promise<string> {
  try {
    await within(Promise.resolve().then(p), what);
    return 'ok';
  } catch (e) {
    const m = (e as Error).message;
    if (m.startsWith('HANG:')) throw e;
    return m;
  }
}

/** What a rank saw after the failure: a later collective, a sync of its device, and a computation on it. */
interface After {
  later: string;
  sync: string;
  sum: number;
}

/** A later collective, leaving the group, a device sync, then `ones(5).sum()` on the rank's device. */
async function afterFailure(rank: number): Promise<After> {
  const t = torch.ones([2], { device: `gpu:${rank}` });
  const later = await outcome(() => dist.allReduce(t), `rank ${rank}'s later allReduce`);
  t.dispose();
  dist.destroyProcessGroup();
  expect(dist.isInitialized()).toBe(false);
  const sync = await outcome(() => torch.gpu.synchronize(`gpu:${rank}`), `rank ${rank}'s sync after the failure`);
  const x = torch.ones([5], { device: `gpu:${rank}` }), s = x.sum();
  const sum = await within(s.item(), `rank ${rank}'s computation after the failure`);
  x.dispose();
  s.dispose();
  return { later, sync, sum };
}

/** A promise and its resolve, to order one rank's step after another's. */
function signal(): { done: Promise<void>; fire: () => void } {
  let fire!: () => void;
  const done = new Promise<void>((r) => (fire = r));
  return { done, fire };
}

/** Rank `rank` calls `allReduce(t)` and tells `issued` once its side is queued (the call returns). */
function allReduceTelling(t: torch.Tensor, issued: { fire: () => void }): unknown {
  const w = dist.allReduce(t);
  issued.fire();
  return w;
}

const aborted = (rank: number, reason: string) => `NCCL communicator was aborted on rank ${rank}. Original reason for failure was: ${reason}`;
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/**
 * The error a rank's device reports for the receive the abort released: its own abort, or, when a
 * peer's failed receive reached it first (the peer's later sends forward it), that one named
 * through the copies that carried it.
 */
const abortedRecv = (rank: number, why: string) =>
  new RegExp(`^recv failed on device: (?:${esc(aborted(rank, why))}|(?:the copy from gpu:\\d failed: )+${esc(aborted(9, why)).replace('rank 9', 'rank \\d')})$`);

describe('a call that differs between ranks', () => {
  for (const world of [2, 3]) {
    it(`${world} ranks, the last with a different shape: every rank raises naming both calls, later collectives raise "aborted", devices go on`, async () => {
      const last = world - 1;
      const got = await within(dist.spawn(async (rank) => {
        await dist.initProcessGroup({ worldSize: world, rank, initMethod: `inproc://shape-${world}`, timeout: 10_000 });
        const t = torch.ones(rank === last ? [3] : [2, 2], { device: `gpu:${rank}` });
        const first = await outcome(() => dist.allReduce(t), `rank ${rank}'s allReduce`);
        t.dispose();
        return { first, ...(await afterFailure(rank)) };
      }, { nprocs: world }), 'spawn', 3 * HANG_MS);
      const why = `allReduce (collective 1): rank ${last} called allReduce([3], float32, sum) but rank 0 called allReduce([2, 2], float32, sum)`;
      for (const [rank, r] of got.entries()) {
        expect(r.first, `rank ${rank}`).toBe(why);
        expect(r.later, `rank ${rank}`).toBe(`allReduce: ${aborted(rank, why)}`);
        // The ranks that issued their side had a recv queued for bytes that never come: released with this error.
        if (rank === last) expect(r.sync, `rank ${rank}`).toBe('ok');
        else expect(r.sync, `rank ${rank}`).toMatch(abortedRecv(rank, why));
        expect(r.sum).toBe(5);
      }
    }, 4 * HANG_MS);
  }

  it('2 ranks, same shape, different dtype: both raise naming both dtypes', async () => {
    const got = await within(dist.spawn(async (rank) => {
      await dist.initProcessGroup({ worldSize: 2, rank, initMethod: 'inproc://dtype', timeout: 10_000 });
      const t = torch.ones([4], { device: `gpu:${rank}`, dtype: rank === 0 ? 'float32' : 'int32' });
      const first = await outcome(() => dist.allReduce(t), `rank ${rank}'s allReduce`);
      t.dispose();
      return { first, ...(await afterFailure(rank)) };
    }, { nprocs: 2 }), 'spawn', 3 * HANG_MS);
    const why = 'allReduce (collective 1): rank 1 called allReduce([4], int32, sum) but rank 0 called allReduce([4], float32, sum)';
    expect(got.map((r) => r.first)).toEqual([why, why]);
    expect(got.map((r) => r.sync)).toEqual([`recv failed on device: ${aborted(0, why)}`, 'ok']);
    expect(got.map((r) => r.sum)).toEqual([5, 5]);
  }, 4 * HANG_MS);
});

describe('a rank that fails between collectives', () => {
  for (const world of [2, 3]) {
    it(`${world} ranks, the last throws after collective 1 while the others are in collective 2: they raise naming it, their devices go on`, async () => {
      const last = world - 1;
      const seen: (({ second: string; ok: number[] } & After) | undefined)[] = [];
      const issued = Array.from({ length: last }, signal);
      const err = await within(dist.spawn(async (rank) => {
        await dist.initProcessGroup({ worldSize: world, rank, initMethod: `inproc://throws-${world}`, timeout: 10_000 });
        const t = torch.ones([5], { device: `gpu:${rank}` });
        try {
          await dist.allReduce(t);
          const ok = (await t.values()) as number[];
          if (rank === last) {
            // Thrown once the others have issued their side of collective 2.
            await Promise.all(issued.map((s) => s.done));
            throw new Error('out of data');
          }
          const second = await outcome(() => allReduceTelling(t, issued[rank]), `rank ${rank}'s allReduce 2`);
          seen[rank] = { second, ok, ...(await afterFailure(rank)) };
        } finally {
          t.dispose();
        }
      }, { nprocs: world }).then(() => null, (e: Error) => e.message), 'spawn', 3 * HANG_MS);
      expect(err).toMatch(new RegExp(`^\\n\\n-- Process ${last} terminated with the following error:\\nError: out of data`));
      const why = `rank ${last} failed: out of data`;
      for (let rank = 0; rank < last; rank++) {
        const r = seen[rank]!;
        expect(r.ok).toEqual(Array(5).fill(world));
        expect(r.second, `rank ${rank}`).toBe(why);
        expect(r.later, `rank ${rank}`).toBe(`allReduce: ${aborted(rank, why)}`);
        expect(r.sync, `rank ${rank}`).toMatch(abortedRecv(rank, why));
        expect(r.sum).toBe(5);
      }
    }, 4 * HANG_MS);
  }

  it('2 ranks, rank 1 calls allReduce after rank 0\'s timed out: both raise, neither device is held', async () => {
    const timedOut = signal();
    const got = await within(dist.spawn(async (rank) => {
      await dist.initProcessGroup({ worldSize: 2, rank, initMethod: 'inproc://late', timeout: 300 });
      const t = torch.ones([4], { device: `gpu:${rank}` });
      if (rank === 1) await timedOut.done;
      const first = await outcome(() => dist.allReduce(t), `rank ${rank}'s allReduce`);
      if (rank === 0) timedOut.fire();
      t.dispose();
      return { first, ...(await afterFailure(rank)) };
    }, { nprocs: 2 }), 'spawn', 3 * HANG_MS);
    const why = 'allReduce (collective 1) timed out after 300 ms: rank 1 never called it (called by rank 0)';
    expect(got[0].first).toBe(why);
    expect(got[1].first).toBe(`allReduce: ${aborted(1, why)}`);
    expect(got.map((r) => r.later)).toEqual([`allReduce: ${aborted(0, why)}`, `allReduce: ${aborted(1, why)}`]);
    expect(got.map((r) => r.sync)).toEqual([`recv failed on device: ${aborted(0, why)}`, 'ok']);
    expect(got.map((r) => r.sum)).toEqual([5, 5]);
  }, 4 * HANG_MS);
});

describe('a device that dies inside a collective', () => {
  for (const world of [2, 3]) {
    it(`${world} ranks, the last one's worker dies while the others wait in allReduce: they raise naming it (no wrong answer), their devices go on`, async () => {
      const last = world - 1;
      const lastThrew = signal(), issued = Array.from({ length: last }, signal);
      const seen: (({ read: string } & After) | undefined)[] = [];
      const err = await within(dist.spawn(async (rank) => {
        await dist.initProcessGroup({ worldSize: world, rank, initMethod: `inproc://dies-${world}`, timeout: 10_000 });
        const t = torch.ones([1000], { device: `gpu:${rank}` });
        await torch.gpu.synchronize(`gpu:${rank}`);
        try {
          if (rank === last) {
            // Once the others have queued their side (their first recv then waits for this device).
            await Promise.all(issued.map((s) => s.done));
            await new Promise((r) => setTimeout(r, 50));
            await torch.gpu._loseDevice(last, 'crash');
            await dist.allReduce(t);
            try {
              await t.values();
            } finally {
              lastThrew.fire();
            }
            return;
          }
          await allReduceTelling(t, issued[rank]);
          const read = await outcome(() => t.values(), `rank ${rank}'s read`);
          await lastThrew.done;
          seen[rank] = { read, ...(await afterFailure(rank)) };
        } finally {
          t.dispose();
        }
      }, { nprocs: world }).then(() => null, (e: Error) => e.message), 'spawn', 3 * HANG_MS);
      expect(err).toMatch(new RegExp(`^\\n\\n-- Process ${last} terminated with the following error:\\nDeviceLostError: gpu:${last} was lost \\(reason: worker died`));
      const gone = `the copy from gpu:${last} failed: gpu:${last}'s worker is gone (its port closed)`;
      for (let rank = 0; rank < last; rank++) {
        const r = seen[rank]!;
        // The rank after the dead one in the ring gets its bytes; the next ones get its failure passed on.
        let want = gone;
        for (let from = 0; from < rank; from++) want = `the copy from gpu:${from} failed: ${want}`;
        expect(r.read, `rank ${rank}`).toBe(`recv failed on device: ${want}`);
        expect(r.later, `rank ${rank}`).toMatch(new RegExp(`^allReduce: ${esc(aborted(rank, `rank ${last} failed: gpu:${last} was lost (reason: worker died`))}`));
        expect(r.sync, `rank ${rank}`).toBe('ok');
        expect(r.sum).toBe(5);
      }
      // The dead device comes back for other work.
      await within(torch.gpu.init(), 'torch.gpu.init()');
      const x = torch.ones([5], { device: `gpu:${last}` }), s = x.sum();
      expect(await within(s.item(), 'a computation on the device brought back')).toBe(5);
      x.dispose();
      s.dispose();
    }, 4 * HANG_MS);
  }
});
