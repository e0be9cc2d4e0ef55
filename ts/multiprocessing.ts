/**
 * `torch.multiprocessing`: `spawn(fn, {args, nprocs, join})`, `setStartMethod('spawn')`,
 * `getStartMethod()`, `parentProcess()`; Node only.
 *
 * The hard part is that a JavaScript function cannot be sent to another process. Python's
 * `spawn` start method has the same problem and solves it by running the main module again in
 * the child, which then finds `fn` by name. webtorch does the same: each of the `nprocs` children
 * is a Node process running the parent's main script (`process.argv[1]`, same arguments and
 * Node flags) with `WEBTORCH_MP_RANK`, `WEBTORCH_MP_NPROCS` and `WEBTORCH_MP_CALL` in its
 * environment. In the child, the script runs from the top; the spawn call that is the parent's
 * `WEBTORCH_MP_CALL`-th runs `fn(rank, ...args)` (the args come from the parent over the IPC
 * channel, by structured clone) and ends the process when it settles: exit code 0, or 1 after
 * sending the error's stack to the parent. Earlier spawn calls return at once in a child. As
 * Python's `if __name__ == '__main__':`, `parentProcess() === null` tells the parent's code apart.
 *
 * Each child also gets torchrun's variables (`RANK`, `LOCAL_RANK`, `WORLD_SIZE`,
 * `LOCAL_WORLD_SIZE`, and `MASTER_ADDR`/`MASTER_PORT` unless the parent set them), so
 * `torch.distributed.initProcessGroup({backend})` joins the ranks with no more arguments.
 * When a child fails, the others are terminated and `spawn` rejects with PyTorch's
 * `ProcessRaisedException` (the child's stack) or `ProcessExitedException` (its exit code).
 */
import { shutdown as stopDevices } from './device.js';
import { bindArgs, REQUIRED } from './args.js';

type Start = 'spawn';
let startMethod: Start | null = null;

const START_METHODS = ['spawn'] as const;

/** `mp.getAllStartMethods()`: `['spawn']` (Node cannot fork a process). */
export function getAllStartMethods(): string[] {
  return [...START_METHODS];
}

/**
 * `mp.setStartMethod(method, force = false)`: only `'spawn'` exists (a Node process cannot fork,
 * so webtorch never meets CUDA's "Cannot re-initialize CUDA in forked subprocess"); setting it a
 * second time without `force` raises Python's `context has already been set`.
 */
export function setStartMethod(...args: [method: string | null, force?: boolean] | [method: string | null, options: { force?: boolean }] | [options: { method: string | null; force?: boolean }]): void {
  const { method, force } = bindArgs('set_start_method', ['method', 'force'], args, { method: REQUIRED as string | null, force: false });
  if (startMethod !== null && !force) throw new Error('RuntimeError: context has already been set');
  if (method === null) {
    startMethod = null;
    return;
  }
  if (method !== 'spawn') throw new Error(`ValueError: cannot find context for '${String(method)}' (webtorch's only start method is 'spawn': a Node process cannot fork)`);
  startMethod = method;
}

/** `mp.getStartMethod(allowNone = false)`: `'spawn'`, or null when none was set and `allowNone`. */
export function getStartMethod(...args: [allowNone?: boolean] | [options: { allowNone?: boolean }]): Start | null {
  const { allowNone } = bindArgs('get_start_method', ['allowNone'], args, { allowNone: false });
  return startMethod ?? (allowNone ? null : 'spawn');
}

/** The child side, read once from the environment (null in a parent). */
const child = (() => {
  const env = typeof process !== 'undefined' ? process.env : undefined;
  if (!env?.WEBTORCH_MP_RANK) return null;
  return { rank: Number(env.WEBTORCH_MP_RANK), nprocs: Number(env.WEBTORCH_MP_NPROCS), call: Number(env.WEBTORCH_MP_CALL) };
})();

/** `mp.parentProcess()`: the parent's pid in a spawned child, null in the main process (Python's `parent_process()`). */
export function parentProcess(): { pid: number } | null {
  return child ? { pid: process.ppid } : null;
}

