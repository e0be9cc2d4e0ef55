/**
 * The DataLoader's worker threads: with `numWorkers > 0`, a dataset's `getItem` runs in
 * `numWorkers` Node worker threads, as PyTorch runs it in worker processes.
 *
 * The hard part is sending the dataset. PyTorch pickles it: its class by name, its fields by
 * value. Here the class goes as its source text (`Function.prototype.toString`, each user class
 * from the dataset's own up to `Dataset`), evaluated in the worker where any name it reads that
 * is not a global (`torch`, however the module imported webtorch) has `.Dataset`, any path under
 * it included, as the base class, and raises a ReferenceError if called; the instance's own fields go by
 * structured clone. So a dataset can be sent when its fields are plain data (numbers, strings,
 * arrays, typed arrays, plain objects) and its methods use only those fields and JavaScript's
 * globals; `getItem` must then return plain data too (a number, an array or typed array, or an
 * array of those per field), which the loader collates into tensors on the calling thread, as
 * PyTorch's `default_collate` does. Anything else (a Tensor field, a method that reads a
 * variable of its module) raises an error naming `numWorkers`, at the loader's first batch.
 *
 * The loader's iterator is synchronous (`for (const [x, y] of loader)`), so it waits for a batch
 * by `Atomics.wait` on a counter the workers bump after each message, and takes the messages with
 * `receiveMessageOnPort`. Batch i goes to worker i % numWorkers, `numWorkers × prefetchFactor`
 * batches ahead, and batches come out in order. The workers live for one epoch (PyTorch's default,
 * `persistentWorkers: false`).
 *
 * Failures: a `getItem` that raises is raised when its batch's turn comes (the batches before it
 * come first, as PyTorch's). A thread that ends (`process.exit` in `getItem`, an uncaught error)
 * says so on its port from its `exit` handler, and taking one of its batches raises naming why:
 * the loader waits blocked in `Atomics.wait`, where no event (the Worker's `exit`) could reach it.
 */
import type { MessagePort, Worker } from 'node:worker_threads';

/** What a worker thread answers for one batch. */
type Answer = { batch: number; items?: unknown[]; error?: string; died?: string };

/** The worker's program (run with `eval: true`, so it needs no file of its own in the bundle). */
const WORKER_SOURCE = `
const { workerData, receiveMessageOnPort } = require('node:worker_threads');
const { port, signal, classes, fields } = workerData;
const counter = new Int32Array(signal);
const send = (m) => { port.postMessage(m); Atomics.add(counter, 0, 1); Atomics.notify(counter, 0); };
let dataset = null, failure = null;
// A thread that ends (process.exit in getItem, an uncaught error) says so last: the loader waits on nothing else.
process.on('uncaughtException', (e) => {
  send({ batch: -1, died: 'it threw ' + (e && e.stack || e) });
  process.exit(1);
});
process.on('exit', (code) => send({ batch: -1, died: 'its thread exited with code ' + code }));
try {
  class Dataset {}
  // A name the class source reads that the worker lacks (the module's import of webtorch, under
  // any name) stands for a namespace whose \`Dataset\` is the base class; calling one raises.
  const namespace = (path) => new Proxy(function () {}, {
    get: (_, k) => (k === 'Dataset' ? Dataset : typeof k === 'string' ? namespace(path + '.' + k) : undefined),
    apply: () => { throw new ReferenceError(path + ' is not available in a DataLoader worker thread'); },
    construct: () => { throw new ReferenceError(path + ' is not available in a DataLoader worker thread'); },
  });
  const names = { Dataset };
  const scope = new Proxy(names, {
    has: (_, k) => typeof k === 'string' && !(k in globalThis),
    get: (t, k) => (typeof k !== 'string' ? undefined : k in t ? t[k] : namespace(k)),
  });
  let cls = null;
  for (const { name, source } of classes) {
    cls = new Function('scope', 'with (scope) { return (' + source + '); }')(scope);
    if (name) names[name] = cls;
  }
  dataset = Object.assign(Object.create(cls.prototype), fields);
} catch (e) { failure = 'its class could not be rebuilt in a worker thread: ' + (e && e.stack || e); }
port.on('message', ({ batch, indices }) => {
  if (failure) return send({ batch, error: failure });
  try {
    send({ batch, items: indices.map((i) => dataset.getItem(i)) });
  } catch (e) {
    send({ batch, error: 'getItem raised in a worker thread: ' + (e && e.stack || e) });
  }
});
`;

