import { chromium } from 'playwright-core';
import { startServer } from '../../examples/web/server.mjs';
const page = process.argv[2], root = process.argv[3];
for (const isolated of [true, false]) {
  const s = await startServer({ isolated, ...(root ? { root } : {}) });
  const b = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--enable-unsafe-webgpu'] });
  const p = await b.newPage();
  p.on('console', (m) => console.log('console:', m.text()));
  p.on('pageerror', (e) => console.log('pageerror:', e));
  await p.goto(s.url + page);
  const r = await p.waitForFunction(() => window.__result, null, { timeout: 60000 }).then((h) => h.jsonValue()).catch((e) => String(e));
  console.log(isolated, JSON.stringify(r));
  await b.close(); await s.close();
}
