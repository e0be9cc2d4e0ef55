/**
 * The event slots of each device (ts/worker/streams/board.ts): an event takes one at its first record and
 * gives it back when it is collected; each record gives the slot a new version.
 */
import { EVENT_SLOTS } from '../worker/streams/board.js';
import type { DeviceClient } from './client.js';

/** A device's event slots: free ones, and the last version given in each. */
export class Slots {
  private readonly free: number[] = [];
  private next = 0;
  private readonly versions = new Int32Array(EVENT_SLOTS);

  constructor(private readonly name: string) {}

  take(): number {
    const s = this.free.pop() ?? this.next++;
    if (s >= EVENT_SLOTS) {
      this.next--;
      throw new Error(`too many live events on ${this.name}: ${EVENT_SLOTS} at most`);
    }
    return s;
  }

  give(slot: number): void {
    this.free.push(slot);
  }

  /** The next version of a slot (versions only grow, even across events that shared the slot). */
  version(slot: number): number {
    return ++this.versions[slot];
  }
}

const slotsOf = new WeakMap<DeviceClient, Slots>();
export const slots = (c: DeviceClient): Slots => {
  let s = slotsOf.get(c);
  if (!s) slotsOf.set(c, (s = new Slots(c.name)));
  return s;
};
/** Gives an event's slot back when the event is collected. */
export const released = new FinalizationRegistry<{ client: DeviceClient; slot: number }>(({ client, slot }) => slots(client).give(slot));
