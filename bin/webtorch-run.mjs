#!/usr/bin/env node
/**
 * `webtorch-run --nproc N script.mjs [args…]`: PyTorch's `torchrun` for webtorch. It starts N Node
 * processes running the script, each with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
 * MASTER_ADDR and MASTER_PORT set, so that `torch.distributed.initProcessGroup()` (env://) joins
 * them into one group. It exits with 0 when every rank does.
 *
 * Why it waits before stopping the others when a rank fails: the other ranks notice a dead rank
 * themselves (its sockets close, ts/distributed/mesh.ts) and raise naming it, which is the most
 * useful message. After `--grace` seconds the launcher stops whatever is left (SIGTERM), and it
 * exits non-zero naming the first rank that failed. The options are parsed by Node's own
 * `util.parseArgs` (no dependency). With `--threads` the ranks are worker threads of this process,
 * joined by one MessageChannel per pair of ranks (given in `workerData.webtorch`).
 *
 * Note [a rank thread's DRI_PRIME]: a worker thread's `process.env` is a copy that native code never
 * reads, but Mesa's device-select layer reads `DRI_PRIME` from the process's own environment when a
 * GPU worker's Dawn instance is made (ts/runtime/physical.ts). So under `--threads` each rank also
 * gets a port to this thread (`workerData.webtorch.env`), and this thread, which owns the real
 * environment, sets the variable for it: one rank at a time, from the rank's `hold` until its
 * `release` (its GPU worker has its adapter then), answering each hold with the value its own
 * environment then has, which the rank records (`torch._physicalStarts()`).
 */
import { spawn } from 'node:child_process';
import { MessageChannel, Worker } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { resolve as resolvePath } from 'node:path';
import { createServer } from 'node:net';
import { parseArgs } from 'node:util';

const USAGE = `usage: webtorch-run [--nproc N] [--threads] [--master-addr HOST] [--master-port PORT] [--grace SECONDS] script.mjs [args...]

  --nproc N           processes to start, one rank each (also --nproc-per-node, --nproc_per_node; default 1)
  --master-addr HOST  where rank 0 hosts the TCPStore (default 127.0.0.1)
  --master-port PORT  its port (default: a free port)
  --grace SECONDS     after a rank fails, how long the others have to raise before they are stopped (default 10)
  --threads           run the ranks as worker threads of this process instead of processes (each with
                      the same environment variables; the ranks talk over MessageChannels, not sockets)`;

const VALUED = new Set(['--nproc', '--nproc-per-node', '--nproc_per_node', '--master-addr', '--master_addr', '--master-port', '--master_port', '--grace']);

/** Splits argv at the script: launcher options before it, the script's own arguments after. */
function split(argv) {
  let i = 0;
  while (i < argv.length && argv[i].startsWith('-')) {
    if (argv[i] === '--') return [argv.slice(0, i), argv.slice(i + 1)];
    i += VALUED.has(argv[i]) ? 2 : 1;
  }
  return [argv.slice(0, i), argv.slice(i)];
}

function fail(msg) {
  console.error(`webtorch-run: ${msg}\n${USAGE}`);
  process.exit(2);
}

const [mine, rest] = split(process.argv.slice(2));
let opts;
try {
  ({ values: opts } = parseArgs({
    args: mine,
    strict: true,
    options: {
      nproc: { type: 'string' }, 'nproc-per-node': { type: 'string' }, nproc_per_node: { type: 'string' },
      'master-addr': { type: 'string' }, master_addr: { type: 'string' },
      'master-port': { type: 'string' }, master_port: { type: 'string' },
      grace: { type: 'string' }, threads: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
    },
  }));
} catch (e) {
  fail(e.message);
}
if (opts.help) {
  console.log(USAGE);
  process.exit(0);
}
if (!rest.length) fail('no script given');
const nproc = Number(opts.nproc ?? opts['nproc-per-node'] ?? opts.nproc_per_node ?? 1);
if (!Number.isInteger(nproc) || nproc < 1) fail(`--nproc must be a positive integer, got ${opts.nproc ?? opts['nproc-per-node'] ?? opts.nproc_per_node}`);
const grace = Number(opts.grace ?? 10);
if (!(grace >= 0)) fail(`--grace must be a number of seconds, got ${opts.grace}`);
const addr = opts['master-addr'] ?? opts.master_addr ?? '127.0.0.1';

