/**
 * Concurrency mechanisms that a single ordered queue would NOT make pass (issue 33): each test
 * holds one stream of gpu:0 back on purpose and reads values that are only right if the
 * mechanism under test waited, and each was checked against a mutation of the one line that
 * implements that mechanism (edit the line, rebuild, run: the test fails; restore, rebuild, run:
 * it passes).
 *
 * How a stream is held back: stream A of gpu:0 receives `long.copy_`'s bytes from gpu:1, where
 * `long` is the end of a chain of identity products that keeps gpu:1 busy; a `recv` from a GPU
 * (unlike one from the cpu, a fence for every stream) holds only A. The destination is first
 * filled with -1 on A, so a reader that does not wait sees -1s, never plausible values.
 *
 * MUTATION RECORD (file:line as on main, the change, the failure seen):
 * Line numbers are those of commit 13c0385 (this branch's base); each mutation was
 * built with `npm run build:ts && npm run build:bundle` and this file run with `-t` on the test.
 * - stream.waitEvent: ts/worker/executor.ts:101, the scheduler's ready check
 *   `(cmd) => cmd.k !== 'wait' || events.ran(cmd.slot, cmd.version)` made `(cmd) => true` (the
 *   worker's `wait` never holds). Failed: "y + 1 computed on B after B.waitEvent(A's event):
 *   expected '65536 of 65536 wrong, first at 0: 0 instead of 1' to be 'all right'" (the waitStream
 *   test failed too under this mutation: "… -2 instead of 0 …").
 * - stream.waitStream: ts/runtime/streams.ts:110 `this.waitEvent(stream.recordEvent());` made
 *   `stream.recordEvent();` (records, never waits). Failed: "y * 2 computed on B after
 *   B.waitStream(A): expected '65536 of 65536 wrong, first at 0: -2 instead of 0' to be 'all right'".
 * - event.synchronize(): ts/runtime/streams.ts:266 `await at.client.sync({ slot: at.slot, version:
 *   at.version });` deleted. Failed: "y read from the default stream after e.synchronize(): expected
 *   '65536 of 65536 wrong, first at 0: -1 instead of 0' to be 'all right'" (with the query check
 *   first, an earlier version failed on "query() after synchronize(): expected false to be true").
 * - synchronize(gpu:0) waits for every stream: ts/worker/executor.ts:178 `if ('all' in target)
 *   return scheduler.whenDone().then(synced);` made `… return onStream(0, synced);` (waits for the
 *   default stream only). Failed: "y read from the default stream after synchronize(gpu:0):
 *   expected '65536 of 65536 wrong, first at 0: -1 instead of 0' to be 'all right'". (A.query()
 *   still answered true: after an awaited sync the calling thread marks the streams finished
 *   itself, so a query is no evidence that a sync waited.)
 * - pinned host→device waits for the cpu's work: ts/runtime/pinned.ts:110 `e.ready.wait(gpu);`
 *   (in uploadPinned) deleted. Failed: "g + 1 on the copy's stream: expected '64860 of 65536 wrong,
 *   first at 1: 1 instead of 2' to be 'all right'". (Without the warm-up copy at the top of the
 *   test this mutation passed: the first pinned copy waits for the cpu's memory to arrive, which
 *   the busy cpu sends only after its queued work.)
 * - pinned source freed at once: ts/runtime/pinned.ts:118 `src.storage.recordStream(reads);`
 *   deleted. Failed: "the copy of the freed pinned tensor: expected '65536 of 65536 wrong, first at
 *   0: 99 instead of 0' to be 'all right'" (the cpu reused the block for a 99-filled tensor first).
 * - pinned device→host then cpu work: ts/runtime/pinned.ts:141 `e.written.wait(Stream.of(CPU, 0));`
 *   deleted. Failed: "h + 1 on the cpu: expected '65536 of 65536 wrong, first at 0: 0 instead of 1'
 *   to be 'all right'" (the cpu added 1 to the -1s before the GPU wrote h).
 * - makeGraphedCallables replays: ts/nn/graphed.ts (then ts/runtime/graphed.ts):104 `fwd.replay();` deleted. Failed (cpu
 *   and gpu:0): "the two calls' outputs differ: expected [ 0, 0, 0, 0, 0, 0 ] to not deeply equal
 *   [ 0, 0, 0, 0, 0, 0 ]". And ts/nn/graphed.ts:136, the module's forward made
 *   `(...args) => original.apply(module, args)` (the graphed module quietly runs eagerly, with
 *   right values). Failed (cpu and gpu:0): "forward calls during the graphed calls: expected 6 to be 4".
 * - torch graph replays: ts/worker/executor.ts:70 `case 'replay': return capture.replay(cmd);` made
 *   `case 'replay': return;`. Failed (cpu and gpu:0): "expected [ [ 0, 0, 0, 0 ], … ] to deeply
 *   equal [ [ 1.5, 0, 3, 4 ], [ 2, 1, -1, 13 ] ]".
 * Under every mutation the leak check after the failing test failed too (the test stopped before
 * its disposes); that is a consequence, not the evidence. With ts/ restored and rebuilt, all pass.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { longWork } from './long-work.js';
import { suiteDevices } from '../devices.js';

const { nn } = torch;
const devices = suiteDevices();
const d = 'gpu:0', other = 'gpu:1';
const N = 256;
/** Identity products on gpu:1 before its result is sent: keeps gpu:1 busy well past the time gpu:0 needs to run what is not held. */
const STEPS = 40;

