/**
 * The matmul family of the gpu worker: the variant `chooseMatmul` picks by shape and adapter
 * (wgsl/matmul.ts), with a transposed operand copied row-major when the tiled kernel repays it,
 * and a long K split into partial products where the output alone would leave the GPU idle.
 */
import { StorageCode } from '../../dtype.js';
import { chooseMatmul, matmulVariantGrid, matmulVariantKey, matmulVariantShader, copiesTransposed, packsOutput, tiledEligible } from '../../../wgsl/matmul.js';
import { computeType, elementsPerWord } from '../../../wgsl/dtype.js';
import { vec4Dtype } from '../../../wgsl/half.js'; // f16: 16-bit floats on the vec4 paths
import { half } from '../half.js'; // f16: which float16 path (shader-f16 or storage)
import type { Command } from '../../ir/commands.js';
import { contextBuffer } from '../scratch.js';
import { buf, device, dispatch, matmulVariant, rowDev, slotsOf } from './core.js';
import { asSegments, KeptScratch } from './workspace.js';
import { runMap, viaScratch } from './map.js';

/** An operand of a matmul: a buffer, its element offset and (batch, row, column) strides. */
interface MatmulOperand { b: GPUBuffer; offset: number; strides: [number, number, number] }

/** Products of at least this many multiply-adds copy a transposed operand to run a tiled variant. */
const COPY_FOR_TILED = 1 << 22;

/**
 * `batch` products of m×kk · kk×n. The tiled variants need rows that are contiguous in memory;
 * an operand whose rows are not (a transposed weight, as `x @ W.T` has) is copied row-major
 * into a scratch buffer first when the product is large enough for the tiled kernel to repay
 * the copy: each element of B is read m times, of A n times, and the copy reads it once.
 */
export function runMatmul(cmd: Extract<Command, { k: 'matmul' }>): void {
  const { m, n, kk, batch } = cmd;
  if (batch * m * n === 0) return;
  const split = batch === 1 && cmd.dt === StorageCode.F32 ? splitK(m, n, kk) : 1;
  if (split > 1) return runSplitK(cmd, split);
  let a: MatmulOperand = { b: buf(cmd.a.id), offset: cmd.a.offset, strides: cmd.aStrides };
  let b: MatmulOperand = { b: buf(cmd.b.id), offset: cmd.b.offset, strides: cmd.bStrides };
  // f16: f32 and 16-bit floats run the vec4 tiles (16-bit ones unpack at the tile load, wgsl/half.ts)
  const vecFloat = vec4Dtype(cmd.dt) && computeType(cmd.dt) === 'f32', storage = device.limits.maxComputeWorkgroupStorageSize;
  if (vecFloat && !matmulVariant && kk % 4 === 0 && n % 4 === 0 && batch * m * n * kk >= COPY_FOR_TILED && copiesTransposed(chooseMatmul(m, n, kk, batch, true, 0, storage, rowDev.cpu))) {
    if (a.strides[2] !== 1 && n >= 64) a = rowMajorCopy(a, batch, m, kk, 0, cmd.dt);
    if (b.strides[2] !== 1 && m >= 64) b = rowMajorCopy(b, batch, kk, n, 1, cmd.dt);
  }
  const launch = (v: number, target: GPUBuffer, offset: number, pack = false) => {
    const { bind, slot } = slotsOf(target, [a.b, b.b]);
    const p = new Uint32Array([m, n, kk, a.offset, ...a.strides, b.offset, ...b.strides, offset]).buffer;
    dispatch(`mm${v}|${cmd.dt}|${slot[0]}|${slot[1]}|${bind.length}|${+pack}|${matmulVariantKey(v, m, n)}`,
      () => matmulVariantShader(v, cmd.dt, slot[0], slot[1], bind.length, half.native, pack, m, n), bind, p, matmulVariantGrid(v, m, n, batch, pack));
  };
  // f16: a 16-bit product writes its output itself where words hold whole column pairs (N, offset even) and its variant can; else f32 scratch, cast after
  if (vecFloat && cmd.dt !== StorageCode.F32 && n % 2 === 0 && cmd.out.offset % 2 === 0) {
    const v = chooseMatmul(m, n, kk, batch, tiledEligible(kk, n, a, b, cmd.out.offset), matmulVariant, storage, rowDev.cpu);
    if (packsOutput(v)) return launch(v, buf(cmd.out.id), cmd.out.offset, true);
  }
  viaScratch(cmd.out, cmd.dt, batch * m * n, StorageCode.F32, (target, offset) => {
    const tiled = cmd.dt === StorageCode.F32 && tiledEligible(kk, n, a, b, offset);
    launch(chooseMatmul(m, n, kk, batch, tiled, matmulVariant, storage, rowDev.cpu), target, offset);
  });
}

