/**
 * The golden-file harness shared by the backend suites: loads cases made by PyTorch
 * (test/fixtures/make_goldens*.py), builds their inputs on a device, runs them, and compares.
 * A suite passes a table of runners for the ops whose call is not `torch[camelCase(op)](...args)`.
 */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import * as torch from '../dist/webtorch.js';

export type Raw = number | boolean | string;
export interface TensorJson { shape: number[]; dtype: string; data: Raw[]; permute?: number[] }
export type Arg = TensorJson | { scalar: Raw };
export interface Case {
  /** `out` is PyTorch's output; an error case has `error` instead (the type keeps `out` required for the output cases' sake). */
  id: string; op: string; args: Arg[]; kwargs: Record<string, unknown>; out: TensorJson | { values: TensorJson; indices: TensorJson };
  /** PyTorch refused the case with this message: webtorch must throw too (see `expectRefusal`). */
  error?: string;
  /** The dtype an error case is about: webtorch's message must name it. */
  errorDtype?: string;
  /** A known gap (make_goldens*.py's KNOWN_GAPS): the suites skip the case on these devices (all when absent). */
  knownGap?: { reason: string; devices?: string[] };
  /** Backward goldens: the output gradient fed to `backward`, and each argument's gradient (null when not differentiable). */
  gradOut?: TensorJson;
  grads?: (TensorJson | null)[];
}


/**
 * A golden value: numbers and booleans as they are, 'nan'/'inf'/'-inf', and int64 values beyond
 * ±(2^53 - 1) as decimal strings (JSON numbers would round them), which become BigInts.
 */
export const num = (v: Raw): number | boolean | bigint =>
  (v === 'nan' ? NaN : v === 'inf' ? Infinity : v === '-inf' ? -Infinity : typeof v === 'string' && /^-?\d+$/.test(v) ? BigInt(v) : (v as number | boolean));

/** Builds an argument on a device; returns it and every handle to dispose. */
export function build(a: Arg, device: string, owned: torch.Tensor[]): torch.Tensor | number {
  if ('scalar' in a) return num(a.scalar) as number;
  const flat = torch.tensor(a.data.map(num) as unknown as number[], { dtype: a.dtype as torch.DType, device });
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
  gelu_backward: ([g, x]) => torch._geluBackward(T(g), T(x)),
  gelu_tanh_backward: ([g, x]) => torch._geluBackward(T(g), T(x), { approximate: 'tanh' }),
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

/** Tolerances for f32: 1e-5 relative everywhere (the issue's); sums of products and gradients add an absolute 1e-5 for values near 0. 16-bit floats: 1e-2 (in `check`). */
export function tolerance(op: string): { rtol: number; atol: number } {
  if (op.endsWith(':grad')) return { rtol: 1e-5, atol: 1e-5 };
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
    // int64 is exact: compared as BigInts (values() gives numbers up to 2^53, BigInts beyond)
    if (want.dtype === 'int64') return expect(BigInt(g as number | bigint), `${where}[${i}]`).toBe(BigInt(w as number | bigint));
    if (typeof w === 'boolean' || (want.dtype !== 'float32' && !half)) return expect(g, `${where}[${i}]`).toBe(w);
    if (Number.isNaN(w as number)) return expect(g, `${where}[${i}] should be NaN`).toBeNaN();
    if (!Number.isFinite(w as number)) return expect(g, `${where}[${i}]`).toBe(w);
    const err = Math.abs((g as number) - (w as number));
    expect(err, `${where}[${i}]: got ${g}, PyTorch ${w}`).toBeLessThanOrEqual(atol + rtol * Math.abs(w as number));
  });
}


/** Loads a goldens file from test/fixtures. */
export function loadGoldens(name: string): { torch: string; cases: Case[] } {
  return JSON.parse(readFileSync(new URL(`fixtures/${name}`, import.meta.url), 'utf8'));
}

/** Whether a case is a known gap on a device (the suites skip it, its reason in the title). */
export const gapOn = (c: Case, device: string): boolean => !!c.knownGap && (!c.knownGap.devices || c.knownGap.devices.includes(device));

