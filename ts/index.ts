/// <reference types="@webgpu/types" preserve="true" />
/// <reference lib="esnext.disposable" preserve="true" />
/**
 * webtorch: PyTorch's CUDA device model for JavaScript.
 *
 *     import * as torch from 'webtorch';
 *     const dev = await torch.tryGpu(0);
 *     const x = torch.randn([2, 3], { device: dev });
 *
 * Importing starts nothing; devices start on first use. See docs/ARCHITECTURE.md.
 *
 * The two reference directives above go into the shipped index.d.ts, so that a consumer compiling
 * under `--strict` without `skipLibCheck` has the WebGPU types (`GPUAdapterInfo`, a dependency of
 * the package) and `Symbol.dispose` (TypeScript's `esnext.disposable` lib, for `using`).
 */
import './ops/methods.js';
import './tensor-new.js';
import './ops/surface-methods.js';
import { CPU, Device, device, getDefaultDevice, setDefaultDevice, tryAllGpus, tryGpu, numGpus, shutdown as stopDevices, startedDevices } from './device.js';
import { onProgramEnd } from './platform.js';
import { resetAllocators } from './runtime/memory.js';
import * as gpu from './gpu.js';
import * as cpu from './cpu.js';
import { legacyType } from './legacy.js';
import { binaryApi, binaryOp, clamp, div, gelu, nanToNum, softplus, unaryApi, where, type TensorOrScalar } from './ops/elementwise.js';
import { matmul } from './ops/matmul.js';
import { bindArgs, bindDim, type DimArgs, type PyArgs } from './args.js';
import { argReduce, maxMin, reduceApi, type Dims, type ValuesIndices } from './ops/reduce.js';
import { ReduceOp } from './ir/ops.js';
import { Tensor, view } from './tensor.js';
import { tidy } from './ops/scoped.js';
import { setEngineOps } from './autograd/engine.js';
import { scopedGradMode } from './autograd/graph.js';
import { onesLike, zerosLike } from './ops/creation.js';

export { Tensor };
export type { NestedArray } from './tensor.js';
export { Device, CPU, device, tryGpu, tryAllGpus, numGpus, gpu, cpu };
/** `torch.set_default_device` / `torch.get_default_device`: where factories create without a `device` (ts/device.ts). */
export { setDefaultDevice, getDefaultDevice };
/** `torch.cuda`: the same module as `torch.gpu`, so that PyTorch code translates word for word. */
export { gpu as cuda };
export { OutOfMemoryError } from './memory/index.js';
export { DeviceLostError } from './runtime/device-lost.js';
export type { MemoryStats, SnapshotSegment } from './memory/index.js';

/**
 * Stops every device worker and forgets their memory; tensors created before become unusable.
 * A program need not call it: when it has nothing left to do, its queued work is finished and
 * the workers stopped the same way, so it exits with code 0 (`onProgramEnd` in ts/platform.ts).
 */
export async function shutdown(): Promise<void> {
  await stopDevices();
  resetAllocators();
}
onProgramEnd(async () => {
  if (startedDevices().length) await shutdown();
});
export type { DeviceLike } from './device.js';
export type { DeviceProperties } from './properties.js';
export type { LegacyTensorType } from './legacy.js';

