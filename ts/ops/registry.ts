/**
 * The op table: every op webtorch implements, described once.
 *
 * The elementwise rows come from `ELEMENTWISE` (ts/ops/table.ts), which also holds their WGSL
 * and AssemblyScript kernels and gradient rules. Every other op is a row here naming its family,
 * where it lives in the API, the dtypes PyTorch accepts for it, whether it is differentiable, and
 * the worker commands (ts/worker/protocol.ts) its kernels run as. From this table:
 * - the API refuses a dtype with PyTorch's message (`checkDtypes`, called by the family modules);
 * - the tests require, for every row and every dtype, a PyTorch golden: an output where the row
 *   accepts the dtype, PyTorch's error where it does not (test/backend/op-table.test.ts), plus
 *   non-contiguous and broadcasting cases, on every device;
 * - docs/ARCHITECTURE.md's op list is this table;
 * - `torch.autocast` (ts/amp/autocast.ts) reads a row's `autocast` policy for the device type.
 * "The dtype" of an op is the dtype of its argument `dtypeArg` (default 0), in the goldens'
 * argument order, which is `torch.<op>`'s (for `embedding`, the weight; for `where`, `x`).
 */
import { DTYPES, scalarName, type DType } from '../dtype.js';
import type { Tensor } from '../tensor.js';
import { ELEMENTWISE, type ElementwiseOp } from './table.js';

/** The families ops are organised in; each has one module in ts/ops and one kernel family per device. */
export type OpFamily = 'unary' | 'binary' | 'reduction' | 'nn' | 'index' | 'shape' | 'linalg';

/** One op. */
export interface OpInfo {
  /** PyTorch's name, snake_case; the goldens' `op`. */
  name: string;
  family: OpFamily;
  /** Where it is in the API: `torch.x`, `F.x` (torch.nn.functional) or `Tensor.x` (a method). */
  api: readonly string[];
  /** The dtypes PyTorch accepts for the op's main argument; others raise at the call. */
  dtypes: readonly DType[];
  /** Which argument's dtype is checked (PyTorch's argument order). */
  dtypeArg?: number;
  /** Whether gradients flow through it to floating inputs. */
  differentiable: boolean;
  /** The worker commands its kernels run as (ts/worker/protocol.ts), besides copies and casts. */
  kernels: readonly string[];
  /** The keys of its options object, if it takes one (an unknown key is a TypeError). */
  options?: readonly string[];
  /**
   * What `torch.autocast` does to its floating inputs, per device type (ts/amp/autocast.ts):
   * PyTorch's CUDA lists for `gpu`, its CPU lists (as of the goldens' PyTorch) for `cpu`. Absent:
   * the op runs in its inputs' dtypes.
   */
  autocast?: { gpu?: AutocastPolicy; cpu?: AutocastPolicy };
}

/**
 * 'lower': to the region's low-precision dtype; 'fp32': to float32; 'promote': to the widest
 * floating dtype among the inputs.
 */
export type AutocastPolicy = 'lower' | 'fp32' | 'promote';
/** Autocast policies: low precision and float32 on both device types, float32 on gpu only, promotion. */
const LOW = { autocast: { gpu: 'lower', cpu: 'lower' } } as const;
const F32 = { autocast: { gpu: 'fp32', cpu: 'fp32' } } as const;
const F32_GPU = { autocast: { gpu: 'fp32' } } as const;
const PROMOTE = { autocast: { gpu: 'promote', cpu: 'promote' } } as const;
/** Elementwise ops in PyTorch's CUDA float32 list (and promote list), which its CPU lists leave alone. */
const ELEMENTWISE_AUTOCAST: Record<string, Partial<OpInfo>> = {
  exp: F32_GPU, expm1: F32_GPU, log: F32_GPU, log1p: F32_GPU, reciprocal: F32_GPU, rsqrt: F32_GPU, pow: F32_GPU, softplus: F32_GPU,
  atan2: PROMOTE,
};

