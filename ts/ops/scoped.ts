/**
 * `tidy` for the ops' own intermediates: everything an op creates inside is disposed when it
 * returns, except the result. This is safe for composed ops that record the tape: a saved
 * tensor is a separate handle taken out of the scope (`Node.save` untracks it), and a disposed
 * intermediate's node stays alive while the nodes that consumed it hold it.
 */
import { tidy as tidyScope } from '../scope.js';
import { Tensor } from '../tensor.js';

/** Runs `fn`, disposing the tensors it created except those it returns (synchronous `fn` only). */
export const tidy = <T>(fn: () => T): T => tidyScope(fn, (v): v is Tensor => v instanceof Tensor);
