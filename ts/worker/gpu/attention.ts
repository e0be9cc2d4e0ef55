/**
 * Fused attention on a GPU (the `attention` and `attentionGrad` commands; kernels in
 * wgsl/attention.ts).
 *
 * Note [fused attention]: the composed `softmax(q·kᵀ·scale + bias)·v` writes the [L, S] scores
 * and probabilities and keeps them for the backward. Here no L×S matrix exists outside a
 * workgroup's memory.
 * - Forward (one dispatch): a workgroup per (batch·head, tile of R query rows) walks the keys
 *   C at a time (up to the diagonal when causal), with the online softmax: per row a running
 *   max m and sum l; each step's probabilities exp(s − m') rescale the accumulated output by
 *   exp(m − m') and add P·V. A row's four invocations each take every fourth key of the step;
 *   the step's row max is combined across them in workgroup memory, so each exp is taken once,
 *   and each keeps its share of l, added up at the end. It writes O = acc / l and the row's
 *   logsumexp m + log l, the only thing the backward keeps beside O. A row whose scores are all -inf has l = 0: its output is
 *   NaN and its logsumexp -inf, as the composed softmax gives (0/0); -inf never enters an
 *   exponent as m (the shift is then 0), so a row masked only in its first tiles stays exact.
 * - Backward (three dispatches, no atomics): 'd' writes each row's logsumexp and
 *   D = Σ dO·O (= Σ P·dP) side by side into scratch; 'dq' walks the key tiles for a tile of query
 *   rows, recomputing P = exp(s − lse) and dS = P·(dP − D), dP = dO·Vᵀ, and accumulates
 *   dQ = scale·dS·K; 'dkv' walks the query tiles (from the diagonal when causal) for a tile of
 *   keys and accumulates dV = Pᵀ·dO and dK = scale·dSᵀ·Q. Under a bool mask a -inf place takes
 *   no dS (the composed `where` passes it none), so a fully masked row's dQ is 0 and its dV NaN,
 *   as composed.
 * Strides: every operand (q, k, v, the output and its gradient, dQ, dK, dV, the mask) is a view of
 * [bh, rows, cols] with any strides over the lead dims (whose sizes the params hold once) and the
 * rows, and contiguous columns (the mask's strided too). A workgroup finds its block's first
 * element once (`base` in wgsl/attention.ts, from the lead strides) and steps by the row stride,
 * so the loads into workgroup memory stay runs of contiguous floats. nanoGPT's q, k and v, split
 * from one projection and transposed to [B, H, T, D], are read in place, as is an output gradient
 * that is the transpose of a [B, T, H, D]; ts/ops/attention.ts lays the output and dQ, dK, dV out
 * like q, k and v, so their gradients go back through the transpose and split with no copy.
 * Each dispatch binds each segment once (the params, then at most seven); 'dkv' binds nine
 * when every operand is in a segment of its own, so an adapter with fewer storage bindings
 * runs it twice (dK, then dV). Each pass's tile (its own R rows, the other side's C rows per step;
 * `ATTN_TILES`) is the largest whose operands fit the workgroup memory. The kernels' layout (a
 * row's dot products register-blocked, vec4 units for head dims that are multiples of 4) is in
 * wgsl/attention.ts. A tensor larger than one binding raises (ts/worker/split.ts `tooLarge`).
 */
import { AP, ATTN_MAX_LEAD, ATTN_PARAM_WORDS, ATTN_TILES, OP, OPS, OPW, attnUnits, attentionShader, attnGroups, attnKey, attnSharedBytes, type AttnSpec } from '../../../wgsl/attention.js';
import type { AttentionCommand, ViewRef } from '../../ir/commands.js';
import { buf, device, dispatchAt, grid1d, paramWords, reserveParams } from './core.js';
import { KeptScratch } from './workspace.js';

type Slots = AttnSpec['slots'];
type Named = [keyof Slots, GPUBuffer, boolean];

const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);
const bits = (x: number): number => ((f32[0] = x), u32[0]);

/** The backward's per-row logsumexp and D, interleaved. */
const rowScratch = new KeptScratch('the attention backward\'s row statistics');

/** The largest tile (own rows, other rows per step) whose operands fit the workgroup memory. */
function tileOf(pass: AttnSpec['pass'], E: number, Ev: number): readonly [number, number] {
  const limit = device.limits.maxComputeWorkgroupStorageSize;
  for (const tile of ATTN_TILES) if (attnSharedBytes(pass, E, Ev, ...tile) <= limit) return tile;
  throw new Error(`attention: head dims ${E} and ${Ev} need more workgroup memory than the adapter's ${limit} bytes`);
}

type Views = Partial<Record<keyof typeof OP, ViewRef>>;

