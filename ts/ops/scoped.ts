/**
 * Disposal of intermediates inside composed ops.
 *
 * `torch.tidy` cannot be used for this: a composed op runs with recording on, and the handles
 * that `ctx.save` creates for backward would be tracked by the tidy scope and disposed with
 * the intermediates. Here only tensors handed to `tmp` are disposed, and never an input or a
 * tensor that is part of the result (an op may return its input, e.g. `contiguous`).
 */
import type { Tensor } from '../tensor.js';

/** Registers a temporary and returns it. */
export type Tmp = <T extends Tensor>(t: T) => T;

function collect(v: unknown, into: Set<unknown>): void {
  into.add(v);
  if (Array.isArray(v)) v.forEach((x) => into.add(x));
  else if (v && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) Object.values(v).forEach((x) => into.add(x));
}

/** Runs `fn`; afterwards (also on error) disposes every tensor passed to `tmp` that is not an input or part of the result. */
export function scoped<R>(inputs: readonly unknown[], fn: (tmp: Tmp) => R): R {
  const temps: Tensor[] = [];
  let result: R | undefined;
  try {
    result = fn((t) => {
      temps.push(t);
      return t;
    });
    return result;
  } finally {
    const keep = new Set<unknown>(inputs);
    collect(result, keep);
    for (const t of temps) if (!keep.has(t)) t.dispose();
  }
}
