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
    // A software adapter (lavapipe, on machines with no GPU) is not a GPU to isAvailable()/tryGpu()
    // unless allowed: the GPU suites run on it, so they opt in.
    env: { XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? '/tmp', WEBTORCH_ALLOW_SOFTWARE_GPU: process.env.WEBTORCH_ALLOW_SOFTWARE_GPU ?? '1' },
  },
});
