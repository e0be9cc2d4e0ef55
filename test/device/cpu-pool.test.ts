/**
 * The cpu device's helper threads (`ts/worker/cpu-pool.ts`): products split across threads equal
 * a float64 reference for shapes whose bands are ragged, batched, transposed and broadcast, on 2
 * threads here and on 3 in a child process; the helpers stop at `torch.shutdown()`, and a process
 * that never calls it still exits.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck } from '../devices.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

leakCheck(() => ['cpu']);
afterAll(async () => {
  await torch.shutdown();
});

/** Deterministic values in [-1, 1). */
function values(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) * 2 - 1;
  return out;
}

/** The largest error of `got` against a float64 product of a[b?, m, k] and w[b?, k, n], over the tolerance. */
function worst(a: Float32Array, w: Float32Array, got: Float32Array, b: number, m: number, k: number, n: number, aB: boolean, wB: boolean): number {
  let worstRatio = 0;
  for (let bi = 0; bi < b; bi++) {
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let s = 0, mag = 0;
        for (let x = 0; x < k; x++) {
          const p = a[(aB ? bi * m * k : 0) + i * k + x] * w[(wB ? bi * k * n : 0) + x * n + j];
          s += p;
          mag += Math.abs(p);
        }
        worstRatio = Math.max(worstRatio, Math.abs(got[(bi * m + i) * n + j] - s) / (1e-5 * mag + 1e-6));
      }
    }
  }
  return worstRatio;
}

/** [batch, m, k, n, which operands are batched, transpose A and/or W (as views)] */
type Shape = [number, number, number, number, 'both' | 'a' | 'w', boolean, boolean];
const SHAPES: Shape[] = [
  [1, 130, 70, 90, 'both', false, false], // row bands, M not a multiple of 4
  [1, 257, 300, 33, 'both', false, false], // several K blocks, ragged last strip
  [3, 45, 64, 70, 'both', false, false], // bands that straddle batches
  [1, 12, 513, 700, 'both', false, false], // few rows: column bands, two N blocks
  [1, 150, 80, 60, 'both', true, true], // transposed views of both operands
  [4, 33, 80, 100, 'a', false, true], // broadcast W, transposed
  [2, 100, 30, 100, 'w', true, false], // broadcast A, transposed
  // computed as Cᵀ = Wᵀ·Aᵀ, then copied into place (few columns: ts/worker/cpu/matmul.ts swapsOperands)
  [16, 8, 784, 9, 'both', false, true], // a 3×3 convolution's weight gradient, 8 channels, on the threads
  [1, 8, 300, 9, 'both', false, true], // one thread
  [2, 6, 20, 9, 'w', true, false], // broadcast A, transposed, a leftover row
];

async function check([b, m, k, n, batched, aT, wT]: Shape): Promise<number> {
  const aB = batched !== 'w', wB = batched !== 'a';
  const av = values((aB ? b : 1) * m * k, m * 7 + k), wv = values((wB ? b : 1) * k * n, n * 13 + k);
  const made: torch.Tensor[] = [];
  const keep = (t: torch.Tensor) => (made.push(t), t);
  // A transposed view holds the same logical matrix: store it transposed, then transpose the view.
  const stored = (v: Float32Array, batch: number, r: number, c: number, t: boolean) => {
    if (!t) return keep(keep(torch.tensor(v)).reshape(batch > 1 ? [batch, r, c] : [r, c]));
    const tv = new Float32Array(v.length);
    for (let bi = 0; bi < batch; bi++) for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) tv[bi * r * c + j * r + i] = v[bi * r * c + i * c + j];
    return keep(keep(keep(torch.tensor(tv)).reshape(batch > 1 ? [batch, c, r] : [c, r])).transpose(-1, -2));
  };
  const A = stored(av, aB ? b : 1, m, k, aT), W = stored(wv, wB ? b : 1, k, n, wT);
  const C = keep(torch.matmul(A, W));
  const got = (await C.data()) as Float32Array;
  made.forEach((t) => t.dispose());
  return worst(av, wv, got, b, m, k, n, aB, wB);
}

