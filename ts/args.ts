/**
 * Options objects are JavaScript's keyword arguments; an unknown key is a mistake the caller
 * should hear about at once, worded as Python words it.
 */

/** Throws `TypeError("op() got an unexpected keyword argument 'key'")` for a key not in `allowed`. */
export function checkOptions(op: string, options: object | undefined | null, allowed: readonly string[]): void {
  if (!options) return;
  if (typeof options !== 'object') throw new TypeError(`${op}(): expected an options object, got ${typeof options}`);
  for (const k of Object.keys(options)) {
    if (!allowed.includes(k)) {
      throw new TypeError(`${op}() got an unexpected keyword argument '${k}' (expected ${allowed.map((a) => `'${a}'`).join(', ')})`);
    }
  }
}

/** A plain object literal: JavaScript's form of keyword arguments (not a Tensor, array, Module or iterable). */
export function isKeywords(x: unknown): x is Record<string, unknown> {
  if (typeof x !== 'object' || x === null) return false;
  const proto = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null;
}

/**
 * Binds a call to a PyTorch signature: `args` are the arguments after the ones the function
 * names itself, positional in `params` order, optionally followed by one options object
 * (keywords). `lead` counts the arguments before `args`, for the error's figures; the params after
 * the first `positionalCount` are keyword-only (PyTorch's `*`). Returns `defaults` overridden by what was given; `undefined` means "not given".
 * Raises Python's errors: too many positional arguments, an unexpected keyword, a value given
 * both ways, a missing required argument (one whose default is `REQUIRED`).
 */
export function bindArgs<T extends object>(op: string, params: readonly (keyof T & string)[], args: readonly unknown[], defaults: T, lead = 0, positionalCount = params.length): T {
  let positional = args;
  let keywords: Record<string, unknown> = {};
  // A trailing object literal is keywords unless a positional slot is left for it and it is the
  // value of a parameter that takes objects (none of PyTorch's do), so the rule is simple.
  if (args.length && isKeywords(args[args.length - 1])) {
    keywords = args[args.length - 1] as Record<string, unknown>;
    positional = args.slice(0, -1);
  }
  while (positional.length && positional[positional.length - 1] === undefined) positional = positional.slice(0, -1);
  if (positional.length > positionalCount) {
    const takes = positionalCount ? `from ${lead} to ${lead + positionalCount} positional arguments` : `${lead} positional argument${lead === 1 ? '' : 's'}`;
    throw new TypeError(`${op}() takes ${takes} but ${lead + positional.length} were given`);
  }
  checkOptions(op, keywords, params);
  const out = { ...defaults } as Record<string, unknown>;
  positional.forEach((v, i) => {
    if (v !== undefined) out[params[i]] = v;
  });
  for (const [k, v] of Object.entries(keywords)) {
    if (v === undefined) continue;
    if (positional[(params as readonly string[]).indexOf(k)] !== undefined) throw new TypeError(`${op}() got multiple values for argument '${k}'`);
    out[k] = v;
  }
  const missing = Object.keys(out).filter((k) => out[k] === REQUIRED);
  if (missing.length) {
    throw new TypeError(`${op}() missing ${missing.length} required argument${missing.length > 1 ? 's' : ''}: ${missing.map((m) => `'${m}'`).join(' and ')}`);
  }
  return out as T;
}

/** The default of a required argument in `bindArgs`. */
export const REQUIRED = Symbol('required') as unknown as never;

/** Every prefix of a tuple: `[] | [a] | [a, b] | …`. */
type Prefixes<P extends unknown[]> = P extends [...infer H, unknown] ? P | Prefixes<H> : [];

/**
 * The trailing arguments of a PyTorch signature: any prefix of the positional parameters `P`,
 * optionally followed by an options object `K` (PyTorch's keywords).
 */
export type PyArgs<P extends unknown[], K> = Prefixes<P> extends infer Q ? (Q extends unknown[] ? Q | [...Q, K] : never) : never;

/**
 * A reduction's trailing arguments: `(dim, keepdim)`, `(dim, {keepdim})` or `({dim, keepdim})`;
 * `keepdims` is NumPy's spelling of `keepdim`, which PyTorch's argument parser also takes
 * (d2l writes `x.sum(dim=1, keepdims=True)`).
 */
export type DimArgs<D> = PyArgs<[dim: D | null | undefined, keepdim: boolean], { dim?: D | null; keepdim?: boolean; keepdims?: boolean }>;

/** Binds a reduction's `dim` and `keepdim` (or `keepdims`, keyword only) after `lead` leading arguments. */
export function bindDim<D>(op: string, args: readonly unknown[], lead = 1): { dim: D | undefined; keepdim: boolean } {
  const o = bindArgs(op, ['dim', 'keepdim', 'keepdims'], args, { dim: undefined as D | null | undefined, keepdim: undefined as boolean | undefined, keepdims: undefined as boolean | undefined }, lead, 2);
  if (o.keepdim !== undefined && o.keepdims !== undefined) throw new TypeError(`${op}() got multiple values for argument 'keepdim' (keepdims is its NumPy spelling)`);
  return { dim: o.dim ?? undefined, keepdim: o.keepdim ?? o.keepdims ?? false };
}
