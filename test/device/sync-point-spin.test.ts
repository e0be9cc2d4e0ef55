/**
 * The sync point with the caller spinning on the reply slot (`WEBTORCH_SPIN_US`, set before the
 * devices start; off by default, ts/worker/channel.ts `spinTime`): the slot suite's checks hold,
 * and small answers of a GPU device are taken while spinning (the cpu device's reads of its
 * shared memory need no answer).
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { syncPointSuite } from './sync-point.cases.js';

process.env.WEBTORCH_SPIN_US = '20000';
delete process.env.WEBTORCH_REPLY_SLOT;
afterAll(() => {
  delete process.env.WEBTORCH_SPIN_US;
});
syncPointSuite('slot');

describe('spinning on the reply slot', () => {
  it('takes the answers of small reads while it spins, and they are right', async () => {
    for (const d of ['gpu:0']) {
      const x = torch.arange(8, undefined, 1, { device: d, dtype: 'float32' });
      const before = torch._replyCounts(d).spun;
      for (let i = 0; i < 10; i++) {
        const y = x.mul(i);
        expect(Array.from(await y.data()), d).toEqual(Array.from({ length: 8 }, (_, k) => k * i));
        y.dispose();
      }
      expect(torch._replyCounts(d).spun - before, d).toBeGreaterThanOrEqual(5);
      x.dispose();
    }
  });
});
