/**
 * The `cpu` worker: AssemblyScript kernels (SIMD) over one WebAssembly memory.
 *
 * This file is the `Backend` and the `run` switch; the worker splits by concern, as gpu.ts does:
 * - cpu/core.ts: the kernels' instance, the pool of helper threads, the segments (a first-fit
 *   free list over the memory, `ptr`/`at`) and the descriptors written into the scratch area;
 * - cpu/transfers.ts: writes, reads, and the memory handed to the calling thread and GPU workers;
 * - the kernel families, each deciding when the pool takes a command: cpu/map.ts (unary and
 *   binary; fill, arange, copies, `where` and reductions are one kernel call each, below),
 *   cpu/matmul.ts, cpu/rows.ts (softmax, log_softmax, layer_norm and their gradients),
 *   cpu/windows.ts (conv windows, their fold, the float32 convolution), cpu/pool.ts (pooling),
 *   cpu/index-family.ts (gather, scatter, sort...), cpu/random.ts, cpu/loss.ts (the fused NLL),
 *   cpu/amp.ts (GradScaler's fused check).
 */
import { canShareMemory, loadKernelWasm, loadSharedKernelWasm } from '../platform.js';
import { poolThreads, sharedMemory, startPool } from './cpu-pool.js';
import { scratchCounter } from './scratch.js';
import type { Backend } from './backend.js';
import type { DeviceInfo } from './protocol.js';
import type { Command } from '../ir/commands.js';
import { K, adopt, allocSegment, at, closePool, pool, ptr, releaseSegment, viewDesc, type Kernels } from './cpu/core.js';
import { hostMemory, read, write } from './cpu/transfers.js';
import { runBinary, runUnary } from './cpu/map.js';
import { runMatmul } from './cpu/matmul.js';
import { runRowNorm } from './cpu/rows.js';
import { runConv, runFoldWindows, runWindows } from './cpu/windows.js';
import { runAvgPool, runMaxPool } from './cpu/pool.js';
import { runIndex } from './cpu/index-family.js';
import { runRandom } from './cpu/random.js';
import { runNll } from './cpu/loss.js';
import { runAmpUnscale } from './cpu/amp.js'; // GradScaler's fused check
import { runOptimStep } from './cpu/optim.js'; // the optimizers' fused step
import { runForeachClamp, runForeachMul, runForeachNorm } from './cpu/foreach.js'; // clipGradNorm_'s multi-tensor norm and scale
import { runAttention } from './cpu/attention.js'; // fused attention

/** Initial pages of the shared memory (the kernels' build asks for 16: `--initialMemory 16`). */
const SHARED_INITIAL_PAGES = 16;

