/**
 * `torch.einsum(equation, ...operands)`: PyTorch's full equation syntax (an explicit or implicit
 * output, `...` for broadcast dims, a label repeated in one operand for a diagonal, a label left
 * out of the output for a sum), with PyTorch's error messages.
 *
 * It composes from differentiable ops, as PyTorch's does: each operand first takes the
 * diagonals of its repeated labels (a strided view) and sums the labels no one else needs; then
 * the operands are contracted left to right, each pair as one batched `matmul`
 * ([batch, kept by A, summed] · [batch, summed, kept by B]), size-1 dims broadcast by `expand`.
 */
import { scalarName } from '../dtype.js';
import { Tensor } from '../tensor.js';
import { diagonal } from './linalg.js';
import { matmul } from './matmul.js';
import { reduce } from './reduce.js';
import { tidy } from './scoped.js';
import { expand, permute, reshape, unsqueeze } from './views.js';
import { ReduceOp } from '../ir/ops.js';

/** A label: a letter's char code, or for broadcast (`...`) dims -1 (the last) down to -E. */
type Label = number;

const fail = (message: string): never => {
  throw new RangeError(`einsum(): ${message}`);
};
const isLetter = (c: string) => /^[a-zA-Z]$/.test(c);
const name = (l: Label) => String.fromCharCode(l);

/** One side's subscripts: its letters, and where its ellipsis is (-1: none). */
interface Term { letters: Label[]; ellipsisAt: number }

/** Parses one term starting at `start` in the equation; `who` names it in messages. */
function parseTerm(eq: string, start: number, end: number, who: string): Term {
  const letters: Label[] = [];
  let ellipsisAt = -1;
  for (let i = start; i < end; i++) {
    const c = eq[i];
    if (c === '.') {
      if (ellipsisAt >= 0) fail(`found '.' for ${who} for which an ellipsis was already found`);
      if (eq[i + 1] !== '.' || eq[i + 2] !== '.' || i + 2 >= end) fail(`found '.' for ${who} that is not part of any ellipsis`);
      ellipsisAt = letters.length;
      i += 2;
    } else if (isLetter(c)) {
      letters.push(c.charCodeAt(0));
    } else {
      fail(`invalid subscript given at index ${i} in the equation string, subscripts must be in [a-zA-Z]`);
    }
  }
  return { letters, ellipsisAt };
}

/** An operand on its way through: the tensor and the label of each of its dims. */
interface Part { t: Tensor; labels: Label[] }

/** The tensor with the dims of `labels` summed away (none: the tensor itself). */
function sumOut(p: Part, drop: (l: Label) => boolean): Part {
  const dims = p.labels.map((l, i) => (drop(l) ? i : -1)).filter((i) => i >= 0);
  if (!dims.length) return p;
  return { t: reduce(ReduceOp.Sum, p.t, dims, false), labels: p.labels.filter((l) => !drop(l)) };
}

/** `t` with its dims in the order of `labels` (a permutation of p's labels). */
function arrange(p: Part, labels: Label[]): Tensor {
  const order = labels.map((l) => p.labels.indexOf(l));
  return order.every((d, i) => d === i) ? p.t : permute(p.t, order);
}

