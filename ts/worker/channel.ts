/**
 * The hot path between a device's caller and its worker: command batches, reads and syncs.
 *
 * Why not comlink: comlink made every call a UUID, a wrapped message, a listener per pending
 * call and a reply even for `submit`, which nobody awaits, and the two thread crossings of a
 * small read cost as much as its GPU work on the H100. Here, after `init` (still comlink), every call
 * goes over one MessagePort of its own as `[id, method, args]`, with a numeric id, and only calls
 * with an id > 0 are answered (`submit` has none). One port carries everything after `init`, so
 * batches, reads and syncs arrive in the order the caller posted them.
 *
 * Small results come back through a shared reply slot where the platform has SharedArrayBuffer
 * and `Atomics.waitAsync` (see below); everything else as `[id, ok, value, answer]` messages, a
 * read's bytes transferred, an error as its name and message (so `OutOfMemoryError` keeps its
 * name). Answers are numbered, so that they settle in the order the worker gave them.
 */
import { env, onPortMessage } from '../platform.js';

/** A method call that expects no answer (`submit`). */
const NO_REPLY = 0;

/** What a rejected call carries back: enough to rebuild the error with its name. */
interface WireError {
  name: string;
  message: string;
  stack?: string;
}

/** Turns a thrown value into its wire form. */
const toWire = (e: unknown): WireError =>
  e instanceof Error ? { name: e.name, message: e.message, stack: e.stack } : { name: 'Error', message: String(e) };

/** Rebuilds a thrown error on the caller's side. */
const fromWire = (w: WireError): Error => {
  const e = new Error(w.message);
  e.name = w.name;
  if (w.stack) e.stack = w.stack;
  return e;
};

// ---- The shared reply slot ----
//
// Layout (Int32 words): [0] the id of the call whose answer is in the slot, 0 when the slot is
// free; [1] its kind (see `Slot`); [2] its byte length; [3] its answer number (see `nextAnswer`);
// [4] the doorbell (see `BELL`); [5] unused; then up to `SLOT_BYTES` bytes (8-aligned, for a
// number). The worker takes the slot with a
// compare-exchange of word 0 from 0 to the call's id (if an answer sits there unread, it answers
// by message instead) and notifies word 0; the caller, waiting on it with `Atomics.waitAsync`
// while any call is pending, copies the answer out and frees the slot (stores 0).

/**
 * Whether to poll this time: after a poll that found nothing, the next 1, 2, 4 … 64 chances are
 * skipped, so that a busy device or a machine without a free core does not pay for polls that fail.
 */
class Backoff {
  private skips = 0;
  private left = 0;
  /** True when this chance is skipped. */
  skip(): boolean {
    if (this.left === 0) return false;
    this.left--;
    return true;
  }
  hit(): void {
    this.skips = 0;
  }
  miss(): void {
    this.left = this.skips = Math.min(64, this.skips * 2 || 1);
  }
}

/** The largest result that goes through the shared slot; larger ones are transferred in a message. */
export const SLOT_BYTES = 4096;
const HEADER = 6;
/**
 * The doorbell: the caller adds 1 to this word after every message it posts, so that a worker
 * polling for its next call (see `serveCalls`) sees it with a load and takes the message off its
 * port at once, without a turn of its event loop. Nothing sleeps on it: a worker that stopped
 * polling is woken by the message itself, through its event loop.
 */
const BELL = 4;
const enum Slot { Bytes = 1, Number = 2, Void = 3 }

/**
 * Answers are numbered in the order the worker gives them, whichever way they travel, and the
 * caller settles them in that order: an answer through the slot can overtake a message sent
 * before it, and is then held until that message arrives.
 */
const nextAnswer = (n: number): number => (n === 0x7fffffff ? 1 : n + 1);

type WaitAsync = (a: Int32Array, index: number, value: number, timeout?: number) => { async: boolean; value: Promise<string> | string };

