/**
 * `prof.keyAverages()` and its `table()`: PyTorch's `key_averages().table()`, with the same
 * columns, widths, number formats and footer, 'GPU' where PyTorch says 'CUDA'.
 *
 * An op's device time is its kernels' time (the kernels its commands ran as, linked by the
 * worker's op tags); a range's is the time of the kernels of the ops inside it. A kernel is a
 * row of its own too, with device time and no CPU time, as in PyTorch. When no kernel ran on a
 * GPU but some ran on the cpu device, the device columns are the cpu worker's and say 'Device'.
 */
import type { CallerEvent, MemoryEvent } from './recorder.js';
import type { KernelEvent } from './kernels.js';

/** One row of `keyAverages()`: the events of one name (and input shapes), times in microseconds. */
export interface EventAverage {
  key: string;
  count: number;
  /** Input shapes (with `groupByInputShape`), as PyTorch prints them; '' otherwise. */
  inputShapes: string;
  cpuTimeTotal: number;
  selfCpuTimeTotal: number;
  cpuTime: number;
  deviceTimeTotal: number;
  selfDeviceTimeTotal: number;
  deviceTime: number;
  cpuMemoryUsage: number;
  selfCpuMemoryUsage: number;
  deviceMemoryUsage: number;
  selfDeviceMemoryUsage: number;
  /** Aliases of the device fields, by PyTorch's names. */
  cudaTimeTotal: number;
  selfCudaTimeTotal: number;
}

/** `table()` options, PyTorch's `sort_by` and `row_limit` (plus `maxNameColumnWidth`, `maxShapesColumnWidth`). */
export interface TableOptions {
  sortBy?: string;
  rowLimit?: number;
  maxNameColumnWidth?: number;
  maxShapesColumnWidth?: number;
}

/** What `keyAverages` is computed from. */
export interface ProfileData {
  events: CallerEvent[];
  kernels: KernelEvent[];
  memory: MemoryEvent[];
  /** Whether CPU times are recorded (the `cpu` activity). */
  cpu: boolean;
  profileMemory: boolean;
}

const SORT_KEYS: Record<string, keyof EventAverage> = {
  cpu_time: 'cpuTime', cpu_time_total: 'cpuTimeTotal', self_cpu_time_total: 'selfCpuTimeTotal',
  gpu_time: 'deviceTime', gpu_time_total: 'deviceTimeTotal', self_gpu_time_total: 'selfDeviceTimeTotal',
  cuda_time: 'deviceTime', cuda_time_total: 'deviceTimeTotal', self_cuda_time_total: 'selfDeviceTimeTotal',
  device_time: 'deviceTime', device_time_total: 'deviceTimeTotal', self_device_time_total: 'selfDeviceTimeTotal',
  cpu_memory_usage: 'cpuMemoryUsage', self_cpu_memory_usage: 'selfCpuMemoryUsage',
  gpu_memory_usage: 'deviceMemoryUsage', self_gpu_memory_usage: 'selfDeviceMemoryUsage',
  cuda_memory_usage: 'deviceMemoryUsage', self_cuda_memory_usage: 'selfDeviceMemoryUsage',
  device_memory_usage: 'deviceMemoryUsage', self_device_memory_usage: 'selfDeviceMemoryUsage', count: 'count',
};
/** camelCase spellings of the sort keys are accepted too. */
const sortKey = (s: string): keyof EventAverage | undefined => SORT_KEYS[s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)];

/** PyTorch's `str()` of a list of shapes: `[[2, 3], [3]]`. */
const shapesText = (s: number[][] | null): string => (s ? `[${s.map((x) => `[${x.join(', ')}]`).join(', ')}]` : '[]');

/** `prof.keyAverages()`: the profile's events grouped by name (and input shapes), as PyTorch's `key_averages`. */
export class KeyAverages implements Iterable<EventAverage> {
  readonly rows: EventAverage[];
  /** Whether the device columns are GPU times ('GPU') or the cpu device's worker ('Device'); null when no kernel ran. */
  readonly deviceLabel: 'GPU' | 'Device' | null;
  private readonly selfCpuTotal: number;
  private readonly selfDeviceTotal: number;

