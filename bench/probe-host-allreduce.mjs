// The host side of an all-reduce between processes, alone: no device, no bridge, only the sockets
// (ts/distributed/mesh.ts) and the ring of ts/distributed/host-ops.ts, so that its time can be
// told apart from the device's reads and writes in DDP's trace. Run under the launcher, after
// `npm run build:ts` (it imports the compiled modules, which the bundle does not export):
//   node bin/webtorch-run.mjs --nproc 2 [--threads] bench/probe-host-allreduce.mjs [--mib 24] [--iters 15] [--build build/js]
// (processes: sockets, with rings in /dev/shm unless WEBTORCH_SHM=0; threads: the launcher's ports)
// Rank 0 prints one JSON line: the median and best ms of a float32 `avg`, and the bus bandwidth
// (2(k-1)/k of the bytes over the time, as nccl-tests reports it). Every result is checked.
// `--op swap` (2 ranks) times instead what a two-rank all-reduce does on the host since the
// device sums (Note [two ranks reduce on the device]): each rank's bytes to the other, no arithmetic.
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const { values: o } = parseArgs({ options: { op: { type: 'string', default: 'ring' }, mib: { type: 'string', default: '24' }, iters: { type: 'string', default: '15' }, build: { type: 'string', default: 'build/js' } } });
const keep = setInterval(() => {}, 1000); // the mesh's sockets are unref'd: keep the process up while it waits
const at = (m) => import(pathToFileURL(resolve(o.build, 'ts/distributed', m)).href);
const [{ TCPStore }, { Mesh }, { PortMesh, threadRanks }, { hostAllReduce, hostSwap }] = await Promise.all([at('store.js'), at('mesh.js'), at('port-mesh.js'), at('host-ops.js')]);
const threads = threadRanks();
const rank = threads ? threads.rank : Number(process.env.RANK), world = threads ? threads.worldSize : Number(process.env.WORLD_SIZE);
const store = threads ? null : new TCPStore(process.env.MASTER_ADDR, Number(process.env.MASTER_PORT), { worldSize: world, isMaster: rank === 0, timeout: 60_000, waitForWorkers: false });
await store?.ready;
const mesh = threads ? new PortMesh(threads) : await Mesh.create(store, rank, world, 60_000, 'probe-host-allreduce');
const transport = threads ? 'threads' : process.env.WEBTORCH_SHM === '0' ? 'sockets' : 'sockets+shm';
const n = Math.floor((Number(o.mib) * 2 ** 20) / 4), iters = Number(o.iters);
const ms = [];
for (let i = 0; i < iters; i++) {
  // Element j of rank r holds (j mod 7) + r: the average is (j mod 7) + (k - 1)/2, exact in float32.
  const x = new Float32Array(n);
  for (let j = 0; j < n; j++) x[j] = (j % 7) + rank;
  const t0 = performance.now();
  const swap = o.op === 'swap';
  const out = swap ? await hostSwap(mesh, `probe${i}`, new Uint8Array(x.buffer)) : await hostAllReduce(mesh, `probe${i}`, new Uint8Array(x.buffer), 'float32', 'avg');
  ms.push(performance.now() - t0);
  const y = new Float32Array(out.buffer, out.byteOffset, n);
  const want = (j) => (j % 7) + (swap ? 1 - rank : (world - 1) / 2);
  for (let j = 0; j < n; j += 997) if (y[j] !== want(j)) throw new Error(`rank ${rank}: element ${j} is ${y[j]}, expected ${want(j)}`);
}
ms.sort((a, b) => a - b);
const med = ms[Math.floor(ms.length / 2)];
if (rank === 0) console.log(JSON.stringify({ probe: 'host-allreduce', op: o.op, build: o.build, transport, world, mib: Number(o.mib), iters, medianMs: +med.toFixed(2), bestMs: +ms[0].toFixed(2), busGBs: +(((2 * (world - 1)) / world) * n * 4 / med / 1e6).toFixed(2) }));
mesh.close();
store?.close();
clearInterval(keep);
