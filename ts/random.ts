/**
 * Philox4x32-10 (PyTorch's CUDA generator) and the mapping from its words to numbers: the
 * reference that the device kernels (`wgsl/random.ts`, `assembly/kernels/random.ts`) follow bit
 * for bit, and `Generator`, a (seed, offset) pair.
 *
 * Why the numbers agree on every device: a generator's state is a 64-bit seed (Philox's key)
 * and an offset (the next unused 128-bit counter), so a tensor's numbers depend only on that
 * state, never on where they are made. Element i of a draw takes word i % 4 of the block at
 * counter offset + ⌊i / 4⌋; every draw of n elements advances the offset by ⌈n / 4⌉ blocks, on
 * the calling thread, so the caller never waits for the numbers.
 * - uniform: the top 24 bits of a word times 2^-24, in [0, 1) (the mapping webtorch always had);
 * - normal: Box–Muller over the words' pairs (2j, 2j + 1) of a block, r = sqrt(-2 ln(1 - u0)),
 *   θ = 2π u1, giving r cos θ and r sin θ (the pairing and formula webtorch always had);
 * - integers in [low, low + range): low + ⌊w · range / 2^32⌋ (one word each).
 * The normals' logarithm, sine and cosine are not the platform's (WGSL's `log`/`sin` and
 * JavaScript's `Math.log` differ in their last bits): they are float32 polynomials (Cephes'
 * logf, sinf and cosf coefficients) with an exact range reduction done in integers, and the
 * square root is Newton's, so every step is a float32 add, subtract or multiply, which IEEE
 * rounds the same way everywhere. The WGSL kernel keeps the compiler from fusing or
 * reordering them (see `wgsl/random.ts`); WebAssembly never does.
 */
import { CPU, Device, device as toDevice, type DeviceLike } from './device.js';

const M0 = 0xd2511f53, M1 = 0xcd9e8d57, W0 = 0x9e3779b9, W1 = 0xbb67ae85;

/** The high and low words of a 32×32-bit product, from 16-bit halves (exact in doubles). */
function mulhilo(a: number, b: number): [number, number] {
  const al = a & 0xffff, ah = a >>> 16, bl = b & 0xffff, bh = b >>> 16;
  const lolo = al * bl, hilo = ah * bl, lohi = al * bh;
  const cross = (lolo >>> 16) + (hilo & 0xffff) + lohi;
  const hi = ah * bh + (hilo >>> 16) + Math.floor(cross / 65536);
  return [hi >>> 0, Math.imul(a, b) >>> 0];
}

/** One Philox4x32-10 block: four 32-bit words for a 128-bit counter and a 64-bit key. */
export function philox(c: [number, number, number, number], k0: number, k1: number): [number, number, number, number] {
  let [x0, x1, x2, x3] = c;
  for (let r = 0; r < 10; r++) {
    const [hi0, lo0] = mulhilo(M0, x0);
    const [hi1, lo1] = mulhilo(M1, x2);
    [x0, x1, x2, x3] = [(hi1 ^ x1 ^ k0) >>> 0, lo1, (hi0 ^ x3 ^ k1) >>> 0, lo0];
    k0 = (k0 + W0) >>> 0;
    k1 = (k1 + W1) >>> 0;
  }
  return [x0, x1, x2, x3];
}

// ---- Words to numbers (the kernels mirror these line by line) ----

const F32 = new Float32Array(1), U32 = new Uint32Array(F32.buffer);
/** The float32 with these bits. */
const bitsF = (b: number): number => ((U32[0] = b), F32[0]);
/** The bits of a float32. */
const fBits = (x: number): number => ((F32[0] = x), U32[0]);
const f = Math.fround;

/** The float32 constants of the normal mapping, by their bits (the kernels use the same bits). */
export const NORMAL_CONSTANTS = {
  // Cephes logf: log(1 + z) = z - z²/2 + z³ P(z) on [√½ - 1, √2 - 1]
  P: [0x3d9021bb, 0xbdebd1b8, 0x3def251a, 0xbdfe5d4f, 0x3e11e9bf, 0xbe2aae50, 0x3e4cceac, 0xbe7ffffc, 0x3eaaaaaa],
  SQRT2: 0x3fb504f3, LN2_HI: 0x3f318000, LN2_LO: 0xb95e8083, PI_4: 0x3f490fdb,
  // Cephes sinf and cosf on [0, π/4]
  S: [0xb94ca1f9, 0x3c08839e, 0xbe2aaaa3], C: [0x37ccf5ce, 0xbab6061a, 0x3d2aaaa5],
} as const;
const K = NORMAL_CONSTANTS;
const P = K.P.map(bitsF), S = K.S.map(bitsF), C = K.C.map(bitsF);
const SQRT2 = bitsF(K.SQRT2), LN2_HI = bitsF(K.LN2_HI), LN2_LO = bitsF(K.LN2_LO), PI_4 = bitsF(K.PI_4);