/** The title of a case in a suite: its id, and the known gap's reason when it has one. */
export const title = (c: Case): string => (c.knownGap ? `${c.id} (KNOWN GAP${c.knownGap.devices ? ` on ${c.knownGap.devices.join(', ')}` : ''}: ${c.knownGap.reason})` : c.id);

/** Golden op names whose webtorch error may name the public op instead. */
const ERROR_OP: Record<string, string> = {
  floor_divide: 'div', trunc_divide: 'div', gelu_tanh: 'gelu', bce_with_logits: 'binary_cross_entropy_with_logits', batch_norm_stats: 'batch_norm',
};
/** The names webtorch's messages may use for a dtype: PyTorch's scalar name or webtorch's. */
const DTYPE_NAMES: Record<string, string[]> = {
  float32: ['Float', 'float32'], float16: ['Half', 'float16'], bfloat16: ['BFloat16', 'bfloat16'], int32: ['Int', 'int32'],
  int64: ['Long', 'int64'], uint8: ['Byte', 'uint8'], bool: ['Bool', 'bool'],
};
const named = (message: string, words: string[]) =>
  words.some((w) => new RegExp(`(^|[^a-z0-9])${w.replace(/[^a-z0-9_]/gi, (ch) => `\\${ch}`)}([^a-z0-9]|$)`, 'i').test(message));

/**
 * An error case: webtorch must refuse it, at the call or at the next sync point, with an Error
 * whose message names the op (snake_case or camelCase) and, for a dtype refusal, the dtype.
 */
async function expectRefusal(c: Case, call: () => torch.Tensor | torch.ValuesIndices | torch.Tensor[], owned: torch.Tensor[]): Promise<void> {
  let error: unknown;
  try {
    const out = call();
    const outs = out instanceof torch.Tensor ? [out] : Array.isArray(out) ? out : [out.values, out.indices];
    owned.push(...outs);
    for (const o of outs) await o.values();
  } catch (e) {
    error = e;
  }
  expect(error, `${c.id}: PyTorch refuses this (${c.error}); webtorch returned a result`).toBeInstanceOf(Error);
  const message = (error as Error).message;
  const ops = [c.op, ERROR_OP[c.op]].filter((o): o is string => !!o).flatMap((o) => [o, o.replace(/_(\w)/g, (_, ch: string) => ch.toUpperCase())]);
  expect(named(message, ops), `${c.id}: the message names the op (${ops.join(' or ')}): "${message}" (PyTorch: "${c.error}")`).toBe(true);
  if (c.errorDtype) {
    expect(named(message, DTYPE_NAMES[c.errorDtype]), `${c.id}: the message names the dtype (${DTYPE_NAMES[c.errorDtype].join(' or ')}): "${message}" (PyTorch: "${c.error}")`).toBe(true);
  }
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
    const base = torch.tensor(a.data.map(num) as unknown as number[], { dtype: a.dtype as torch.DType, device });
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
    if (c.error !== undefined) return await expectRefusal(c, () => run(c, args, runners), owned);
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

/**
 * Registers one test per case on a device; the known gaps of that device are registered skipped,
 * their reason in the title, so a run lists them (WEBTORCH_RUN_GAPS=1 runs them).
 */
export function goldenTests(cases: Case[], device: string, runners: Record<string, Runner> = RUN): void {
  const rows = (cs: Case[]) => cs.map((c) => [title(c), c] as const);
  // WEBTORCH_RUN_GAPS=1 runs the known gaps too, to see which are fixed
  const skips = (c: Case) => gapOn(c, device) && !process.env.WEBTORCH_RUN_GAPS;
  it.each(rows(cases.filter((c) => !skips(c))))('%s', async (_id, c) => {
    await runCase(c, device, runners);
  });
  const gaps = cases.filter(skips);
  if (gaps.length) it.skip.each(rows(gaps))('%s', async (_id, c) => {
    await runCase(c, device, runners);
  });
}

/** The goldens' split/chunk combiner (make_goldens*.py's): the pieces flattened, piece i times i + 1, concatenated; the pieces are disposed. */
export function pieces(parts: torch.Tensor[]): torch.Tensor {
  const flat = parts.map((p) => p.reshape([-1]));
  const scaled = flat.map((p, i) => p.mul(i + 1));
  const out = torch.cat(scaled);
  [...parts, ...flat, ...scaled].forEach((t) => t.dispose());
  return out;
}