/** Why `dataset` cannot be sent to a worker thread, or null when it can (see the file's note). */
export function unsendable(dataset: object): string | null {
  const chain = classChain(dataset);
  if (typeof chain === 'string') return chain;
  for (const [k, v] of Object.entries(dataset)) {
    if (v && typeof v === 'object' && 'storage' in v && 'dtype' in v) return `its field '${k}' is a Tensor, which a worker thread cannot use (keep the data as arrays or typed arrays)`;
    try {
      structuredClone(v);
    } catch {
      return `its field '${k}' cannot be copied to a worker thread (structured clone): ${typeof v === 'function' ? 'a function' : String(v)}`;
    }
  }
  return null;
}

/** The dataset's classes from the one below `Dataset` down to its own, as source text; or why not. */
function classChain(dataset: object): { name: string; source: string }[] | string {
  const out: { name: string; source: string }[] = [];
  for (let p = Object.getPrototypeOf(dataset); p && p.constructor.name !== 'Dataset' && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    const source = Function.prototype.toString.call(p.constructor);
    if (!source.startsWith('class') || source.includes('[native code]')) return `its class ${p.constructor.name} has no class source to send`;
    out.unshift({ name: p.constructor.name, source });
  }
  return out.length ? out : 'it is not an instance of a subclass of Dataset';
}

/** One epoch's worker threads over a dataset. */
export class LoaderWorkers {
  private readonly workers: Worker[] = [];
  private readonly ports: MessagePort[] = [];
  private readonly counter: Int32Array;
  private readonly done = new Map<number, unknown[]>();
  /** Batches whose getItem raised: raised when the batch's turn comes, as PyTorch does. */
  private readonly failed = new Map<number, string>();
  /** Why each worker that ended did (its batches will never come). */
  private readonly dead = new Map<number, string>();
  private readonly receive: (port: MessagePort) => { message: Answer } | undefined;

  constructor(dataset: object, count: number) {
    const why = unsendable(dataset);
    if (why) throw new TypeError(`DataLoader(numWorkers: ${count}): the dataset cannot be sent to a worker thread: ${why}. Use numWorkers: 0 to run getItem on the calling thread`);
    const threads = process.getBuiltinModule('node:worker_threads') as typeof import('node:worker_threads');
    this.receive = threads.receiveMessageOnPort as (port: MessagePort) => { message: Answer } | undefined;
    const signal = new SharedArrayBuffer(4);
    this.counter = new Int32Array(signal);
    const classes = classChain(dataset) as { name: string; source: string }[];
    const fields = { ...dataset };
    for (let i = 0; i < count; i++) {
      const { port1, port2 } = new threads.MessageChannel();
      const w = new threads.Worker(WORKER_SOURCE, { eval: true, workerData: { port: port2, signal, classes, fields }, transferList: [port2] });
      w.unref();
      // Its death is reported on the port (the thread's 'exit' and 'uncaughtException' handlers); an
      // 'error' event nobody listened to would end this process.
      w.on('error', () => {});
      this.workers.push(w);
      this.ports.push(port1);
    }
  }

  /** Sends batch `batch` (its sample indices) to its worker. */
  request(batch: number, indices: number[]): void {
    this.ports[batch % this.ports.length].postMessage({ batch, indices });
  }

  /** Waits (blocking the thread, see the file's note) for batch `batch`'s items. */
  take(batch: number): unknown[] {
    for (;;) {
      const seen = Atomics.load(this.counter, 0);
      this.ports.forEach((port, w) => {
        for (let m = this.receive(port); m; m = this.receive(port)) {
          if (m.message.died) this.dead.set(w, this.dead.get(w) ?? m.message.died);
          else if (m.message.error) this.failed.set(m.message.batch, m.message.error);
          else this.done.set(m.message.batch, m.message.items!);
        }
      });
      const items = this.done.get(batch);
      if (items) {
        this.done.delete(batch);
        return items;
      }
      const error = this.failed.get(batch), died = this.dead.get(batch % this.ports.length);
      if (error) throw new Error(`DataLoader worker (numWorkers: ${this.ports.length}): ${error}`);
      if (died) throw new Error(`DataLoader worker (numWorkers: ${this.ports.length}): worker ${batch % this.ports.length} ended before batch ${batch}: ${died}`);
      Atomics.wait(this.counter, 0, seen, 1000);
    }
  }

  /** Stops the threads. */
  close(): void {
    for (const p of this.ports) p.close();
    for (const w of this.workers) void w.terminate();
  }
}
