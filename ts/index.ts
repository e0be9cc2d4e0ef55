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
import { CPU, Device, device, tryAllGpus, tryGpu, numGpus, shutdown as stopDevices } from './device.js';
import { resetAllocators } from './runtime/memory.js';
import * as gpu from './gpu.js';
import { binaryOp, clamp, div, gelu, nanToNum, softplus, unaryOp, where, type TensorOrScalar } from './ops/elementwise.js';
import { matmul } from './ops/matmul.js';
import { checkOptions } from './ops/options.js';
import { argReduce, maxMin, reduce, type Dims, type ValuesIndices } from './ops/reduce.js';
import { ReduceOp } from '../wgsl/reduce.js';
import { Tensor } from './tensor.js';
import { tidy } from './ops/scoped.js';
import { setEngineOps } from './autograd/engine.js';
import { withGradMode } from './autograd/graph.js';
import { onesLike } from './ops/creation.js';

export { Tensor };
export type { NestedArray } from './tensor.js';
export { Device, CPU, device, tryGpu, tryAllGpus, numGpus, gpu };
export { OutOfMemoryError } from './memory/index.js';
export type { MemoryStats, SnapshotSegment } from './memory/index.js';

/** Stops every device worker and forgets their memory; tensors created before become unusable. */
export async function shutdown(): Promise<void> {
  await stopDevices();
  resetAllocators();
}
export type { DeviceLike, DeviceProperties } from './device.js';
export { DTYPES, promoteTypes, resultType } from './dtype.js';
export type { DType } from './dtype.js';
export {
  tensor, zeros, ones, full, empty, arange, linspace, rand, randn, eye,
  zerosLike, onesLike, fullLike, emptyLike, randLike, randnLike,
} from './ops/creation.js';
export type { TensorOptions } from './ops/creation.js';
export { Generator, manualSeed, defaultGenerator } from './random.js';
export { broadcastShapes } from './shape.js';
export { where, clamp, nanToNum, div, gelu, softplus, matmul };
export type { TensorOrScalar };
export type { ValuesIndices, Dims } from './ops/reduce.js';
export { ELEMENTWISE } from './ops/table.js';
export { OPS, opInfo } from './ops/registry.js';
export type { OpInfo, OpFamily } from './ops/registry.js';

const u = (name: string) => (x: Tensor) => unaryOp(name, x);
const b = (name: string) => (x: TensorOrScalar, y: TensorOrScalar) => binaryOp(name, x, y);

export const neg = u('neg'), abs = u('abs'), exp = u('exp'), expm1 = u('expm1'), log = u('log'), log1p = u('log1p');
export const sqrt = u('sqrt'), rsqrt = u('rsqrt'), sin = u('sin'), cos = u('cos'), tanh = u('tanh'), sigmoid = u('sigmoid');
export const relu = u('relu'), silu = u('silu'), erf = u('erf'), floor = u('floor'), ceil = u('ceil'), round = u('round');
export const sign = u('sign'), reciprocal = u('reciprocal'), logicalNot = u('logical_not'), isnan = u('isnan');
export const square = u('square'), trunc = u('trunc');
export const mul = b('mul'), pow = b('pow'), maximum = b('maximum'), minimum = b('minimum'), remainder = b('remainder');
export const atan2 = b('atan2'), floorDivide = b('floor_divide'), eq = b('eq'), ne = b('ne'), lt = b('lt'), le = b('le');
export const gt = b('gt'), ge = b('ge'), logicalAnd = b('logical_and'), logicalOr = b('logical_or'), logicalXor = b('logical_xor');

/** `torch.add(a, b, alpha=)`. */
export const add = (x: TensorOrScalar, y: TensorOrScalar, o?: { alpha?: number }) => (checkOptions('add', o, ['alpha']), binaryOp('add', x, y, o?.alpha));
/** `torch.sub(a, b, alpha=)`. */
export const sub = (x: TensorOrScalar, y: TensorOrScalar, o?: { alpha?: number }) => (checkOptions('sub', o, ['alpha']), binaryOp('sub', x, y, o?.alpha));