/** Small integers (exact through products with the identity): element i is i % 97. */
const data = (device: string) => torch.tidy(() => torch.arange(N * N, { device, dtype: 'float32' }).remainder(97).reshape([N, N]));
const want = (i: number) => i % 97;


/** Queues long work on gpu:1 whose result is `data` exactly; returns the tensors to free and the result. */
function busyOther(): { src: torch.Tensor; long: torch.Tensor } {
  const src = data(other);
  return { src, long: longWork(src, STEPS) };
}

/**
 * On stream `a` of gpu:0: `y` filled with -1, then `y.copy_(long)` from gpu:1 (a `recv` that holds
 * `a` until gpu:1 has finished its long work and sent the bytes).
 */
function heldCopy(a: torch.gpu.Stream, long: torch.Tensor): torch.Tensor {
  return torch.gpu.stream(a, () => {
    const y = torch.full([N, N], -1, { device: d });
    y.copy_(long);
    return y;
  });
}

/** How many elements of `t` differ from `f(i)`, and the first that does. */
async function wrong(t: torch.Tensor, f: (i: number) => number): Promise<string> {
  const v = await t.data();
  let bad = 0, first = -1;
  for (let i = 0; i < v.length; i++) {
    if (Number(v[i]) !== f(i)) {
      bad++;
      if (first < 0) first = i;
    }
  }
  return bad ? `${bad} of ${v.length} wrong, first at ${first}: ${Number(v[first])} instead of ${f(first)}` : 'all right';
}

describe('a stream wait that waits', () => {
  it('stream.waitEvent: B, waiting on an event recorded on A after A\'s held copy, computes from the copied values', async () => {
    expect(devices).toContain(d);
    const { src, long } = busyOther();
    const A = new torch.gpu.Stream(d), B = new torch.gpu.Stream(d);
    const y = heldCopy(A, long);
    const e = new torch.gpu.Event();
    e.record(A);
    B.waitEvent(e);
    const r = torch.gpu.stream(B, () => y.add(1));
    await B.synchronize();
    expect(await wrong(r, (i) => want(i) + 1), 'y + 1 computed on B after B.waitEvent(A\'s event)').toBe('all right');
    await torch.gpu.synchronize(d);
    for (const t of [src, long, y, r]) t.dispose();
  }, 60_000);

  it('stream.waitStream: B, waiting for A, computes from the values of A\'s held copy', async () => {
    const { src, long } = busyOther();
    const A = new torch.gpu.Stream(d), B = new torch.gpu.Stream(d);
    const y = heldCopy(A, long);
    B.waitStream(A);
    const r = torch.gpu.stream(B, () => y.mul(2));
    await B.synchronize();
    expect(await wrong(r, (i) => 2 * want(i)), 'y * 2 computed on B after B.waitStream(A)').toBe('all right');
    await torch.gpu.synchronize(d);
    for (const t of [src, long, y, r]) t.dispose();
  }, 60_000);

  it('event.synchronize(): once it resolves, the copy recorded before the event has landed (read from the default stream)', async () => {
    const { src, long } = busyOther();
    const A = new torch.gpu.Stream(d);
    const y = heldCopy(A, long);
    const e = A.recordEvent();
    expect(e.query(), 'the event is not finished while A is held back').toBe(false);
    await e.synchronize();
    // The read runs on the default stream, which nothing holds: it sees y as it is in memory now.
    expect(await wrong(y, want), 'y read from the default stream after e.synchronize()').toBe('all right');
    expect(e.query(), 'query() after synchronize()').toBe(true);
    await torch.gpu.synchronize(d);
    for (const t of [src, long, y]) t.dispose();
  }, 60_000);
});

