/**
 * A device worker's events and stream marks, written on the stream board (ts/worker/streams/board.ts).
 *
 * A `record` asks the backend for a mark of the work recorded so far (`Backend.mark`), and
 * writes the board when the device has finished it: the event's version and time, and the
 * stream's mark. A `wait` on the same device only needs the record to have been *run* (`ran`,
 * which the scheduler asks before it runs the wait): the queue orders the rest. Whatever waits
 * for an event to *finish* (a `signal` to another device, a sync on the event) registers with
 * `whenFinished`.
 */
import { Board } from './board.js';
import type { Backend } from '../backend.js';
import type { Command } from '../../ir/commands.js';

/** One device's events. */
export class Events {
  /** The board the worker writes (replaced at `init` by the one the calling thread reads). */
  board = Board.create(null);
  /** Per event slot: the version whose record has run here (a same-device `wait` needs no more). */
  private readonly recorded = new Map<number, number>();
  /** Per event slot: callbacks waiting for a version to finish (`signal`, an event's sync). */
  private readonly finishing = new Map<number, { version: number; then: () => void }[]>();

  /**
   * @param backend marks the work recorded so far
   * @param fail records a device error for the next sync point
   */
  constructor(private readonly backend: Backend, private readonly fail: (op: string, e: unknown) => void) {}

  /** `record`: the event's version is recorded now, and finished once the device gets there. */
  record(cmd: Extract<Command, { k: 'record' }>, stream: number): void {
    this.recorded.set(cmd.slot, Math.max(this.recorded.get(cmd.slot) ?? 0, cmd.version));
    const { slot, version, mark } = cmd;
    void this.backend.mark(cmd.timing).then((time) => {
      this.finished(slot, version, time);
      this.board.finishStream(stream, mark);
    }, (e: unknown) => this.fail('record', e));
  }

  /** `mark`: the stream's mark is finished once the device gets there. */
  mark(cmd: Extract<Command, { k: 'mark' }>, stream: number): void {
    const mark = cmd.mark;
    void this.backend.mark(false).then(() => this.board.finishStream(stream, mark), (e: unknown) => this.fail('mark', e));
  }

  /** Whether the record of event (`slot`, `version`) has run on this device (a `wait` may run). */
  ran(slot: number, version: number): boolean {
    return (this.recorded.get(slot) ?? 0) >= version;
  }

  /** Calls `then` once event (`slot`, `version`) has finished on the device. */
  whenFinished(slot: number, version: number, then: () => void): void {
    if (this.board.eventVersion(slot) >= version) return then();
    const list = this.finishing.get(slot) ?? [];
    list.push({ version, then });
    this.finishing.set(slot, list);
  }

  private finished(slot: number, version: number, time: number): void {
    this.board.finishEvent(slot, version, time);
    const list = this.finishing.get(slot);
    if (!list) return;
    const left = list.filter((w) => w.version > version);
    if (left.length) this.finishing.set(slot, left);
    else this.finishing.delete(slot);
    for (const w of list) if (w.version <= version) w.then();
  }
}
