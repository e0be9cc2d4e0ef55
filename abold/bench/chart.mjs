// Renders a results JSON of bench/run.mjs as an SVG bar chart, hand-written: one group of bars per
// row, one bar per peer, each webtorch's speed over the peer's on a log scale around 1× (right of
// the line: webtorch is faster). webtorch's absolute figure and unit stand at the right.
//   node bench/chart.mjs bench/results/X.json [-o X.svg]     (default: next to the JSON)
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { fmt, PEERS } from './lib/report.mjs';

const COLORS = { tfjs: '#e8710a', torch: '#c2185b', dawn: '#607d8b' };
const NAMES = { tfjs: 'TensorFlow.js (WebGPU on gpu rows, WASM on cpu rows)', torch: 'PyTorch', dawn: 'raw Dawn (the floor)' };
const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * The chart of one results object, as an SVG document.
 * @param {any} res  what bench/run.mjs writes with --json
 * @param {{maxRatio?: number}} [o]  the scale runs from 1/maxRatio to maxRatio (default 64)
 * @returns {string}
 */
export function renderChart(res, o = {}) {
  const max = Math.log2(o.maxRatio ?? 64);
  const labelW = 300, plotW = 520, valueW = 150, barH = 10, pad = 16;
  const W = labelW + plotW + valueW + 2 * pad;
  const x0 = pad + labelW, mid = x0 + plotW / 2;
  const xOf = (ratio) => mid + (Math.max(-max, Math.min(max, Math.log2(ratio))) / max) * (plotW / 2);
  const out = [];
  let y = pad;
  const text = (x, yy, s, extra = '') => out.push(`<text x="${x}" y="${yy}" ${extra}>${esc(s)}</text>`);

  text(pad, (y += 14), `webtorch against its peers: ${res.date?.slice(0, 10) ?? ''}${res.quick ? ' (quick)' : ''}`, 'font-size="15" font-weight="bold"');
  for (const [d, info] of Object.entries(res.devices ?? {})) text(pad, (y += 16), `${d}: ${info.webtorch && d === 'gpu' ? info.webtorch : info.name}`, 'fill="#444"');
  const t = res.peers?.torch;
  text(pad, (y += 16), `PyTorch: ${t?.version ? `${t.version} on ${t.deviceName ?? t.device}${t.threads ? `, ${t.threads} thread(s)` : ''}${t.blas ? `, BLAS ${t.blas}` : ''}` : t?.skipped ?? t?.error ?? 'not run'}`, 'fill="#444"');
  text(pad, (y += 16), `${res.command ?? ''}${res.webtorch ? `   (webtorch ${res.webtorch.commit}${res.webtorch.modifiedSources ? ` + ${res.webtorch.modifiedSources} modified files` : ''})` : ''}`, 'fill="#444" font-family="DejaVu Sans Mono, monospace" font-size="10"');
  y += 12;
  // legend
  let lx = pad;
  for (const p of PEERS) {
    out.push(`<rect x="${lx}" y="${y}" width="12" height="12" fill="${COLORS[p]}"/>`);
    text(lx + 16, y + 10, NAMES[p]);
    lx += 16 + NAMES[p].length * 6.6 + 18;
  }
  y += 26;
  const axisTop = y;
  let device = null;
  for (const r of res.rows ?? []) {
    if (r.device !== device) {
      device = r.device;
      text(pad, (y += 16), `${device} rows`, 'font-weight="bold"');
      y += 6;
    }
    const peers = PEERS.filter((p) => r.peers?.[p]);
    const h = Math.max(1, peers.length) * (barH + 2) + 8;
    text(pad + labelW - 8, y + h / 2 + 3, `${r.label}  ${r.size}`, 'text-anchor="end"');
    peers.forEach((p, i) => {
      const by = y + 4 + i * (barH + 2), ratio = r.ratios?.[p];
      if (ratio === undefined) {
        const why = r.webtorch?.error ? 'webtorch error' : r.peers[p]?.error ? `${p} error` : `${p} n/a`;
        text(mid + 4, by + barH - 1, why, `font-size="9" fill="${COLORS[p]}"`);
        return;
      }
      const xr = xOf(ratio), left = Math.min(mid, xr), wdt = Math.max(1, Math.abs(xr - mid));
      out.push(`<rect x="${left.toFixed(1)}" y="${by}" width="${wdt.toFixed(1)}" height="${barH}" fill="${COLORS[p]}"><title>${esc(`${p}: ${fmt(r.peers[p].value)} ${r.unit}; webtorch ${fmt(ratio)}× its speed`)}</title></rect>`);
      const label = `${fmt(ratio)}×`, room = label.length * 5.5 + 4;
      if (ratio >= 1 && xr + room > x0 + plotW) text((xr - 3).toFixed(1), by + barH - 1, label, 'font-size="9" fill="#fff" text-anchor="end"');
      else if (ratio >= 1) text((xr + 3).toFixed(1), by + barH - 1, label, 'font-size="9"');
      else if (xr - room < x0) text((xr + 3).toFixed(1), by + barH - 1, label, 'font-size="9" fill="#fff"');
      else text((xr - 3).toFixed(1), by + barH - 1, label, 'font-size="9" text-anchor="end"');
    });
    const v = r.webtorch?.error ? 'error' : `${fmt(r.webtorch?.value)} ${r.unit}`;
    text(x0 + plotW + 10, y + h / 2 + 3, v, 'fill="#1565c0"');
    out.push(`<line x1="${pad}" x2="${W - pad}" y1="${y + h}" y2="${y + h}" stroke="#eee"/>`);
    y += h;
  }
  // the scale: ticks at powers of 2, 1× in bold
  for (let e = -max; e <= max; e += 1) {
    const x = xOf(2 ** e);
    out.unshift(`<line x1="${x}" x2="${x}" y1="${axisTop}" y2="${y}" stroke="${e === 0 ? '#000' : '#ddd'}" stroke-width="${e === 0 ? 1.5 : 1}"/>`);
    if (e % 2 === 0) text(x, y + 14, e >= 0 ? `${2 ** e}×` : `1/${2 ** -e}`, 'text-anchor="middle" font-size="10" fill="#666"');
  }
  y += 32;
  text(mid, y, '← peer faster      webtorch speed / peer speed (log scale)      webtorch faster →', 'text-anchor="middle" font-size="10" fill="#666"');
  text(x0 + plotW + 10, axisTop - 6, 'webtorch', 'fill="#1565c0" font-size="10"');
  for (const p of res.pending ?? []) text(pad, (y += 15), `not timed: ${p.label} (${p.size}): ${p.status}`, 'fill="#888" font-size="11"');
  y += pad;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${y}" viewBox="0 0 ${W} ${y}" font-family="DejaVu Sans, Arial, sans-serif" font-size="11">
<rect width="100%" height="100%" fill="#fff"/>
${out.join('\n')}
</svg>
`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [file, flag, target] = process.argv.slice(2);
  if (!file) { console.error('usage: node bench/chart.mjs RESULTS.json [-o OUT.svg]'); process.exit(2); }
  const svgPath = flag === '-o' && target ? target : file.replace(/\.json$/i, '') + '.svg';
  writeFileSync(svgPath, renderChart(JSON.parse(readFileSync(file, 'utf8'))));
  console.log(`wrote ${svgPath}`);
}
