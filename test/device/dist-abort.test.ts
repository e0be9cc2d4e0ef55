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
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

const { distributed: dist } = torch;
logicalGpuSuite(3, 'failed-collective tests');

const HANG_MS = 20_000;

/** `p`, or a rejection naming `what` once `HANG_MS` has passed. */
async function within<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hang = new Promise<never>((_, rej) => {
    timer = setTimeout(() => rej(new Error(`HANG: ${what} did not settle within ${HANG_MS} ms`)), HANG_MS);
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

/** A later collective, a device sync, then `ones(5).sum()` on the rank's device. */
async function afterFailure(rank: number): Promise<After> {
  const t = torch.ones([2], { device: `gpu:${rank}` });
  const later = await outcome(() => dist.allReduce(t), `rank ${rank}'s later allReduce`);
  t.dispose();
  const sync = await outcome(() => torch.gpu.synchronize(`gpu:${rank}`), `rank ${rank}'s sync after the failure`);
  const x = torch.ones([5], { device: `gpu:${rank}` }), s = x.sum();
  const sum = await within(s.item(), `rank ${rank}'s computation after the failure`);
  x.dispose();
  s.dispose();
  return { later, sync, sum };
}

const aborted = (rank: number, reason: string) => `NCCL communicator was aborted on rank ${rank}. Original reason for failure was: ${reason}`;
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

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
      }, { nprocs: world }), 'spawn');
      const why = `allReduce (collective 1): rank ${last} called allReduce([3], float32, sum) but rank 0 called allReduce([2, 2], float32, sum)`;
      for (const [rank, r] of got.entries()) {
        expect(r.first, `rank ${rank}`).toBe(why);
        expect(r.later, `rank ${rank}`).toBe(`allReduce: ${aborted(rank, why)}`);
        // The ranks that issued their side had a recv queued for bytes that never come: released with this error.
        expect(r.sync, `rank ${rank}`).toBe(rank === last ? 'ok' : `recv failed on device: ${aborted(rank, why)}`);
        expect(r.sum).toBe(5);
      }
    }, 60_000);
  }

  it('2 ranks, same shape, different dtype: both raise naming both dtypes', async () => {
    const got = await within(dist.spawn(async (rank) => {
      await dist.initProcessGroup({ worldSize: 2, rank, initMethod: 'inproc://dtype', timeout: 10_000 });
      const t = torch.ones([4], { device: `gpu:${rank}`, dtype: rank === 0 ? 'float32' : 'int32' });
      const first = await outcome(() => dist.allReduce(t), `rank ${rank}'s allReduce`);
      t.dispose();
      return { first, ...(await afterFailure(rank)) };
    }, { nprocs: 2 }), 'spawn');
    const why = 'allReduce (collective 1): rank 1 called allReduce([4], int32, sum) but rank 0 called allReduce([4], float32, sum)';
    expect(got.map((r) => r.first)).toEqual([why, why]);
    expect(got.map((r) => r.sync)).toEqual([`recv failed on device: ${aborted(0, why)}`, 'ok']);
    expect(got.map((r) => r.sum)).toEqual([5, 5]);
  }, 60_000);
});

describe('a rank that fails between collectives', () => {
  for (const world of [2, 3]) {
    it(`${world} ranks, the last throws after collective 1 while the others are in collective 2: they raise naming it, their devices go on`, async () => {
      const last = world - 1;
      const seen: (({ second: string; ok: number[] } & After) | undefined)[] = [];
      const err = await within(dist.spawn(async (rank) => {
        await dist.initProcessGroup({ worldSize: world, rank, initMethod: `inproc://throws-${world}`, timeout: 10_000 });
        const t = torch.ones([5], { device: `gpu:${rank}` });
        try {
          await dist.allReduce(t);
          const ok = (await t.values()) as number[];
          if (rank === last) {
            // Thrown once the others have issued their side of collective 2.
            await new Promise((r) => setTimeout(r, 200));
            throw new Error('out of data');
          }
          const second = await outcome(() => dist.allReduce(t), `rank ${rank}'s allReduce 2`);
          seen[rank] = { second, ok, ...(await afterFailure(rank)) };
        } finally {
          t.dispose();
        }
      }, { nprocs: world }).then(() => null, (e: Error) => e.message), 'spawn');
      expect(err).toMatch(new RegExp(`^\\n\\n-- Process ${last} terminated with the following error:\\nError: out of data`));
      const why = `rank ${last} failed: out of data`;
      for (let rank = 0; rank < last; rank++) {
        const r = seen[rank]!;
        expect(r.ok).toEqual(Array(5).fill(world));
        expect(r.second, `rank ${rank}`).toBe(why);
        expect(r.later, `rank ${rank}`).toBe(`allReduce: ${aborted(rank, why)}`);
        expect(r.sync, `rank ${rank}`).toBe(`recv failed on device: ${aborted(rank, why)}`);
        expect(r.sum).toBe(5);
      }
    }, 60_000);
  }

  it('2 ranks, rank 1 calls allReduce after rank 0\'s timed out: both raise, neither device is held', async () => {
    const got = await within(dist.spawn(async (rank) => {
      await dist.initProcessGroup({ worldSize: 2, rank, initMethod: 'inproc://late', timeout: 300 });
      const t = torch.ones([4], { device: `gpu:${rank}` });
      if (rank === 1) await new Promise((r) => setTimeout(r, 800));
      const first = await outcome(() => dist.allReduce(t), `rank ${rank}'s allReduce`);
      t.dispose();
      return { first, ...(await afterFailure(rank)) };
    }, { nprocs: 2 }), 'spawn');
    const why = 'allReduce (collective 1) timed out after 300 ms: rank 1 never called it (called by rank 0)';
    expect(got[0].first).toBe(why);
    expect(got[1].first).toBe(`allReduce: ${aborted(1, why)}`);
    expect(got.map((r) => r.later)).toEqual([`allReduce: ${aborted(0, why)}`, `allReduce: ${aborted(1, why)}`]);
    expect(got.map((r) => r.sync)).toEqual([`recv failed on device: ${aborted(0, why)}`, 'ok']);
    expect(got.map((r) => r.sum)).toEqual([5, 5]);
  }, 60_000);
});
