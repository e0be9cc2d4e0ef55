/**
 * The channels between device workers: each pair of workers gets one MessageChannel, opened on
 * first use (a copy between devices, a wait on another device's event, a collective), and each
 * message on it a tag that the sender and the receiver agree on.
 */
import { clientOf, type Device } from '../device.js';
import { emit } from './dispatch.js';

let nextTag = 1;

/** @internal A new tag for a message between two workers (a copy, an event's signal). */
export const newTag = (): number => nextTag++;

/** @internal Opens a MessageChannel between two devices' workers, once per pair of worker lifetimes. */
export function connect(a: Device, b: Device): void {
  const ca = clientOf(a), cb = clientOf(b);
  if (ca.peers.has(cb.name)) return;
  const { port1, port2 } = new MessageChannel();
  emit(a, { k: 'connect', peer: cb.name, port: port1 }, [port1]);
  emit(b, { k: 'connect', peer: ca.name, port: port2 }, [port2]);
  ca.peers.add(cb.name);
  cb.peers.add(ca.name);
}
