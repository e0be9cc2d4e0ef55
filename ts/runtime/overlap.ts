/**
 * Note [overlapping tensors in one multi-tensor command]
 *
 * The multi-tensor commands that write in place (`foreachMul`, `foreachClamp`, `optimStep`,
 * `ampUnscale`) run every element of every listed tensor at once: one GPU dispatch, one
 * invocation an element. Two entries whose memory overlaps then read-modify-write one element in
 * two invocations at the same time, and one update is lost. On lavapipe eight neighbouring
 * invocations run as SIMD lanes (all load, then all store), so `_foreachMul_([base[0:6],
 * base[3:9]], 2)` left base[3] and base[4] doubled once instead of twice. PyTorch runs such a list
 * in order (its per-tensor loop): an element shared by two tensors is changed twice.
 *
 * `rounds` keeps that order at the least cost: an entry goes into the round after the last one
 * that holds an earlier entry it conflicts with (one writes memory the other reads or writes), so
 * the entries of a round touch disjoint memory and each round is one command, queued in order.
 * Without an overlap, the usual case, there is one round. Memory is compared as byte ranges of the
 * allocator's segment (`storage.id`; distinct storages never overlap): a non-contiguous view
 * counts as its whole span, which can only split a command more than needed.
 */
import type { Device } from '../device.js';
import { elementSize } from '../dtype.js';
import type { Tensor } from '../tensor.js';

/** The bytes a tensor can address: its device, its segment there and [lo, hi) in it (hi = lo when empty). */
export interface Span { device: Device; seg: number; lo: number; hi: number }

/** `t`'s span: from its lowest to past its highest addressable element (a strided view's whole extent). */
export function span(t: Tensor): Span {
  const es = elementSize(t.dtype), base = t.storage.byteOffset + t._offset * es;
  if (t.shape.some((s) => s === 0)) return { device: t.device, seg: t.storage.id, lo: base, hi: base };
  let lo = 0, hi = 0;
  t.shape.forEach((s, d) => {
    const reach = (s - 1) * t._strides[d];
    if (reach < 0) lo += reach;
    else hi += reach;
  });
  return { device: t.device, seg: t.storage.id, lo: base + lo * es, hi: base + (hi + 1) * es };
}

/** Whether two spans share a byte. */
export const overlaps = (a: Span, b: Span): boolean => a.device === b.device && a.seg === b.seg && a.lo < b.hi && b.lo < a.hi;

/** Whether `t` shares memory with any of `others`. */
export function overlapsAny(t: Tensor, others: Tensor[]): boolean {
  const s = span(t);
  return others.some((o) => overlaps(s, span(o)));
}

/** PyTorch's message for an op whose input partly overlaps the tensor it writes (at::assert_no_partial_overlap). */
export const PARTIAL_OVERLAP = 'unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.';

/**
 * Splits `entries` into rounds whose entries touch disjoint memory (see the note). `writes(e)` are
 * the tensors entry `e` writes in place, `reads(e)` those it only reads. Within one entry the
 * kernel reads and writes element i of each of its tensors in one invocation, so its own tensors
 * may coincide exactly but not partly overlap: that raises PyTorch's error.
 */
export function rounds<T>(entries: T[], writes: (e: T) => Tensor[], reads: (e: T) => Tensor[] = () => []): T[][] {
  interface Range extends Span { entry: number; write: boolean; dev: number }
  const ranges: Range[] = [], devs = new Map<Device, number>();
  entries.forEach((e, entry) => {
    for (const [list, write] of [[writes(e), true], [reads(e), false]] as const) {
      for (const t of list) {
        const s = span(t);
        if (s.hi > s.lo) ranges.push({ ...s, entry, write, dev: devs.get(s.device) ?? devs.set(s.device, devs.size).size - 1 });
      }
    }
  });
  ranges.sort((a, b) => a.dev - b.dev || a.seg - b.seg || a.lo - b.lo);
  // a sweep over each segment's ranges by start: `open` holds those of its segment not yet ended
  const earlier: number[][] = entries.map(() => []);
  let open: Range[] = [];
  for (const r of ranges) {
    open = open.filter((o) => o.dev === r.dev && o.seg === r.seg && o.hi > r.lo);
    for (const o of open) {
      if (!o.write && !r.write) continue;
      if (o.entry === r.entry) {
        if (o.lo !== r.lo || o.hi !== r.hi) throw new Error(PARTIAL_OVERLAP);
      } else earlier[Math.max(o.entry, r.entry)].push(Math.min(o.entry, r.entry));
    }
    open.push(r);
  }
  if (earlier.every((l) => !l.length)) return entries.length ? [entries] : [];
  const round: number[] = [], out: T[][] = [];
  entries.forEach((e, i) => {
    round[i] = earlier[i].reduce((m, j) => Math.max(m, round[j] + 1), 0);
    (out[round[i]] ??= []).push(e);
  });
  return out;
}
