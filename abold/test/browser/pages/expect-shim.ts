/**
 * The part of vitest's `expect` that test/golden.ts uses, for pages in a browser (the goldens
 * page is bundled with `vitest` pointing here). A failed expectation throws an Error whose
 * message carries the label and both values, as vitest's does.
 */
const show = (v: unknown): string => {
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
};

const equal = (a: unknown, b: unknown): boolean => {
  if (Object.is(a, b)) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => equal(x, b[i]));
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a), kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => equal((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
  }
  return false;
};

function matchers(actual: unknown, label: string | undefined, negate: boolean) {
  const check = (ok: boolean, what: string) => {
    if (ok === negate) throw new Error(`${label ? `${label}: ` : ''}expected ${show(actual)} ${negate ? 'not ' : ''}${what}`);
  };
  return {
    toBe: (want: unknown) => check(Object.is(actual, want), `to be ${show(want)}`),
    toEqual: (want: unknown) => check(equal(actual, want), `to equal ${show(want)}`),
    toBeNaN: () => check(typeof actual === 'number' && Number.isNaN(actual), 'to be NaN'),
    toBeNull: () => check(actual === null, 'to be null'),
    toBeLessThanOrEqual: (n: number) => check((actual as number) <= n, `to be <= ${n}`),
    toBeInstanceOf: (c: abstract new (...a: never[]) => unknown) => check(actual instanceof c, `to be an instance of ${c.name}`),
  };
}

/** `expect(value, label?)` with `.not`. */
export function expect(actual: unknown, label?: string) {
  return Object.assign(matchers(actual, label, false), { not: matchers(actual, label, true) });
}

const unavailable = () => {
  throw new Error('not available in the browser pages');
};
export const it = Object.assign(unavailable, { each: unavailable, skip: { each: unavailable } });