/** `torch.sum(x, dim?, keepdim?)`. */
export const sum = (x: Tensor, dim?: Dims, keepdim?: boolean) => reduce(ReduceOp.Sum, x, dim, keepdim);
/** `torch.mean(x, dim?, keepdim?)`. */
export const mean = (x: Tensor, dim?: Dims, keepdim?: boolean) => reduce(ReduceOp.Mean, x, dim, keepdim);
/** `torch.prod(x, dim?, keepdim?)`. */
export const prod = (x: Tensor, dim?: number, keepdim?: boolean) => reduce(ReduceOp.Prod, x, dim, keepdim);
/** `torch.all(x, dim?, keepdim?)`. */
export const all = (x: Tensor, dim?: number, keepdim?: boolean) => reduce(ReduceOp.All, x, dim, keepdim);
/** `torch.any(x, dim?, keepdim?)`. */
export const any = (x: Tensor, dim?: number, keepdim?: boolean) => reduce(ReduceOp.Any, x, dim, keepdim);
/** `torch.max`/`torch.min`: over everything, or `{values, indices}` over one dim. */
export interface MaxMin {
  (x: Tensor): Tensor;
  (x: Tensor, dim: number, keepdim?: boolean): ValuesIndices;
}
/** `torch.max(x)` or `torch.max(x, dim, keepdim)`. */
export const max = ((x: Tensor, dim?: number, keepdim?: boolean) => maxMin(true, x, dim, keepdim)) as MaxMin;
/** `torch.min(x)` or `torch.min(x, dim, keepdim)`. */
export const min = ((x: Tensor, dim?: number, keepdim?: boolean) => maxMin(false, x, dim, keepdim)) as MaxMin;
/** `torch.argmax(x, dim?, keepdim?)`. */
export const argmax = (x: Tensor, dim?: number, keepdim?: boolean) => argReduce(true, x, dim, keepdim);
/** `torch.argmin(x, dim?, keepdim?)`. */
export const argmin = (x: Tensor, dim?: number, keepdim?: boolean) => argReduce(false, x, dim, keepdim);

// The index family.
export { indexSelect, gather, scatter, scatterAdd, take, embedding, oneHot, maskedFill, cumsum, cumprod, sort, topk } from './ops/indexing.js';
export { flip, nonzero, maskedSelect, indexAsync, indexPut_ } from './ops/advanced.js';
export type { Index } from './ops/views.js';

/** @internal Live storages on a device; the test suites' leak check. */
export { liveStorage as _liveStorage } from './runtime/storage.js';
/** @internal Devices whose workers were started. */
export { startedDevices as _startedDevices } from './device.js';
/** @internal A device worker's own profile (bench/profile-step.mjs). */
export { profileWorker as _profileWorker } from './device.js';
export type { WorkerProfile } from './worker/protocol.js';

export { tidy };

setEngineOps({ add: (a, b) => binaryOp('add', a, b), onesLike: (t) => onesLike(t), tidy });

/** `torch.noGrad(fn)`: runs `fn` without recording the tape (sync or async). */
export const noGrad = <T>(fn: () => T): T => withGradMode(false, fn);
/** `torch.enableGrad(fn)`: runs `fn` with recording on. */
export const enableGrad = <T>(fn: () => T): T => withGradMode(true, fn);
export { isGradEnabled } from './autograd/graph.js';
export * as autograd from './autograd/api.js';
export * as nn from './nn/index.js';
export * as optim from './optim/index.js';
export * as data from './data/index.js';
export { Dataset, TensorDataset, DataLoader } from './data/index.js';

// ---- NN functional ops, statistics, joining and splitting (ts/ops/{nn,conv,pool,shape,stats}.ts) ----
/** `torch.F`: the `torch.nn.functional` counterpart (`F.softmax`, `F.crossEntropy`, `F.conv2d`, …). */
export * as F from './ops/functional.js';
export { softmax, logSoftmax, dropout } from './ops/nn.js';
export type { Reduction, NllOptions, CrossEntropyOptions } from './ops/nn.js';
export { cat, stack, split, chunk, roll, tril, triu } from './ops/shape.js';
export { variance as var, std, logsumexp, norm } from './ops/stats.js';
export type { VarOptions, NormOrd } from './ops/stats.js';
export type { ConvOptions, UnfoldOptions, Size2 } from './ops/conv.js';
export type { MaxPool2dOptions, AvgPool2dOptions } from './ops/pool.js';
