/**
 * The sync point with the shared reply slot (Node has SharedArrayBuffer and Atomics.waitAsync):
 * small answers come back through the slot, larger ones and errors by message. The body is in
 * sync-point.cases.ts; sync-point-messages.test.ts runs it with messages only.
 */
import { syncPointSuite } from './sync-point.cases.js';

delete process.env.WEBTORCH_REPLY_SLOT;
syncPointSuite('slot');