// PyTorch's legacy typed constructors on the cpu (`torch.FloatTensor(2, 3)`, `torch.FloatTensor([1, 2])`; ts/legacy.ts).
/** `torch.FloatTensor`: float32 on the cpu. */
export const FloatTensor = legacyType('FloatTensor', 'cpu');
/** `torch.DoubleTensor`: raises (WebGPU has no float64). */
export const DoubleTensor = legacyType('DoubleTensor', 'cpu');
/** `torch.HalfTensor`: float16 on the cpu. */
export const HalfTensor = legacyType('HalfTensor', 'cpu');
/** `torch.BFloat16Tensor`: bfloat16 on the cpu. */
export const BFloat16Tensor = legacyType('BFloat16Tensor', 'cpu');
/** `torch.LongTensor`: int64 on the cpu. */
export const LongTensor = legacyType('LongTensor', 'cpu');
/** `torch.IntTensor`: int32 on the cpu. */
export const IntTensor = legacyType('IntTensor', 'cpu');
/** `torch.ShortTensor`: raises (no int16). */
export const ShortTensor = legacyType('ShortTensor', 'cpu');
/** `torch.CharTensor`: raises (no int8). */
export const CharTensor = legacyType('CharTensor', 'cpu');
/** `torch.ByteTensor`: uint8 on the cpu. */
export const ByteTensor = legacyType('ByteTensor', 'cpu');
/** `torch.BoolTensor`: bool on the cpu. */
export const BoolTensor = legacyType('BoolTensor', 'cpu');
export { DTYPES, promoteTypes, resultType } from './dtype.js';
export type { DType } from './dtype.js';
export {
  tensor, zeros, ones, full, empty, arange, linspace, rand, randn, randint, eye,
  zerosLike, onesLike, fullLike, emptyLike, randLike, randnLike,
} from './ops/creation.js';
export type { TensorOptions, RandomOptions, SizeArgs } from './ops/creation.js';
export { Generator, defaultGenerator } from './random.js';
export type { GeneratorOptions } from './random.js';
// Random number generators (ts/rng.ts) and the random ops made on the devices (ts/ops/random.ts).
export { manualSeed, seed, initialSeed, getRngState, setRngState } from './rng.js';
export type { ForkRngOptions } from './rng.js';
/** `torch.random`: `manualSeed`, `seed`, `initialSeed`, `getRngState`, `setRngState`, `forkRng`. */
export * as random from './random-module.js';
export { randperm, bernoulli, multinomial } from './ops/sampling.js';
/** @internal Philox's raw block on a device, and the calling thread's reference (the known-answer tests). */
export { philoxBlock as _philoxBlock } from './ops/random.js';
export { philox as _philox } from './random.js';
export { broadcastShapes } from './shape.js';
/** `torch.backends`: `summary()` (isolation, SharedArrayBuffer, pinned memory, cpu threads, GPU adapters), `crossOriginIsolated()`. */
export * as backends from './backends.js';
export type { BackendsSummary, IsolationInfo } from './backends.js';
export { where, nanToNum, div, gelu, softplus, matmul };
/** `torch.ops.aten.gelu_backward` (ts/ops/elementwise.ts). */
export { geluBackward as _geluBackward } from './ops/elementwise.js';
export type { TensorOrScalar };
export type { ValuesIndices, Dims } from './ops/reduce.js';
export { ELEMENTWISE } from './ops/table.js';
export { OPS, opInfo } from './ops/registry.js';
export type { OpInfo, OpFamily } from './ops/registry.js';

// A stray argument (an options object PyTorch would not take) raises rather than being dropped.
const u = (name: string) => (x: Tensor, ...rest: []) => (bindArgs(name, [], rest, {}, 1), unaryApi(name, x));
const b = (name: string) => (x: TensorOrScalar, y: TensorOrScalar, ...rest: []) => (bindArgs(name, [], rest, {}, 2), binaryApi(name, x, y));

export const neg = u('neg'), abs = u('abs'), exp = u('exp'), expm1 = u('expm1'), log = u('log'), log1p = u('log1p');
export const sqrt = u('sqrt'), rsqrt = u('rsqrt'), sin = u('sin'), cos = u('cos'), tanh = u('tanh'), sigmoid = u('sigmoid');
export const relu = u('relu'), silu = u('silu'), erf = u('erf'), floor = u('floor'), ceil = u('ceil'), round = u('round');
export const sign = u('sign'), reciprocal = u('reciprocal'), logicalNot = u('logical_not'), isnan = u('isnan');
export const square = u('square'), trunc = u('trunc');
export const mul = b('mul'), pow = b('pow'), maximum = b('maximum'), minimum = b('minimum'), remainder = b('remainder');
export const atan2 = b('atan2'), floorDivide = b('floor_divide'), eq = b('eq'), ne = b('ne'), lt = b('lt'), le = b('le');
export const gt = b('gt'), ge = b('ge'), logicalAnd = b('logical_and'), logicalOr = b('logical_or'), logicalXor = b('logical_xor');
/** `torch.bitwise_not` (`~x`), `bitwise_and` (`a & b`), `bitwise_or` (`|`), `bitwise_xor` (`^`): bool and integer tensors. */
export const bitwiseNot = u('bitwise_not'), bitwiseAnd = b('bitwise_and'), bitwiseOr = b('bitwise_or'), bitwiseXor = b('bitwise_xor');

/** `torch.add(a, b, alpha=)`. */
export const add = (x: TensorOrScalar, y: TensorOrScalar, ...args: [options?: { alpha?: number }]) => binaryApi('add', x, y, bindArgs('add', ['alpha'], args, { alpha: 1 }, 2, 0).alpha);
/** `torch.sub(a, b, alpha=)`. */
export const sub = (x: TensorOrScalar, y: TensorOrScalar, ...args: [options?: { alpha?: number }]) => binaryApi('sub', x, y, bindArgs('sub', ['alpha'], args, { alpha: 1 }, 2, 0).alpha);

