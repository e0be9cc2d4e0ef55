// Builds the test app the way a user's Vite project would, with `webtorch` resolved to this
// repository's dist/ (a user's project finds it in node_modules).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  resolve: { alias: { webtorch: fileURLToPath(new URL('../../../dist/webtorch.js', import.meta.url)) } },
  // webtorch's device workers are ES modules that share chunks with the library.
  worker: { format: 'es' },
  build: { outDir: process.env.VITE_OUT_DIR ?? fileURLToPath(new URL('../../../build/browser-test/vite-app', import.meta.url)), emptyOutDir: true, target: 'es2022' },
  logLevel: 'warn',
});
