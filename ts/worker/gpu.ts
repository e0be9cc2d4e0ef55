/**
 * The `gpu:N` worker: one GPUDevice, WGSL kernels, one command encoder per batch.
 *
 * This file is the `Backend` and the `run` switch; the worker splits by concern (DESIGN §7):
 * - gpu/core.ts: device state, the kernel cache, bind groups, the batch's params and the
 *   dispatches recorded into one pass (and the error scopes);
 * - gpu/transfers.ts: writes, the upload ring, reads and the sync point;
 * - gpu/timing.ts: the profile's pass timer and event marks; gpu/checks.ts: device checks;
 * - the kernel families, each choosing its variant: gpu/map.ts (elementwise, fill, copy),
 *   gpu/matmul.ts, gpu/rows.ts (reductions, softmax, layer_norm), gpu/windows.ts,
 *   gpu/index-family.ts (gather, scatter, sort...), gpu/random.ts, gpu/loss.ts (the fused NLL).
 */
import { StorageCode } from '../dtype.js';
import { env, getGpu } from '../platform.js';
import { computeType, valueClass } from '../../wgsl/dtype.js';
import { rowDevice } from '../../wgsl/reduce.js';
import { mapParams, scatterShader } from '../../wgsl/elementwise.js';
import type { Backend } from './backend.js';
import type { DeviceInfo } from './protocol.js';
import type { Command } from '../ir/commands.js';
import type { ComposableKind } from '../ir/kinds.js';
import { countBuffers, scratchCounter, setPressureHandler, settleDrop } from './scratch.js';
import {
  BINARY, UNARY, adopt, beginCommand, buf, buffers, compiling, device, dispatch, encodePending, encoder, errorsPending, flush, grid1d, letGo,
  maxBinding, openEncoder, paramAlign, pendingBinds, queueDone, queueWork, retired, rowDev, sawDone, setTraceSeq, settling, slotsOf, submitEvery, whenCompiled,
} from './gpu/core.js';
import { checkCodes, recordDeviceCheck, words64 } from './gpu/checks.js';
import { dropReadStaging, dropUploads, read, settleSyncPoint, write } from './gpu/transfers.js';
import { mark, passTimes, timePasses } from './gpu/timing.js';
import { NO_SCALARS, runMap, type MapOperand } from './gpu/map.js';
import { runMatmul } from './gpu/matmul.js';
import { dropKeptScratch } from './gpu/workspace.js';
import { runReduce, runRowNorm } from './gpu/rows.js';
import { runWindows } from './gpu/windows.js';
import { runIndex } from './gpu/index-family.js';
import { runRandom } from './gpu/random.js';
import { runAmpUnscale } from './gpu/amp.js'; // GradScaler's fused check
import { runOptimStep } from './gpu/optim.js'; // the optimizers' fused step
import { runForeachClamp, runForeachMul, runForeachNorm } from './gpu/foreach.js'; // clipGradNorm_'s multi-tensor norm and scale
import { runAttention } from './gpu/attention.js'; // fused attention
import { runNll } from './gpu/loss.js';
import { runPool } from './gpu/pool.js';
// Device loss (ts/worker/gpu-lost.ts): the one hook, in init.
import { watchLoss } from './gpu-lost.js';
import { chooseF16Path } from './half.js'; // f16: which float16 path (shader-f16 or storage)
import { captureGraph, dropGraph, replayGraph } from './gpu/graphs.js';

