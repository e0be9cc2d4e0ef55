/**
 * The seed's mixed-precision example (amp.test.ts) again with float16's `shader-f16` path switched
 * off (`WEBTORCH_F16=storage`, ts/worker/half.ts): both float16 paths on an adapter that has it.
 */
import { afterAll } from 'vitest';

process.env.WEBTORCH_F16 = 'storage';
await import('./amp.test.js');

afterAll(() => {
  delete process.env.WEBTORCH_F16;
});