/** The scratch buffers of `rowMajorCopy`, one per operand, and of split-K's partial products. */
const operandScratch = [new KeptScratch('a matmul operand copy'), new KeptScratch('a matmul operand copy')];
const partialScratch = new KeptScratch('the partial products of a split matmul');

/** A row-major copy (in its dtype `dt`) of a (batch, rows, cols) operand in scratch buffer `slot` (one copy of a broadcast batch). */
function rowMajorCopy(x: MatmulOperand, batch: number, rows: number, cols: number, slot: 0 | 1, dt: StorageCode): MatmulOperand {
  const copies = x.strides[0] === 0 ? 1 : batch, bytes = copies * rows * cols * (4 / elementsPerWord(dt)); // f16: dt
  const tmp = operandScratch[slot].take(bytes);
  runMap([{ r: { id: -1, offset: x.offset, strides: [x.strides[0], x.strides[1], x.strides[2]] }, dt, b: x.b }],
    [copies, rows, cols], tmp, 0, dt, 'x0', 'f32'); // f16: dt
  return { b: tmp, offset: 0, strides: [copies === 1 ? 0 : rows * cols, cols, 1] };
}

/**
 * How many slices of K to compute in parallel: a product with few output tiles (64×64) and a
 * long K leaves most of a GPU idle, so its K is split until there are about 512 tiles' worth of
 * work, in slices of at least 256 that divide K evenly (the best measured on an H100: bench/MATMUL-VARIANTS.md).
 */
function splitK(m: number, n: number, k: number): number {
  const tiles = Math.ceil(m / 64) * Math.ceil(n / 64);
  if (k < 2048 || tiles >= 128) return 1;
  let s = 1;
  while (s * 2 * tiles <= 512 && k % (s * 2) === 0 && k / (s * 2) >= 256 && s < MAX_SPLIT) s *= 2;
  return s;
}

const MAX_SPLIT = 64;

/** A row of MAX_SPLIT float32 ones (a fixed buffer of the device, made once): the split-K sum's left operand. */
let ones: { device: GPUDevice; b: GPUBuffer } | null = null;

function onesRow(): GPUBuffer {
  if (ones?.device === device) return ones.b;
  const b = device.createBuffer({ size: MAX_SPLIT * 4, usage: GPUBufferUsage.STORAGE, mappedAtCreation: true });
  new Float32Array(b.getMappedRange()).fill(1);
  b.unmap();
  ones = { device, b: contextBuffer(b) };
  return b;
}

/**
 * Split-K: `split` partial products over slices of K (a batch of `split` views of the operands,
 * no copies) into a scratch buffer, then their sum as one more product, ones[1, split] ·
 * partials[split, m·n], into the output.
 */
function runSplitK(cmd: Extract<Command, { k: 'matmul' }>, split: number): void {
  const { m, n, kk, aStrides: as, bStrides: bs } = cmd, ks = kk / split;
  const parts = partialScratch.take(split * m * n * 4);
  asSegments([parts, onesRow()], ([partsId, onesId]) => {
    runMatmul({ ...cmd, out: { id: partsId, offset: 0 }, batch: split, kk: ks, aStrides: [ks * as[2], as[1], as[2]], bStrides: [ks * bs[1], bs[1], bs[2]] });
    runMatmul({ ...cmd, a: { id: onesId, offset: 0, strides: [split, 1] }, b: { id: partsId, offset: 0, strides: [m * n, 1] }, m: 1, n: m * n, kk: split, aStrides: [0, split, 1], bStrides: [0, m * n, 1] });
  });
}