describe('torch.gpu.synchronize waits for every stream', () => {
  it('synchronize(gpu:0) from the default stream also waits for a held-back side stream', async () => {
    const { src, long } = busyOther();
    const A = new torch.gpu.Stream(d);
    const y = heldCopy(A, long);
    expect(torch.gpu.currentStream(d).streamId, 'the current stream is the default stream, not A').toBe(0);
    await torch.gpu.synchronize(d);
    expect(A.query(), 'A.query() after synchronize(gpu:0)').toBe(true);
    expect(await wrong(y, want), 'y read from the default stream after synchronize(gpu:0)').toBe('all right');
    for (const t of [src, long, y]) t.dispose();
  }, 60_000);
});

describe('pinned copies with nonBlocking: true', () => {
  it('host→device: the copy waits for the cpu\'s queued (slow) work on the pinned source; a kernel after it on its stream sees the values', async () => {
    // First a pinned copy that connects the cpu and gpu:0 (the GPU worker then knows the cpu's
    // memory): otherwise the copy below would wait for that, and a copy that did not wait for the
    // cpu's event would pass anyway.
    const w = torch.tidy(() => torch.ones([4]).pinMemory()), wg = w.to(d, { nonBlocking: true });
    expect(await wg.tolist()).toEqual([1, 1, 1, 1]);
    w.dispose();
    wg.dispose();
    const pinned = torch.empty([N, N], { pinMemory: true });
    pinned.fill_(-1); // queued on the cpu before the slow work: what a copy that does not wait reads
    const x = data('cpu');
    const slow = longWork(x, 12); // cpu matmuls, queued on the cpu worker
    pinned.copy_(slow); // the pinned source gets its values only after them
    const A = new torch.gpu.Stream(d);
    const [g, r] = torch.gpu.stream(A, () => {
      const g = pinned.to(d, { nonBlocking: true });
      return [g, g.add(1)];
    });
    await A.synchronize();
    expect(await wrong(r, (i) => want(i) + 1), 'g + 1 on the copy\'s stream').toBe('all right');
    for (const t of [pinned, x, slow, g, r]) t.dispose();
  }, 60_000);

  it('host→device: freeing the pinned source at once does not let the cpu reuse its memory before the held-back copy has read it', async () => {
    const { src, long } = busyOther();
    const pin = torch.tidy(() => data('cpu').pinMemory());
    const A = new torch.gpu.Stream(d);
    const [held, g] = torch.gpu.stream(A, () => {
      const held = long.to(d); // holds A until gpu:1 is done
      return [held, pin.to(d, { nonBlocking: true })]; // the pinned read comes after, on A
    });
    pin.dispose(); // as PyTorch allows: the caching host allocator keeps the block until the copy is done
    // New cpu tensors of the same size, filled at once by the cpu (not held): one would take pin's block if it were free.
    const over = Array.from({ length: 8 }, () => torch.full([N, N], 99, { dtype: 'float32' }));
    await A.synchronize();
    expect(await wrong(g, want), 'the copy of the freed pinned tensor').toBe('all right');
    for (const t of [src, long, held, g, ...over]) t.dispose();
  }, 60_000);

  it('device→host: cpu work queued after copy_(…, {nonBlocking}) into pinned memory sees the copied values', async () => {
    const { src, long } = busyOther();
    const A = new torch.gpu.Stream(d);
    const h = torch.empty([N, N], { pinMemory: true });
    h.fill_(-1); // what cpu work that does not wait for the copy sees
    const y = torch.gpu.stream(A, () => {
      const y = long.to(d); // holds A until gpu:1 is done
      h.copy_(y, { nonBlocking: true }); // the GPU writes h once A gets there
      return y;
    });
    const r = h.add(1); // cpu work after the copy
    expect(await wrong(r, (i) => want(i) + 1), 'h + 1 on the cpu').toBe('all right');
    await torch.gpu.synchronize(d);
    for (const t of [src, long, y, h, r]) t.dispose();
  }, 60_000);
});

