/**
 * The sync point without the shared reply slot (`WEBTORCH_REPLY_SLOT=0`, set before the devices
 * start): every answer comes back by message, as in a browser page that is not cross-origin
 * isolated. The body is in sync-point.cases.ts.
 */
import { afterAll } from 'vitest';
import { syncPointSuite } from './sync-point.cases.js';

process.env.WEBTORCH_REPLY_SLOT = '0';
afterAll(() => {
  delete process.env.WEBTORCH_REPLY_SLOT;
});
syncPointSuite('message');
