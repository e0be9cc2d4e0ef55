/**
 * The shared op suite: every case of test/fixtures/goldens.json (made by PyTorch, see
 * make_goldens.py) on every device. Every op of the op table must have cases. After each test
 * the number of live storages on each device is back where it started.
 */
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { liveCounts, testDevices } from '../devices.js';

type Raw = number | boolean | string;
interface TensorJson { shape: number[]; dtype: string; data: Raw[]; permute?: number[] }
type Arg = TensorJson | { scalar: Raw };
interface Case { id: string; op: string; args: Arg[]; kwargs: Record<string, unknown>; out: TensorJson | { values: TensorJson; indices: TensorJson } }

const goldens = JSON.parse(readFileSync(new URL('../fixtures/goldens.json', import.meta.url), 'utf8')) as { torch: string; cases: Case[] };
const devices = await testDevices();

const num = (v: Raw): number | boolean => (v === 'nan' ? NaN : v === 'inf' ? Infinity : v === '-inf' ? -Infinity : (v as number | boolean));

/** Builds an argument on a device; returns it and every handle to dispose. */
function build(a: Arg, device: string, owned: torch.Tensor[]): torch.Tensor | number {
  if ('scalar' in a) return num(a.scalar) as number;
  const flat = torch.tensor(a.data.map(num) as number[], { dtype: a.dtype as torch.DType, device });
  const shaped = flat.reshape(a.shape);
  owned.push(flat, shaped);
  if (!a.permute) return shaped;
  const p = shaped.permute(a.permute);
  owned.push(p);
  return p;
}

const T = (x: unknown) => x as torch.Tensor;
const RUN: Record<string, (args: (torch.Tensor | number)[], kw: Record<string, any>) => torch.Tensor | torch.ValuesIndices> = {
  clamp: ([x], kw) => torch.clamp(T(x), kw.min, kw.max),
  nan_to_num: ([x], kw) => torch.nanToNum(T(x), kw),
  softplus: ([x], kw) => torch.softplus(T(x), kw),
  gelu: ([x]) => torch.gelu(T(x)),
  gelu_tanh: ([x]) => torch.gelu(T(x), { approximate: 'tanh' }),
  add: ([a, b], kw) => torch.add(a, b, kw),
  sub: ([a, b], kw) => torch.sub(a, b, kw),
  floor_divide: ([a, b]) => torch.div(a, b, { roundingMode: 'floor' }),
  trunc_divide: ([a, b]) => torch.div(a, b, { roundingMode: 'trunc' }),
  where: ([c, a, b]) => torch.where(T(c), a, b),
  matmul: ([a, b]) => torch.matmul(T(a), T(b)),
  sum: ([x], kw) => torch.sum(T(x), kw.dim, kw.keepdim),
  mean: ([x], kw) => torch.mean(T(x), kw.dim, kw.keepdim),
  prod: ([x], kw) => torch.prod(T(x), kw.dim, kw.keepdim),
  all: ([x], kw) => torch.all(T(x), kw.dim, kw.keepdim),
  any: ([x], kw) => torch.any(T(x), kw.dim, kw.keepdim),
  max: ([x], kw) => (kw.dim === undefined ? torch.max(T(x)) : torch.max(T(x), kw.dim, kw.keepdim)),
  min: ([x], kw) => (kw.dim === undefined ? torch.min(T(x)) : torch.min(T(x), kw.dim, kw.keepdim)),
  argmax: ([x], kw) => torch.argmax(T(x), kw.dim, kw.keepdim),
  argmin: ([x], kw) => torch.argmin(T(x), kw.dim, kw.keepdim),
};

function run(c: Case, args: (torch.Tensor | number)[]): torch.Tensor | torch.ValuesIndices {
  if (RUN[c.op]) return RUN[c.op](args, c.kwargs);
  const name = c.op.replace(/_(\w)/g, (_, ch: string) => ch.toUpperCase());
  const fn = (torch as unknown as Record<string, (...a: unknown[]) => torch.Tensor>)[name];
  if (typeof fn !== 'function') throw new Error(`no webtorch function for golden op ${c.op}`);
  return fn(...args);
}

/** Tolerances: 1e-5 relative for f32 elementwise; sums of products are compared with a looser absolute term. */
function tolerance(op: string): { rtol: number; atol: number } {
  if (op === 'matmul' || op === 'sum' || op === 'mean' || op === 'prod') return { rtol: 1e-5, atol: 1e-5 };
  return { rtol: 1e-5, atol: 1e-6 };
}

async function check(got: torch.Tensor, want: TensorJson, op: string, where: string): Promise<void> {
  expect(got.dtype, `${where}: dtype`).toBe(want.dtype);
  expect(got.shape, `${where}: shape`).toEqual(want.shape);
  const values = await got.values();
  const { rtol, atol } = tolerance(op);
  want.data.forEach((raw, i) => {
    const w = num(raw), g = values[i];
    if (typeof w === 'boolean' || want.dtype !== 'float32') return expect(g, `${where}[${i}]`).toBe(w);
    if (Number.isNaN(w)) return expect(g, `${where}[${i}] should be NaN`).toBeNaN();
    if (!Number.isFinite(w)) return expect(g, `${where}[${i}]`).toBe(w);
    const err = Math.abs((g as number) - w);
    expect(err, `${where}[${i}]: got ${g}, PyTorch ${w}`).toBeLessThanOrEqual(atol + rtol * Math.abs(w));
  });
}

describe.each(devices)(`ops on %s (goldens from PyTorch ${goldens.torch})`, (device) => {
  let before: Record<string, [number, number]>;
  beforeEach(() => {
    before = liveCounts(devices);
  });
  afterEach(async () => {
    await torch.gpu.synchronize();
    expect(liveCounts(devices), 'allocated bytes and live storages after the test (leak check)').toEqual(before);
  });

  it.each(goldens.cases.map((c) => [c.id, c] as const))('%s', async (_id, c) => {
    const owned: torch.Tensor[] = [];
    const args = c.args.map((a) => build(a, device, owned));
    const out = run(c, args);
    try {
      if ('values' in c.out) {
        const vi = out as torch.ValuesIndices;
        await check(vi.values, c.out.values, c.op, `${c.id} values`);
        await check(vi.indices, c.out.indices, c.op, `${c.id} indices`);
      } else {
        await check(out as torch.Tensor, c.out, c.op, c.id);
      }
    } finally {
      if (out instanceof torch.Tensor) out.dispose();
      else {
        out.values.dispose();
        out.indices.dispose();
      }
      owned.forEach((t) => t.dispose());
    }
  });
});

describe('the goldens cover the op table', () => {
  it('has cases for every op of the table', () => {
    const covered = new Set(goldens.cases.map((c) => c.op));
    const missing = torch.ELEMENTWISE.map((o) => o.name).filter((n) => !covered.has(n));
    expect(missing).toEqual([]);
    for (const op of ['where', 'sum', 'mean', 'max', 'min', 'argmax', 'argmin', 'prod', 'matmul']) expect(covered.has(op), op).toBe(true);
  });
});

afterAll(async () => {
  await torch.shutdown();
});
