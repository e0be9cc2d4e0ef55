/**
 * An optimizer's step over a table of float32 parameters (the `optimStep` command, PyTorch's
 * multi-tensor `fused` Adam, AdamW and SGD): one kernel writes every parameter and its state in
 * place. With device step counts (`capturable` Adam) a dispatch of the same kernel in mode 1
 * increments them first, one invocation per entry; the update then reads them.
 *
 * Each segment that holds a parameter, a gradient or a state is bound once (S0..S{k-1},
 * read_write f32); the params hold a header of the group's scalars and one entry per parameter:
 * its first work unit, its element count, the (slot, offset) of the parameter, the gradient and
 * up to three states, Adam's step size and bias correction for the entry's step, and SGD's
 * first-step flag. An invocation is one element: it finds its entry by binary search over the
 * first units (as the amp kernel does), and computes the update in the order the composed ops
 * of ts/optim/algorithms.ts do, so that both paths round alike.
 */
import { WG } from './elementwise.js';
import { findEntry, segmentAccess } from './segments.js';

/** Params header words (see `OPTIM_HEADER`). */
export const OPTIM_HEADER_WORDS = 16;
/** Params words per entry: first unit, count, p, g, s0, s1, s2 (slot, offset each), stepSize, invSqrtBc2, first, step (slot, offset). */
export const OPTIM_ENTRY_WORDS = 17;
/**
 * Where each header word is; the scalars are f32 bits. `a`: Adam's β1 or SGD's momentum; `b`: β2;
 * `oneMinusA`: 1 − β1; `oneMinusB`: 1 − β2, or SGD's 1 − dampening; `decay`: AdamW's 1 − lr·weightDecay;
 * `lnA`, `lnB`: ln β1, ln β2 (device step counts); `mode`: 0 updates, 1 increments each entry's step
 * count (one invocation per entry; the dispatch before the update's).
 */
export const OPTIM_HEADER = { entries: 0, units: 1, algo: 2, flags: 3, lr: 4, wd: 5, a: 6, b: 7, eps: 8, oneMinusA: 9, oneMinusB: 10, decay: 11, lnA: 12, lnB: 13, mode: 14 } as const;
/** Flag bits of the header's `flags`. */
export const OPTIM_FLAGS = { maximize: 1, decoupled: 2, amsgrad: 4, nesterov: 8, momentum: 16, weightDecay: 32, deviceStep: 64 } as const;
/** Header `algo` codes. */
export const OPTIM_ALGO = { adam: 0, sgd: 1 } as const;

/** The `optimStep` kernel over `slots` bindings of segments. */
export function optimShader(slots: number): string {
  const H = OPTIM_HEADER_WORDS, E = OPTIM_ENTRY_WORDS, h = OPTIM_HEADER, F = OPTIM_FLAGS;
  const f = (w: number) => `bitcast<f32>(P[${w}u])`;
  return `@group(0) @binding(0) var<storage, read> P: array<u32>;
${segmentAccess(slots, 'f32')}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let w = (wid.y * nwg.x + wid.x) * ${WG}u + li;
  if (P[${h.mode}] == 1u) {
    // the step counts, one invocation per entry
    if (w < P[${h.entries}]) {
      let se = ${H}u + w * ${E}u;
      st(P[se + 15u], P[se + 16u], ld(P[se + 15u], P[se + 16u]) + 1.0);
    }
    return;
  }
  if (w >= P[${h.units}]) { return; }
  ${findEntry('w', `P[${h.entries}]`, H, E)}
  let e = ${H}u + lo * ${E}u;
  let j = w - P[e];
  let flags = P[${h.flags}];
  let lr = ${f(h.lr)};
  let wd = ${f(h.wd)};
  let pi = P[e + 3u] + j;
  var p = ld(P[e + 2u], pi);
  var d = ld(P[e + 4u], P[e + 5u] + j);
  if ((flags & ${F.maximize}u) != 0u) { d = -d; }
  let decoupled = (flags & ${F.decoupled}u) != 0u;
  if ((flags & ${F.weightDecay}u) != 0u && !decoupled) { d = d + wd * p; }
  if (P[${h.algo}] == 0u) {
    // Adam, AdamW
    if ((flags & ${F.weightDecay}u) != 0u && decoupled) { p = p * ${f(h.decay)}; }
    let mi = P[e + 7u] + j;
    let vi = P[e + 9u] + j;
    let m = ld(P[e + 6u], mi) * ${f(h.a)} + ${f(h.oneMinusA)} * d;
    let v = ld(P[e + 8u], vi) * ${f(h.b)} + ${f(h.oneMinusB)} * (d * d);
    st(P[e + 6u], mi, m);
    st(P[e + 8u], vi, v);
    var u = v;
    if ((flags & ${F.amsgrad}u) != 0u) {
      let xi = P[e + 11u] + j;
      u = max(ld(P[e + 10u], xi), v);
      st(P[e + 10u], xi, u);
    }
    if ((flags & ${F.deviceStep}u) != 0u) {
      // the composed capturable step's order: 1 − exp(step · ln β), then m / denom / c1 times −lr
      let step = ld(P[e + 15u], P[e + 16u]);
      let c1 = 1.0 - exp(step * ${f(h.lnA)});
      let c2 = 1.0 - exp(step * ${f(h.lnB)});
      let denom = sqrt(u) / sqrt(c2) + ${f(h.eps)};
      p = p + (-lr) * ((m / denom) / c1);
    } else {
      let denom = sqrt(u) * bitcast<f32>(P[e + 13u]) + ${f(h.eps)};
      p = p + bitcast<f32>(P[e + 12u]) * (m / denom);
    }
  } else {
    // SGD
    if ((flags & ${F.momentum}u) != 0u) {
      let bi = P[e + 7u] + j;
      var buf = d;
      if (P[e + 14u] == 0u) { buf = ld(P[e + 6u], bi) * ${f(h.a)} + ${f(h.oneMinusB)} * d; }
      st(P[e + 6u], bi, buf);
      if ((flags & ${F.nesterov}u) != 0u) { d = d + ${f(h.a)} * buf; } else { d = buf; }
    }
    p = p + (-lr) * d;
  }
  st(P[e + 2u], pi, p);
}
`;
}

/** An entry as the planner sees it: the segments it touches. */
export interface SegmentEntry {
  segments: number[];
}

/**
 * Splits the entries into the fewest dispatches the bindings allow, in order (greedy): a dispatch
 * binds at most `room` segments (maxStorageBuffersPerShaderStage less the params binding).
 * Returns each dispatch's segments and entries. An entry that alone needs more than `room`
 * segments raises (five at most: parameter, gradient, three states; every adapter has eight).
 */
export function planSegments<E extends SegmentEntry>(entries: E[], room: number): { segments: number[]; entries: E[] }[] {
  const plan: { segments: number[]; entries: E[] }[] = [];
  let current: { segments: number[]; entries: E[] } | null = null;
  for (const e of entries) {
    const own = [...new Set(e.segments)];
    if (own.length > room) throw new RangeError(`optimStep: a parameter touches ${own.length} segments, more than the ${room} storage bindings a dispatch can have`);
    const added = current ? own.filter((s) => !current!.segments.includes(s)) : own;
    if (!current || current.segments.length + added.length > room) {
      current = { segments: own, entries: [e] };
      plan.push(current);
    } else {
      current.segments.push(...added);
      current.entries.push(e);
    }
  }
  return plan;
}
