/**
 * The calling thread as a device's peer, for collectives between processes.
 *
 * A device worker already exchanges bytes with peers in stream order (`send`, and `recv`, which
 * holds the stream until the bytes arrive; ts/worker/peers.ts). The bridge opens one such
 * channel between a device's worker and this thread, under the peer name `host`. A collective
 * then queues, on the rank's device, a `send` of its bytes to the host and a `recv` of the result
 * from the host, and returns: the host exchanges the bytes with the other processes over sockets
 * and posts the result, which releases the device's stream. So a collective is issued without
 * waiting, as NCCL's are, and the work queued after it (the optimizer step after DDP's gradient
 * all-reduce) waits on the device, never in the calling thread.
 */
import type { Device } from '../device.js';
import { clientOf } from '../device.js';
import { elementSize } from '../dtype.js';
import { newTag } from '../runtime/peers.js';
import { emit } from '../runtime/dispatch.js';
import type { DeviceClient } from '../runtime/client.js';
import type { Tensor } from '../tensor.js';
import { onPortMessage } from '../platform.js';

/** The peer name of the calling thread, as a device worker sees it. */
export const HOST = 'host';

/** One device's channel to this thread. */
class Bridge {
  private mailbox = new Map<number, Uint8Array | Error>();
  private waiting = new Map<number, (d: Uint8Array | Error) => void>();
  constructor(readonly port: MessagePort) {
    onPortMessage(port, (msg) => {
      const { tag, data, error, host } = msg as { tag: number; data: ArrayBuffer; error?: string; host?: unknown };
      if (host) return; // the cpu device announces its memory on every new port
      const d = error === undefined ? new Uint8Array(data) : new Error(error);
      const w = this.waiting.get(tag);
      if (w) {
        this.waiting.delete(tag);
        w(d);
      } else this.mailbox.set(tag, d);
    });
    (port as { unref?: () => void }).unref?.();
  }

  /** The bytes the device sent with `tag`. */
  take(tag: number): Promise<Uint8Array> {
    const have = this.mailbox.get(tag);
    const p = have !== undefined
      ? Promise.resolve(have)
      : new Promise<Uint8Array | Error>((res) => this.waiting.set(tag, res));
    if (have !== undefined) this.mailbox.delete(tag);
    return p.then((d) => {
      if (d instanceof Error) throw d;
      return d;
    });
  }

  /** Gives the device's `recv` with `tag` its bytes (or an error, which fails the device's stream). */
  post(tag: number, data: Uint8Array | Error): void {
    if (data instanceof Error) this.port.postMessage({ tag, data: new ArrayBuffer(0), error: data.message });
    else {
      const copy = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength && data.buffer instanceof ArrayBuffer ? data.buffer : data.slice().buffer;
      this.port.postMessage({ tag, data: copy }, [copy as ArrayBuffer]);
    }
  }
}

const bridges = new WeakMap<DeviceClient, Bridge>();

/** The bridge to `dev`'s worker (opened on first use, per worker lifetime). */
export function bridgeOf(dev: Device): Bridge {
  const c = clientOf(dev);
  let b = bridges.get(c);
  if (!b) {
    const { port1, port2 } = new MessageChannel();
    emit(dev, { k: 'connect', peer: HOST, port: port1 }, [port1]);
    b = new Bridge(port2);
    bridges.set(c, b);
  }
  return b;
}

function bytesOf(t: Tensor): { id: number; byteOffset: number; bytes: number } {
  const es = elementSize(t.dtype);
  return { id: t.storage.id, byteOffset: t.storage.byteOffset + t._offset * es, bytes: t.numel() * es };
}

/** Queues a send of contiguous `t` to this thread; resolves with its bytes when they arrive. */
export function toHost(t: Tensor): Promise<Uint8Array> {
  const b = bytesOf(t);
  if (!b.bytes) return Promise.resolve(new Uint8Array(0));
  const br = bridgeOf(t.device), tag = newTag();
  emit(t.device, { k: 'send', peer: HOST, tag, id: b.id, byteOffset: b.byteOffset, bytes: b.bytes });
  const p = br.take(tag);
  p.catch(() => {}); // a collective that failed before reading it does not make an unhandled rejection
  return p;
}

/** Queues a receive into contiguous `t` of bytes this thread will post; returns the poster. */
export function fromHost(t: Tensor): (data: Uint8Array | Error) => void {
  const b = bytesOf(t);
  if (!b.bytes) return () => {};
  const br = bridgeOf(t.device), tag = newTag();
  emit(t.device, { k: 'recv', peer: HOST, tag, id: b.id, byteOffset: b.byteOffset });
  let posted = false;
  return (data) => {
    if (posted) return;
    posted = true;
    if (!(data instanceof Error) && data.byteLength !== b.bytes) data = new Error(`expected ${b.bytes} bytes from the other ranks, got ${data.byteLength}`);
    br.post(tag, data);
  };
}
