// Bundles the browser test pages that reuse Node-side test code (test/golden.ts): `vitest` and
// `node:fs` become small shims, and webtorch stays the plain dist/ the server gives at
// /dist/webtorch.js (so these pages test the unbundled package; test/browser/vite-app tests Vite's bundling).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = (p) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  root: here('.'),
  base: './',
  resolve: { alias: { vitest: here('./expect-shim.ts'), 'node:fs': here('./node-fs-shim.ts') } },
  plugins: [{
    name: 'plain-dist',
    enforce: 'pre',
    resolveId: (source) => (/(^|\/)dist\/webtorch\.js$/.test(source) ? { id: '/dist/webtorch.js', external: true } : null),
  }],
  build: {
    outDir: process.env.VITE_OUT_DIR ?? here('../../../build/browser-test/pages'),
    emptyOutDir: true,
    target: 'es2022',
    rollupOptions: { input: { goldens: here('./goldens.html') }, makeAbsoluteExternalsRelative: false },
  },
  // (test/golden.ts's loadGoldens, which the pages never call, names a file Vite cannot glob: a warning only.)
  logLevel: 'error',
});
