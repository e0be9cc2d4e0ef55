/**
 * The host side of the collectives between processes: bytes a rank's device sent to the calling
 * thread, exchanged with the other ranks over the mesh (ts/distributed/mesh.ts) and reduced on
 * the host in the tensor's dtype (float16 and bfloat16 travel as float32: the device casts).
 *
 * All-reduce and reduce-scatter are a ring over `tensor_split` parts (each rank sends about
 * 2(k-1)/k of the tensor, any size works); below `DIRECT_BYTES` an all-reduce sends the whole
 * tensor to every rank and each reduces in rank order (one round instead of 2(k-1)). Both give
 * every rank the same bits: for `avg` the owner of a ring part divides it once, before passing it
 * on.
 *
 * Note [sends keep the bytes]: why every send goes through an `Outbox`: a socket keeps a reference to the bytes it is given,
 * not a copy, until they are out. Writing to a part of the buffer while an earlier send of it is
 * still under way (a combine, the all-gather's result, a division for `avg`), or handing the
 * buffer to the device (the bridge transfers it) before the sends are out, puts changed bytes on
 * the wire: the peer gets a plausible wrong number. So each write to the buffer first waits for
 * the sends that overlap it, and each collective waits for all its sends before it returns.
 */
import type { DType } from '../dtype.js';
import { splitSizes, type ReduceOpName } from './comm.js';
import type { Transport as Mesh } from './socket-group.js';

/** Tensors smaller than this are all-reduced directly rather than by the ring. */
export const DIRECT_BYTES = 64 * 1024;

type Arr = Float32Array | Int32Array | BigInt64Array | Uint8Array;
const mod = (a: number, k: number) => ((a % k) + k) % k;

/** A typed view of `b` (copied when its offset is not aligned). */
export function view(b: Uint8Array, dtype: DType): Arr {
  const es = dtype === 'int64' ? 8 : dtype === 'uint8' || dtype === 'bool' ? 1 : 4;
  if (b.byteOffset % es) b = b.slice();
  switch (dtype) {
    case 'float32': return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
    case 'int32': return new Int32Array(b.buffer, b.byteOffset, b.byteLength / 4);
    case 'int64': return new BigInt64Array(b.buffer, b.byteOffset, b.byteLength / 8);
    case 'uint8': case 'bool': return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    default: throw new TypeError(`collectives between processes carry ${dtype} as float32 (internal error: got ${dtype} here)`);
  }
}

const bytesOf = (a: Arr) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** `a[i] = a[i] op b[i]` in `a`'s type. */
function combine(a: Arr, b: Arr, op: ReduceOpName, bool: boolean): void {
  const n = a.length;
  const x = a as any, y = b as any;
  switch (op) {
    case 'sum': case 'avg':
      if (bool) for (let i = 0; i < n; i++) x[i] = x[i] | y[i];
      else for (let i = 0; i < n; i++) x[i] += y[i];
      return;
    case 'product':
      if (bool) for (let i = 0; i < n; i++) x[i] = x[i] & y[i];
      else for (let i = 0; i < n; i++) x[i] *= y[i];
      return;
    case 'max':
      for (let i = 0; i < n; i++) if (y[i] > x[i] || y[i] !== y[i]) x[i] = y[i];
      return;
    case 'min':
      for (let i = 0; i < n; i++) if (y[i] < x[i] || y[i] !== y[i]) x[i] = y[i];
      return;
  }
}

/**
 * The sends of one collective, with the byte ranges they hold: `before` waits for those that
 * overlap a range about to be written, `drain` for all of them.
 */
class Outbox {
  private sends: { buffer: ArrayBufferLike; start: number; end: number; sent: Promise<void> }[] = [];
  constructor(private readonly mesh: Mesh) {}

  send(to: number, key: string, body: Uint8Array): void {
    const sent = this.mesh.send(to, key, body);
    sent.catch(() => {}); // awaited in `before`/`drain`; a failed socket also fails the mesh
    this.sends.push({ buffer: body.buffer, start: body.byteOffset, end: body.byteOffset + body.byteLength, sent });
  }

  /** Resolves once no send still holds any byte of `a`. */
  async before(a: Arr): Promise<void> {
    const start = a.byteOffset, end = start + a.byteLength;
    const held = this.sends.filter((s) => s.buffer === a.buffer && s.start < end && start < s.end);
    if (held.length) await Promise.all(held.map((s) => s.sent));
  }

  /** Resolves once every send is out. */
  async drain(): Promise<void> {
    await Promise.all(this.sends.map((s) => s.sent));
    this.sends = [];
  }
}

/** `a[i] /= k` (for `avg`, a float32 part). */
function divide(a: Arr, k: number): void {
  const f = a as Float32Array;
  for (let i = 0; i < f.length; i++) f[i] /= k;
}

