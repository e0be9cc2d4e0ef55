// Prints a results JSON of bench/run.mjs as a Markdown table, with the lines naming the date, the
// devices and the command, for BENCHMARKS.md:   node bench/markdown.mjs bench/results/X.json
import { readFileSync } from 'node:fs';
import { fmt, markdownTable } from './lib/report.mjs';

const file = process.argv[2];
if (!file) { console.error('usage: node bench/markdown.mjs RESULTS.json'); process.exit(2); }
const res = JSON.parse(readFileSync(file, 'utf8'));
const t = res.peers?.torch ?? {};
const out = [
  `- date: ${res.date}${res.quick ? ' (quick sizes)' : ''}; command: \`${res.command}\`${res.webtorch ? `; webtorch ${res.webtorch.commit}${res.webtorch.modifiedSources ? ` + ${res.webtorch.modifiedSources} modified source files` : ''}` : ''}`,
  ...Object.entries(res.devices ?? {}).map(([d, i]) => `- ${d}: ${d === 'gpu' ? `\`${i.webtorch}\` (webtorch gpu:0; tfjs-webgpu ${res.peers.tfjs.version} and raw Dawn on the same adapter)` : `${i.name} (tfjs-wasm ${res.peers.tfjs.version}, ${i.tfjs})`}`),
  `- PyTorch: ${t.version ? `${t.version} on ${t.deviceName ?? t.device}, ${t.threads} thread(s)${t.blas ? `, BLAS ${t.blas}` : ''}${t.tf32 === false ? ', TF32 off' : ''}` : t.skipped ?? t.error ?? 'not run'}`,
  ...(res.host?.loadavgAtStart ? [`- host: ${res.host.cpus} cores, load average (1, 5, 15 min) ${res.host.loadavgAtStart.join(' / ')} at the start, ${res.host.loadavgAtEnd?.join(' / ')} at the end`] : []),
  `- geometric means of the ratios: ${Object.entries(res.summary ?? {}).map(([d, s]) => `${d}: ${Object.entries(s).map(([p, g]) => `${p} ${fmt(g)}×`).join(', ')}`).join('; ')}`,
  '',
  markdownTable(res),
];
console.log(out.join('\n'));