/** A reduction over `dim` (all dims when omitted) with PyTorch's `(dim, keepdim)` or keywords. */
const reduction = <D extends Dims>(name: string, op: ReduceOp) => (x: Tensor, ...args: DimArgs<D>) => {
  const { dim, keepdim } = bindDim<D>(name, args);
  return reduceApi(name, op, x, dim, keepdim);
};
/** `torch.sum(x, dim?, keepdim?)`. */
export const sum = reduction<Dims>('sum', ReduceOp.Sum);
/** `torch.mean(x, dim?, keepdim?)`. */
export const mean = reduction<Dims>('mean', ReduceOp.Mean);
/** `torch.prod(x, dim?, keepdim?)`. */
export const prod = reduction<number>('prod', ReduceOp.Prod);
/** `torch.all(x, dim?, keepdim?)`. */
export const all = reduction<number>('all', ReduceOp.All);
/** `torch.any(x, dim?, keepdim?)`. */
export const any = reduction<number>('any', ReduceOp.Any);
/** `torch.max`/`torch.min`: over everything, `{values, indices}` over one dim, or elementwise with another tensor (`maximum`/`minimum`). */
export interface MaxMin {
  (x: Tensor): Tensor;
  (x: Tensor, other: Tensor): Tensor;
  (x: Tensor, ...args: DimArgs<number>): ValuesIndices;
}
const maxMinOf = (isMax: boolean) => ((x: Tensor, ...args: DimArgs<number> | [Tensor]) => {
  if (args[0] instanceof Tensor) return binaryApi(isMax ? 'maximum' : 'minimum', x, args[0]);
  const { dim, keepdim } = bindDim<number>(isMax ? 'max' : 'min', args as DimArgs<number>);
  return maxMin(isMax, x, dim, keepdim);
}) as MaxMin;
/** `torch.max(x)` or `torch.max(x, dim, keepdim)`. */
export const max = maxMinOf(true);
/** `torch.min(x)` or `torch.min(x, dim, keepdim)`. */
export const min = maxMinOf(false);
const argOf = (isMax: boolean) => (x: Tensor, ...args: DimArgs<number>) => {
  const { dim, keepdim } = bindDim<number>(isMax ? 'argmax' : 'argmin', args);
  return argReduce(isMax, x, dim, keepdim);
};
/** `torch.argmax(x, dim?, keepdim?)`. */
export const argmax = argOf(true);
/** `torch.argmin(x, dim?, keepdim?)`. */
export const argmin = argOf(false);

// The index family.
export { embedding, oneHot } from './ops/indexing.js';
export { nonzero, maskedSelect, indexAsync } from './ops/advanced.js';
// Bound to PyTorch's signatures: positional arguments and/or a trailing options object.
export {
  indexSelect, gather, scatter, scatterAdd, take, maskedFill, cumsum, cumprod, sort, topk, flip, indexPut_, clamp,
  cat, stack, split, chunk, roll, tril, triu, logsumexp, norm,
} from './ops/bound.js';
export type { Index } from './ops/views.js';
// The everyday surface (issue 31): named products, einsum, function forms of the views, and friends.
export { mm, bmm, mv, dot, outer, addmm, baddbmm, addmv, diagonal, diag } from './ops/linalg.js';
export type { BetaAlpha } from './ops/linalg.js';
export { einsum } from './ops/einsum.js';
export {
  transpose, permute, reshape, squeeze, unsqueeze, flatten, narrow, unbind, argsort, amax, amin, meshgrid, isinf, isfinite, isclose, allclose,
} from './ops/surface.js';
export type { CloseOptions } from './ops/surface.js';
export { unique, bincount, repeatInterleave } from './ops/host-shaped.js';
export type { UniqueOptions } from './ops/host-shaped.js';
export { lerp, addcmul, addcdiv, indexAdd } from './ops/fused.js';
export type { ValueOption, AlphaOption } from './ops/fused.js';
export { cosh, sinh, normal, swapaxes, swapdims } from './ops/extras.js';
export { compile } from './compile.js';
export type { CompileOptions } from './compile.js';

/** @internal Live storages on a device; the test suites' leak check. */
export { liveStorage as _liveStorage } from './runtime/storage.js';
/** @internal Forcing a collection of dropped tensors, and what the forced collections cost (ts/runtime/collect.ts). */
export { collectGarbage as _collectGarbage, collectorStats as _collectorStats } from './runtime/collect.js';
export { setCopyChunkBytes as _setCopyChunkBytes } from './ops/copy.js';
export { identicalGpus as _identicalGpus, driPrime as _driPrime, physicalStarts as _physicalStarts } from './runtime/physical.js';
export { deviceBuffers as _deviceBuffers } from './runtime/memory.js';
/** @internal Devices whose workers were started. */
export { startedDevices as _startedDevices } from './device.js';
/** @internal How a device's answers came back (shared reply slot or message). */
export { replyCounts as _replyCounts } from './device.js';
/** @internal A device worker's own profile (bench/profile-step.mjs). */
export { profileWorker as _profileWorker } from './device.js';
export type { WorkerProfile } from './worker/protocol.js';