/** A word as a uniform float in [0, 1): its top 24 bits times 2^-24. */
export const uniformOf = (w: number): number => (w >>> 8) * 2 ** -24;

/** -2 ln(1 - u) for u = (w >>> 8) · 2^-24, in float32 steps. */
function minusTwoLog(w: number): number {
  const j = 0x1000000 - (w >>> 8); // (1 - u) · 2^24, in [1, 2^24]
  let e = 31 - Math.clz32(j);
  let m = f(j * bitsF((127 - e) << 23)); // j / 2^e in [1, 2)
  if (m > SQRT2) {
    m = f(m * 0.5);
    e += 1;
  }
  const z = f(m - 1), z2 = f(z * z);
  let p = P[0];
  for (let i = 1; i < 9; i++) p = f(f(p * z) + P[i]);
  const y = f(f(f(z * z2) * p) - f(0.5 * z2));
  const lnm = f(z + y); // ln m; ln(1 - u) = (e - 24) ln 2 + ln m
  const q = 24 - e;
  return f(2 * f(f(f(q * LN2_LO) - lnm) + f(q * LN2_HI)));
}

/** √x by Newton's iteration on 1/√x (three steps from the bit-level first guess). */
function sqrtF(x: number): number {
  if (x === 0) return 0;
  const h = f(0.5 * x);
  let y = bitsF((0x5f3759df - (fBits(x) >>> 1)) >>> 0);
  for (let i = 0; i < 3; i++) y = f(y * f(1.5 - f(f(h * y) * y)));
  return f(x * y);
}

/** [sin θ, cos θ] for θ = 2π (w >>> 8) · 2^-24, reduced to [0, π/4] exactly, in integers. */
function sinCos(w: number): [number, number] {
  const k = w >>> 8, o = k >>> 21, odd = o & 1, r = k & 0x1fffff;
  const a = f(f((odd ? 0x200000 - r : r) * 2 ** -21) * PI_4), z = f(a * a);
  let s = f(f(f(f(f(f(S[0] * z) + S[1]) * z) + S[2]) * z) * a);
  s = f(s + a);
  const pc = f(f(f(f(C[0] * z) + C[1]) * z) + C[2]);
  const c = f(f(f(f(pc * z) * z) - f(0.5 * z)) + 1);
  if (odd) s = -s;
  switch (((o + 1) >>> 1) & 3) {
    case 0: return [s, c];
    case 1: return [c, -s];
    case 2: return [-s, -c];
    default: return [-c, s];
  }
}

/** The two standard normals of a word pair (Box–Muller): [r cos θ, r sin θ]. */
export function normalPair(w0: number, w1: number): [number, number] {
  const r = sqrtF(minusTwoLog(w0)), [s, c] = sinCos(w1);
  return [f(r * c), f(r * s)];
}

/** An integer in [0, range) from a word: ⌊w · range / 2^32⌋ (range 2^32 is given as 0). */
export const intOf = (w: number, range: number): number => (range === 0 ? w >>> 0 : mulhilo(w >>> 0, range >>> 0)[0]);

// ---- Generators ----

/** PyTorch's default seed (`default_rng_seed_val`). */
export const DEFAULT_SEED = 67280421310721;
/** Bytes of a generator state: the seed and the offset, each a little-endian uint64. */
export const STATE_BYTES = 16;

/** A seed as its two 32-bit halves (as a uint64: negative seeds wrap, as in PyTorch). */
function seedWords(seed: unknown, op: string): [number, number] {
  if (typeof seed === 'bigint') {
    if (seed < -(2n ** 63n) || seed >= 2n ** 64n) throw new RangeError(`${op}: Overflow when unpacking long (seed ${seed} is outside [-2^63, 2^64))`);
    const u = BigInt.asUintN(64, seed);
    return [Number(u & 0xffffffffn), Number(u >> 32n)];
  }
  if (typeof seed !== 'number' || !Number.isInteger(seed)) {
    throw new TypeError(`${op}: seed must be an integer (a number or a BigInt), got ${typeof seed === 'number' ? seed : typeof seed}`);
  }
  if (!Number.isSafeInteger(seed)) throw new RangeError(`${op}: seed ${seed} is not a safe integer; pass it as a BigInt`);
  const lo = seed >>> 0, hi = Math.floor(seed / 2 ** 32);
  return [lo, hi < 0 ? (hi + 2 ** 32) >>> 0 : hi];
}

/** The generator a draw uses: its key and first counter (see the file's note). */
export interface Draw {
  key: [number, number];
  counter: [number, number];
}

/** `torch.Generator`'s options: the device whose tensors it draws for (default `cpu`). */
export interface GeneratorOptions {
  device?: DeviceLike | null;
}

/**
 * A seeded stream of Philox blocks (`torch.Generator`): state (seed, offset), on a device.
 * `new Generator()` is a cpu generator; `new Generator({device: 'gpu:0'})` (or `'gpu'`, the
 * current GPU) draws for that GPU's tensors. Its numbers do not depend on the device.
 */