const ALL = DTYPES;
const FLOAT: readonly DType[] = ['float32', 'float16', 'bfloat16'];
const NUMBER: readonly DType[] = ALL.filter((d) => d !== 'bool');

const INTEGRAL: readonly DType[] = ALL.filter((d) => !FLOAT.includes(d));

/** The dtypes an elementwise row accepts: 'floating' only floats, 'integral' no floats, 'number' no bool unless it names a result for it. */
const ruleDtypes = (o: ElementwiseOp): readonly DType[] =>
  (o.dtypes === 'floating' ? FLOAT : o.dtypes === 'integral' ? INTEGRAL : o.dtypes === 'number' && !o.boolResult ? NUMBER : ALL);
const camel = (s: string) => s.replace(/_(\w)/g, (_, c: string) => c.toUpperCase());

/** Elementwise rows whose public function is not `torch.<camelName>` (a mode of another op). */
const ELEMENTWISE_API: Record<string, string[]> = {
  gelu: ['torch.gelu', 'F.gelu', 'Tensor.gelu'],
  gelu_tanh: ['torch.gelu'],
  gelu_backward: ['torch._geluBackward'],
  gelu_tanh_backward: ['torch._geluBackward'],
  softplus: ['torch.softplus', 'F.softplus'],
  floor_divide: ['torch.floorDivide', 'torch.div', 'Tensor.div'],
  trunc_divide: ['torch.div', 'Tensor.div'],
  clamp: ['torch.clamp', 'Tensor.clamp'],
  nan_to_num: ['torch.nanToNum', 'Tensor.nanToNum'],
};
const ELEMENTWISE_OPTIONS: Record<string, string[]> = {
  add: ['alpha'], sub: ['alpha'], div: ['roundingMode'], floor_divide: ['roundingMode'], trunc_divide: ['roundingMode'],
  gelu: ['approximate'], gelu_tanh: ['approximate'], gelu_backward: ['approximate'], gelu_tanh_backward: ['approximate'], softplus: ['beta', 'threshold'], nan_to_num: ['nan', 'posinf', 'neginf'],
};

const elementwise: OpInfo[] = ELEMENTWISE.map((o) => ({
  name: o.name,
  family: o.arity === 1 ? 'unary' : 'binary',
  api: ELEMENTWISE_API[o.name] ?? [`torch.${camel(o.name)}`, `Tensor.${camel(o.name)}`],
  dtypes: ruleDtypes(o),
  differentiable: o.grad !== undefined,
  kernels: [o.arity === 1 ? 'unary' : 'binary'],
  options: ELEMENTWISE_OPTIONS[o.name],
  ...ELEMENTWISE_AUTOCAST[o.name],
}));

const row = (name: string, family: OpFamily, api: string[], dtypes: readonly DType[], differentiable: boolean, kernels: string[],
  extra: Partial<OpInfo> = {}): OpInfo => ({ name, family, api, dtypes, differentiable, kernels, ...extra });
const both = (n: string) => [`torch.${camel(n)}`, `Tensor.${camel(n)}`];
const fn = (n: string) => [`F.${camel(n)}`];

