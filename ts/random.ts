/**
 * Philox4x32-10, the counter-based generator PyTorch's CUDA generator uses: a (seed, counter)
 * pair fully determines the stream, so a seed gives the same numbers whichever device a
 * tensor is created on. Numbers are generated on the calling thread and uploaded.
 * Uniform floats take the top 24 bits of a word (values in [0, 1)); normals use Box–Muller.
 */

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

/** A seeded stream of random words; its state is (seed, offset). */
export class Generator {
  private seed = 67280421310721n;
  private offset = 0;

  /** Seeds the generator (PyTorch's `manual_seed`). */
  manualSeed(seed: number | bigint): this {
    this.seed = BigInt.asUintN(64, BigInt(seed));
    this.offset = 0;
    return this;
  }

  /** The initial seed. */
  initialSeed(): bigint {
    return this.seed;
  }

  /** The state as [seed, offset], for `setState`. */
  getState(): [bigint, number] {
    return [this.seed, this.offset];
  }

  setState([seed, offset]: [bigint, number]): void {
    this.seed = seed;
    this.offset = offset;
  }

  /** `n` random 32-bit words. */
  words(n: number): Uint32Array {
    const out = new Uint32Array(n);
    const k0 = Number(this.seed & 0xffffffffn), k1 = Number(this.seed >> 32n);
    for (let i = 0; i < n; i += 4) {
      const ctr = this.offset++;
      const w = philox([ctr >>> 0, Math.floor(ctr / 2 ** 32), 0, 0], k0, k1);
      for (let j = 0; j < 4 && i + j < n; j++) out[i + j] = w[j];
    }
    return out;
  }

  /** `n` uniform floats in [0, 1). */
  uniform(n: number): Float32Array {
    const w = this.words(n), out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = (w[i] >>> 8) * 2 ** -24;
    return out;
  }

  /** `n` standard normal floats. */
  normal(n: number): Float32Array {
    const u = this.uniform(n + (n & 1)), out = new Float32Array(n);
    for (let i = 0; i < n; i += 2) {
      const r = Math.sqrt(-2 * Math.log(1 - u[i])), th = 2 * Math.PI * u[i + 1];
      out[i] = r * Math.cos(th);
      if (i + 1 < n) out[i + 1] = r * Math.sin(th);
    }
    return out;
  }
}

/** The default generator. */
export const defaultGenerator = new Generator();

/** Seeds the default generator (`torch.manual_seed`). */
export function manualSeed(seed: number | bigint): Generator {
  return defaultGenerator.manualSeed(seed);
}
