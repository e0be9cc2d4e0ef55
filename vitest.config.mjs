// Test files run one at a time: the GPU suites share one software adapter on a 2-core machine,
// and each file starts its own device workers.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // The matmul variants each get the goldens in test/backend/matmul-variants.test.ts; elsewhere the default rule picks.
    env: { XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? '/tmp' },
  },
});
