/** Python's spellings, for errors worded as PyTorch words them. */

/** Python's `repr` of a float: `0.0`, `-1.0`, `0.5`, `1e-07`, `inf`, `nan`. */
export function pyFloat(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (Number.isInteger(x) && Math.abs(x) < 1e16) return `${x}.0`;
  return String(x).replace(/e([+-])(\d)$/, 'e$10$2');
}

/** A shape as a Python tuple: `()`, `(3,)`, `(2, 3)`. */
export const pyTuple = (shape: readonly number[]): string => (shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`);

/** A shape as `torch.Size([2, 3])`. */
export const pySize = (shape: readonly number[]): string => `torch.Size([${shape.join(', ')}])`;
