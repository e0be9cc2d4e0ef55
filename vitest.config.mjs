// Test files run one at a time: the GPU suites share one software adapter on a 2-core machine,
// and each file starts its own device workers.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // WEBTORCH_MATMUL=3: the vectorised matmul wherever it applies, so the goldens' small shapes exercise it too.
    env: { XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? '/tmp', WEBTORCH_MATMUL: '3' },
  },
});