/** Whether this platform can answer through a shared slot (and `WEBTORCH_REPLY_SLOT=0` does not turn it off). */
export function canUseReplySlot(): boolean {
  if (env('WEBTORCH_REPLY_SLOT') === '0') return false;
  if (typeof SharedArrayBuffer === 'undefined' || typeof (Atomics as { waitAsync?: WaitAsync }).waitAsync !== 'function') return false;
  return (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated !== false;
}

/** The caller's end: numbered calls over a port, answered by message or through the shared slot. */
export class CallPort {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  /** The shared slot (null without one) and its words. */
  readonly slot: SharedArrayBuffer | null;
  private readonly words: Int32Array | null;
  /** How many answers came through the slot and by message (the tests check the path taken). */
  readonly answered = { slot: 0, message: 0, polled: 0 };
  /** The number of the next answer to settle, and answers that arrived ahead of it. */
  private expected = 1;
  private readonly early = new Map<number, () => void>();

  constructor(private readonly port: MessagePort, useSlot = canUseReplySlot()) {
    this.slot = useSlot ? new SharedArrayBuffer(HEADER * 4 + SLOT_BYTES) : null;
    this.words = this.slot && new Int32Array(this.slot);
    onPortMessage(port, (m) => {
      const [id, ok, value, n] = m as [number, number, unknown, number];
      this.answered.message++;
      this.inOrder(n, () => this.settle(id, ok, value));
    });
    // The port never keeps the process alive by itself: the client refs the worker while a call is awaited.
    (port as { unref?: () => void }).unref?.();
  }

  /**
   * Calls `method` in the worker; resolves with its result. With `spinMs`, polls the reply slot
   * that long first (see `spinFor`): for a call the worker should answer within microseconds.
   */
  call<T>(method: string, args: unknown[], transfer: Transferable[] = [], spinMs = 0): Promise<T> {
    const id = this.nextId++;
    // Ids stay in the int32 range of the slot's word 0 (never 0, which means a free slot).
    if (this.nextId > 0x7fffffff) this.nextId = 1;
    const p = new Promise<T>((resolve, reject) => this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject }));
    this.port.postMessage([id, method, args], transfer);
    if (this.words) {
      this.ring(this.words);
      if (spinMs > 0) this.spinFor(id, spinMs);
      if (this.pending.size) this.watch();
    }
    return p;
  }

  /** Sends a call that is not answered. */
  send(method: string, args: unknown[], transfer: Transferable[] = []): void {
    this.port.postMessage([NO_REPLY, method, args], transfer);
    if (this.words) this.ring(this.words);
  }

  /** Rings the worker's doorbell (a message is on its port). */
  private ring(w: Int32Array): void {
    Atomics.add(w, BELL, 1);
  }

  /**
   * Polls the slot for up to `ms` for the answer to call `id` (a small read the worker should
   * answer within microseconds), so that it settles without the thread wake-up of `waitAsync`.
   */
  private spinFor(id: number, ms: number): void {
    const w = this.words!;
    if (this.watching) return; // answers go to the watch (an earlier call still waits)
    if (this.spinBackoff.skip()) return;
    const until = performance.now() + ms;
    for (;;) {
      const at = Atomics.load(w, 0);
      if (at !== 0) {
        this.take(at);
        if (!this.pending.has(id)) {
          this.spinBackoff.hit();
          return void this.answered.polled++;
        }
      } else if (performance.now() > until) return this.spinBackoff.miss();
    }
  }

  /** Fewer polls after polls that found nothing (a busy device, or a machine whose cores are all taken). */
  private readonly spinBackoff = new Backoff();

  /** Closes the port; calls still pending reject. */
  close(): void {
    this.port.close();
    for (const p of this.pending.values()) p.reject(new Error('webtorch: the device worker was closed'));
    this.pending.clear();
  }

  /** Runs `settle` for answer `n` in answer order (at once, or after the answers before it). */
  private inOrder(n: number, settle: () => void): void {
    if (n !== this.expected) return void this.early.set(n, settle);
    settle();
    this.expected = nextAnswer(n);
    for (let next = this.early.get(this.expected); next; next = this.early.get(this.expected)) {
      this.early.delete(this.expected);
      next();
      this.expected = nextAnswer(this.expected);
    }
  }

  private settle(id: number, ok: number, value: unknown): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    if (ok) p.resolve(value);
    else p.reject(fromWire(value as WireError));
  }

  /** One `waitAsync` on the slot at a time, while calls are pending. */
  private watching = false;

  /** Takes answers from the slot until no call is pending. */
  private watch(): void {
    if (this.watching) return;
    this.watching = true;
    const w = this.words!;
    const loop = (): void => {
      const id = Atomics.load(w, 0);
      if (id !== 0) {
        this.take(id);
        return loop();
      }
      if (this.pending.size === 0) {
        this.watching = false;
        return;
      }
      const r = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync(w, 0, 0);
      if (r.async) void (r.value as Promise<string>).then(loop);
      else loop();
    };
    loop();
  }

  /** Copies the answer to call `id` out of the slot and frees it. */
  private take(id: number): void {
    const w = this.words!, kind = w[1], n = w[2], answer = w[3];
    // A slot that cannot be read fails its call, never the watch (later answers still come).
    let value: unknown, ok = 1;
    try {
      if (kind === Slot.Bytes) value = new Uint8Array(this.slot!, HEADER * 4, n).slice().buffer;
      else if (kind === Slot.Number) value = new Float64Array(this.slot!, HEADER * 4, 1)[0];
    } catch (e) {
      (ok = 0), (value = toWire(e));
    }
    Atomics.store(w, 0, 0);
    this.answered.slot++;
    this.inOrder(answer, () => this.settle(id, ok, value));
  }
}

