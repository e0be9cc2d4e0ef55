// Bundles the bench's browser page (bench/browser/page.mjs): TensorFlow.js's packages resolve from
// node_modules, and webtorch stays the plain dist/ that the server gives at /dist/webtorch.js.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = (p) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  root: here('.'),
  base: './',
  plugins: [{
    name: 'plain-dist',
    enforce: 'pre',
    resolveId: (source) => (/(^|\/)dist\/webtorch\.js$/.test(source) ? { id: '/dist/webtorch.js', external: true } : null),
  }],
  build: {
    outDir: process.env.VITE_OUT_DIR ?? here('../../build/bench-browser'),
    emptyOutDir: true,
    target: 'es2022',
    // tfjs-wasm's threaded build starts its workers from its factory's source text
    // (`Function.prototype.toString`), which a minifier breaks: names inside it point at the
    // bundle's renamed scope ("e is not defined" in every worker)
    minify: false,
    rollupOptions: { input: { index: here('./index.html') }, makeAbsoluteExternalsRelative: false },
  },
  logLevel: 'error',
});
