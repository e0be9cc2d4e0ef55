// A small static file server for the browser tests and `npm run web`: serves the repository
// root on localhost, with or without the cross-origin isolation headers (COOP/COEP), which
// decide whether a page gets SharedArrayBuffer (webtorch's pinned memory and the cpu device's
// helper threads). node:http only, so it needs no dependency.
//
// Run: npm run web [-- --port 8080] [--no-isolation]  (serves the app at /examples/web/)
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.json': 'application/json', '.wasm': 'application/wasm', '.map': 'application/json',
  '.png': 'image/png', '.svg': 'image/svg+xml', '.u8': 'application/octet-stream', '.ico': 'image/x-icon',
};

/** The repository root (two folders up from this file). */
export const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));

/**
 * Starts a server for the files under `root` on 127.0.0.1 (port 0: any free port). With
 * `isolated`, every response carries `Cross-Origin-Opener-Policy: same-origin` and
 * `Cross-Origin-Embedder-Policy: require-corp`, so pages are cross-origin isolated.
 * A path ending in `/` serves its index.html; a path in `missing` answers 404 (the tests'
 * way to lose a file). Resolves with the base URL and a `close()`.
 * @param {{ root?: string, isolated?: boolean, port?: number, host?: string, missing?: string[] }} [opts]
 * @returns {Promise<{ url: string, close(): Promise<void> }>}
 */
export async function startServer({ root = ROOT, isolated = true, port = 0, host = '127.0.0.1', missing = [] } = {}) {
  const server = createServer(async (req, res) => {
    const headers = { 'Cache-Control': 'no-store' };
    if (isolated) {
      headers['Cross-Origin-Opener-Policy'] = 'same-origin';
      headers['Cross-Origin-Embedder-Policy'] = 'require-corp';
      headers['Cross-Origin-Resource-Policy'] = 'same-origin';
    }
    try {
      const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
      let file = normalize(join(root, path));
      if (!file.startsWith(root) || missing.includes(path)) throw Object.assign(new Error('outside the root'), { code: 'ENOENT' });
      if ((await stat(file)).isDirectory()) file = join(file, 'index.html');
      const body = await readFile(file);
      res.writeHead(200, { ...headers, 'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream' });
      res.end(body);
    } catch (e) {
      const missing = e?.code === 'ENOENT' || e?.code === 'EISDIR' || e?.code === 'ENOTDIR';
      res.writeHead(missing ? 404 : 500, { ...headers, 'Content-Type': 'text/plain' });
      res.end(missing ? 'not found' : String(e));
    }
  });
  await new Promise((ok, fail) => server.once('error', fail).listen(port, host, ok));
  const { port: bound } = server.address();
  return {
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${bound}`,
    close: () => new Promise((ok) => { server.closeAllConnections?.(); server.close(() => ok()); }),
  };
}

// Run directly: the dev server of the web app.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { parseArgs } = await import('node:util');
  const { values } = parseArgs({ options: { port: { type: 'string', default: process.env.PORT ?? '8080' }, host: { type: 'string', default: '127.0.0.1' }, 'no-isolation': { type: 'boolean', default: false } } });
  const isolated = !values['no-isolation'];
  const { url } = await startServer({ isolated, port: Number(values.port), host: values.host });
  console.log(`webtorch web app: ${url}/examples/web/  (${isolated ? 'cross-origin isolated: COOP/COEP sent' : 'not isolated: no COOP/COEP'}; Ctrl-C stops)`);
}