/**
 * How a worker polls its doorbell for the next call after an answer (Node only: it needs
 * `receiveMessageOnPort` to take a message off its port without a turn of the event loop).
 */
export interface Poll {
  /** How long it polls after it has answered every call, in ms. */
  ms: number;
  /** Takes the next message off `port` now, if one is there. */
  receive(port: MessagePort): { message: unknown } | undefined;
  /** Whether the worker has nothing in flight (only then may it hold its event loop). */
  quiet(): boolean;
}

/**
 * The worker's end: runs the calls that arrive on `port` against `api` and answers them.
 *
 * With `poll` (the device workers in Node), a worker that has just answered every call and has
 * nothing in flight polls the doorbell for a short while before it returns to its event loop, and
 * takes the next messages straight off the port: the caller's next op usually follows its answer
 * within tens of µs, and a sleeping thread's wake-up alone costs about as much on a virtual
 * machine (CUDA's default synchronization spins too, where cores allow). It returns to its event
 * loop after a call whose answer is still to come (its promise needs the loop) and when the poll
 * ends; polls back off after polls that found nothing (`Backoff`).
 */
export function serveCalls(port: MessagePort, api: object, slot: SharedArrayBuffer | null, poll: Poll | null = null): void {
  const words = slot && new Int32Array(slot);
  const methods = api as Record<string, (...args: unknown[]) => unknown>;
  let answers = 0;
  /** Calls received and not answered yet. */
  let unanswered = 0;
  /** Answers through the slot when the result fits and the slot is free; false otherwise. */
  const inSlot = (id: number, value: unknown, answer: number): boolean => {
    if (!words) return false;
    let kind: Slot, n = 0;
    if (value instanceof ArrayBuffer && value.byteLength <= SLOT_BYTES) (kind = Slot.Bytes), (n = value.byteLength);
    else if (typeof value === 'number') (kind = Slot.Number), (n = 8);
    else if (value === undefined) kind = Slot.Void;
    else return false;
    // Word 0 is written last (by the exchange), so the header is written while the slot is still ours alone.
    if (Atomics.load(words, 0) !== 0) return false;
    words[1] = kind;
    words[2] = n;
    words[3] = answer;
    if (kind === Slot.Bytes) new Uint8Array(slot!, HEADER * 4, n).set(new Uint8Array(value as ArrayBuffer));
    else if (kind === Slot.Number) new Float64Array(slot!, HEADER * 4, 1)[0] = value as number;
    if (Atomics.compareExchange(words, 0, 0, id) !== 0) return false;
    Atomics.notify(words, 0);
    return true;
  };
  /** Runs one call; true when its answer is still to come (then the event loop must turn). */
  const handle = (m: unknown): boolean => {
    const [id, method, args] = m as [number, string, unknown[]];
    let result: unknown;
    try {
      result = methods[method](...args);
    } catch (e) {
      result = Promise.reject(e);
    }
    if (id === NO_REPLY) {
      if (result instanceof Promise) result.catch(() => undefined);
      return false;
    }
    unanswered++;
    const fail = (e: unknown, answer: number) => port.postMessage([id, 0, toWire(e), answer]);
    void Promise.resolve(result).then(
      (value) => {
        const answer = (answers = nextAnswer(answers));
        try {
          if (inSlot(id, value, answer)) return;
          port.postMessage([id, 1, value, answer], value instanceof ArrayBuffer ? [value] : []);
        } catch (e) {
          fail(e, answer); // a result that cannot be sent fails its call, never the worker
        }
      },
      (e: unknown) => fail(e, (answers = nextAnswer(answers))),
    ).finally(answered);
    return true;
  };

  let polling = false;
  const pollBackoff = new Backoff();
  /** After each answer: once none is left to give, the worker polls for the next call. */
  const answered = (): void => {
    if (--unanswered === 0) pollSoon();
  };
  /** Polls once the tasks already queued have run (the answers' promises, the executor's own tasks). */
  const pollSoon = (): void => {
    if (!poll || !words || polling || pollBackoff.skip()) return;
    polling = true;
    setImmediate(pollNow);
  };
  const pollNow = (): void => {
    polling = false;
    const w = words!, until = performance.now() + poll!.ms;
    let rung = Atomics.load(w, BELL);
    for (;;) {
      if (unanswered || !poll!.quiet()) return;
      const got = poll!.receive(port);
      if (got) {
        pollBackoff.hit();
        if (!handle(got.message)) continue;
        return; // its answer needs the event loop; the poll starts again once it is given
      }
      // A message is on its way once the bell has moved (posting is not atomic with the ring).
      for (;;) {
        const now = Atomics.load(w, BELL);
        if (now !== rung) {
          rung = now;
          break;
        }
        if (performance.now() > until) return pollBackoff.miss();
      }
    }
  };

  onPortMessage(port, (m) => {
    handle(m);
  });
}
