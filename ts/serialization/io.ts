/**
 * Where checkpoint bytes come from and go: a file path in Node (written atomically), or bytes in
 * memory anywhere (a `Uint8Array`, an `ArrayBuffer`, a `Blob` such as a browser's `File`).
 *
 * Note [Atomic checkpoint writes]: a save writes `<path>.<pid>.<random>.tmp` beside the target,
 * flushes it to disk, and renames it over the target; rename replaces a file in one step on POSIX
 * and Windows. A save that fails or is killed part way leaves the old checkpoint as it was (and,
 * when it fails rather than dies, no temporary file).
 */
import { isNode } from '../platform.js';

/** What `torch.load` reads: a path (Node), bytes, or a Blob. */
export type Source = string | Uint8Array | ArrayBuffer | Blob;

/** Reads a source's bytes. */
export async function readSource(f: Source, op: string): Promise<Uint8Array> {
  if (typeof f === 'string') {
    if (!isNode) throw new TypeError(`${op}: a file path needs Node's file system; in a browser pass the bytes (a Uint8Array, an ArrayBuffer, or a Blob/File)`);
    const { readFile } = await import('node:fs/promises');
    const b = await readFile(f);
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  }
  if (f instanceof Uint8Array) return f;
  if (f instanceof ArrayBuffer) return new Uint8Array(f);
  if (typeof Blob !== 'undefined' && f instanceof Blob) return new Uint8Array(await f.arrayBuffer());
  throw new TypeError(`${op}: expected a file path, a Uint8Array, an ArrayBuffer or a Blob, got ${f === null ? 'null' : typeof f === 'object' ? (f as object).constructor?.name : typeof f}`);
}

/** @internal Test hook: the next atomic write throws after writing this many bytes of its temporary file. */
let faultAfter: number | null = null;
/** @internal Makes the next checkpoint write fail after `bytes` bytes (null: no fault); the atomic-write test. */
export function setWriteFault(bytes: number | null): void {
  faultAfter = bytes;
}

/** Writes `bytes` to `path` atomically (see the note above). */
export async function writeAtomic(path: string, bytes: Uint8Array, op: string): Promise<void> {
  if (typeof path !== 'string' || !path) throw new TypeError(`${op}: expected a file path string`);
  if (!isNode) throw new TypeError(`${op}: a file path needs Node's file system; in a browser call ${op}(obj) without a path for the bytes`);
  const { open, rename, unlink } = await import('node:fs/promises');
  const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2, 10)}.tmp`;
  const fault = faultAfter;
  faultAfter = null;
  const fh = await open(tmp, 'wx');
  try {
    try {
      const CHUNK = 1 << 20;
      for (let at = 0; at < bytes.length; at += CHUNK) {
        const part = bytes.subarray(at, Math.min(at + CHUNK, bytes.length));
        if (fault !== null && at + part.length > fault) {
          await fh.write(part.subarray(0, Math.max(0, fault - at)));
          throw new Error(`${op}: simulated failure after ${fault} bytes (test hook)`);
        }
        await fh.write(part);
      }
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  } catch (e) {
    await unlink(tmp).catch(() => undefined);
    throw e;
  }
}
