/**
 * Long rows on the GPU are reduced in two passes (ts/worker/gpu/rows.ts, `rowPieces`): each
 * reduction the split applies to, on rows long enough to be split, against a float64 reference in
 * JS and against the same reduction on `cpu` (one pass). The split is the GPU worker's choice:
 * the op emits one `reduce` command, which the worker runs as two dispatches; likewise a product
 * with a long K and a small output is one `matmul` command run as split-K partials and their sum
 * (ts/worker/gpu/matmul.ts, `splitK`).
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { leakCheck, testDevices } from '../devices.js';
import { counted } from './graphs-helpers.js';

const devices = await testDevices();
const ROWS = 3, LEN = 1 << 17;
const data = Float32Array.from({ length: ROWS * LEN }, (_, i) => Math.sin(i * 0.37) * 2 + (i % 7 === 0 ? 0.5 : 0));
const rows = Array.from({ length: ROWS }, (_, r) => Array.from(data.subarray(r * LEN, (r + 1) * LEN)));

const CASES: [string, (x: torch.Tensor) => torch.Tensor, (row: number[]) => number, number][] = [
  ['sum', (x) => x.sum(1), (r) => r.reduce((a, v) => a + v, 0), 1e-5],
  ['mean', (x) => x.mean(1), (r) => r.reduce((a, v) => a + v, 0) / r.length, 1e-5],
  ['max', (x) => x.max(1).values, (r) => r.reduce((a, v) => Math.max(a, v), -Infinity), 0],
  ['min', (x) => torch.min(x, 1).values, (r) => r.reduce((a, v) => Math.min(a, v), Infinity), 0],
  ['norm', (x) => torch.norm(x, 2, 1), (r) => Math.sqrt(r.reduce((a, v) => a + v * v, 0)), 1e-5],
  ['all', (x) => x.gt(-1.9).all(1), (r) => +r.every((v) => v > -1.9), 0],
  ['any', (x) => x.gt(2.4).any(1), (r) => +r.some((v) => v > 2.4), 0],
];

describe.each(devices.filter((d) => d !== 'gpu:1'))('reductions over long rows on %s', (device) => {
  leakCheck(() => devices);
  it.each(CASES)('%s', async (_name, op, ref, rtol) => {
    const flat = torch.tensor(data, { device });
    const x = flat.reshape([ROWS, LEN]);
    const out = torch.tidy(() => op(x));
    try {
      const got = (await out.values()).map(Number);
      rows.forEach((r, i) => {
        const want = ref(r);
        expect(Math.abs(got[i] - want), `row ${i}: got ${got[i]}, want ${want}`).toBeLessThanOrEqual(rtol * Math.abs(want) + 1e-6);
      });
    } finally {
      [out, x, flat].forEach((t) => t.dispose());
    }
  });
});

describe('the GPU worker splits work the op emits whole', () => {
  const gpus = devices.filter((d) => d.startsWith('gpu'));
  it.each(gpus)('%s: a long-row sum is one reduce command, two dispatches', async (d) => {
    const x = torch.ones([ROWS, LEN], { device: d });
    let y: torch.Tensor | undefined;
    expect(await counted(d, () => void (y = x.sum(1)))).toEqual({ commands: 1, dispatches: 2 });
    [x, y!].forEach((t) => t.dispose());
    const short = torch.ones([ROWS, 1024], { device: d });
    expect(await counted(d, () => void (y = short.sum(1)))).toEqual({ commands: 1, dispatches: 1 });
    [short, y!].forEach((t) => t.dispose());
  });
  it.each(gpus)('%s: 64×4096 · 4096×64 is one matmul command, two dispatches (split-K), and right', async (d) => {
    torch.manualSeed(0);
    const a = torch.randn([64, 4096], { device: d }), b = torch.randn([4096, 64], { device: d });
    let y: torch.Tensor | undefined;
    expect(await counted(d, () => void (y = a.matmul(b)))).toEqual({ commands: 1, dispatches: 2 });
    y!.dispose();
    const [ac, bc] = [await a.to('cpu'), await b.to('cpu')];
    const got = torch.tidy(() => a.matmul(b)), want = torch.tidy(() => ac.matmul(bc));
    const diff = torch.tidy(() => got.to('cpu').sub(want).abs().max());
    expect(await diff.item()).toBeLessThan(1e-3);
    [a, b, ac, bc, got, want, diff].forEach((t) => t.dispose());
  });
});

afterAll(async () => {
  await torch.shutdown();
});
