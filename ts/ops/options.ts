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
