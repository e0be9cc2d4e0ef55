// Text table in the layout of torch.cuda.memory_summary().
//
// Rules: 75-character lines framed by `|`, `=` rules around the title and the
// header, a `-` rule before each section. Every value cell is 10 characters.
// Byte cells print an integer in the largest unit (B, KiB, MiB, ...) reached
// while a *reference* value stays >= 768 of the current unit; counts likewise
// with K and M past 750 units. The reference for every row of a section is the
// section's first (all pools) row in the same column, so the pool rows share
// its unit; divisions floor, as Python's `//` does.

import type { MemoryStats, StatName } from "./stats.js";

const WIDTH = 75;
const SIZE_UNITS = ["B  ", "KiB", "MiB", "GiB", "TiB", "PiB"];
const COUNT_UNITS = [" ", "K", "M"];

/** One byte cell (10 characters), unit chosen from `reference`. */
export function formatSizeCell(value: number, reference: number): string {
  let unit = 0;
  while (unit + 1 < SIZE_UNITS.length && reference >= 768 * 1024) {
    unit++;
    value = Math.floor(value / 1024);
    reference /= 1024;
  }
  return `${String(value).padStart(6)} ${SIZE_UNITS[unit]}`;
}

/** One count cell (10 characters), suffix chosen from `reference`. */
export function formatCountCell(value: number, reference: number): string {
  let unit = 0;
  while (unit + 1 < COUNT_UNITS.length && reference >= 750 * 1000) {
    unit++;
    value = Math.floor(value / 1000);
    reference /= 1000;
  }
  return `${String(value).padStart(7)} ${COUNT_UNITS[unit]} `;
}

type Cell = (value: number, reference: number) => string;

const SECTIONS: [StatName, string, Cell][] = [
  ["allocated_bytes", "Allocated memory", formatSizeCell],
  ["active_bytes", "Active memory", formatSizeCell],
  ["requested_bytes", "Requested memory", formatSizeCell],
  ["reserved_bytes", "GPU reserved memory", formatSizeCell],
  ["inactive_split_bytes", "Non-releasable memory", formatSizeCell],
  ["allocation", "Allocations", formatCountCell],
  ["active", "Active allocs", formatCountCell],
  ["segment", "GPU reserved segments", formatCountCell],
  ["inactive_split", "Non-releasable allocs", formatCountCell],
];

const METRIC_ORDER = ["current", "peak", "allocated", "freed"] as const;

function row(name: string, values: number[], references: number[], cell: Cell): string {
  const cells = values.map((v, i) => cell(v, references[i]!));
  return ` ${name.padEnd(21)} | ${cells.join(" | ")} `;
}

/**
 * Renders `stats` as PyTorch's memory summary table, titled
 * "webtorch memory summary, device <deviceLabel>". With `abbreviated` the
 * per-pool rows are left out.
 */
export function memorySummary(stats: MemoryStats, deviceLabel: string, abbreviated = false): string {
  const s = stats as Record<string, number>;
  const lines: string[] = [];
  lines.push("=".repeat(WIDTH));
  lines.push(`${" ".repeat(18)}webtorch memory summary, device ${deviceLabel}`.padEnd(WIDTH));
  lines.push("-".repeat(WIDTH));
  const left = `OOMs: ${String(s["num_ooms"]).padEnd(12)}`.padStart(35);
  const right = `device alloc retries: ${String(s["num_alloc_retries"]).padEnd(8)}  `.padStart(37);
  lines.push(`${left} | ${right}`);
  lines.push("=".repeat(WIDTH));
  lines.push("        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ");
  for (const [key, title, cell] of SECTIONS) {
    lines.push("-".repeat(WIDTH));
    const rows: [string, string][] = [["all", title]];
    if (!abbreviated) rows.push(["large_pool", "      from large pool"], ["small_pool", "      from small pool"]);
    const references = METRIC_ORDER.map((m) => s[`${key}.all.${m}`]!);
    for (const [type, name] of rows) {
      const values = METRIC_ORDER.map((m) => s[`${key}.${type}.${m}`]!);
      lines.push(row(name, values, references, cell));
    }
  }
  for (const [key, title] of [
    ["oversize_allocations", "Oversize allocations"],
    ["oversize_segments", "Oversize GPU segments"],
  ] as const) {
    lines.push("-".repeat(WIDTH));
    const values = METRIC_ORDER.map((m) => s[`${key}.${m}`]!);
    lines.push(row(title, values, values, formatCountCell));
  }
  lines.push("=".repeat(WIDTH));
  return `|${lines.join("|\n|")}|\n`;
}
