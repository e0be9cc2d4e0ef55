/**
 * The mixed-precision suite (amp.test.ts) again with float16's `shader-f16` path switched off
 * (`WEBTORCH_F16=storage`, ts/worker/half.ts), so both float16 paths are covered on an adapter
 * that has `shader-f16` (lavapipe): the variable is read when each GPU worker starts.
 */
import { afterAll } from 'vitest';

process.env.WEBTORCH_F16 = 'storage';
await import('./amp.test.js');

afterAll(() => {
  delete process.env.WEBTORCH_F16;
});