/** Writes the params shared by every pass (each operand's offset, row and lead strides); returns their first word. */
function params(cmd: AttentionCommand, views: Views, rows: { lse: number; ld: number }): number {
  const at = reserveParams(ATTN_PARAM_WORDS);
  const w = paramWords, n = cmd.lead.length;
  w[at + AP.bh] = cmd.bh;
  w[at + AP.L] = cmd.L;
  w[at + AP.S] = cmd.S;
  w[at + AP.scale] = bits(cmd.scale);
  w[at + AP.causal] = cmd.causal ? 1 : 0;
  w[at + AP.lse] = rows.lse;
  w[at + AP.ld] = rows.ld;
  w[at + AP.nLead] = n;
  w[at + AP.eu] = attnUnits(cmd.E);
  w[at + AP.evu] = attnUnits(cmd.Ev);
  cmd.lead.forEach((size, d) => (w[at + AP.lead + d] = size));
  if (cmd.mask) w[at + AP.mCol] = cmd.mask.at.strides[n + 1];
  for (const [name, view] of Object.entries(views)) {
    const o = at + OPS + OP[name as keyof typeof OP] * OPW;
    w[o] = view.offset;
    w[o + 1] = view.strides[n];
    for (let d = 0; d < n; d++) w[o + 2 + d] = view.strides[d];
  }
  return at;
}

/** One dispatch of `pass` over the named buffers (each distinct buffer bound once, in order). */
function pass(cmd: AttentionCommand, p: AttnSpec['pass'], named: Named[], views: Views, rows: { lse: number; ld: number }): void {
  const bind: GPUBuffer[] = [];
  const slots: Slots = { q: -1, key: -1, v: -1, out: -1, lse: -1, g: -1, dq: -1, dk: -1, dv: -1, ld: -1, mask: -1 };
  const written = new Set<number>();
  for (const [name, b, w] of named) {
    let i = bind.indexOf(b);
    if (i < 0) i = bind.push(b) - 1;
    slots[name] = i;
    if (w) written.add(i);
  }
  const [R, C] = p === 'd' ? [1, 1] : tileOf(p, cmd.E, cmd.Ev);
  const spec: AttnSpec = { pass: p, E: cmd.E, Ev: cmd.Ev, R, C, slots, written: [...written].sort((a, b) => a - b), slotCount: bind.length, maskBool: !!cmd.mask?.bool };
  const at = params(cmd, views, rows);
  paramWords[at + AP.other] = C;
  dispatchAt(attnKey(spec), () => attentionShader(spec), bind, at, ATTN_PARAM_WORDS, grid1d(attnGroups(p, cmd.bh, cmd.L, cmd.S, R), 1));
}

/** Runs an `attention` or `attentionGrad` command (see the note). */
export function runAttention(cmd: AttentionCommand): void {
  if (cmd.bh === 0 || cmd.L === 0) return;
  if (cmd.lead.length > ATTN_MAX_LEAD) throw new Error(`attention: more than ${ATTN_MAX_LEAD} lead dims`);
  const inputs: Named[] = [['q', buf(cmd.q.id), false], ['key', buf(cmd.key.id), false], ['v', buf(cmd.v.id), false]];
  const mask: Named[] = cmd.mask ? [['mask', buf(cmd.mask.at.id), false]] : [];
  const base: Views = { q: cmd.q, key: cmd.key, v: cmd.v, ...(cmd.mask ? { mask: cmd.mask.at } : {}) };
  if (cmd.k === 'attention') {
    const outs: Named[] = [['out', buf(cmd.out.id), true], ...(cmd.lse ? [['lse', buf(cmd.lse.id), true] as Named] : [])];
    pass(cmd, 'fwd', [...outs, ...inputs, ...mask], { ...base, out: cmd.out }, { lse: cmd.lse ? cmd.lse.offset : 0, ld: 0 });
    return;
  }
  const ld = rowScratch.take(Math.max(16, Math.ceil((8 * cmd.bh * cmd.L) / 16) * 16));
  const shared: Views = { ...base, out: cmd.o, g: cmd.g, dq: cmd.dq, dk: cmd.dk, dv: cmd.dv }, rows = { lse: cmd.lse.offset, ld: 0 };
  pass(cmd, 'd', [['ld', ld, true], ['g', buf(cmd.g.id), false], ['out', buf(cmd.o.id), false], ['lse', buf(cmd.lse.id), false]], shared, rows);
  const grads: Named[] = [['g', buf(cmd.g.id), false], ['ld', ld, false]];
  pass(cmd, 'dq', [['dq', buf(cmd.dq.id), true], ...inputs, ...grads, ...mask], shared, rows);
  if (cmd.S === 0) return;
  const dk: Named = ['dk', buf(cmd.dk.id), true], dv: Named = ['dv', buf(cmd.dv.id), true];
  const all = [dk, dv, ...inputs, ...grads, ...mask];
  if (new Set(all.map((n) => n[1])).size + 1 <= device.limits.maxStorageBuffersPerShaderStage) pass(cmd, 'dkv', all, shared, rows);
  else {
    pass(cmd, 'dkv', [dk, ...inputs, ...grads, ...mask], shared, rows);
    pass(cmd, 'dkv', [dv, ...inputs, ...grads, ...mask], shared, rows);
  }
}