function run(cmd: Command): void {
  beginCommand(cmd);
  switch (cmd.k) {
    case 'segment':
      buffers.set(cmd.id, device.createBuffer({
        size: Math.max(4, Math.ceil(cmd.bytes / 4) * 4),
        usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
      }));
      return;
    case 'release':
      retired.push(buf(cmd.id));
      buffers.delete(cmd.id);
      dropReadStaging();
      return;
    case 'dropScratch': {
      // emptyCache: the calling thread took `accounted` bytes of cached scratch off already (scratch.ts)
      dropReadStaging();
      dropKeptScratch();
      dropUploads();
      settleDrop(cmd.accounted);
      return;
    }
    case 'write':
      throw new Error('webtorch: a write reaches the GPU backend through Backend.write, not run');
    case 'fill': {
      if (cmd.dt === StorageCode.I64) {
        // the exact 64-bit value, as two 32-bit scalar operands (a number holds any int64 fill value exactly)
        const [lo, hi] = words64(cmd.value);
        runMap([{ r: lo, dt: StorageCode.I32 }, { r: hi, dt: StorageCode.I32 }], [cmd.n], buf(cmd.out.id), cmd.out.offset, cmd.dt,
          'vec2<u32>(bitcast<u32>(x0), bitcast<u32>(x1))', 'i64');
        return;
      }
      if (cmd.dt === StorageCode.I32) {
        // exact: an f32 scalar option would round values beyond 2^24
        runMap([{ r: cmd.value | 0, dt: StorageCode.I32 }], [cmd.n], buf(cmd.out.id), cmd.out.offset, cmd.dt, 'x0', 'i32');
        return;
      }
      const e = computeType(cmd.dt) === 'f32' ? 's0' : 'i32(s0)';
      runMap([], [cmd.n], buf(cmd.out.id), cmd.out.offset, cmd.dt, e, computeType(cmd.dt), [cmd.value]);
      return;
    }
    case 'arange':
      runArange(cmd);
      return;
    case 'random':
      runRandom(cmd);
      return;
    case 'copy':
      // A checked float -> int64 cast goes through f2i64_ck (wgsl/int64.ts).
      if (cmd.check) runMap([{ r: cmd.src, dt: cmd.srcDt }], cmd.shape, buf(cmd.out.id), cmd.out.offset, cmd.dt, 'f2i64_ck(x0)', 'i64', NO_SCALARS, cmd.check);
      else runMap([{ r: cmd.src, dt: cmd.srcDt }], cmd.shape, buf(cmd.out.id), cmd.out.offset, cmd.dt, 'x0', valueClass(cmd.srcDt));
      return;
    case 'copyInto': {
      const n = cmd.shape.reduce((a, b) => a * b, 1);
      if (n === 0) return;
      const { bind, slot } = slotsOf(buf(cmd.dst.id), [buf(cmd.src.id)]);
      dispatch(`scatter|${cmd.shape.length}|${cmd.srcDt}|${cmd.dt}|${slot[0]}|${bind.length}`, () => scatterShader(cmd.shape.length, cmd.srcDt, cmd.dt, slot[0], bind.length), bind,
        mapParams(n, cmd.shape, 0, [cmd.src, cmd.dst]), grid1d(n));
      return;
    }
    case 'unary':
    case 'binary': {
      const op = (cmd.k === 'unary' ? UNARY : BINARY).get(cmd.op)!;
      const t = valueClass(cmd.dt);
      const expr = t === 'f32' ? op.wgsl.f32 : t === 'i64' ? op.wgsl.i64 : op.wgsl.i32;
      if (!expr) throw new Error(`${op.name} has no ${t} kernel`);
      const ins: MapOperand[] = cmd.k === 'unary' ? [{ r: cmd.a, dt: cmd.dt }] : [{ r: cmd.a, dt: cmd.dt }, { r: cmd.b, dt: cmd.dt }];
      const scalars = cmd.k === 'unary' ? cmd.s : [cmd.alpha];
      runMap(ins, cmd.shape, buf(cmd.out.id), cmd.out.offset, cmd.outDt, expr, op.dtypes === 'bool' ? 'i32' : t, scalars, cmd.check);
      return;
    }
    case 'where':
      runMap([{ r: cmd.c, dt: StorageCode.Bool }, { r: cmd.a, dt: cmd.dt }, { r: cmd.b, dt: cmd.dt }], cmd.shape, buf(cmd.out.id), cmd.out.offset,
        cmd.dt, `select(x2, x1, x0 != 0i)`, valueClass(cmd.dt));
      return;
    case 'reduce':
      runReduce(cmd);
      return;
    case 'softmax': case 'rowGrad':
      runRowNorm(cmd);
      return;
    case 'matmul':
      runMatmul(cmd);
      return;
    case 'windows':
      runWindows(cmd);
      return;
    // The index family.
    case 'gather': case 'scatter': case 'cumulative': case 'sort': case 'oneHot':
      runIndex(cmd);
      return;
    case 'nll': case 'nllGrad': // the fused negative log likelihood (gpu/loss.ts)
      runNll(cmd);
      return;
    case 'maxPool': case 'maxPoolGrad': case 'avgPool': case 'avgPoolGrad': // pooling and its gradients (gpu/pool.ts)
      runPool(cmd);
      return;
    case 'ampUnscale': // GradScaler's fused check (gpu/amp.ts)
      runAmpUnscale(cmd);
      return;
    case 'optimStep': // the optimizers' fused step (gpu/optim.ts)
      runOptimStep(cmd);
      return;
    case 'foreachNorm': // _foreach_norm (gpu/foreach.ts)
      runForeachNorm(cmd);
      return;
    case 'foreachMul': // _foreach_mul_ by a device scalar (gpu/foreach.ts)
      runForeachMul(cmd);
      return;
    case 'foreachClamp': // _foreach_clamp_min_/max_ (gpu/foreach.ts)
      runForeachClamp(cmd);
      return;
    case 'attention': case 'attentionGrad': // fused attention (gpu/attention.ts)
      runAttention(cmd);
      return;
    default:
      throw new Error(`unknown command ${cmd.k}`);
  }
}

