/** `node:fs` for the goldens page: the page fetches the goldens itself, so nothing here is ever called. */
export function readFileSync(): never {
  throw new Error('readFileSync is not available in the browser');
}
