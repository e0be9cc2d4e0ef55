// A module resolution hook for one purpose: tfjs-core registers its gradients (what training needs)
// only from its ES-module build, whose relative imports omit the `.js` extension, which Node's
// loader rejects. This hook adds `.js` (or `/index.js`) to such imports inside that package.
// peers.mjs registers it with `module.register` before importing `register_all_gradients.js`.
import { existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Node's resolve hook: completes extensionless relative imports made from tfjs-core's dist/. */
export async function resolve(specifier, context, next) {
  if (specifier.startsWith('.') && context.parentURL?.includes('/@tensorflow/tfjs-core/dist/') && !/\.(m?js|json)$/.test(specifier)) {
    const base = new URL(specifier, context.parentURL);
    const path = fileURLToPath(base);
    if (existsSync(`${path}.js`)) return next(`${base.href}.js`, context);
    if (existsSync(path) && statSync(path).isDirectory()) return next(`${base.href}/index.js`, context);
  }
  return next(specifier, context);
}