  constructor(private readonly data: ProfileData, readonly groupByInputShape = false) {
    const gpuKernels = data.kernels.filter((k) => k.device.startsWith('gpu') && k.deviceMs !== null);
    const kernels = gpuKernels.length ? gpuKernels : data.kernels.filter((k) => k.deviceMs !== null);
    this.deviceLabel = gpuKernels.length ? 'GPU' : kernels.length ? 'Device' : null;
    // Per caller event: its kernels' ms, its children's totals, its memory with its children's.
    const byId = new Map(data.events.map((e) => [e.id, e]));
    const ownDevice = new Map<number, number>();
    for (const k of kernels) ownDevice.set(k.op, (ownDevice.get(k.op) ?? 0) + k.deviceMs!);
    const totalDevice = new Map(ownDevice), childCpu = new Map<number, number>();
    const memTotal = new Map<number, Record<string, number>>();
    // Children come after their parents: walk backwards to add each event into its parent.
    for (let i = data.events.length - 1; i >= 0; i--) {
      const e = data.events[i];
      const mem = memTotal.get(e.id) ?? {};
      for (const [d, b] of Object.entries(e.memory)) mem[d] = (mem[d] ?? 0) + b;
      memTotal.set(e.id, mem);
      const p = byId.get(e.parent);
      if (!p) continue;
      totalDevice.set(p.id, (totalDevice.get(p.id) ?? 0) + (totalDevice.get(e.id) ?? 0));
      childCpu.set(p.id, (childCpu.get(p.id) ?? 0) + (e.t1 - e.t0));
      const pm = memTotal.get(p.id) ?? {};
      for (const [d, b] of Object.entries(mem)) pm[d] = (pm[d] ?? 0) + b;
      memTotal.set(p.id, pm);
    }
    const groups = new Map<string, EventAverage>();
    const row = (key: string, shapes: string): EventAverage => {
      const k = groupByInputShape ? `${key}\u0000${shapes}` : key;
      let r = groups.get(k);
      if (!r) {
        r = {
          key, count: 0, inputShapes: groupByInputShape ? shapes : '', cpuTimeTotal: 0, selfCpuTimeTotal: 0, cpuTime: 0,
          deviceTimeTotal: 0, selfDeviceTimeTotal: 0, deviceTime: 0, cpuMemoryUsage: 0, selfCpuMemoryUsage: 0,
          deviceMemoryUsage: 0, selfDeviceMemoryUsage: 0, cudaTimeTotal: 0, selfCudaTimeTotal: 0,
        };
        groups.set(k, r);
      }
      return r;
    };
    const split = (m: Record<string, number>) => {
      let cpu = 0, dev = 0;
      for (const [d, b] of Object.entries(m)) if (d === 'cpu') cpu += b; else dev += b;
      return [cpu, dev];
    };
    for (const e of data.events) {
      const r = row(e.name, shapesText(e.shapes));
      r.count++;
      const total = data.cpu ? (e.t1 - e.t0) * 1000 : 0;
      r.cpuTimeTotal += total;
      r.selfCpuTimeTotal += data.cpu ? Math.max(0, total - (childCpu.get(e.id) ?? 0) * 1000) : 0;
      r.deviceTimeTotal += (totalDevice.get(e.id) ?? 0) * 1000;
      r.selfDeviceTimeTotal += (ownDevice.get(e.id) ?? 0) * 1000;
      const [sc, sd] = split(e.memory), [tc, td] = split(memTotal.get(e.id) ?? {});
      r.selfCpuMemoryUsage += sc;
      r.selfDeviceMemoryUsage += sd;
      r.cpuMemoryUsage += tc;
      r.deviceMemoryUsage += td;
    }
    for (const k of kernels) {
      const r = row(k.name, '[]');
      r.count++;
      r.deviceTimeTotal += k.deviceMs! * 1000;
      r.selfDeviceTimeTotal += k.deviceMs! * 1000;
    }
    this.rows = [...groups.values()];
    for (const r of this.rows) {
      r.cpuTime = r.cpuTimeTotal / r.count;
      r.deviceTime = r.deviceTimeTotal / r.count;
      r.cudaTimeTotal = r.deviceTimeTotal;
      r.selfCudaTimeTotal = r.selfDeviceTimeTotal;
    }
    this.selfCpuTotal = this.rows.reduce((s, r) => s + r.selfCpuTimeTotal, 0);
    this.selfDeviceTotal = kernels.reduce((s, k) => s + k.deviceMs! * 1000, 0);
  }

  [Symbol.iterator](): Iterator<EventAverage> {
    return this.rows[Symbol.iterator]();
  }

