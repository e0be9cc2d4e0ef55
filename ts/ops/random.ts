/**
 * Random numbers on the device that owns the tensor: the `random` command (Philox4x32-10,
 * wgsl/random.ts and assembly/kernels/random.ts). The calling thread only takes the blocks a
 * draw needs from the generator (advancing its offset), so `randn([1000, 1000])` returns at
 * once and the numbers are made on the device. The kernels write 32-bit words; other dtypes
 * are drawn into a 32-bit scratch tensor and cast on the device.
 *
 * Also the in-place fills (`normal_`, `uniform_`, `bernoulli_`).
 */
import { noteDraw } from '../runtime/graphs.js';
import type { Device } from '../device.js';
import { isFloating, scalarName, storageCode, StorageCode } from '../dtype.js';
import { Generator } from '../random.js';
import { defaultGeneratorOf } from '../rng.js';
import { alloc, emit, place, ref } from '../runtime/dispatch.js';
import { isGradEnabled } from '../autograd/graph.js';
import { Tensor } from '../tensor.js';
import { Dist } from '../ir/ops.js';
import { bindArgs, type PyArgs } from '../args.js';

export { Dist };

const F = new Float32Array(1), U = new Uint32Array(F.buffer);
/** A number as float32 bits (the kernels' `a` and `b` words). */
export const f32Bits = (x: number): number => ((F[0] = x), U[0]);

/**
 * The generator a draw on `device` uses: `g`, or the device's default generator. A generator of
 * another device type raises PyTorch's error.
 */
export function generatorFor(op: string, device: Device, g: Generator | null | undefined): Generator {
  if (g == null) return defaultGeneratorOf(device);
  if (!(g instanceof Generator)) throw new TypeError(`${op}(): argument 'generator' must be torch.Generator, not ${(g as object)?.constructor?.name ?? typeof g}`);
  if (g.device.type !== device.type) throw new Error(`${op}(): Expected a '${device.type}' device type for generator but found '${g.device.type}'`);
  return g;
}

/**
 * Fills the fresh contiguous tensor `t` with a draw of distribution `dist` (parameters `a`,
 * `b` as 32-bit words) from `g`. Integer draws (`Int`, `Bits`) are made as int32, the others
 * as float32; another storage dtype goes through a scratch tensor and a cast.
 */
export function drawInto(t: Tensor, dist: Dist, g: Generator, a: number, b: number): Tensor {
  const n = t.numel();
  if (!n) return t;
  const word = dist === Dist.Int || dist === Dist.Bits ? StorageCode.I32 : StorageCode.F32;
  const direct = storageCode(t.dtype) === word;
  const target = direct ? t : alloc(t.shape, word === StorageCode.I32 ? 'int32' : 'float32', t.device);
  const { key, counter } = g._draw(n);
  noteDraw(t.device, g, counter[0] + counter[1] * 2 ** 32); // (graphs: a captured draw advances at every replay)
  emit(t.device, { k: 'random', out: place(target), n, dist, key, counter: [counter[0], counter[1], 0, 0], a: a >>> 0, b: b >>> 0 });
  if (!direct) {
    emit(t.device, { k: 'copy', src: ref(target), srcDt: word, out: place(t), dt: storageCode(t.dtype), shape: t.shape.slice() });
    target.dispose();
  }
  return t;
}

/** @internal Philox's raw block for a full 128-bit counter and key on a device (the known-answer tests). */
export function philoxBlock(device: Device, counter: [number, number, number, number], key: [number, number]): Tensor {
  const t = alloc([4], 'int32', device);
  emit(device, { k: 'random', out: place(t), n: 4, dist: Dist.Bits, key: [key[0] >>> 0, key[1] >>> 0], counter: counter.map((c) => c >>> 0) as [number, number, number, number], a: 0, b: 0 });
  return t;
}

/** The in-place fills' check: PyTorch's error for a leaf that requires grad; a tensor in a graph raises too. */
function checkInPlace(op: string, t: Tensor): void {
  if (!(t instanceof Tensor)) throw new TypeError(`${op}(): expected a Tensor, got ${t === null ? 'null' : typeof t}`);
  t._check(op);
  if (t.requiresGrad && isGradEnabled()) {
    if (t.isLeaf) throw new Error(`a leaf Variable that requires grad is being used in an in-place operation. (${op})`);
    throw new Error(`${op}(): filling a tensor that is part of an autograd graph is not supported; detach it or use torch.noGrad`);
  }
}