/** A child process as `ProcessContext` shows it (Node's `ChildProcess`, kept to what the types need without @types/node). */
export interface ChildProcess {
  readonly pid?: number;
  readonly exitCode: number | null;
  readonly signalCode: string | null;
  kill(signal?: string): boolean;
  on(event: string, listener: (...args: any[]) => void): this;
  send(message: unknown): boolean;
}

/** PyTorch's `ProcessRaisedException`: a child's `fn` threw; the message holds its stack. */
export class ProcessRaisedException extends Error {
  constructor(message: string, readonly errorIndex: number, readonly errorPid: number) {
    super(message);
    this.name = 'ProcessRaisedException';
  }
}

/** PyTorch's `ProcessExitedException`: a child ended with a non-zero exit code or a signal. */
export class ProcessExitedException extends Error {
  constructor(message: string, readonly errorIndex: number, readonly errorPid: number, readonly exitCode: number | null, readonly signalName: string | null) {
    super(message);
    this.name = 'ProcessExitedException';
  }
}

/**
 * What `spawn(…, {join: false})` returns (PyTorch's `ProcessContext`): `pids()`, and `join()`,
 * which resolves true when every process has ended successfully (false after `timeout` seconds
 * with some still running) and rejects as `spawn` does when one fails.
 */
export class ProcessContext {
  /** The children, in rank order. */
  readonly processes: ChildProcess[];
  private readonly done: Promise<void>;

  /** @internal */
  constructor(processes: ChildProcess[], done: Promise<void>) {
    this.processes = processes;
    this.done = done;
    done.catch(() => {}); // observed through join()
  }

  pids(): number[] {
    return this.processes.map((p) => p.pid!);
  }

