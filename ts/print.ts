/**
 * PyTorch's tensor printing (`torch._tensor_str` with `set_printoptions` defaults: precision 4,
 * threshold 1000, edgeitems 3, linewidth 80), written for webtorch's handles.
 *
 * The hard part: the values live in a device worker, and `console.log`/`toString()` are
 * synchronous. So the synchronous forms print `tensor(shape=[2, 2], dtype=float32, device='gpu:0')`
 * and the values come from `await t.print()` / `await t.toStringAsync()`, which read the data
 * (a sync point) and format it as PyTorch does.
 */
import type { DType } from './dtype.js';

const PRECISION = 4;
const THRESHOLD = 1000;
const EDGEITEMS = 3;
const LINEWIDTH = 80;

/** What a tensor contributes to its printed form. */
export interface PrintInfo {
  shape: readonly number[];
  dtype: DType;
  device: string;
  requiresGrad: boolean;
  /** The autograd node's op name, for `grad_fn=<…Backward0>`; null for leaves. */
  gradFn: string | null;
}

/** The dtypes PyTorch prints without a `dtype=` suffix (its default float, int64 and bool). */
const DEFAULT_DTYPES: readonly DType[] = ['float32', 'int64', 'bool'];

/** Python's `{:.Ne}`: two exponent digits at least (`1.0000e+08`). */
function pyExp(v: number, precision: number): string {
  if (!Number.isFinite(v)) return pyNonFinite(v);
  const s = v.toExponential(precision);
  return s.replace(/e([+-])(\d)$/, 'e$10$2');
}

/** Python's `{:.Nf}`, keeping the sign of negative zero. */
function pyFixed(v: number, precision: number): string {
  if (!Number.isFinite(v)) return pyNonFinite(v);
  const s = v.toFixed(precision);
  return Object.is(v, -0) || (v < 0 && !s.startsWith('-')) ? `-${s}` : s;
}

const pyNonFinite = (v: number): string => (Number.isNaN(v) ? 'nan' : v > 0 ? 'inf' : '-inf');

/** PyTorch's `_Formatter`: one width and one notation for every element printed. */
class Formatter {
  private intMode = true;
  private sciMode = false;
  private maxWidth = 1;

  constructor(
    private readonly floating: boolean,
    values: readonly (number | boolean | bigint)[],
  ) {
    if (!floating) {
      for (const v of values) this.maxWidth = Math.max(this.maxWidth, this.plain(v).length);
      return;
    }
    const nz = (values as number[]).filter((v) => Number.isFinite(v) && v !== 0);
    if (nz.length === 0) return;
    const abs = nz.map(Math.abs);
    const min = Math.min(...abs);
    const max = Math.max(...abs);
    this.intMode = nz.every((v) => v === Math.ceil(v));
    const wide = max / min > 1000 || max > 1e8;
    if (this.intMode) {
      if (wide) {
        this.sciMode = true;
        for (const v of nz) this.maxWidth = Math.max(this.maxWidth, pyExp(v, PRECISION).length);
      } else {
        for (const v of nz) this.maxWidth = Math.max(this.maxWidth, pyFixed(v, 0).length + 1);
      }
    } else if (wide || min < 1e-4) {
      this.sciMode = true;
      for (const v of nz) this.maxWidth = Math.max(this.maxWidth, pyExp(v, PRECISION).length);
    } else {
      for (const v of nz) this.maxWidth = Math.max(this.maxWidth, pyFixed(v, PRECISION).length);
    }
  }

  width(): number {
    return this.maxWidth;
  }

  private plain(v: number | boolean | bigint): string {
    return typeof v === 'boolean' ? (v ? 'True' : 'False') : String(v);
  }

  format(v: number | boolean | bigint): string {
    let s: string;
    if (!this.floating) s = this.plain(v);
    else if (this.sciMode) s = pyExp(v as number, PRECISION);
    else if (this.intMode) s = pyFixed(v as number, 0) + (Number.isFinite(v) ? '.' : '');
    else s = pyFixed(v as number, PRECISION);
    return s.padStart(this.maxWidth);
  }
}

/** A row-major view of the flat values, for walking the dims. */
interface Nd {
  shape: readonly number[];
  flat: readonly (number | boolean | bigint)[];
  offset: number;
  strides: readonly number[];
}

const sub = (t: Nd, i: number): Nd => ({ shape: t.shape.slice(1), flat: t.flat, offset: t.offset + i * t.strides[0], strides: t.strides.slice(1) });

/** The elements `torch._tensor_str.get_summarized_data` keeps: edge items of every dim. */
function summarized(t: Nd, summarize: boolean): (number | boolean | bigint)[] {
  if (t.shape.length === 0) return [t.flat[t.offset]];
  const n = t.shape[0];
  const rows = summarize && n > 2 * EDGEITEMS ? [...range(0, EDGEITEMS), ...range(n - EDGEITEMS, n)] : range(0, n);
  return rows.flatMap((i) => summarized(sub(t, i), summarize));
}

