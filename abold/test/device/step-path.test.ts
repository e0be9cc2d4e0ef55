/**
 * The paths a training step takes that the small goldens do not reach, against a float64
 * reference in JS: large products with a transposed operand (`x @ W.T`; the GPU copies it
 * row-major to run a tiled kernel, ts/worker/gpu.ts `runMatmul`), the layout of the gradients
 * that flow back through `W.T` (row-major, with no copy on the way), and the worker's own profile
 * (`torch._profileWorker`, which bench/profile-step.mjs reads).
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck, testDevices } from '../devices.js';

const devices = await testDevices();
const M = 128, K = 256, N = 192; // 6.3M multiply-adds: over the GPU's copy-for-tiled threshold (2^22)
const x = Float32Array.from({ length: M * K }, (_, i) => Math.sin(i * 0.13));
const w = Float32Array.from({ length: N * K }, (_, i) => Math.cos(i * 0.07) * 0.5);

/** x[M, K] · w[N, K]ᵀ in float64. */
function reference(): Float64Array {
  const y = new Float64Array(M * N);
  for (let r = 0; r < M; r++) {
    for (let c = 0; c < N; c++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += x[r * K + k] * w[c * K + k];
      y[r * N + c] = s;
    }
  }
  return y;
}

const matrix = (data: Float32Array, rows: number, cols: number, device: string) => torch.tidy(() => torch.tensor(data, { device }).reshape([rows, cols]));

const close = (got: ArrayLike<number>, want: ArrayLike<number>, tol: number) => {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    if (Math.abs(got[i] - want[i]) > tol * (1 + Math.abs(want[i]))) throw new Error(`element ${i}: got ${got[i]}, want ${want[i]}`);
  }
};

describe.each(devices.filter((d) => d !== 'gpu:1'))('a training step\'s paths on %s', (device) => {
  leakCheck(() => devices);

  it('x @ W.T over a large product matches float64', async () => {
    const X = matrix(x, M, K, device), W = matrix(w, N, K, device);
    const y = torch.tidy(() => X.matmul(W.T));
    try {
      close(await y.data(), reference(), 1e-4);
    } finally {
      [X, W, y].forEach((t) => t.dispose());
    }
  });

  it('the weight gradient through W.T is row-major and right', async () => {
    const X = matrix(x, M, K, device), W = matrix(w, N, K, device).requiresGrad_();
    const loss = torch.tidy(() => X.matmul(W.T).sum());
    loss.backward();
    try {
      // d(sum(x Wᵀ))/dW[c, k] = Σ_r x[r, k], the same for every row c
      const col = new Float64Array(K);
      for (let r = 0; r < M; r++) for (let k = 0; k < K; k++) col[k] += x[r * K + k];
      expect(W.grad!.isContiguous()).toBe(true);
      close(await W.grad!.data(), Float64Array.from({ length: N * K }, (_, i) => col[i % K]), 1e-4);
    } finally {
      [X, W.grad!, W, loss].forEach((t) => t.dispose());
    }
  });

  it('the worker profile counts the commands, and a GPU times its dispatches', async () => {
    const a = torch.ones([1024], { device });
    await torch._profileWorker(device, true);
    const b = torch.tidy(() => a.add(1).mul(2).relu());
    const p = (await torch._profileWorker(device, false))!;
    try {
      expect(p.commands.binary.count).toBe(2);
      expect(p.commands.unary.count).toBe(1);
      expect(p.wallMs).toBeGreaterThan(0);
      if (device.startsWith('gpu')) {
        expect(Object.keys(p.gpu!).sort()).toEqual(['binary:add', 'binary:mul', 'unary:relu']);
        for (const v of Object.values(p.gpu!)) expect(v.ms).toBeGreaterThan(0);
      } else expect(p.gpu).toBeNull();
      expect(await torch._profileWorker(device, false)).toBeNull();
      expect(Array.from(await b.data()).every((v) => v === 4)).toBe(true);
    } finally {
      [a, b].forEach((t) => t.dispose());
    }
  });
});

afterAll(async () => {
  await torch.shutdown();
});