/**
 * An `arange` command. The map kernel numbers elements from 0 in each dispatch, and a range over
 * more bytes than one binding runs in windows (ts/worker/split.ts): so a range that large is cut
 * here into ranges of at most one binding, each with its own start.
 */
function runArange(cmd: Extract<Command, { k: 'arange' }>): void {
  const bytes = cmd.dt === StorageCode.I64 ? 8 : 4;
  const per = Math.floor((maxBinding - paramAlign) / bytes / 4) * 4;
  if (cmd.n > per) {
    for (let first = 0; first < cmd.n; first += per) {
      runArange({ ...cmd, n: Math.min(per, cmd.n - first), start: cmd.start + first * cmd.step, out: { id: cmd.out.id, offset: cmd.out.offset + first } });
    }
    return;
  }
  if (cmd.dt === StorageCode.I64) {
    // the facade sends other int64 ranges as data (ts/ops/creation.ts, arange)
    if (!Number.isInteger(cmd.start) || cmd.step !== (cmd.step | 0)) throw new Error(`arange: an int64 arange takes an integer start and a 32-bit step here (got ${cmd.start}, ${cmd.step})`);
    const [lo, hi] = words64(cmd.start);
    runMap([{ r: lo, dt: StorageCode.I32 }, { r: hi, dt: StorageCode.I32 }, { r: cmd.step, dt: StorageCode.I32 }], [cmd.n], buf(cmd.out.id), cmd.out.offset, cmd.dt,
      'i64_add(vec2<u32>(bitcast<u32>(x0), bitcast<u32>(x1)), i64_mul(vec2<u32>(i, 0u), i64_from_i32(x2)))', 'i64');
    return;
  }
  if (cmd.dt === StorageCode.I32 && Number.isInteger(cmd.start) && Number.isInteger(cmd.step)) {
    runMap([{ r: cmd.start | 0, dt: StorageCode.I32 }, { r: cmd.step | 0, dt: StorageCode.I32 }], [cmd.n], buf(cmd.out.id), cmd.out.offset, cmd.dt, 'x0 + i32(i) * x1', 'i32');
    return;
  }
  const e = computeType(cmd.dt) === 'f32' ? 's0 + f32(i) * s1' : 'i32(s0) + i32(i) * i32(s1)';
  runMap([], [cmd.n], buf(cmd.out.id), cmd.out.offset, cmd.dt, e, computeType(cmd.dt), [cmd.start, cmd.step]);
}

/**
 * The composable kinds a GPU runs as one command (Note [composable kinds], ts/ir/kinds.ts): conv
 * windows with their padding from one kernel (wgsl/window.ts) on a CPU adapter (lavapipe), where
 * it made conv2d 1.4× faster. On the H100 the kernel was slower than the composed pad + strided
 * copy (conv2d 32×64×56² → 64: 11.8–12.1 against 14.9–16.0 TFLOP/s, interleaved), whose copy runs
 * on the map kernels' vec4 path, so other GPUs leave windows composed. Convolutions are composed
 * on every GPU (windows and a batched matmul), and so is the windows' gradient.
 */
