/**
 * The safetensors format (Hugging Face's): 8 bytes of little-endian u64 header length N, N bytes
 * of JSON header `{"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, …,
 * "__metadata__": {"k": "v"}}`, then the tensors' raw little-endian bytes, offsets relative to the
 * end of the header. A reader checks what the reference implementation checks: the header is
 * JSON of that form, every tensor's byte size matches its dtype and shape, and the tensors tile
 * the data section exactly (no overlaps, no holes, nothing past the end).
 */
import type { DType } from '../dtype.js';

/** One tensor's entry: its name, dtype, shape and bytes (a view into the file). */
export interface SafeEntry { name: string; dtype: DType; shape: number[]; bytes: Uint8Array }

/** safetensors dtype codes ↔ webtorch's dtypes. */
const CODE: Record<DType, string> = { float32: 'F32', float16: 'F16', bfloat16: 'BF16', int64: 'I64', int32: 'I32', uint8: 'U8', bool: 'BOOL' };
const SIZE: Record<string, number> = {
  F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U64: 8, U32: 4, U16: 2, U8: 1, BOOL: 1, F8_E4M3: 1, F8_E5M2: 1,
};
const DTYPE_OF = Object.fromEntries(Object.entries(CODE).map(([d, c]) => [c, d as DType])) as Record<string, DType>;
/** The header's largest size the reference implementation accepts (100 MB). */
const MAX_HEADER = 100_000_000;

/** Encodes entries (bytes already little-endian) and string metadata as a safetensors file. */
export function encodeSafetensors(entries: SafeEntry[], metadata?: Record<string, string> | null): Uint8Array {
  const header: Record<string, unknown> = {};
  if (metadata != null) {
    if (typeof metadata !== 'object' || Object.values(metadata).some((v) => typeof v !== 'string')) {
      throw new TypeError('safetensors: metadata must be an object of string values (Dict[str, str])');
    }
    header.__metadata__ = metadata;
  }
  // As the reference writer: larger dtypes first (their bytes stay aligned), then by name.
  const order = [...entries].sort((a, b) => SIZE[CODE[b.dtype]] - SIZE[CODE[a.dtype]] || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  let at = 0;
  for (const e of order) {
    if (e.name === '__metadata__') throw new TypeError('safetensors: "__metadata__" is reserved and cannot name a tensor');
    header[e.name] = { dtype: CODE[e.dtype], shape: e.shape, data_offsets: [at, at + e.bytes.length] };
    at += e.bytes.length;
  }
  let json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8; // spaces, so that the data starts 8-byte aligned
  if (padded !== json.length) {
    const p = new Uint8Array(padded).fill(0x20);
    p.set(json);
    json = p;
  }
  const out = new Uint8Array(8 + json.length + at);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  let pos = 8 + json.length;
  for (const e of order) {
    out.set(e.bytes, pos);
    pos += e.bytes.length;
  }
  return out;
}

const bad = (why: string): never => {
  throw new Error(`safetensors: invalid file: ${why}`);
};

/** Decodes a safetensors file; entries in file order, their bytes views into `bytes`. */
export function decodeSafetensors(bytes: Uint8Array): { entries: SafeEntry[]; metadata: Record<string, string> | null } {
  if (bytes.length < 8) bad(`${bytes.length} bytes is too short for the 8-byte header length (truncated?)`);
  const n64 = new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
  if (n64 > BigInt(MAX_HEADER)) bad(`the header claims ${n64} bytes (more than the 100 MB limit)`);
  const n = Number(n64);
  if (8 + n > bytes.length) bad(`the header claims ${n} bytes but the file has ${bytes.length - 8} after the length (truncated?)`);
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + n)));
  } catch (e) {
    bad(`the header is not valid UTF-8 JSON (${(e as Error).message})`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) return bad('the header must be a JSON object');
  const data = bytes.subarray(8 + n);
  let metadata: Record<string, string> | null = null;
  const entries: (SafeEntry & { begin: number })[] = [];
  for (const [name, info] of Object.entries(header as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (typeof info !== 'object' || info === null || Object.values(info).some((v) => typeof v !== 'string')) bad('__metadata__ must be an object of strings');
      metadata = info as Record<string, string>;
      continue;
    }
    const t = info as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (typeof t !== 'object' || t === null || typeof t.dtype !== 'string' || !Array.isArray(t.shape) || !Array.isArray(t.data_offsets)) {
      bad(`tensor "${name}" needs dtype, shape and data_offsets`);
    }
    const code = t.dtype as string;
    if (!(code in SIZE)) bad(`tensor "${name}" has an unknown dtype "${code}"`);
    const dtype = DTYPE_OF[code];
    if (!dtype) throw new TypeError(`safetensors: tensor "${name}" is ${code}, which webtorch cannot hold (its dtypes: ${Object.values(CODE).join(', ')}); convert it before saving`);
    const shape = t.shape as unknown[];
    if (!shape.every((s) => Number.isSafeInteger(s) && (s as number) >= 0)) bad(`tensor "${name}" has a bad shape ${JSON.stringify(shape)}`);
    const [begin, end] = t.data_offsets as unknown[];
    if ((t.data_offsets as unknown[]).length !== 2 || !Number.isSafeInteger(begin) || !Number.isSafeInteger(end) || (begin as number) < 0 || (end as number) < (begin as number)) {
      bad(`tensor "${name}" has bad data_offsets ${JSON.stringify(t.data_offsets)}`);
    }
    const want = (shape as number[]).reduce((a, b) => a * b, 1) * SIZE[code];
    if ((end as number) - (begin as number) !== want) bad(`tensor "${name}" is ${code} of shape [${shape.join(', ')}] (${want} bytes) but its data_offsets span ${(end as number) - (begin as number)} bytes`);
    if ((end as number) > data.length) bad(`tensor "${name}" ends at byte ${end} of a ${data.length}-byte data section (truncated?)`);
    entries.push({ name, dtype, shape: shape as number[], bytes: data.subarray(begin as number, end as number), begin: begin as number });
  }
  // The tensors must tile the data section: sorted by offset, each starts where the last ended.
  let at = 0;
  for (const e of [...entries].sort((a, b) => a.begin - b.begin)) {
    if (e.begin !== at) bad(`tensor "${e.name}" starts at byte ${e.begin}, expected ${at} (the tensors overlap or leave a hole)`);
    at += e.bytes.length;
  }
  if (at !== data.length) bad(`the tensors cover ${at} bytes of a ${data.length}-byte data section`);
  return { entries: entries.map(({ begin: _, ...e }) => e), metadata };
}