  /** Waits for the processes (at most `timeout` seconds when given). */
  async join(timeout: number | null = null): Promise<boolean> {
    if (timeout === null) {
      await this.done;
      return true;
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeout * 1000)));
    try {
      return await Promise.race([this.done.then(() => true), late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

export interface SpawnOptions {
  /** The arguments after the rank: `fn(rank, ...args)`; sent to each child by structured clone. */
  args?: unknown[];
  /** How many processes (default 1). */
  nprocs?: number;
  /** Wait for them (default true); false returns a `ProcessContext`. */
  join?: boolean;
  /** Python's daemon flag; only false (a child outlives nothing it does not finish). */
  daemon?: boolean;
  /** Only 'spawn'. */
  startMethod?: string;
}

let spawnCalls = 0;

/** A free TCP port on 127.0.0.1 for the children's rendezvous. */
async function freePort(): Promise<number> {
  const { createServer } = process.getBuiltinModule('node:net') as typeof import('node:net');
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as import('node:net').AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** In a child: runs `fn(rank, ...args)` for the call the parent made, then ends the process. */
async function runChild(fn: (rank: number, ...args: any[]) => unknown): Promise<never> {
  const args = await new Promise<unknown[]>((resolve) => process.once('message', (m: { args: unknown[] }) => resolve(m.args)));
  let code = 0;
  try {
    await fn(child!.rank, ...args);
  } catch (e) {
    code = 1;
    const stack = e instanceof Error ? e.stack ?? `${e.name}: ${e.message}` : String(e);
    await new Promise<void>((r) => process.send!({ error: stack }, () => r()));
  }
  await stopDevices().catch(() => {});
  process.exit(code);
}

/**
 * `torch.multiprocessing.spawn(fn, args = [], nprocs = 1, join = true, daemon = false,
 * startMethod = 'spawn')` (positional or `{args, nprocs, join}`): runs `fn(i, ...args)` in
 * `nprocs` new Node processes, i from 0, by running this script again in each (see the file's
 * note). Resolves null when they have all ended (`join`), or at once with a `ProcessContext`.
 */
export async function spawn(fn: (rank: number, ...args: any[]) => unknown, ...rest: [args?: unknown[], nprocs?: number, join?: boolean, daemon?: boolean, startMethod?: string] | [...unknown[], SpawnOptions]): Promise<ProcessContext | null> {
  const o = bindArgs('spawn', ['args', 'nprocs', 'join', 'daemon', 'startMethod'], rest, { args: [] as unknown[], nprocs: 1, join: true, daemon: false, startMethod: 'spawn' }, 1);
  if (typeof fn !== 'function') throw new TypeError(`spawn(): fn must be a function, got ${typeof fn}`);
  if (!Array.isArray(o.args)) throw new TypeError(`spawn(): args must be an array (Python's tuple), got ${typeof o.args}`);
  if (!Number.isInteger(o.nprocs) || o.nprocs < 1) throw new RangeError(`spawn(): nprocs must be a positive integer, got ${String(o.nprocs)}`);
  if (o.startMethod !== 'spawn') throw new Error(`ValueError: cannot find context for '${o.startMethod}' (webtorch's only start method is 'spawn')`);
  if (o.daemon) throw new Error('spawn(): daemon=true is not supported by webtorch (the children are ordinary processes)');
  if (typeof process === 'undefined' || typeof process.getBuiltinModule !== 'function') {
    throw new Error('torch.multiprocessing.spawn needs Node.js (a browser page cannot start processes; use torch.distributed.spawn for ranks in one page)');
  }
  const call = ++spawnCalls;
  if (child) {
    if (call === child.call) return runChild(fn);
    return null; // a spawn the parent made before this child's: it ran in the parent's children
  }
  try {
    structuredClone(o.args);
  } catch (e) {
    throw new TypeError(`spawn(): args must be sendable to another process (structured clone): ${(e as Error).message}. A Tensor is not: send its values (await t.tolist()) and rebuild it in fn`);
  }
  if (!process.argv[1]) throw new Error('spawn(): the children run the main script again, and this process has none (process.argv[1]); run a script file');
  const { fork } = process.getBuiltinModule('node:child_process') as typeof import('node:child_process');
  const addr = process.env.MASTER_ADDR ?? '127.0.0.1';
  const port = process.env.MASTER_PORT ?? String(await freePort());
  const errors: (string | null)[] = new Array(o.nprocs).fill(null);
  const procs = Array.from({ length: o.nprocs }, (_, rank) => {
    const env = {
      ...process.env,
      WEBTORCH_MP_RANK: String(rank), WEBTORCH_MP_NPROCS: String(o.nprocs), WEBTORCH_MP_CALL: String(call),
      RANK: String(rank), LOCAL_RANK: String(rank), WORLD_SIZE: String(o.nprocs), LOCAL_WORLD_SIZE: String(o.nprocs),
      MASTER_ADDR: addr, MASTER_PORT: port,
    };
    const p = fork(process.argv[1], process.argv.slice(2), { env, execArgv: process.execArgv, serialization: 'advanced', stdio: 'inherit' }) as unknown as ChildProcess;
    p.on('message', (m: { error?: string }) => {
      if (typeof m?.error === 'string') errors[rank] = m.error;
    });
    p.send({ args: o.args });
    return p;
  });
  const done = new Promise<void>((resolve, reject) => {
    let left = procs.length, failed = false;
    procs.forEach((p, rank) => {
      const fail = (e: Error) => {
        if (failed) return;
        failed = true;
        for (const q of procs) if (q !== p && q.exitCode === null && q.signalCode === null) q.kill('SIGTERM');
        reject(e);
      };
      p.on('error', (e) => fail(new ProcessExitedException(`process ${rank} could not start: ${e.message}`, rank, p.pid ?? -1, null, null)));
      p.on('close', (code, signal) => { // after its last message (its error) has arrived
        left--;
        if (errors[rank] !== null) fail(new ProcessRaisedException(`\n\n-- Process ${rank} terminated with the following error:\n${errors[rank]}`, rank, p.pid!));
        else if (signal) fail(new ProcessExitedException(`process ${rank} terminated with signal ${signal}`, rank, p.pid!, null, signal));
        else if (code !== 0) fail(new ProcessExitedException(`process ${rank} terminated with exit code ${code}`, rank, p.pid!, code, null));
        if (left === 0 && !failed) resolve();
      });
    });
  });
  const ctx = new ProcessContext(procs, done);
  if (!o.join) return ctx;
  await ctx.join();
  return null;
}
