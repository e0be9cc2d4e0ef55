// Bundles the compiled TypeScript (build/js) into dist/: the library, one worker entry per
// device kind, shared chunks beside them (workers and the .wasm are found relative to the
// chunk that loads them, so everything sits in one folder), the kernels' .wasm and the types.
import { nodeResolve } from '@rollup/plugin-node-resolve';
import { cpSync, mkdirSync } from 'node:fs';

const copyAssets = {
  name: 'copy-assets',
  writeBundle() {
    mkdirSync('dist', { recursive: true });
    cpSync('build/webtorch.wasm', 'dist/webtorch.wasm');
    cpSync('build/webtorch-shared.wasm', 'dist/webtorch-shared.wasm');
    cpSync('build/js', 'dist/types', { recursive: true, filter: (src) => !src.endsWith('.js') });
  },
};

export default {
  input: {
    webtorch: 'build/js/ts/index.js',
    'webtorch-cpu-worker': 'build/js/ts/worker/cpu-entry.js',
    'webtorch-gpu-worker': 'build/js/ts/worker/gpu-entry.js',
    'webtorch-cpu-helper': 'build/js/ts/worker/cpu-pool-helper.js',
  },
  output: {
    dir: 'dist', format: 'es', entryFileNames: '[name].js', chunkFileNames: '[name]-[hash].js', sourcemap: true,
    // The module that starts device workers gets a chunk of its own: bundlers find a worker only in
    // the literal `new Worker(new URL(...))`, and in a chunk with other code rollup renames the local
    // `Worker` (to `Worker$1`) wherever a bundled dependency reads the global one (fflate does).
    // platform.js, which the workers import too, is named as well: a manual chunk otherwise takes in
    // its dependencies, and a worker importing the chunk that starts it is a cycle Vite refuses.
    manualChunks: (id) => (id.endsWith('/ts/worker-scripts.js') ? 'worker-scripts' : id.endsWith('/ts/platform.js') ? 'platform' : undefined),
  },
  external: [/^node:/, 'webgpu'],
  plugins: [nodeResolve(), copyAssets],
};