describe('the cpu pool', () => {
  for (const s of SHAPES) {
    it(`matmul split across threads matches float64: ${JSON.stringify(s)}`, async () => {
      expect(await check(s)).toBeLessThanOrEqual(1);
    });
  }

  // Elementwise ops and row kernels above the pool's thresholds run in chunks on every thread:
  // chunks of the one row of a contiguous operand, or of rows of a strided or broadcast one.
  it('large unary, binary and row ops split across threads match a float64 reference', async () => {
    const n = (1 << 18) + 3, xv = values(n, 1).map((v) => v * 4), yv = values(n, 2);
    const made: torch.Tensor[] = [];
    const keep = (t: torch.Tensor) => (made.push(t), t);
    const x = keep(torch.tensor(xv)), y = keep(torch.tensor(yv));
    try {
      const sig = (v: number) => 1 / (1 + Math.exp(-v));
      const expect32 = async (t: torch.Tensor, ref: (i: number) => number, what: string) => {
        const got = (await keep(t).data()) as Float32Array;
        expect(got.length, what).toBe(n);
        for (let i = 0; i < n; i++) {
          const r = ref(i);
          if (!(Math.abs(got[i] - r) <= 1e-6 * Math.abs(r) + 1e-7)) throw new Error(`${what} [${i}]: got ${got[i]}, expected ${r}`);
        }
      };
      await expect32(x.exp(), (i) => Math.exp(xv[i]), 'exp');
      await expect32(x.tanh(), (i) => Math.tanh(xv[i]), 'tanh');
      await expect32(x.sigmoid(), (i) => sig(xv[i]), 'sigmoid');
      await expect32(keep(x.mul(y)).add(y), (i) => Math.fround(xv[i] * yv[i]) + yv[i], 'a*b+c');
      // A [1019, 257] view, transposed, plus a row broadcast (rows split, chunks starting mid-iteration).
      const rows = 1019, cols = 257, m = keep(keep(x.narrow(0, 0, rows * cols)).reshape([cols, rows])), mt = keep(m.transpose(0, 1));
      const bias = keep(y.narrow(0, 0, cols));
      const got = (await keep(keep(mt.add(bias)).contiguous()).data()) as Float32Array;
      for (let i = 0; i < rows; i++) {
        for (let j = 0; j < cols; j++) {
          const r = Math.fround(xv[j * rows + i] + yv[j]);
          if (got[i * cols + j] !== r) throw new Error(`transposed + row broadcast [${i}, ${j}]: got ${got[i * cols + j]}, expected ${r}`);
        }
      }
      // Softmax over rows of 257: rows split across threads.
      const sm = (await keep(torch.F.softmax(keep(mt.contiguous()), -1)).data()) as Float32Array;
      for (let i = 0; i < rows; i += 97) {
        let mx = -Infinity, s = 0;
        for (let j = 0; j < cols; j++) mx = Math.max(mx, xv[j * rows + i]);
        for (let j = 0; j < cols; j++) s += Math.exp(xv[j * rows + i] - mx);
        for (let j = 0; j < cols; j++) {
          const r = Math.exp(xv[j * rows + i] - mx) / s;
          if (!(Math.abs(sm[i * cols + j] - r) <= 2e-6 * r + 1e-9)) throw new Error(`softmax [${i}, ${j}]: got ${sm[i * cols + j]}, expected ${r}`);
        }
      }
    } finally {
      made.forEach((t) => t.dispose());
    }
  });

  const child = (script: string, threads: number): string =>
    execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: root, encoding: 'utf8', timeout: 60_000, env: { ...process.env, WEBTORCH_CPU_THREADS: String(threads) },
    }).trim();
  /** OS threads of this process (0 where /proc is missing). */
  const TASKS = `() => (existsSync('/proc/self/task') ? readdirSync('/proc/self/task').length : 0)`;

  it('3 threads: the same products; shutdown stops every helper', () => {
    // In the child: OS threads before the device, with it (worker + 2 helpers), after shutdown.
    const script = `
      import { readdirSync, existsSync } from 'node:fs';
      const torch = await import('./dist/webtorch.js');
      const tasks = ${TASKS};
      const before = tasks();
      const a = torch.ones([67, 300]), w = torch.ones([300, 129]);
      const c = torch.matmul(a, w);
      const d = await c.data();
      const ok = d.length === 67 * 129 && d.every((x) => x === 300);
      const during = tasks();
      await torch.shutdown();
      let after = tasks();
      for (let i = 0; i < 50 && after > before; i++) { await new Promise((r) => setTimeout(r, 100)); after = tasks(); }
      console.log(JSON.stringify({ ok, before, during, after }));`;
    const r = JSON.parse(child(script, 3)) as { ok: boolean; before: number; during: number; after: number };
    expect(r.ok).toBe(true);
    if (r.before > 0) {
      expect(r.during - r.before).toBeGreaterThanOrEqual(3);
      expect(r.after).toBeLessThanOrEqual(r.before);
    }
  });

  it('helpers never keep the process alive', () => {
    // No shutdown: the process must still end by itself once its work is done.
    const script = `
      const torch = await import('./dist/webtorch.js');
      const c = torch.matmul(torch.ones([200, 200]), torch.ones([200, 200]));
      console.log((await c.data())[0]);`;
    expect(child(script, 2)).toBe('200');
  });
});