  /**
   * PyTorch's table of the rows, sorted by `sortBy` (descending), at most `rowLimit` rows (-1: all).
   * Positional as PyTorch's too: `table('cuda_time_total', 10)`.
   */
  table(options: TableOptions | string = {}, rowLimitArg?: number): string {
    if (typeof options === 'string') options = { sortBy: options, rowLimit: rowLimitArg };
    const { sortBy, rowLimit = 100, maxNameColumnWidth = 55, maxShapesColumnWidth = 80 } = options;
    let rows = this.rows.slice();
    if (sortBy !== undefined) {
      const k = sortKey(sortBy);
      if (!k) throw new Error(`table(): unknown sortBy '${sortBy}'; expected one of ${Object.keys(SORT_KEYS).join(', ')}`);
      rows.sort((a, b) => (b[k] as number) - (a[k] as number));
    }
    if (rowLimit >= 0) rows = rows.slice(0, rowLimit);
    const dev = this.deviceLabel, mem = this.data.profileMemory;
    const nameWidth = Math.min(Math.max(4, ...rows.map((r) => r.key.length)) + 4, maxNameColumnWidth);
    const shapesWidth = Math.min(Math.max(12, ...rows.map((r) => r.inputShapes.length)) + 4, maxShapesColumnWidth);
    const headers: [string, number][] = [['Name', nameWidth], ['Self CPU %', 12], ['Self CPU', 12], ['CPU total %', 12], ['CPU total', 12], ['CPU time avg', 12]];
    if (dev) headers.push([`Self ${dev}`, 12], [`Self ${dev} %`, 12], [`${dev} total`, 12], [`${dev} time avg`, 12]);
    if (mem) headers.push(['CPU Mem', 12], ['Self CPU Mem', 12], [`${dev ?? 'GPU'} Mem`, 12], [`Self ${dev ?? 'GPU'} Mem`, 12]);
    headers.push(['# of Calls', 12]);
    if (this.groupByInputShape) headers.push(['Input Shapes', shapesWidth]);
    const line = (cells: string[]) => cells.map((c, i) => c.padStart(headers[i][1])).join('  ') + '  ';
    const sep = headers.map(([, w]) => '-'.repeat(w)).join('  ') + '  ';
    const pct = (x: number, of: number) => `${(of > 0 ? (100 * x) / of : 0).toFixed(2)}%`;
    const clip = (s: string, w: number) => (s.length > w ? `${s.slice(0, w - 3)}...` : s);
    const out = [sep, line(headers.map(([h]) => h)), sep];
    for (const r of rows) {
      const cells = [clip(r.key, nameWidth), pct(r.selfCpuTimeTotal, this.selfCpuTotal), formatTime(r.selfCpuTimeTotal),
        pct(r.cpuTimeTotal, this.selfCpuTotal), formatTime(r.cpuTimeTotal), formatTime(r.cpuTime)];
      if (dev) cells.push(formatTime(r.selfDeviceTimeTotal), pct(r.selfDeviceTimeTotal, this.selfDeviceTotal), formatTime(r.deviceTimeTotal), formatTime(r.deviceTime));
      if (mem) cells.push(formatMemory(r.cpuMemoryUsage), formatMemory(r.selfCpuMemoryUsage), formatMemory(r.deviceMemoryUsage), formatMemory(r.selfDeviceMemoryUsage));
      cells.push(String(r.count));
      if (this.groupByInputShape) cells.push(clip(r.inputShapes, shapesWidth));
      out.push(line(cells));
    }
    out.push(sep, `Self CPU time total: ${formatTime(this.selfCpuTotal)}`);
    if (dev) out.push(`Self ${dev} time total: ${formatTime(this.selfDeviceTotal)}`);
    return out.join('\n') + '\n';
  }

  /** `String(prof.keyAverages())`: the table, unsorted. */
  toString(): string {
    return this.table();
  }
}

/** PyTorch's time format (microseconds in): `12.345us`, `1.234ms`, `1.234s`. */
export function formatTime(us: number): string {
  if (us >= 1e6) return `${(us / 1e6).toFixed(3)}s`;
  if (us >= 1e3) return `${(us / 1e3).toFixed(3)}ms`;
  return `${us.toFixed(3)}us`;
}

/** PyTorch's memory format: `512 b`, `1.50 Kb`, `2.00 Mb`, `1.00 Gb`. */
export function formatMemory(bytes: number): string {
  const a = Math.abs(bytes);
  if (a >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(2)} Gb`;
  if (a >= 1024 ** 2) return `${(bytes / 1024 ** 2).toFixed(2)} Mb`;
  if (a >= 1024) return `${(bytes / 1024).toFixed(2)} Kb`;
  return `${bytes} b`;
}