/** Writes a fresh draw into `t` in place (through a contiguous tensor when `t` is a strided view). */
function fillInPlace(t: Tensor, dist: Dist, g: Generator, a: number, b: number): Tensor {
  t.storage.version++;
  if (t.isContiguous()) return drawInto(t, dist, g, a, b);
  const tmp = drawInto(alloc(t.shape, t.dtype, t.device), dist, g, a, b);
  if (t.numel()) emit(t.device, { k: 'copyInto', src: ref(tmp), srcDt: storageCode(t.dtype), dst: ref(t), dt: storageCode(t.dtype), shape: t.shape.slice() });
  tmp.dispose();
  return t;
}

type Gen = { generator?: Generator | null };

/** `t.normal_(mean = 0, std = 1, {generator})`: fills `t` with normal numbers, in place. */
export function normal_(t: Tensor, ...args: PyArgs<[mean: number, std: number], { mean?: number; std?: number } & Gen>): Tensor {
  const { mean, std, generator } = bindArgs('normal_', ['mean', 'std', 'generator'], args, { mean: 0, std: 1, generator: null as Generator | null }, 1);
  checkInPlace('normal_', t);
  if (typeof mean !== 'number' || typeof std !== 'number') throw new TypeError(`normal_(): mean and std must be numbers, got ${typeof mean} and ${typeof std}`);
  if (!(std >= 0)) throw new RangeError(`normal expects std >= 0.0, but found std ${std}`);
  if (!isFloating(t.dtype)) throw new TypeError(`"normal_kernel_cpu" not implemented for '${scalarName(t.dtype)}'`);
  return fillInPlace(t, Dist.Normal, generatorFor('normal_', t.device, generator), f32Bits(mean), f32Bits(std));
}

/** `t.uniform_(from = 0, to = 1, {generator})`: fills `t` with numbers uniform in [from, to), in place. */
export function uniform_(t: Tensor, ...args: PyArgs<[from: number, to: number], { from?: number; to?: number } & Gen>): Tensor {
  const { from, to, generator } = bindArgs('uniform_', ['from', 'to', 'generator'], args, { from: 0, to: 1, generator: null as Generator | null }, 1);
  checkInPlace('uniform_', t);
  if (typeof from !== 'number' || typeof to !== 'number') throw new TypeError(`uniform_(): from and to must be numbers, got ${typeof from} and ${typeof to}`);
  if (!(from <= to)) throw new RangeError(`uniform_ expects to return a [from, to) range, but found from=${from} > to=${to}`);
  if (!isFloating(t.dtype)) throw new TypeError(`"check_uniform_bounds" not implemented for '${scalarName(t.dtype)}'`);
  return fillInPlace(t, Dist.Uniform, generatorFor('uniform_', t.device, generator), f32Bits(from), f32Bits(Math.fround(to - from)));
}

/** A probability argument: a number in [0, 1], else PyTorch's error. */
export const checkP = (op: string, p: unknown): number => {
  if (typeof p !== 'number') throw new TypeError(`${op}(): argument 'p' must be a number, not ${typeof p}`);
  if (!(p >= 0 && p <= 1)) throw new RangeError(`${op} expects p to be in [0, 1], but got p=${p}`);
  return p;
};

/** `t.bernoulli_(p = 0.5, {generator})`: fills `t` with 1 (probability p) or 0, in place. */
export function bernoulli_(t: Tensor, ...args: PyArgs<[p: number], { p?: number } & Gen>): Tensor {
  const { p, generator } = bindArgs('bernoulli_', ['p', 'generator'], args, { p: 0.5, generator: null as Generator | null }, 1);
  checkInPlace('bernoulli_', t);
  checkP('bernoulli_', p);
  return fillInPlace(t, Dist.Bernoulli, generatorFor('bernoulli_', t.device, generator), f32Bits(p), f32Bits(1));
}
