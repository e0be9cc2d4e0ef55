#!/usr/bin/env node
/**
 * Fails when the package's modules import each other in a cycle. It reads the JavaScript that
 * `tsc` emitted (build/js/ts), where type-only imports are gone, so what it sees are the imports
 * that run: each cycle is printed as a strongly connected component of the import graph, with
 * one path around it. Run after `npm run build:ts`; `npm test` runs it.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const base = join(root, 'build/js/ts');

function files(dir) {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.js') ? [p] : [];
  });
}

const IMPORT = /^\s*(?:import|export)\s+(?:[^'";]*?\s+from\s+)?['"](\.{1,2}\/[^'"]+)['"]/gm;
const graph = new Map();
for (const f of files(base)) {
  const src = readFileSync(f, 'utf8');
  const deps = new Set();
  for (const m of src.matchAll(IMPORT)) deps.add(resolve(dirname(f), m[1]));
  graph.set(f, [...deps].filter((d) => d !== f));
}

// Tarjan's strongly connected components.
let index = 0;
const idx = new Map(), low = new Map(), stack = [], on = new Set(), sccs = [];
function visit(v) {
  idx.set(v, index);
  low.set(v, index++);
  stack.push(v);
  on.add(v);
  for (const w of graph.get(v) ?? []) {
    if (!graph.has(w)) continue;
    if (!idx.has(w)) {
      visit(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
  }
  if (low.get(v) === idx.get(v)) {
    const c = [];
    let w;
    do {
      w = stack.pop();
      on.delete(w);
      c.push(w);
    } while (w !== v);
    if (c.length > 1) sccs.push(c);
  }
}
for (const v of graph.keys()) if (!idx.has(v)) visit(v);

const name = (f) => relative(base, f).replace(/\.js$/, '.ts');
/** One cycle through `start` inside component `c` (breadth-first back to it). */
function cycle(c, start) {
  const inC = new Set(c), prev = new Map([[start, null]]), q = [start];
  while (q.length) {
    const v = q.shift();
    for (const w of graph.get(v)) {
      if (!inC.has(w)) continue;
      if (w === start) {
        const path = [v];
        for (let u = prev.get(v); u; u = prev.get(u)) path.unshift(u);
        return [...path, start].map(name).join(' -> ');
      }
      if (!prev.has(w)) {
        prev.set(w, v);
        q.push(w);
      }
    }
  }
  return '';
}

if (sccs.length === 0) {
  console.log(`check-cycles: ${graph.size} modules, no import cycle`);
} else {
  console.error(`check-cycles: ${sccs.length} import cycle${sccs.length > 1 ? 's' : ''} among ${graph.size} modules (imports that run, not type-only ones):`);
  for (const c of sccs) {
    console.error(`\n  ${c.length} modules: ${c.map(name).sort().join(', ')}`);
    console.error(`  e.g. ${cycle(c, c[c.length - 1])}`);
  }
  process.exit(1);
}