/** The contraction of two parts, keeping the labels `keep` needs; one batched matmul. */
function contract(a: Part, b: Part, keep: Set<Label>, size: Map<Label, number>): Part {
  a = sumOut(a, (l) => !keep.has(l) && !b.labels.includes(l));
  b = sumOut(b, (l) => !keep.has(l) && !a.labels.includes(l));
  const batch = a.labels.filter((l) => b.labels.includes(l) && keep.has(l));
  const summed = a.labels.filter((l) => b.labels.includes(l) && !keep.has(l));
  const aOnly = a.labels.filter((l) => !b.labels.includes(l)), bOnly = b.labels.filter((l) => !a.labels.includes(l));
  const sizes = (ls: Label[]) => ls.map((l) => size.get(l)!);
  const prod = (ls: Label[]) => sizes(ls).reduce((x, y) => x * y, 1);
  const aOrder = [...batch, ...aOnly, ...summed], bOrder = [...batch, ...summed, ...bOnly];
  const at = expand(arrange(a, aOrder), [...sizes(batch), ...aOnly.map((l) => a.t.shape[a.labels.indexOf(l)]), ...sizes(summed)]);
  const bt = expand(arrange(b, bOrder), [...sizes(batch), ...sizes(summed), ...bOnly.map((l) => b.t.shape[b.labels.indexOf(l)])]);
  const mShape = at.shape.slice(batch.length, batch.length + aOnly.length), nShape = bt.shape.slice(batch.length + summed.length);
  const labels = [...batch, ...aOnly, ...bOnly], outShape = [...sizes(batch), ...mShape, ...nShape];
  if (aOnly.length <= 1 && summed.length <= 1 && bOnly.length <= 1) {
    // One label per group (attention's 'bhqd,bhkd->bhqk'): the permuted views go to matmul as they
    // are (its kernel takes strided operands and batch dims), with size-1 dims for empty groups.
    const am = unsqueezeAt(unsqueezeAt(at, !summed.length, at.ndim), !aOnly.length, batch.length);
    const bm = unsqueezeAt(unsqueezeAt(bt, !bOnly.length, bt.ndim), !summed.length, batch.length);
    return { t: reshape(matmul(am, bm), outShape), labels };
  }
  const prodOf = (s: readonly number[]) => s.reduce((x, y) => x * y, 1);
  const am = reshape(at, [prod(batch), prodOf(mShape), prod(summed)]);
  const bm = reshape(bt, [prod(batch), prod(summed), prodOf(nShape)]);
  return { t: reshape(matmul(am, bm), outShape), labels };
}

/** `t` with a size-1 dim inserted at `dim` when `when`. */
const unsqueezeAt = (t: Tensor, when: boolean, dim: number): Tensor => (when ? unsqueeze(t, dim) : t);

/**
 * `torch.einsum(equation, ...operands)` (or `einsum(equation, [operands])`): sums of products
 * of the operands' elements, indexed by the equation's subscripts.
 */
