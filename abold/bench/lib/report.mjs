// Turns measured rows into the stdout table and the results JSON. A ratio is always webtorch's
// speed over the peer's (throughput / throughput, or the peer's time / webtorch's time), so > 1
// means webtorch is faster, whatever the unit.

/** The peers, in column order. */
export const PEERS = ['tfjs', 'torch', 'dawn'];

/**
 * webtorch's speed relative to a peer's, or null when either figure is missing.
 * @param {number | undefined} ours
 * @param {number | undefined} theirs
 * @param {boolean} higherIsBetter
 */
export function speedRatio(ours, theirs, higherIsBetter) {
  if (!(ours > 0) || !(theirs > 0)) return null;
  return higherIsBetter ? ours / theirs : theirs / ours;
}

/** Three significant digits, no exponent for ordinary magnitudes. */
export function fmt(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return '—';
  const a = Math.abs(v);
  if (a >= 1000) return Math.round(v).toString();
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  if (a >= 0.01) return v.toFixed(3);
  return v.toPrecision(2);
}

/** One measured figure as JSON: the value in the row's unit and how it was measured, or an error. */
export function figureOf(result, toUnit) {
  if (!result) return null;
  if (result.error || result.skipped) return result;
  return { value: toUnit(result.seconds), seconds: result.seconds, samples: result.samples, inner: result.inner };
}

/** Fills a row's `ratios` from its figures. */
export function addRatios(row) {
  row.ratios = {};
  for (const p of PEERS) {
    const r = speedRatio(row.webtorch?.value, row.peers[p]?.value, row.higherIsBetter);
    if (r !== null) row.ratios[p] = r;
  }
  return row;
}

const cell = (fig) => (!fig ? '—' : fig.error ? 'error' : fig.skipped ? 'n/a' : fmt(fig.value));

/**
 * The table: case, size, device, webtorch, then each peer as "figure (ratio×)", unit, notes;
 * errors are listed under it.
 * @param {any[]} rows  JSON rows
 * @param {any[]} pending  cases not timed yet
 * @returns {string}
 */
export function table(rows, pending) {
  const head = ['case', 'size', 'dev', 'webtorch', ...PEERS.map((p) => `${p} (×)`), 'unit', 'notes'];
  const lines = rows.map((r) => [
    r.label, r.size, r.device, cell(r.webtorch),
    ...PEERS.map((p) => {
      const f = r.peers[p];
      if (!f) return '—';
      const ratio = r.ratios[p];
      return ratio === undefined ? cell(f) : `${cell(f)} (${fmt(ratio)}×)`;
    }),
    r.unit,
    Object.entries(r.refs ?? {}).map(([k, f]) => `${k}: ${cell(f)}`).join('; '),
  ]);
  for (const p of pending) lines.push([p.label, p.size, 'all', 'not timed', '—', '—', '—', '', p.status]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => String(l[i]).length)));
  const fmtLine = (l) => l.map((c, i) => String(c).padEnd(widths[i])).join('  ').trimEnd();
  const out = [fmtLine(head), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(fmtLine)];
  const errors = [];
  for (const r of rows) {
    for (const [who, f] of [['webtorch', r.webtorch], ...Object.entries(r.peers), ...Object.entries(r.refs ?? {})]) {
      if (f?.error) errors.push(`  ${r.label} ${r.size} [${r.device}] ${who}: ${f.error}`);
    }
  }
  if (errors.length) out.push('', 'errors:', ...errors);
  return out.join('\n');
}

/**
 * Geometric mean of webtorch's ratios against one peer over some rows (null when none).
 * @param {any[]} rows
 * @param {string} peer
 */
export function geomean(rows, peer) {
  const rs = rows.map((r) => r.ratios?.[peer]).filter((x) => x > 0);
  return rs.length ? Math.exp(rs.reduce((s, x) => s + Math.log(x), 0) / rs.length) : null;
}

/**
 * The rows as a Markdown table (for BENCHMARKS.md): case, size, device, webtorch, each peer as
 * "figure (ratio×)", unit.
 * @param {any} res  a results JSON
 * @returns {string}
 */
export function markdownTable(res) {
  const peers = PEERS.filter((p) => res.rows.some((r) => r.peers[p]));
  const lines = [
    `| case | size | device | webtorch | ${peers.map((p) => `${p} (×)`).join(' | ')} | unit | notes |`,
    `|---|---|---|--:|${peers.map(() => '--:').join('|')}|---|---|`,
  ];
  for (const r of res.rows) {
    const peerCells = peers.map((p) => {
      const f = r.peers[p];
      if (!f) return '—';
      return r.ratios[p] === undefined ? cell(f) : `${cell(f)} (${fmt(r.ratios[p])}×)`;
    });
    const notes = Object.entries(r.refs ?? {}).map(([k, f]) => `${k}: ${cell(f)}`).join('; ');
    lines.push(`| ${r.label} | ${r.size} | ${r.device} | ${cell(r.webtorch)} | ${peerCells.join(' | ')} | ${r.unit} | ${notes} |`);
  }
  for (const p of res.pending ?? []) lines.push(`| ${p.label} | ${p.size} | all | not timed | ${peers.map(() => '—').join(' | ')} | | ${p.status} |`);
  return lines.join('\n').replace(/\*/g, '\\*');
}
