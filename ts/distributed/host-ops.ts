/**
 * The host side of the collectives between processes: bytes a rank's device sent to the calling
 * thread, exchanged with the other ranks over the mesh (ts/distributed/mesh.ts) and reduced on
 * the host in the tensor's dtype (float16 and bfloat16 travel as float32: the device casts).
 *
 * All-reduce and reduce-scatter are a ring over `tensor_split` parts (each rank sends about
 * 2(k-1)/k of the tensor, any size works); below `DIRECT_BYTES` an all-reduce sends the whole
 * tensor to every rank and each reduces in rank order (one round instead of 2(k-1)). Both give
 * every rank the same bits: for `avg` the owner of a ring part divides it once, before passing it
 * on. The ring moves each part in pieces of `PIECE_BYTES`, each sent on as soon as it is
 * combined, so the wire, the combine and the copies overlap instead of taking turns.
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

/**
 * A ring's parts travel in pieces of at most this many bytes, each its own message, so that a
 * piece is combined (and sent on) while the next is on the wire.
 */
export const PIECE_BYTES = 1 << 20;

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

/**
 * `a[i] = a[i] op b[i]` in `a`'s type; with `div` (an `avg`'s last step) the sum is then divided
 * by it, rounded to float32 between the two as a sum and a division apart would be.
 */
function combine(a: Arr, b: Arr, op: ReduceOpName, bool: boolean, div = 1): void {
  if (a instanceof Float32Array && (op === 'sum' || op === 'avg')) return addFloat32(a, b as Float32Array, div);
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

/** The float32 sum (the gradients' case), in a loop of its own: one array type, so the engine keeps it fast. */
function addFloat32(x: Float32Array, y: Float32Array, div: number): void {
  const n = x.length;
  if (div === 1) for (let i = 0; i < n; i++) x[i] += y[i];
  else for (let i = 0; i < n; i++) x[i] = Math.fround(x[i] + y[i]) / div;
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

/**
 * The element ranges of part `c` of a ring (`offs`, `sizes`), cut into pieces of at most
 * `PIECE_BYTES`: the same on every rank, since they depend only on the sizes.
 */
function piecesOf(offs: number[], sizes: number[], c: number, es: number): [number, number][] {
  const step = Math.max(1, Math.floor(PIECE_BYTES / es)), out: [number, number][] = [];
  for (let lo = offs[c]; lo < offs[c] + sizes[c]; lo += step) out.push([lo, Math.min(lo + step, offs[c] + sizes[c])]);
  return out;
}

/**
 * Ring reduce-scatter over `acc` cut into `sizes` parts (elements): part `rank` ends reduced (and
 * divided by the world size for `avg`). Each piece goes on to the next rank as soon as it is
 * combined; `reduced` gets each piece of part `rank` as it is done.
 */
async function ringReduceScatter(mesh: Mesh, out: Outbox, key: string, acc: Arr, sizes: number[], op: ReduceOpName, dtype: DType, reduced?: (i: number, piece: Arr) => void): Promise<void> {
  const k = mesh.worldSize, r = mesh.rank, next = mod(r + 1, k), prev = mod(r - 1, k);
  const offs = sizes.map((_, c) => sizes.slice(0, c).reduce((a, b) => a + b, 0));
  const pieces = (c: number) => piecesOf(offs, sizes, c, acc.BYTES_PER_ELEMENT);
  pieces(mod(r - 1, k)).forEach(([lo, hi], i) => out.send(next, `${key}:rs0:${i}`, bytesOf(acc.subarray(lo, hi) as Arr)));
  for (let s = 0; s < k - 1; s++) {
    const last = s === k - 2, cr = mod(r - s - 2, k); // the part received at step s, sent on at step s + 1
    const ps = pieces(cr);
    for (let i = 0; i < ps.length; i++) {
      const got = view(await mesh.recv(prev, `${key}:rs${s}:${i}`), dtype);
      const piece = acc.subarray(ps[i][0], ps[i][1]) as Arr;
      await out.before(piece);
      combine(piece, got, op, dtype === 'bool', last && op === 'avg' ? k : 1);
      if (!last) out.send(next, `${key}:rs${s + 1}:${i}`, bytesOf(piece));
      else reduced?.(i, piece);
    }
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
      // The ring: reduce-scatter, then all-gather, both piece by piece, so that each piece's
      // transfer overlaps the combine and the copies of the pieces before it.
      const next = mod(r + 1, k), prev = mod(r - 1, k);
      const sizes = splitSizes(n, k);
      const offs = sizes.map((_, c) => sizes.slice(0, c).reduce((a, b) => a + b, 0));
      await ringReduceScatter(mesh, out, key, acc, sizes, op, dtype, (i, piece) => out.send(next, `${key}:ag0:${i}`, bytesOf(piece)));
      for (let s = 0; s < k - 1; s++) {
        const ps = piecesOf(offs, sizes, mod(r - 1 - s, k), acc.BYTES_PER_ELEMENT);
        for (let i = 0; i < ps.length; i++) {
          const got = await mesh.recv(prev, `${key}:ag${s}:${i}`);
          const piece = acc.subarray(ps[i][0], ps[i][1]) as Arr;
          await out.before(piece);
          bytesOf(piece).set(got); // same dtype: the bytes are the values
          if (s < k - 2) out.send(next, `${key}:ag${s + 1}:${i}`, bytesOf(piece));
        }
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

/**
 * Two ranks' exchange: `bytes` go to the other rank, given up (threads move the buffer rather
 * than copy it), and the other rank's come back.
 */
export async function hostSwap(mesh: Mesh, key: string, bytes: Uint8Array): Promise<Uint8Array> {
  const other = 1 - mesh.rank;
  const [, theirs] = await Promise.all([mesh.send(other, key, bytes, true), mesh.recv(other, key)]);
  return theirs;
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
  if (mesh.worldSize > 1) await ringReduceScatter(mesh, out, key, acc, sizes, op, dtype); // (divides for `avg`)
  const off = sizes.slice(0, mesh.rank).reduce((a, b) => a + b, 0);
  const part = acc.subarray(off, off + sizes[mesh.rank]) as Arr;
  await out.drain();
  return bytesOf(part);
}
