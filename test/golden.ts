/**
 * The golden-file harness shared by the backend suites: loads cases made by PyTorch
 * (test/fixtures/make_goldens*.py), builds their inputs on a device, runs them, and compares.
 * A suite passes a table of runners for the ops whose call is not `torch[camelCase(op)](...args)`.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import * as torch from '../dist/webtorch.js';

export type Raw = number | boolean | string;
export interface TensorJson { shape: number[]; dtype: string; data: Raw[]; permute?: number[] }
export type Arg = TensorJson | { scalar: Raw };
export interface Case {
  id: string; op: string; args: Arg[]; kwargs: Record<string, unknown>; out: TensorJson | { values: TensorJson; indices: TensorJson };
  /** Backward goldens: the output gradient fed to `backward`, and each argument's gradient (null when not differentiable). */
  gradOut?: TensorJson;
  grads?: (TensorJson | null)[];
}


export const num = (v: Raw): number | boolean => (v === 'nan' ? NaN : v === 'inf' ? Infinity : v === '-inf' ? -Infinity : (v as number | boolean));

/** Builds an argument on a device; returns it and every handle to dispose. */
export function build(a: Arg, device: string, owned: torch.Tensor[]): torch.Tensor | number {
  if ('scalar' in a) return num(a.scalar) as number;
  const flat = torch.tensor(a.data.map(num) as number[], { dtype: a.dtype as torch.DType, device });
  const shaped = flat.reshape(a.shape);
  owned.push(flat, shaped);
  if (!a.permute) return shaped;
  const p = shaped.permute(a.permute);
  owned.push(p);
  return p;
}

export const T = (x: unknown) => x as torch.Tensor;
export type Runner = (args: (torch.Tensor | number)[], kw: Record<string, any>) => torch.Tensor | torch.ValuesIndices;

/** Runners of the elementwise, reduction and matmul goldens. */
export const RUN: Record<string, (args: (torch.Tensor | number)[], kw: Record<string, any>) => torch.Tensor | torch.ValuesIndices> = {
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

/** Runs a case with a runner from `runners`, else `torch[camelCase(op)](...args)`. */
export function run(c: Case, args: (torch.Tensor | number)[], runners: Record<string, Runner> = RUN): torch.Tensor | torch.ValuesIndices {
  if (runners[c.op]) return runners[c.op](args, c.kwargs);
  const name = c.op.replace(/_(\w)/g, (_, ch: string) => ch.toUpperCase());
  const fn = (torch as unknown as Record<string, (...a: unknown[]) => torch.Tensor>)[name];
  if (typeof fn !== 'function') throw new Error(`no webtorch function for golden op ${c.op}`);
  return fn(...args);
}

/** Tolerances: 1e-5 relative for f32 elementwise; sums of products are compared with a looser absolute term. */
export function tolerance(op: string): { rtol: number; atol: number } {
  if (op.endsWith(':grad')) return { rtol: 1e-4, atol: 1e-5 };
  if (op === 'matmul' || op === 'sum' || op === 'mean' || op === 'prod' || op === 'conv1d' || op === 'conv2d') return { rtol: 1e-5, atol: 1e-5 };
  return { rtol: 1e-5, atol: 1e-6 };
}

export async function check(got: torch.Tensor, want: TensorJson, op: string, where: string): Promise<void> {
  expect(got.dtype, `${where}: dtype`).toBe(want.dtype);
  expect(got.shape, `${where}: shape`).toEqual(want.shape);
  const values = await got.values();
  const half = want.dtype === 'float16' || want.dtype === 'bfloat16';
  const { rtol, atol } = half ? { rtol: 1e-2, atol: 1e-2 } : tolerance(op);
  want.data.forEach((raw, i) => {
    const w = num(raw), g = values[i];
    if (typeof w === 'boolean' || (want.dtype !== 'float32' && !half)) return expect(g, `${where}[${i}]`).toBe(w);
    if (Number.isNaN(w)) return expect(g, `${where}[${i}] should be NaN`).toBeNaN();
    if (!Number.isFinite(w)) return expect(g, `${where}[${i}]`).toBe(w);
    const err = Math.abs((g as number) - w);
    expect(err, `${where}[${i}]: got ${g}, PyTorch ${w}`).toBeLessThanOrEqual(atol + rtol * Math.abs(w));
  });
}


/** Loads a goldens file from test/fixtures. */
export function loadGoldens(name: string): { torch: string; cases: Case[] } {
  return JSON.parse(readFileSync(new URL(`fixtures/${name}`, import.meta.url), 'utf8'));
}

/**
 * Builds a case's inputs on a device, runs it, checks every output (and, when the case has
 * `grads`, the gradients `backward(gradOut)` leaves on the inputs), and disposes everything.
 */
export async function runCase(c: Case, device: string, runners: Record<string, Runner> = RUN): Promise<void> {
  const owned: torch.Tensor[] = [];
  const leaves: (torch.Tensor | null)[] = [];
  const args = c.args.map((a, i) => {
    if (!c.grads?.[i] || 'scalar' in a) {
      leaves.push(null);
      return build(a, device, owned);
    }
    // A differentiable argument: a leaf that requires grad (a permuted view of it when the case asks).
    const base = torch.tensor(a.data.map(num) as number[], { dtype: a.dtype as torch.DType, device });
    const shaped = base.reshape(a.shape);
    const leaf = shaped.detach().requiresGrad_();
    owned.push(base, shaped, leaf);
    leaves.push(leaf);
    if (!a.permute) return leaf;
    const p = leaf.permute(a.permute);
    owned.push(p);
    return p;
  });
  let out: torch.Tensor | torch.ValuesIndices | undefined;
  try {
    out = run(c, args, runners);
    if (c.grads && c.gradOut) {
      const gOut = build(c.gradOut, device, owned) as torch.Tensor;
      const root = out instanceof torch.Tensor ? out : out.values;
      root.backward(gOut);
      for (let i = 0; i < leaves.length; i++) {
        const want = c.grads[i], leaf = leaves[i];
        if (!want || !leaf) continue;
        expect(leaf.grad, `${c.id}: grad of argument ${i}`).not.toBeNull();
        const g = leaf.grad!;
        // The leaf holds the unpermuted storage; compare in the argument's (permuted) layout.
        const shown = (c.args[i] as TensorJson).permute ? g.permute((c.args[i] as TensorJson).permute!) : g;
        await check(shown, want, `${c.op}:grad`, `${c.id} grad[${i}]`);
        if (shown !== g) shown.dispose();
        g.dispose();
      }
    }
    if ('values' in c.out) {
      const vi = out as torch.ValuesIndices;
      await check(vi.values, c.out.values, c.op, `${c.id} values`);
      await check(vi.indices, c.out.indices, c.op, `${c.id} indices`);
    } else {
      await check(out as torch.Tensor, c.out, c.op, c.id);
    }
  } finally {
    if (out instanceof torch.Tensor) out.dispose();
    else if (out) {
      out.values.dispose();
      out.indices.dispose();
    }
    owned.forEach((t) => t.dispose());
  }
}