function run(cmd: Command): void {
  switch (cmd.k) {
    case 'segment':
      return allocSegment(cmd.id, cmd.bytes);
    case 'release':
      return releaseSegment(cmd.id);
    case 'write':
      write(cmd.id, cmd.byteOffset, cmd.data);
      return;
    case 'fill':
      return K.fill(cmd.dt, at(cmd.out, cmd.dt), cmd.n, cmd.value);
    case 'arange':
      return K.arange(cmd.dt, at(cmd.out, cmd.dt), cmd.n, cmd.start, cmd.step);
    case 'random': // Philox (cpu/random.ts)
      return runRandom(cmd);
    case 'copy':
      if (cmd.check) {
        if (K.copyChecked(cmd.srcDt, cmd.dt, ptr(cmd.src.id), at(cmd.out, cmd.dt), viewDesc(cmd.shape, [cmd.src]))) throw new Error(cmd.check.message);
        return;
      }
      return K.copy(cmd.srcDt, cmd.dt, ptr(cmd.src.id), at(cmd.out, cmd.dt), viewDesc(cmd.shape, [cmd.src]));
    case 'copyInto':
      return K.copyStrided(cmd.srcDt, cmd.dt, ptr(cmd.src.id), ptr(cmd.dst.id), viewDesc(cmd.shape, [cmd.src, cmd.dst]));
    case 'unary':
      return runUnary(cmd);
    case 'binary':
      return runBinary(cmd);
    case 'where':
      return K.where(cmd.dt, ptr(cmd.c.id), ptr(cmd.a.id), ptr(cmd.b.id), at(cmd.out, cmd.dt), viewDesc(cmd.shape, [cmd.c, cmd.a, cmd.b]));
    case 'reduce':
      return K.reduce(cmd.op, cmd.dt, cmd.outDt, at(cmd.a, cmd.dt), at(cmd.out, cmd.outDt), cmd.outer, cmd.inner);
    case 'softmax': case 'rowGrad':
      return runRowNorm(cmd);
    case 'windows':
      return runWindows(cmd);
    case 'foldWindows':
      return runFoldWindows(cmd);
    case 'conv': case 'convGrad':
      return runConv(cmd);
    case 'matmul':
      return runMatmul(cmd);
    // The index family.
    case 'gather': case 'scatter': case 'cumulative': case 'sort': case 'oneHot':
      return runIndex(cmd);
    case 'nll': case 'nllGrad': // the fused negative log likelihood (cpu/loss.ts)
      return runNll(cmd);
    case 'maxPool': case 'maxPoolGrad': // pooling and its gradients (cpu/pool.ts)
      return runMaxPool(cmd);
    case 'avgPool': case 'avgPoolGrad':
      return runAvgPool(cmd);
    case 'ampUnscale': // GradScaler's fused check (cpu/amp.ts)
      return runAmpUnscale(cmd);
    case 'optimStep': // the optimizers' fused step (cpu/optim.ts)
      return runOptimStep(cmd);
    case 'foreachNorm': // _foreach_norm (cpu/foreach.ts)
      return runForeachNorm(cmd);
    case 'foreachMul': // _foreach_mul_ by a device scalar (cpu/foreach.ts)
      return runForeachMul(cmd);
    case 'foreachClamp': // _foreach_clamp_min_/max_ (cpu/foreach.ts)
      return runForeachClamp(cmd);
    case 'attention': case 'attentionGrad': // fused attention (cpu/attention.ts)
      return runAttention(cmd);
    case 'dropScratch': // the GPU worker's cached scratch (ts/worker/scratch.ts); none here
      return;
    default:
      throw new Error(`unknown command ${cmd.k}`);
  }
}

/** The cpu device backend. */
export const cpuBackend: Backend = {
  async init({ name }): Promise<DeviceInfo> {
    // Memory: shared (the kernels' shared build, helper threads on it) where the platform allows
    // it and there is more than one core; otherwise the plain build, which owns its memory.
    const threads = await poolThreads();
    // Shared wherever the platform allows it (pinned tensors live here, read by the GPU workers), even single-threaded.
    const memory = canShareMemory() ? sharedMemory(SHARED_INITIAL_PAGES) : null;
    const module = await (memory ? loadSharedKernelWasm() : loadKernelWasm());
    const abort = (_msg: number, _file: number, line: number, col: number) => {
      throw new Error(`wasm kernel aborted at ${line}:${col}`);
    };
    const instance = await WebAssembly.instantiate(module, { env: memory ? { memory, abort } : { abort } });
    // The shared build exports the memory it imports, so its `memory` is that one; a pool that
    // cannot start leaves the device single-threaded.
    const helpers = memory && threads > 1 ? await startPool(module, memory, instance.exports, threads).catch(() => null) : null;
    adopt(instance.exports as unknown as Kernels, memory, helpers);
    return {
      name, kind: 'cpu', cpuAdapter: false, kernels: ['conv', 'convGrad', 'windows', 'foldWindows'], vendor: 'webassembly', architecture: 'wasm32+simd128', description: 'AssemblyScript kernels on WebAssembly',
      features: pool ? ['simd128', 'threads'] : ['simd128'], limits: { threads: pool?.threads ?? 1 }, nativeF16: false, scratch: scratchCounter(),
      eventTiming: 'host', pinnable: memory !== null,
    };
  },
  run,
  flush() {},
  read,
  write,
  async idle() {},
  pollMs: 0.3,
  hostMemory,
  // Commands run synchronously here: work recorded so far has finished.
  mark: async () => performance.now(),
  close: closePool,
};