/** A free port on `addr` (the OS picks one; rank 0 binds it a moment later). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, addr, () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const portArg = opts['master-port'] ?? opts.master_port;
const port = portArg !== undefined ? Number(portArg) : await freePort();
if (!Number.isInteger(port) || port < 1 || port > 65535) fail(`--master-port must be a port number, got ${portArg}`);

const [script, ...args] = rest;
const children = [];
const exits = new Array(nproc).fill(null);
let firstFailure = null;
let killer = null;

function stopAll(signal) {
  for (const c of children) {
    if (c.terminate) c.terminate();
    else if (c.exitCode === null && c.signalCode === null) c.kill(signal);
  }
}

function done() {
  if (exits.some((e) => e === null)) return;
  clearTimeout(killer);
  if (!firstFailure) process.exit(0);
  const { rank, pid, how } = firstFailure;
  const others = exits.map((e, r) => (r !== rank && e.how !== 'exit code 0' ? `rank ${r}: ${e.how}` : null)).filter(Boolean);
  console.error(`webtorch-run: rank ${rank} (pid ${pid}) failed first: ${how}${others.length ? `; then ${others.join(', ')}` : ''}`);
  process.exit(1);
}

// Threads: one MessageChannel per pair of ranks; each thread gets its ends (ts/distributed/port-mesh.ts).
const ports = Array.from({ length: nproc }, () => ({}));
if (opts.threads) {
  for (let i = 0; i < nproc; i++) for (let j = i + 1; j < nproc; j++) {
    const { port1, port2 } = new MessageChannel();
    ports[i][j] = port1;
    ports[j][i] = port2;
  }
}

/** Note [a rank thread's DRI_PRIME]: the holds waiting for this thread's environment, and the one that has it. */
const envWaiting = [];
let envHolder = null;
function envNext() {
  if (envHolder || !envWaiting.length) return;
  const h = (envHolder = envWaiting.shift());
  h.before = {};
  for (const [k, v] of Object.entries(h.vars)) {
    h.before[k] = process.env[k];
    process.env[k] = v;
  }
  // Read back from the real environment, so that the rank records what native code will see.
  h.port.postMessage({ held: Object.fromEntries(Object.keys(h.vars).map((k) => [k, process.env[k] ?? null])) });
}
function envRelease(port) {
  if (envHolder?.port !== port) return;
  for (const [k, v] of Object.entries(envHolder.before)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  envHolder = null;
  envNext();
}
/** A rank's port to this thread's environment (threads only). */
function envPort() {
  const { port1, port2 } = new MessageChannel();
  port1.on('message', (m) => {
    if (m?.hold) {
      envWaiting.push({ port: port1, vars: m.hold });
      envNext();
    } else if (m?.release) envRelease(port1);
  });
  // A rank that ends while it holds the environment gives it back.
  port1.on('close', () => {
    const i = envWaiting.findIndex((h) => h.port === port1);
    if (i >= 0) envWaiting.splice(i, 1);
    envRelease(port1);
  });
  port1.unref();
  return port2;
}

for (let rank = 0; rank < nproc; rank++) {
  const env = {
    ...process.env,
    RANK: String(rank), LOCAL_RANK: String(rank), GROUP_RANK: '0',
    WORLD_SIZE: String(nproc), LOCAL_WORLD_SIZE: String(nproc),
    MASTER_ADDR: addr, MASTER_PORT: String(port),
  };
  // A thread's rank: the script as a worker thread with its own environment (process.env there) and argv.
  const envEnd = opts.threads ? envPort() : null;
  const child = opts.threads
    ? new Worker(pathToFileURL(resolvePath(script)), {
      env, argv: args,
      workerData: { webtorch: { rank, worldSize: nproc, ports: ports[rank], env: envEnd } }, transferList: [...Object.values(ports[rank]), envEnd],
    })
    : spawn(process.execPath, [script, ...args], { env, stdio: 'inherit' });
  if (opts.threads) {
    child.pid = `${process.pid}, thread ${child.threadId}`;
    child.on('error', (e) => console.error(`webtorch-run: rank ${rank} (thread ${child.threadId}) threw:`, e));
  }
  children.push(child);
  if (!opts.threads) child.on('error', (e) => {
    exits[rank] ??= { how: `could not start: ${e.message}` };
    firstFailure ??= { rank, pid: child.pid, how: exits[rank].how };
    done();
  });
  child.on('exit', (code, signal) => {
    const how = signal ? `killed by ${signal}` : `exit code ${code}`;
    if (exits[rank]) return;
    exits[rank] = { how };
    if ((code !== 0 || signal) && !firstFailure) {
      firstFailure = { rank, pid: child.pid, how };
      killer = setTimeout(() => stopAll('SIGTERM'), grace * 1000);
    }
    done();
  });
}

for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => stopAll(sig));