export class Generator {
  private lo: number;
  private hi: number;
  /** The next unused Philox counter (blocks of 4 words). */
  private offset = 0;
  private readonly dev: Device | null;

  constructor(options?: GeneratorOptions | DeviceLike | null) {
    const spec = options !== null && typeof options === 'object' && !('type' in options) ? (options as GeneratorOptions).device : (options as DeviceLike | null | undefined);
    if (options !== null && typeof options === 'object' && !('type' in options)) {
      for (const k of Object.keys(options)) if (k !== 'device') throw new TypeError(`Generator() got an unexpected keyword argument '${k}' (expected 'device')`);
    }
    this.dev = spec == null ? null : spec instanceof Device ? spec : toDevice(spec);
    [this.lo, this.hi] = seedWords(DEFAULT_SEED, 'Generator');
  }

  /** The device this generator draws for. */
  get device(): Device {
    return this.dev ?? CPU;
  }

  /** Seeds the generator and rewinds it (PyTorch's `manual_seed`); returns it. */
  manualSeed(seed: number | bigint): this {
    [this.lo, this.hi] = seedWords(seed, 'manual_seed');
    this.offset = 0;
    return this;
  }

  /** Seeds it from a non-deterministic source (a safe integer) and returns the seed. */
  seed(): number {
    const s = Math.floor(Math.random() * 2 ** 53);
    this.manualSeed(s);
    return s;
  }

  /** The seed: a number, or a BigInt for a seed beyond `Number.MAX_SAFE_INTEGER`. */
  initialSeed(): number | bigint {
    const v = this.hi * 2 ** 32 + this.lo;
    return Number.isSafeInteger(v) ? v : (BigInt(this.hi) << 32n) | BigInt(this.lo);
  }

  /** The state as PyTorch's ByteTensor: 16 bytes, the seed and the offset as little-endian uint64s. */
  getState(): Uint8Array {
    const out = new Uint8Array(STATE_BYTES), v = new DataView(out.buffer);
    v.setUint32(0, this.lo, true);
    v.setUint32(4, this.hi, true);
    v.setUint32(8, this.offset >>> 0, true);
    v.setUint32(12, Math.floor(this.offset / 2 ** 32), true);
    return out;
  }

  /** Restores a state from `getState`; returns the generator. */
  setState(state: Uint8Array): this {
    if (!(state instanceof Uint8Array)) {
      throw new TypeError(`set_state: expected the state as a Uint8Array (PyTorch's ByteTensor), got ${state === null ? 'null' : (state as object)?.constructor?.name ?? typeof state}`);
    }
    if (state.length !== STATE_BYTES) throw new RangeError(`RNG state is wrong size: expected ${STATE_BYTES} bytes (seed and offset), got ${state.length}`);
    const v = new DataView(state.buffer, state.byteOffset, STATE_BYTES);
    const offset = v.getUint32(12, true) * 2 ** 32 + v.getUint32(8, true);
    if (!Number.isSafeInteger(offset)) throw new RangeError(`RNG state's offset ${offset} is beyond 2^53 blocks`);
    this.lo = v.getUint32(0, true);
    this.hi = v.getUint32(4, true);
    this.offset = offset;
    return this;
  }

  /** @internal Takes the blocks for `n` elements: the key and the first counter; advances the offset. */
  _draw(n: number): Draw {
    const first = this.offset;
    this.offset += Math.ceil(n / 4);
    return { key: [this.lo, this.hi], counter: [first >>> 0, Math.floor(first / 2 ** 32)] };
  }

  /** `n` random 32-bit words, made on the calling thread (host-side uses: init, shuffles). */
  words(n: number): Uint32Array {
    const out = new Uint32Array(n), { key, counter } = this._draw(n);
    for (let i = 0, b = 0; i < n; i += 4, b++) {
      const lo = counter[0] + b;
      const w = philox([lo >>> 0, counter[1] + Math.floor(lo / 2 ** 32), 0, 0], key[0], key[1]);
      for (let j = 0; j < 4 && i + j < n; j++) out[i + j] = w[j];
    }
    return out;
  }

  /** `n` uniform floats in [0, 1), on the calling thread. */
  uniform(n: number): Float32Array {
    const w = this.words(n), out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = uniformOf(w[i]);
    return out;
  }

  /** `n` standard normal floats, on the calling thread (the device kernels' numbers). */
  normal(n: number): Float32Array {
    const w = this.words(n + (n & 1)), out = new Float32Array(n);
    for (let i = 0; i < n; i += 2) {
      const [a, b] = normalPair(w[i], w[i + 1]);
      out[i] = a;
      if (i + 1 < n) out[i + 1] = b;
    }
    return out;
  }
}

/** The cpu's default generator (`torch.default_generator`). */
export const defaultGenerator = new Generator();