/** A Linear layer whose forward counts its calls. */
class Counted extends nn.Module {
  lin = new nn.Linear(4, 3);
  calls = 0;
  forward(x: torch.Tensor): torch.Tensor {
    this.calls++;
    return this.lin.call(x);
  }
}

describe('graph replays really replay', () => {
  it.each(['cpu', 'gpu:0'])('makeGraphedCallables on %s: calls run no eager forward and read the new argument', async (dev) => {
    torch.manualSeed(0);
    const m = new Counted().to(dev);
    const sample = torch.zeros([2, 4], { device: dev });
    await torch.gpu.makeGraphedCallables(m, [sample]);
    const captured = m.calls;
    expect(captured, 'warmup and capture ran the forward').toBeGreaterThan(0);
    const xs = [[[1, 2, 3, 4], [5, 6, 7, 8]], [[-1, 0, 2, 1], [3, -2, 0.5, 1]]].map((v) => torch.tensor(v, { device: dev, dtype: 'float32' }));
    const got: number[][] = [], eager: number[][] = [];
    for (const x of xs) {
      const y = torch.noGrad(() => m.call(x));
      got.push([...(await y.data())]); // read before the next call: the output is the static output
      y.dispose();
    }
    expect(m.calls, 'forward calls during the graphed calls').toBe(captured);
    for (const x of xs) {
      const y = torch.noGrad(() => m.lin.call(x)); // the eager layer itself
      eager.push([...(await y.data())]);
      y.dispose();
    }
    expect(got[0], 'the two calls\' outputs differ').not.toEqual(got[1]);
    for (let k = 0; k < 2; k++) got[k].forEach((v, i) => expect(Math.abs(v - eager[k][i]), `call ${k} output ${i}: ${v} vs eager ${eager[k][i]}`).toBeLessThan(1e-4));
    (m as unknown as { graphed: { reset(): void } }).graphed.reset();
    for (const p of m.parameters()) p.dispose();
    for (const t of [sample, ...xs]) t.dispose();
  }, 60_000);

  it.each(['cpu', 'gpu:0'])('torch graph on %s: replay runs no JavaScript and reads the static input\'s new contents', async (dev) => {
    const ns = dev === 'cpu' ? torch.cpu : torch.gpu;
    const on = <T>(fn: () => T): T => (dev === 'cpu' ? fn() : torch.gpu.withDevice(dev, fn));
    const x = torch.tensor([1, 2, 3, 4], { device: dev, dtype: 'float32' });
    const w = torch.tensor([0.5, -1, 2, 3], { device: dev, dtype: 'float32' });
    const g = on(() => new ns.Graph());
    let calls = 0;
    let out!: torch.Tensor;
    await on(() => ns.graph(g, () => {
      calls++;
      out = torch.tidy(() => x.mul(w).add(1));
    }));
    expect(calls).toBe(1);
    const results: number[][] = [];
    for (const v of [[1, 1, 1, 1], [2, 0, -1, 4]]) {
      const nv = torch.tensor(v, { device: dev, dtype: 'float32' });
      x.copy_(nv); // the static input's new contents
      nv.dispose();
      g.replay();
      results.push([...(await out.data())]);
    }
    expect(calls, 'the captured function ran again').toBe(1);
    expect(results).toEqual([[1.5, 0, 3, 4], [2, 1, -1, 13]]);
    g.reset();
    for (const t of [x, w, out]) t.dispose();
  }, 60_000);
});