export { tidy };

setEngineOps({ add: (a, b) => binaryOp('add', a, b), onesLike: (t) => onesLike(t), zerosLike: (t) => zerosLike(t), alias: (t) => view(t, t.shape.slice(), t._strides.slice(), t._offset), tidy });

/** `torch.noGrad(fn)`: runs `fn` without recording the tape (sync or async). */
export const noGrad = <T>(fn: () => T): T => scopedGradMode(false, fn);
/** `torch.enableGrad(fn)`: runs `fn` with recording on (sync or async). */
export const enableGrad = <T>(fn: () => T): T => scopedGradMode(true, fn);
export { isGradEnabled } from './autograd/graph.js';
export * as autograd from './autograd/api.js';
/** `torch.accelerator`: whether there is a GPU, which one is current (ts/accelerator.ts). */
export * as accelerator from './accelerator.js';
export * as nn from './nn/index.js';
/** `torch.distributed`: process groups (ranks in this process, or processes and threads under `webtorch-run`), collectives, DDP, `TCPStore`, spawn (ts/distributed/). */
export * as distributed from './distributed/index.js';
/** `torch.futures`: `Future` (the result of DDP comm hooks; ts/futures.ts). */
export * as futures from './futures.js';
export * as optim from './optim/index.js';
/** `torch.distributions`: Bernoulli, Categorical, Multinomial, Normal, Uniform, sampled on the parameters' device (ts/distributions/). */
export * as distributions from './distributions/index.js';
/** `torch.multiprocessing`: `spawn(fn, {args, nprocs, join})`, `setStartMethod('spawn')`; children run this script again (ts/multiprocessing.ts). */
export * as multiprocessing from './multiprocessing.js';
export * as data from './data/index.js';
/** `torch.utils.data`, PyTorch's path to the same module. */
export * as utils from './utils.js';
/** `torch.profiler`: PyTorch's profiler (`profile`, `schedule`, `recordFunction`, …; ts/profiler). */
export * as profiler from './profiler/index.js';
/** `torch.amp`: `autocast`, `GradScaler` (mixed precision; ts/amp). */
export * as amp from './amp/index.js';
export { autocast, isAutocastEnabled, getAutocastDtype } from './amp/autocast.js';
export type { AutocastOptions } from './amp/autocast.js';
/** `torch._ampForeachNonFiniteCheckAndUnscale_` (PyTorch's `_amp_foreach_non_finite_check_and_unscale_`; ts/amp/unscale.ts). */
export { ampForeachNonFiniteCheckAndUnscale_ as _ampForeachNonFiniteCheckAndUnscale_ } from './amp/unscale.js';
/** `torch._foreachNorm` and `torch._foreachMul_` (PyTorch's `_foreach_norm`, `_foreach_mul_`; ts/ops/foreach.ts). */
export { foreachNorm as _foreachNorm, foreachMul_ as _foreachMul_ } from './ops/foreach.js';
export { Dataset, TensorDataset, DataLoader } from './data/index.js';

// ---- NN functional ops, statistics, joining and splitting (ts/ops/{nn,conv,pool,shape,stats}.ts) ----
/** `torch.F`: the `torch.nn.functional` counterpart (`F.softmax`, `F.crossEntropy`, `F.conv2d`, …). */
export * as F from './ops/functional.js';
export { softmax, logSoftmax, dropout } from './ops/nn.js';
export type { Reduction, NllOptions, CrossEntropyOptions } from './ops/nn.js';
export { variance as var, std } from './ops/stats.js';
export type { VarOptions, NormOrd } from './ops/stats.js';
export type { ConvOptions, UnfoldOptions, Size2 } from './ops/conv.js';
export type { MaxPool2dOptions, AvgPool2dOptions } from './ops/pool.js';

// ---- Checkpoints (ts/serialization): PyTorch's .pt format and safetensors ----
export { save, load } from './serialization/index.js';
export type { SaveOptions, LoadOptions, MapLocation, Source } from './serialization/index.js';
/** `torch.safetensors`: `safetensors.torch`'s `save`, `saveFile`, `load`, `loadFile`, and `metadata` (ts/serialization/safetensors.ts). */
export * as safetensors from './serialization/safetensors.js';
/** @internal Test hook: the next checkpoint write fails after this many bytes (the atomic-write test). */
export { setWriteFault as _setCheckpointWriteFault } from './serialization/io.js';