export function einsum(equation: string, ...operands: (Tensor | Tensor[])[]): Tensor {
  if (typeof equation !== 'string') throw new TypeError(`einsum(): argument 'equation' must be str, not ${typeof equation}`);
  const ops: Tensor[] = operands.length === 1 && Array.isArray(operands[0]) ? operands[0] : (operands as Tensor[]);
  ops.forEach((t, i) => {
    if (!(t instanceof Tensor)) throw new TypeError(`einsum(): operand ${i} must be a Tensor, not ${t === null ? 'null' : typeof t}`);
  });
  if (ops.length === 0) fail('must provide at least one operand');
  const eq = equation.replace(/ /g, '');
  const arrow = eq.indexOf('->');
  const lhsEnd = arrow < 0 ? eq.length : arrow;
  // The input terms
  const terms: Term[] = [];
  let start = 0;
  for (let i = 0; i <= lhsEnd; i++) {
    if (i === lhsEnd || eq[i] === ',') {
      if (terms.length >= ops.length) fail('fewer operands were provided than specified in the equation');
      terms.push(parseTerm(eq, start, i, `operand ${terms.length}`));
      start = i + 1;
    }
  }
  if (terms.length < ops.length) fail('more operands were provided than specified in the equation');
  ops.forEach((t, i) => {
    if (t.dtype !== ops[0].dtype) throw new TypeError(`einsum(): expected scalar type ${scalarName(ops[0].dtype)} but found ${scalarName(t.dtype)} (operand ${i})`);
    if (t.device !== ops[0].device) throw new RangeError(`einsum(): Expected all tensors to be on the same device, but found at least two devices, ${ops[0].device} and ${t.device}!`);
  });
  // Each operand's dims labelled, ellipsis dims numbered from the right; sizes checked to broadcast.
  const size = new Map<Label, number>();
  let ellipsisDims = 0;
  const parts: Part[] = ops.map((t, k) => {
    const { letters, ellipsisAt } = terms[k];
    if (ellipsisAt < 0 && letters.length !== t.ndim) {
      fail(`the number of subscripts in the equation (${letters.length}) does not match the number of dimensions (${t.ndim}) for operand ${k} and no ellipsis was given`);
    }
    if (letters.length > t.ndim) fail(`the number of subscripts in the equation (${letters.length}) is more than the number of dimensions (${t.ndim}) for operand ${k}`);
    const e = t.ndim - letters.length;
    if (ellipsisAt >= 0) ellipsisDims = Math.max(ellipsisDims, e);
    const labels = ellipsisAt < 0 ? letters.slice() : [...letters.slice(0, ellipsisAt), ...Array.from({ length: e }, (_, j) => j - e), ...letters.slice(ellipsisAt)];
    labels.forEach((l, d) => {
      const n = t.shape[d];
      const first = labels.indexOf(l);
      if (first < d) {
        if (t.shape[first] !== n) fail(`subscript ${name(l)} is repeated for operand ${k} but the sizes don't match, ${n} != ${t.shape[first]}`);
        return;
      }
      const seen = size.get(l);
      if (seen !== undefined && seen !== 1 && n !== 1 && seen !== n) {
        fail(l < 0
          ? `dimension ${e + l} covered by ellipsis in operand ${k}has size ${n} which does not broadcast with previously seen ellipsis with size ${seen} for the respective dimension`
          : `subscript ${name(l)} has size ${n} for operand ${k} which does not broadcast with previously seen size ${seen}`);
      }
      size.set(l, seen === undefined || seen === 1 ? n : seen);
    });
    return { t, labels };
  });
  // The output's labels: explicit, or the broadcast dims then the letters used once, in ASCII order.
  const ellipsisLabels = Array.from({ length: ellipsisDims }, (_, j) => j - ellipsisDims);
  let output: Label[];
  if (arrow >= 0) {
    const out = parseTerm(eq, arrow + 2, eq.length, 'output');
    out.letters.forEach((l, i) => {
      if (!size.has(l)) fail(`output subscript ${name(l)} does not appear in the equation for any input operand`);
      if (out.letters.indexOf(l) !== i) fail(`output subscript ${name(l)} appears more than once in the output`);
    });
    output = out.ellipsisAt < 0 ? out.letters : [...out.letters.slice(0, out.ellipsisAt), ...ellipsisLabels, ...out.letters.slice(out.ellipsisAt)];
  } else {
    const count = new Map<Label, number>();
    terms.forEach((t) => t.letters.forEach((l) => count.set(l, (count.get(l) ?? 0) + 1)));
    output = [...ellipsisLabels, ...[...count].filter(([, c]) => c === 1).map(([l]) => l).sort((x, y) => x - y)];
  }
  return tidy(() => {
    // Per operand: diagonals of repeated labels, then the sums of labels used nowhere else.
    const uses = (l: Label, except: number) => output.includes(l) || parts.some((p, j) => j !== except && p.labels.includes(l));
    const ready = parts.map((p, k) => {
      let cur = p;
      for (;;) {
        const d2 = cur.labels.findIndex((l, i) => cur.labels.indexOf(l) < i);
        if (d2 < 0) break;
        const d1 = cur.labels.indexOf(cur.labels[d2]);
        const l = cur.labels[d1];
        cur = { t: diagonal(cur.t, 0, d1, d2), labels: [...cur.labels.filter((_, i) => i !== d1 && i !== d2), l] };
      }
      return sumOut(cur, (l) => !uses(l, k));
    });
    let acc = ready[0];
    for (let k = 1; k < ready.length; k++) {
      const keep = new Set<Label>([...output, ...ready.slice(k + 1).flatMap((p) => p.labels)]);
      acc = contract(acc, ready[k], keep, size);
    }
    acc = sumOut(acc, (l) => !output.includes(l));
    return arrange(acc, output);
  });
}