/** Ring reduce-scatter over `acc` cut into `sizes` parts (elements): part `rank` ends reduced. */
async function ringReduceScatter(mesh: Mesh, out: Outbox, key: string, acc: Arr, sizes: number[], op: ReduceOpName, dtype: DType): Promise<void> {
  const k = mesh.worldSize, r = mesh.rank, next = mod(r + 1, k), prev = mod(r - 1, k);
  const offs = sizes.map((_, c) => sizes.slice(0, c).reduce((a, b) => a + b, 0));
  const part = (c: number) => acc.subarray(offs[c], offs[c] + sizes[c]) as Arr;
  for (let s = 0; s < k - 1; s++) {
    const cs = mod(r - s - 1, k), cr = mod(r - s - 2, k);
    out.send(next, `${key}:rs${s}`, bytesOf(part(cs)));
    const got = view(await mesh.recv(prev, `${key}:rs${s}`), dtype);
    await out.before(part(cr));
    combine(part(cr), got, op, dtype === 'bool');
  }
}

/** Every rank's `acc` (flat, `dtype`) becomes the reduction over ranks; returns its bytes. */
export async function hostAllReduce(mesh: Mesh, key: string, bytes: Uint8Array, dtype: DType, op: ReduceOpName): Promise<Uint8Array> {
  const k = mesh.worldSize, r = mesh.rank, out = new Outbox(mesh);
  let acc = view(bytes, dtype);
  const n = acc.length;
  if (k > 1 && n > 0) {
    if (bytes.byteLength < DIRECT_BYTES) {
      for (let j = 0; j < k; j++) if (j !== r) out.send(j, key, bytes);
      const parts = await Promise.all([...Array(k).keys()].map((j) => (j === r ? acc : mesh.recv(j, key).then((b) => view(b, dtype)))));
      acc = parts[0].slice() as Arr; // a new buffer: `bytes` stays as sent
      for (let j = 1; j < k; j++) combine(acc, parts[j], op, dtype === 'bool');
      if (op === 'avg') divide(acc, k);
    } else {
      const sizes = splitSizes(n, k);
      const offs = sizes.map((_, c) => sizes.slice(0, c).reduce((a, b) => a + b, 0));
      const part = (c: number) => acc.subarray(offs[c], offs[c] + sizes[c]) as Arr;
      await ringReduceScatter(mesh, out, key, acc, sizes, op, dtype);
      if (op === 'avg') {
        await out.before(part(r));
        divide(part(r), k);
      }
      const next = mod(r + 1, k), prev = mod(r - 1, k);
      for (let s = 0; s < k - 1; s++) {
        const cs = mod(r - s, k), cr = mod(r - 1 - s, k);
        out.send(next, `${key}:ag${s}`, bytesOf(part(cs)));
        const got = view(await mesh.recv(prev, `${key}:ag${s}`), dtype);
        await out.before(part(cr));
        bytesOf(part(cr)).set(bytesOf(got)); // same dtype: the bytes are the values
      }
    }
  } else if (op === 'avg') divide(acc, k);
  // The caller hands these bytes to the device (transferring the buffer): every send must be out.
  await out.drain();
  return bytesOf(acc);
}

/** Rank `src`'s bytes, on every rank. */
export async function hostBroadcast(mesh: Mesh, key: string, bytes: Uint8Array | null, src: number): Promise<Uint8Array> {
  if (mesh.rank === src) {
    const out = new Outbox(mesh);
    for (let j = 0; j < mesh.worldSize; j++) if (j !== src) out.send(j, key, bytes!);
    await out.drain();
    return bytes!;
  }
  return mesh.recv(src, key);
}

/** Every rank's bytes, in rank order, on every rank. */
export async function hostAllGather(mesh: Mesh, key: string, bytes: Uint8Array): Promise<Uint8Array[]> {
  const out = new Outbox(mesh);
  for (let j = 0; j < mesh.worldSize; j++) if (j !== mesh.rank) out.send(j, key, bytes);
  const all = await Promise.all([...Array(mesh.worldSize).keys()].map((j) => (j === mesh.rank ? bytes : mesh.recv(j, key))));
  await out.drain();
  return all;
}

/** The reduction over ranks of part `rank` of `bytes` (cut into `sizes` elements). */
export async function hostReduceScatter(mesh: Mesh, key: string, bytes: Uint8Array, sizes: number[], dtype: DType, op: ReduceOpName): Promise<Uint8Array> {
  const acc = view(bytes, dtype), out = new Outbox(mesh);
  if (mesh.worldSize > 1) await ringReduceScatter(mesh, out, key, acc, sizes, op, dtype);
  const off = sizes.slice(0, mesh.rank).reduce((a, b) => a + b, 0);
  const part = acc.subarray(off, off + sizes[mesh.rank]) as Arr;
  if (op === 'avg') {
    await out.before(part);
    divide(part, mesh.worldSize);
  }
  await out.drain();
  return bytesOf(part);
}