const range = (a: number, b: number): number[] => Array.from({ length: b - a }, (_, i) => a + i);

function vectorStr(t: Nd, indent: number, summarize: boolean, f: Formatter): string {
  const perLine = Math.max(1, Math.floor((LINEWIDTH - indent) / (f.width() + 2)));
  const n = t.shape[0];
  const at = (i: number): string => f.format(t.flat[t.offset + i * t.strides[0]]);
  const data =
    summarize && n > 2 * EDGEITEMS
      ? [...range(0, EDGEITEMS).map(at), ' ...', ...range(n - EDGEITEMS, n).map(at)]
      : range(0, n).map(at);
  const lines: string[] = [];
  for (let i = 0; i < data.length; i += perLine) lines.push(data.slice(i, i + perLine).join(', '));
  return `[${lines.join(`,\n${' '.repeat(indent + 1)}`)}]`;
}

function tensorStr(t: Nd, indent: number, summarize: boolean, f: Formatter): string {
  const dim = t.shape.length;
  if (dim === 0) return f.format(t.flat[t.offset]);
  if (dim === 1) return vectorStr(t, indent, summarize, f);
  const n = t.shape[0];
  const part = (i: number): string => tensorStr(sub(t, i), indent + 1, summarize, f);
  const slices =
    summarize && n > 2 * EDGEITEMS ? [...range(0, EDGEITEMS).map(part), '...', ...range(n - EDGEITEMS, n).map(part)] : range(0, n).map(part);
  return `[${slices.join(`,${'\n'.repeat(dim - 1)}${' '.repeat(indent + 1)}`)}]`;
}

/** The suffixes after the values: device, dtype (or size for empty tensors), grad_fn/requires_grad. */
function suffixes(info: PrintInfo, empty: boolean): string[] {
  const out: string[] = [];
  if (info.device !== 'cpu') out.push(`device='${info.device}'`);
  if (empty && info.shape.length !== 1) out.push(`size=(${info.shape.join(', ')}${info.shape.length === 1 ? ',' : ''})`);
  if (!DEFAULT_DTYPES.includes(info.dtype)) out.push(`dtype=torch.${info.dtype}`);
  if (info.gradFn !== null) out.push(`grad_fn=<${gradFnName(info.gradFn)}>`);
  else if (info.requiresGrad) out.push('requires_grad=True');
  return out;
}

/** PyTorch's autograd node class name for an op name: `add` → `AddBackward0`, `log_softmax` → `LogSoftmaxBackward0`. */
export function gradFnName(op: string): string {
  const camel = op.replace(/[_\s]+(\w)/g, (_, c: string) => c.toUpperCase());
  return `${camel[0].toUpperCase()}${camel.slice(1)}Backward0`;
}

function addSuffixes(body: string, sfx: string[], indent: number): string {
  const parts = [body];
  let last = body.length - body.lastIndexOf('\n') + 1;
  for (const s of sfx) {
    if (last + s.length + 2 > LINEWIDTH) {
      parts.push(`,\n${' '.repeat(indent)}${s}`);
      last = indent + s.length;
    } else {
      parts.push(`, ${s}`);
      last += s.length + 2;
    }
  }
  parts.push(')');
  return parts.join('');
}

/** The tensor as PyTorch's `repr`/`print` shows it, from its row-major values. */
export function formatTensor(info: PrintInfo, values: readonly (number | boolean | bigint)[]): string {
  const prefix = 'tensor(';
  const indent = prefix.length;
  const count = info.shape.reduce((a, b) => a * b, 1);
  if (count === 0) return addSuffixes(`${prefix}[]`, suffixes(info, true), indent);
  const strides: number[] = [];
  for (let d = info.shape.length - 1, s = 1; d >= 0; d--) {
    strides[d] = s;
    s *= info.shape[d];
  }
  const nd: Nd = { shape: info.shape, flat: values, offset: 0, strides };
  const summarize = count > THRESHOLD;
  const f = new Formatter(info.dtype.startsWith('float') || info.dtype === 'bfloat16', summarize ? summarized(nd, true) : values);
  return addSuffixes(prefix + tensorStr(nd, indent, summarize, f), suffixes(info, false), indent);
}

/** The synchronous form: what is known without reading the device. */
export function formatTensorMeta(info: PrintInfo): string {
  const sfx = [`shape=[${info.shape.join(', ')}]`, `dtype=${info.dtype}`, `device='${info.device}'`];
  if (info.gradFn !== null) sfx.push(`grad_fn=<${gradFnName(info.gradFn)}>`);
  else if (info.requiresGrad) sfx.push('requires_grad=True');
  return `tensor(${sfx.join(', ')})`;
}
