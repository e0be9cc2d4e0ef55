/**
 * PyTorch's `.pt` container (`torch.save` since 1.6): an uncompressed zip whose one top folder
 * (`archive/`) holds `data.pkl` (the pickle), `data/<key>` (each storage's raw little-endian
 * bytes), `version` and `byteorder`. The zip itself is fflate's (pinned); this file only lays out
 * the records, as PyTorch's `PyTorchStreamWriter` does: each record's bytes start on a 64-byte
 * boundary, padded with an extra field of id "FB", so that a reader may map them in place.
 */
import { unzipSync, zipSync, type Zippable } from 'fflate';

/** What a `.pt` archive holds: the pickle and the storages by key. */
export interface Archive { pickle: Uint8Array; records: Map<string, Uint8Array> }

/** PyTorch's format version for files with a `data.pkl` and storages (what 1.6 to 2.x write). */
const VERSION = '3\n';
const ALIGN = 64;
const PAD_ID = 0x4246; // "FB", PyTorch's padding field

/** Whether `bytes` start as a zip (local file header `PK\x03\x04`). */
export const isZip = (bytes: Uint8Array): boolean => bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04;

/** Lays out a `.pt` archive: `archive/data.pkl`, `archive/byteorder`, `archive/data/<key>`…, `archive/version`. */
export function writeArchive(pickle: Uint8Array, storages: [key: string, bytes: Uint8Array][]): Uint8Array {
  const enc = new TextEncoder();
  const records: [string, Uint8Array][] = [
    ['archive/data.pkl', pickle],
    ['archive/byteorder', enc.encode('little')],
    ...storages.map(([k, b]): [string, Uint8Array] => [`archive/data/${k}`, b]),
    ['archive/version', enc.encode(VERSION)],
  ];
  const files: Zippable = {};
  let offset = 0; // where the next local header starts (fflate writes them in this order)
  for (const [name, data] of records) {
    const header = 30 + enc.encode(name).length + 4; // local header, name, the padding field's id and size
    const pad = (ALIGN - ((offset + header) % ALIGN)) % ALIGN;
    files[name] = [data, { level: 0, mtime: new Date(1980, 0, 1), extra: { [PAD_ID]: new Uint8Array(pad).fill(0x5a) } }];
    offset += header + pad + data.length;
  }
  return zipSync(files);
}

/** Reads a `.pt` archive, checking its layout; the pickle's storages are checked by the caller. */
export function readArchive(bytes: Uint8Array): Archive {
  let files: Record<string, Uint8Array>;
  try {
    files = unzipSync(bytes);
  } catch (e) {
    throw new Error(`torch.load: the file is not a readable zip archive (corrupt or truncated): ${(e as Error).message}`);
  }
  const names = Object.keys(files);
  const pkl = names.filter((n) => /^[^/]+\/data\.pkl$/.test(n));
  if (pkl.length !== 1) {
    if (names.some((n) => /(^|\/)constants\.pkl$/.test(n))) throw new Error('torch.load: this is a TorchScript archive (torch.jit.save); webtorch loads what torch.save writes');
    throw new Error(`torch.load: not a PyTorch checkpoint: expected one <archive>/data.pkl record, found ${pkl.length ? pkl.join(', ') : 'none'}`);
  }
  const prefix = pkl[0].slice(0, -'data.pkl'.length);
  const text = (name: string) => (files[prefix + name] ? new TextDecoder().decode(files[prefix + name]).trim() : undefined);
  const version = text('version') ?? text('.data/version');
  if (version !== undefined && !/^\d+$/.test(version)) throw new Error(`torch.load: the archive's version record is corrupt (${JSON.stringify(version.slice(0, 20))})`);
  const order = text('byteorder');
  if (order !== undefined && order !== 'little') throw new Error(`torch.load: the checkpoint's storages are ${order}-endian; webtorch reads little-endian ones`);
  const records = new Map<string, Uint8Array>();
  for (const n of names) if (n.startsWith(`${prefix}data/`)) records.set(n.slice(prefix.length + 5), files[n]);
  return { pickle: files[pkl[0]], records };
}
