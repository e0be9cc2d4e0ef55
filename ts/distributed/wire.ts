/**
 * The framing that `TCPStore` and the ranks' sockets share: each message is a small JSON header
 * and an optional binary payload, `[u32 header length][u32 payload length][header][payload]`
 * (little-endian). A payload is read into one buffer of its final size, so a large tensor's bytes
 * are not copied again as its chunks arrive.
 *
 * Node's `net` is reached through `process.getBuiltinModule` at run time, so the browser bundle
 * never imports it (process groups across processes are Node-only).
 */
import type { Server, Socket } from 'node:net';

/** A decoded message. */
export interface Frame {
  head: Record<string, any>;
  body: Uint8Array;
}

const EMPTY = new Uint8Array(0);
const enc = new TextEncoder();
const dec = new TextDecoder();

/** Node's `net` module; raises where there is none (a browser). */
export function net(what: string): typeof import('node:net') {
  const m = typeof process !== 'undefined' ? (process.getBuiltinModule?.('node:net') as typeof import('node:net') | undefined) : undefined;
  if (!m) throw new Error(`${what}: process groups across processes need Node.js (node:net); in a browser use ranks in one page (torch.distributed.spawn)`);
  return m;
}

/**
 * Writes one message to a socket; resolves once the socket has handed its last byte to the system
 * (rejects if the socket fails first). Node keeps a reference to `body`, not a copy, until then:
 * the caller must not write to those bytes before this settles.
 */
export function writeFrame(sock: Socket, head: Record<string, unknown>, body: Uint8Array = EMPTY): Promise<void> {
  if (body.length > 0xffffffff) throw new RangeError(`a message between processes holds at most 4 GiB, got ${body.length} bytes (split the tensor)`);
  const h = enc.encode(JSON.stringify(head));
  const pre = new Uint8Array(8 + h.length);
  const dv = new DataView(pre.buffer);
  dv.setUint32(0, h.length, true);
  dv.setUint32(4, body.length, true);
  pre.set(h, 8);
  const sent = new Promise<void>((resolve, reject) => {
    const done = (e?: Error | null) => (e ? reject(e) : resolve());
    if (body.length) {
      sock.write(pre);
      sock.write(body, done);
    } else sock.write(pre, done);
  });
  sent.catch(() => {}); // callers that only fire and forget (a `bye`, a store reply) see failures through 'close'
  return sent;
}

/** Cuts a socket's byte stream into frames and calls `onFrame` for each. */
export function readFrames(sock: Socket, onFrame: (f: Frame) => void): void {
  let pending: Uint8Array[] = [];
  let have = 0;
  let head: Record<string, any> | null = null;
  let body: Uint8Array | null = null;
  let filled = 0;
  const take = (n: number): Uint8Array => {
    const out = new Uint8Array(n);
    let o = 0;
    while (o < n) {
      const c = pending[0];
      const k = Math.min(c.length, n - o);
      out.set(c.subarray(0, k), o);
      o += k;
      if (k === c.length) pending.shift();
      else pending[0] = c.subarray(k);
    }
    have -= n;
    return out;
  };
  sock.on('data', (chunk: Uint8Array) => {
    let c: Uint8Array = chunk;
    for (;;) {
      if (body) {
        // Filling a payload: copy straight from the chunk.
        const k = Math.min(c.length, body.length - filled);
        body.set(c.subarray(0, k), filled);
        filled += k;
        c = c.subarray(k);
        if (filled < body.length) return;
        const f = { head: head!, body };
        head = null;
        body = null;
        onFrame(f);
        continue;
      }
      if (c.length) {
        pending.push(c);
        have += c.length;
        c = EMPTY;
      }
      if (have < 8) return;
      const pre = take(8);
      const dv = new DataView(pre.buffer);
      const hl = dv.getUint32(0, true), bl = dv.getUint32(4, true);
      if (have < hl) {
        // Put the prefix back and wait for the rest of the header.
        pending.unshift(pre);
        have += 8;
        return;
      }
      head = JSON.parse(dec.decode(take(hl)));
      if (bl === 0) {
        const f = { head: head!, body: EMPTY };
        head = null;
        onFrame(f);
        continue;
      }
      body = new Uint8Array(bl);
      filled = 0;
      // The rest of what is buffered goes into the payload.
      const rest = pending;
      pending = [];
      have = 0;
      for (const r of rest) {
        const k = Math.min(r.length, body.length - filled);
        body.set(r.subarray(0, k), filled);
        filled += k;
        if (k < r.length) {
          pending.push(r.subarray(k));
          have += r.length - k;
        }
      }
      if (filled === body.length) {
        const f = { head: head!, body };
        head = null;
        body = null;
        // Remaining bytes stay in `pending`; handle them on the next turn of the loop.
        onFrame(f);
        continue;
      }
      if (have) throw new Error('webtorch wire: bytes after an unfilled payload');
      return;
    }
  });
}

/** Parses `host:port`, as in `tcp://host:port` and MASTER_ADDR/MASTER_PORT. */
export function hostPort(what: string, s: string): { host: string; port: number } {
  const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(s);
  if (!m || !m[1]) throw new RangeError(`${what}: expected host:port, got '${s}'`);
  const port = Number(m[2]);
  if (port < 0 || port > 65535) throw new RangeError(`${what}: port ${port} is out of range`);
  return { host: m[1], port };
}

/** Resolves once `server` listens; its port. */
export function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const a = server.address();
      resolve(typeof a === 'object' && a ? a.port : port);
    });
  });
}