/** Every op. */
export const OPS: readonly OpInfo[] = [
  ...elementwise,
  row('where', 'binary', ['torch.where', 'Tensor.where'], ALL, true, ['where'], { dtypeArg: 1 }),

  row('sum', 'reduction', both('sum'), ALL, true, ['reduce'], F32_GPU),
  row('mean', 'reduction', both('mean'), FLOAT, true, ['reduce']),
  row('prod', 'reduction', both('prod'), ALL, true, ['reduce'], F32),
  row('var', 'reduction', both('var'), FLOAT, true, ['reduce'], { options: ['correction', 'unbiased', 'keepdim'] }),
  row('std', 'reduction', both('std'), FLOAT, true, ['reduce'], { options: ['correction', 'unbiased', 'keepdim'] }),
  row('max', 'reduction', both('max'), ALL, true, ['reduce']),
  row('min', 'reduction', both('min'), ALL, true, ['reduce']),
  row('argmax', 'reduction', both('argmax'), NUMBER, false, ['reduce']),
  row('argmin', 'reduction', both('argmin'), NUMBER, false, ['reduce']),
  row('logsumexp', 'reduction', both('logsumexp'), ALL, true, ['reduce', 'unary', 'binary'], F32_GPU),
  row('norm', 'reduction', both('norm'), FLOAT, true, ['reduce', 'unary'], F32_GPU),
  row('all', 'reduction', both('all'), ALL, false, ['reduce']),
  row('any', 'reduction', both('any'), ALL, false, ['reduce']),
  row('cumsum', 'reduction', both('cumsum'), ALL, true, ['cumulative'], F32_GPU),
  row('cumprod', 'reduction', both('cumprod'), ALL, true, ['cumulative'], F32_GPU),

  row('matmul', 'linalg', both('matmul'), NUMBER, true, ['matmul'], LOW),
  row('linear', 'nn', fn('linear'), NUMBER, true, ['matmul', 'binary'], LOW),

  row('softmax', 'nn', [...both('softmax'), 'F.softmax'], FLOAT, true, ['softmax', 'rowGrad', 'reduce', 'binary', 'unary'], { options: ['dtype'], ...F32_GPU }),
  row('log_softmax', 'nn', [...both('log_softmax'), 'F.logSoftmax'], FLOAT, true, ['softmax', 'rowGrad', 'reduce', 'binary', 'unary'], { options: ['dtype'], ...F32_GPU }),
  row('layer_norm', 'nn', fn('layer_norm'), FLOAT, true, ['softmax', 'rowGrad', 'reduce', 'binary', 'unary'], F32_GPU),
  row('batch_norm', 'nn', fn('batch_norm'), FLOAT, true, ['reduce', 'binary', 'unary']),
  row('dropout', 'nn', ['torch.dropout', 'F.dropout'], ALL, true, ['random', 'binary']),
  row('conv1d', 'nn', fn('conv1d'), NUMBER, true, ['windows', 'gather', 'matmul', 'conv', 'convGrad'], { options: ['stride', 'padding', 'dilation', 'groups'], ...LOW }),
  row('conv2d', 'nn', fn('conv2d'), NUMBER, true, ['windows', 'gather', 'matmul', 'conv', 'convGrad'], { options: ['stride', 'padding', 'dilation', 'groups'], ...LOW }),
  row('max_pool2d', 'nn', fn('max_pool2d'), FLOAT, true, ['maxPool', 'maxPoolGrad', 'scatter'],
    { options: ['stride', 'padding', 'dilation', 'ceilMode', 'returnIndices'] }),
  row('avg_pool2d', 'nn', fn('avg_pool2d'), [...FLOAT, 'int64'], true, ['avgPool', 'avgPoolGrad', 'windows', 'gather', 'reduce'],
    { options: ['stride', 'padding', 'ceilMode', 'countIncludePad', 'divisorOverride'] }),
  row('adaptive_avg_pool2d', 'nn', fn('adaptive_avg_pool2d'), FLOAT, true, ['avgPool', 'avgPoolGrad', 'matmul']),
  row('pad', 'nn', fn('pad'), ALL, true, ['fill', 'copyInto']),
  row('unfold', 'nn', fn('unfold'), FLOAT, true, ['windows', 'gather'], { options: ['dilation', 'padding', 'stride'] }),
  row('embedding', 'nn', ['torch.embedding', 'F.embedding'], ALL, true, ['gather']),
  row('cross_entropy', 'nn', fn('cross_entropy'), FLOAT, true, ['softmax', 'rowGrad', 'nll', 'nllGrad', 'reduce', 'gather', 'binary', 'unary'],
    { options: ['weight', 'ignoreIndex', 'reduction', 'labelSmoothing'], ...F32 }),
  row('nll_loss', 'nn', fn('nll_loss'), FLOAT, true, ['nll', 'nllGrad', 'gather', 'reduce', 'binary'], { options: ['weight', 'ignoreIndex', 'reduction'], ...F32 }),
  row('mse_loss', 'nn', fn('mse_loss'), FLOAT, true, ['binary', 'reduce'], { options: ['reduction'], ...F32 }),
  row('l1_loss', 'nn', fn('l1_loss'), NUMBER, true, ['binary', 'unary', 'reduce'], { options: ['reduction'], ...F32 }),
  row('binary_cross_entropy_with_logits', 'nn', fn('binary_cross_entropy_with_logits'), FLOAT, true, ['binary', 'unary', 'reduce'],
    { options: ['weight', 'posWeight', 'reduction'], ...F32 }),

  row('index_select', 'index', both('index_select'), ALL, true, ['gather']),
  row('gather', 'index', both('gather'), ALL, true, ['gather']),
  row('take', 'index', both('take'), ALL, true, ['gather']),
  row('scatter', 'index', both('scatter'), ALL, true, ['scatter']),
  row('scatter_add', 'index', both('scatter_add'), ALL, true, ['scatter']),
  row('masked_fill', 'index', both('masked_fill'), ALL, true, ['where']),
  row('one_hot', 'index', ['F.oneHot'], ['int64'], false, ['oneHot']),
  row('sort', 'index', both('sort'), ALL, true, ['sort', 'gather']),
  row('topk', 'index', both('topk'), NUMBER, true, ['sort', 'gather']),
  row('flip', 'index', both('flip'), ALL, true, ['gather']),
  row('index', 'index', ['Tensor.index', 'Tensor.indexAsync'], ALL, true, ['gather']),
  row('index_put', 'index', ['Tensor.indexPut_'], ALL, true, ['scatter', 'where']),
  row('nonzero', 'index', both('nonzero'), ALL, false, ['reduce', 'sort', 'gather']),
  row('masked_select', 'index', both('masked_select'), ALL, true, ['reduce', 'sort', 'gather']),

  row('cat', 'shape', ['torch.cat'], ALL, true, ['copyInto'], PROMOTE),
  row('stack', 'shape', ['torch.stack'], ALL, true, ['copyInto'], PROMOTE),
  row('split', 'shape', both('split'), ALL, true, []),
  row('chunk', 'shape', both('chunk'), ALL, true, []),
  row('roll', 'shape', both('roll'), ALL, true, ['copyInto']),
  row('repeat', 'shape', ['Tensor.repeat'], ALL, true, ['copy']),
  row('tril', 'shape', both('tril'), ALL, true, ['where']),
  row('triu', 'shape', both('triu'), ALL, true, ['where']),
];

const BY_NAME = new Map(OPS.map((o) => [o.name, o]));

/** Looks an op up by its PyTorch name. */
export function opInfo(name: string): OpInfo {
  const op = BY_NAME.get(name);
  if (!op) throw new Error(`webtorch: ${name} is not in the op table (ts/ops/registry.ts)`);
  return op;
}

/**
 * Refuses a tensor whose dtype the op's row does not accept, with PyTorch's message
 * (`"softmax" not implemented for 'Int'`) plus the shape and webtorch's dtype name.
 */
export function checkDtypes(name: string, ...tensors: (Tensor | null | undefined)[]): void {
  const op = opInfo(name);
  for (const t of tensors) {
    if (t && !op.dtypes.includes(t.dtype)) {
      throw new TypeError(`"${name}" not implemented for '${scalarName(t.dtype)}' (got ${t.dtype} input of shape [${t.shape.join(', ')}]; ` +
        `${name} takes ${op.dtypes.join(', ')})`);
    }
  }
}