const windowsAsOne = (cpuAdapter: boolean): ComposableKind[] => (cpuAdapter ? ['windows'] : []);

/** The gpu device backend. */
export const gpuBackend: Backend = {
  async init({ name }): Promise<DeviceInfo> {
    const gpu = await getGpu();
    if (!gpu) throw new Error('WebGPU is not available on this platform (no navigator.gpu)');
    const found = await gpu.requestAdapter({ powerPreference: 'high-performance' });
    if (!found) throw new Error('no WebGPU adapter was found');
    const want: GPUFeatureName[] = ['shader-f16', 'timestamp-query', 'subgroups'];
    const features = want.filter((f) => found.features.has(f));
    const limitNames = ['maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize', 'maxComputeInvocationsPerWorkgroup', 'minStorageBufferOffsetAlignment', 'maxStorageBuffersPerShaderStage'] as const;
    const requiredLimits: Record<string, number> = {};
    for (const l of limitNames) requiredLimits[l] = found.limits[l];
    const device = await found.requestDevice({ requiredFeatures: features, requiredLimits });
    watchLoss(device); // device loss: ts/worker/gpu-lost.ts
    // Dawn tears its instance down once the object from `create()` is collected: core keeps both alive.
    adopt(gpu, found, device, rowDevice(device.features, found.info, env('WEBTORCH_ROWS')), Number(env('WEBTORCH_MATMUL') ?? 0), Number(env('WEBTORCH_SUBMIT_EVERY') ?? submitEvery));
    countBuffers(device);
    setPressureHandler(() => {
      dropReadStaging();
      dropUploads();
    });
    const info = found.info;
    const limits: Record<string, number> = {};
    for (const l of limitNames) limits[l] = device.limits[l];
    return {
      name, kind: 'gpu', cpuAdapter: rowDev.cpu, kernels: windowsAsOne(rowDev.cpu), vendor: info.vendor, architecture: info.architecture, device: info.device, description: info.description || info.device,
      // The adapter names no PCI bus: dawn.node's GPUAdapterInfo has vendor, architecture, device,
      // description, subgroup sizes and isFallbackAdapter only (Dawn's native AdapterPropertiesDrm
      // is not exposed to JavaScript), so which physical GPU this is cannot be read back here.
      pciBusId: null,
      features: [...found.features].map(String).sort(), limits, scratch: scratchCounter(),
      nativeF16: chooseF16Path(features.includes('shader-f16'), env('WEBTORCH_F16')), // f16: the float16 path (ts/worker/half.ts)
      eventTiming: features.includes('timestamp-query') ? 'gpu-timestamp' : 'host',
    };
  },
  run(cmd) {
    run(cmd);
    // Between commands (a command's scratch buffers die at the flush), so the GPU starts early;
    // not while kernels compile (their dispatches wait to be encoded: gpu/core.ts).
    if (submitEvery && pendingBinds.length >= submitEvery && !compiling) flush();
  },
  flush,
  compiling: whenCompiled,
  captureGraph: (id, cmds, fuse, live) => captureGraph(id, cmds, run, fuse, live),
  replayGraph,
  dropGraph,
  read,
  write,
  mark,
  timePasses,
  traceSeq: setTraceSeq,
  passTimes,
  // Polls for the next call after an answer (ts/worker/channel.ts: `Poll`): nothing of Dawn's
  // waits on the event loop then (every call is answered), and its callbacks wait 0.3 ms at most.
  pollMs: 0.3,
  async idle() {
    encodePending();
    // Nothing recorded, handed over, waited on or left to check since a sync point saw the queue
    // finish: nothing to ask the queue (the flush only destroys the buffers retired since).
    if (!encoder && !errorsPending() && !checkCodes.size && !settling && queueWork === queueDone) return flush();
    const deviceCheck = checkCodes.size ? recordDeviceCheck(openEncoder()) : null;
    flush();
    const handedOver = queueWork;
    await settleSyncPoint(device.queue.onSubmittedWorkDone(), deviceCheck);
    sawDone(handedOver);
  },
  async close() {
    flush();
    await device?.queue.onSubmittedWorkDone();
    for (const b of buffers.values()) b.destroy();
    buffers.clear();
    dropReadStaging();
    dropUploads();
    device?.destroy();
    letGo();
  },
};
