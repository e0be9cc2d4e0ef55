/**
 * Events: PyTorch's `torch.cuda.Event`, in camelCase.
 *
 * An event is bound to a device at its first record and takes one of that device's event slots
 * (ts/worker/board.ts); each record gives it a new version. The worker writes the slot's finished
 * version, and its time, on the board once the device has finished the work recorded before it,
 * so `query()` and `elapsedTime()` are synchronous, as in PyTorch. Waiting on an event of the same
 * device only orders commands (the device's queue does the rest); waiting on another device's
 * event sends that device a `signal`, which answers over the worker-to-worker port once the event
 * has finished, while the waiting stream holds its later work.
 *
 * Note [Events never recorded]. As in PyTorch, an event that was never recorded counts as
 * finished: `query()` is true, `synchronize()` resolves, `wait()` is a no-op.
 */
import { clientOf, type Device } from '../device.js';
import { connect, newTag } from '../ops/copy.js';
import { bindArgs, type PyArgs } from '../ops/options.js';
import { EVENT_SLOTS } from '../worker/board.js';
import type { DeviceClient } from './client.js';
import { currentStream, Stream } from './streams.js';

/** A device's event slots: free ones, and the last version given in each. */
class Slots {
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
const slots = (c: DeviceClient): Slots => {
  let s = slotsOf.get(c);
  if (!s) slotsOf.set(c, (s = new Slots(c.name)));
  return s;
};
/** Gives an event's slot back when the event is collected. */
const released = new FinalizationRegistry<{ client: DeviceClient; slot: number }>(({ client, slot }) => slots(client).give(slot));

/** Where an event was last recorded. */
interface Recorded {
  device: Device;
  client: DeviceClient;
  slot: number;
  version: number;
}

/**
 * A synchronisation marker on a stream (`torch.cuda.Event`):
 * `new torch.gpu.Event({enableTiming, blocking, interprocess})`.
 */
export class Event {
  /** Whether `elapsedTime` can be asked of it. */
  readonly enableTiming: boolean;
  /** Accepted as in PyTorch; a wait in webtorch never blocks the calling thread. */
  readonly blocking: boolean;
  /** Always false: webtorch's devices are workers of one process. */
  readonly interprocess: boolean;
  private at: Recorded | null = null;

  constructor(...args: PyArgs<[enableTiming: boolean, blocking: boolean, interprocess: boolean], { enableTiming?: boolean; blocking?: boolean; interprocess?: boolean }>) {
    const o = bindArgs('Event', ['enableTiming', 'blocking', 'interprocess'], args, { enableTiming: false, blocking: false, interprocess: false });
    if (o.interprocess) {
      throw new Error('Event(): interprocess events are not supported: webtorch\'s devices are workers of one process, so there is no other process to share an event with');
    }
    this.enableTiming = !!o.enableTiming;
    this.blocking = !!o.blocking;
    this.interprocess = false;
  }

  /** The device the event was recorded on, or null before its first record. */
  get device(): Device | null {
    return this.at?.device ?? null;
  }

  /** Records the event on `stream` (the current stream by default): it finishes when the stream's work so far has. */
  record(stream?: Stream): void {
    const s = stream ?? currentStream();
    if (!(s instanceof Stream)) throw new TypeError(`Event.record: expected a torch.gpu.Stream, got ${String(s)}`);
    const client = clientOf(s.device);
    if (this.at && this.at.device !== s.device) {
      throw new Error(`Event device ${this.at.device} does not match recording stream's device ${s.device}.`);
    }
    if (!this.at) {
      const slot = slots(client).take();
      this.at = { device: s.device, client, slot, version: 0 };
      released.register(this, { client, slot });
    }
    const at = this.at;
    at.version = slots(client).version(at.slot);
    client.enqueue({ k: 'record', slot: at.slot, version: at.version, mark: client.nextMark(s.streamId), timing: this.enableTiming }, undefined, s.streamId);
  }

  /** Later work on `stream` (the current stream by default) waits for this event's last record; a no-op if it was never recorded. */
  wait(stream?: Stream): void {
    const s = stream ?? currentStream();
    if (!(s instanceof Stream)) throw new TypeError(`Event.wait: expected a torch.gpu.Stream, got ${String(s)}`);
    const at = this.at;
    if (!at) return; // Note [Events never recorded]
    if (s.device === at.device) {
      clientOf(s.device).enqueue({ k: 'wait', slot: at.slot, version: at.version }, undefined, s.streamId);
      return;
    }
    connect(at.device, s.device);
    const tag = newTag();
    at.client.enqueue({ k: 'signal', peer: String(s.device), tag, slot: at.slot, version: at.version });
    clientOf(s.device).enqueue({ k: 'waitSignal', peer: String(at.device), tag }, undefined, s.streamId);
  }

  /** Whether the work before the last record has finished (true if never recorded). Synchronous, from the board. */
  query(): boolean {
    const at = this.at;
    return !at || at.client.board.eventVersion(at.slot) >= at.version;
  }

  /** Resolves once the work before the last record has finished. */
  async synchronize(): Promise<void> {
    const at = this.at;
    if (!at || this.query()) return;
    await at.client.sync({ slot: at.slot, version: at.version });
  }

  /**
   * Milliseconds from this event's record to `end`'s (`start.elapsedTime(end)`): the GPU's own
   * timestamps where the adapter has `timestamp-query` (`getDeviceProperties().eventTiming`),
   * else the worker's clock when it saw each record finish. Both events need `enableTiming`,
   * a record on the same device, and to have finished.
   */
  elapsedTime(end: Event): number {
    if (!(end instanceof Event)) throw new TypeError(`elapsedTime: expected a torch.gpu.Event, got ${String(end)}`);
    if (!this.enableTiming || !end.enableTiming) throw new Error("Both events must be created with argument 'enableTiming=true'.");
    const a = this.at, b = end.at;
    if (!a || !b) throw new Error('Both events must be recorded before calculating elapsed time.');
    if (a.device !== b.device) throw new Error(`Both events must be recorded on the same device to calculate elapsed time, got ${a.device} and ${b.device}.`);
    if (!this.query() || !end.query()) {
      throw new Error('Both events must have completed before calculating elapsed time (CUDA error: device not ready); await end.synchronize() first.');
    }
    return b.client.board.eventTime(b.slot) - a.client.board.eventTime(a.slot);
  }

  toString(): string {
    return `<torch.gpu.Event ${this.at ? `device=${this.at.device} version=${this.at.version}` : 'uninitialized'}>`;
  }
}
