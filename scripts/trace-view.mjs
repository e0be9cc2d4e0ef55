// Writes a standalone HTML page that draws a Chrome trace (prof.exportChromeTrace) as a timeline:
// one row per process/thread track, ops and kernels as boxes, flow events as arrows from an op to
// its kernels. A small local view for where Perfetto (ui.perfetto.dev) cannot be reached; it reads
// only the events webtorch writes ('X', 's'/'f', 'M' names).
//
//   node scripts/trace-view.mjs trace.json trace.html [--from US] [--to US]
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { positionals, values } = parseArgs({ allowPositionals: true, options: { from: { type: 'string' }, to: { type: 'string' } } });
const [input, output = 'trace.html'] = positionals;
const events = JSON.parse(readFileSync(input, 'utf8')).traceEvents;
const page = `<!doctype html><meta charset="utf-8"><title>webtorch trace</title>
<style>body{font:12px sans-serif;margin:8px}svg text{font:11px sans-serif}</style>
<h3>${input.split('/').pop()}</h3><svg id="v"></svg>
<script>
const ev = ${JSON.stringify(events)};
const from = ${values.from ?? 'null'}, to = ${values.to ?? 'null'};
const names = {}, threads = {};
for (const e of ev) if (e.ph === 'M' && e.name === 'process_name') names[e.pid] = e.args.name;
for (const e of ev) if (e.ph === 'M' && e.name === 'thread_name') threads[e.pid + '/' + e.tid] = e.args.name;
const inRange = (e) => (from === null || e.ts + (e.dur || 0) >= from) && (to === null || e.ts <= to);
const boxes = ev.filter((e) => e.ph === 'X' && inRange(e));
const keys = [...new Set(boxes.map((e) => e.pid + '/' + e.tid))].sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
// Nesting depth on each track (ops inside ranges inside steps).
const depth = new Map(), rows = {};
for (const k of keys) {
  const open = [];
  for (const e of boxes.filter((b) => b.pid + '/' + b.tid === k).sort((a, b) => a.ts - b.ts || b.dur - a.dur)) {
    while (open.length && open[open.length - 1] <= e.ts) open.pop();
    depth.set(e, open.length);
    open.push(e.ts + e.dur);
  }
  rows[k] = 1 + Math.max(0, ...boxes.filter((b) => b.pid + '/' + b.tid === k).map((b) => depth.get(b)));
}
const t0 = from ?? Math.min(...boxes.map((e) => e.ts)), t1 = to ?? Math.max(...boxes.map((e) => e.ts + e.dur));
const W = 1600, L = 170, RH = 16, sx = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - 10);
let y = 20, rowTop = {}, out = [];
for (const k of keys) {
  const [pid, tid] = k.split('/');
  rowTop[k] = y;
  out.push('<text x="4" y="' + (y + 12) + '">' + names[pid] + ' · ' + (threads[k] || 'tid ' + tid) + '</text>');
  out.push('<line x1="0" x2="' + W + '" y1="' + (y - 3) + '" y2="' + (y - 3) + '" stroke="#ccc"/>');
  y += rows[k] * RH + 10;
}
const color = (e) => e.cat === 'kernel' ? '#e8743b' : e.cat === 'user_annotation' ? '#6a9fd8' : '#8cc36b';
for (const e of boxes) {
  const k = e.pid + '/' + e.tid, x = sx(e.ts), w = Math.max(1, sx(e.ts + e.dur) - x), yy = rowTop[k] + depth.get(e) * RH;
  out.push('<g><title>' + e.name + ' ' + e.dur.toFixed(1) + ' us</title><rect x="' + x + '" y="' + yy + '" width="' + w + '" height="' + (RH - 2) + '" fill="' + color(e) + '" stroke="#fff" stroke-width="0.5"/>' +
    (w > 40 ? '<text x="' + (x + 2) + '" y="' + (yy + 11) + '" clip-path="inset(0)">' + e.name.slice(0, Math.floor(w / 6)) + '</text>' : '') + '</g>');
}
const starts = new Map(ev.filter((e) => e.ph === 's').map((e) => [e.id, e]));
for (const f of ev.filter((e) => e.ph === 'f' && inRange(e))) {
  const s = starts.get(f.id);
  if (!s || !inRange(s)) continue;
  out.push('<line x1="' + sx(s.ts) + '" y1="' + (rowTop[s.pid + '/' + s.tid] + 7) + '" x2="' + sx(f.ts) + '" y2="' + (rowTop[f.pid + '/' + f.tid] + 7) + '" stroke="#444" stroke-width="0.6" opacity="0.5"/>');
}
const svg = document.getElementById('v');
svg.setAttribute('width', W);
svg.setAttribute('height', y + 10);
svg.innerHTML = out.join('');
</script>`;
writeFileSync(output, page);
console.log(`wrote ${output}: ${events.length} events`);
