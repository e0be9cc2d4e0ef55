/**
 * Fused attention on the cpu worker (the `attention` and `attentionGrad` commands;
 * assembly/kernels/attention.ts, whose note gives the descriptor): the forward over rows, and the
 * backward a block of batch·heads at a time (each score once) where there are blocks enough for
 * the threads, else in the passes 'd', 'dq' over rows and 'dkv' over keys (each score twice, all
 * threads busy); in parts on the pool's threads when there is work enough, each thread with
 * E + Ev floats of workspace.
 */
import { StorageCode } from '../../dtype.js';
import type { AttentionCommand, Place, ViewRef } from '../../ir/commands.js';
import { releaseScratch, reserveScratch } from '../scratch.js';
import { K, POOL_MIN_MACS, allocRange, at, desc, f32Word, freeRange, pool } from './core.js';

/** Runs an `attention` or `attentionGrad` command. */
export function runAttention(cmd: AttentionCommand): void {
  if (cmd.bh === 0 || cmd.L === 0) return;
  if (cmd.lead.length > 8) throw new Error('attention: more than 8 lead dims');
  const f32 = (p: Place | null) => (p ? at(p, StorageCode.F32) : 0);
  const n = cmd.lead.length;
  const grad = cmd.k === 'attentionGrad' ? cmd : null;
  // per operand (q, key, v, o, g, dq, dk, dv, mask): pointer, row stride, lead strides (assembly/kernels/attention.ts)
  const views: (ViewRef | null)[] = [cmd.q, cmd.key, cmd.v, grad ? grad.o : cmd.k === 'attention' ? cmd.out : null, grad?.g ?? null,
    grad?.dq ?? null, grad?.dk ?? null, grad?.dv ?? null, cmd.mask?.at ?? null];
  const operands = views.flatMap((r) => {
    const block = new Array<number>(10).fill(0);
    if (r) {
      block[0] = f32(r);
      block[1] = r.strides[n];
      for (let d = 0; d < n; d++) block[2 + d] = r.strides[d];
    }
    return block;
  });
  const leadSizes = [...cmd.lead, ...new Array<number>(8 - n).fill(0)];
  const macs = cmd.bh * cmd.L * cmd.S * (cmd.E + cmd.Ev);
  const threads = pool && macs >= POOL_MIN_MACS ? pool.threads : 1;
  const wsPart = Math.ceil(((cmd.E + cmd.Ev) * 4) / 16) * 16;
  const rows = cmd.bh * cmd.L;
  const dBytes = cmd.k === 'attentionGrad' ? rows * 4 : 0;
  const scratch = wsPart * threads + dBytes;
  reserveScratch(scratch, 'attention');
  const ws = allocRange(wsPart * threads), D = dBytes ? allocRange(dBytes) : 0;
  const words = [0, f32(cmd.lse), D, cmd.bh, cmd.L, cmd.S, cmd.E, cmd.Ev, f32Word(cmd.scale), cmd.causal ? 1 : 0, cmd.mask?.bool ? 1 : 0,
    cmd.mask ? cmd.mask.at.strides[n + 1] : 0, n, ...leadSizes, ...operands];
  const run = (passCode: number, count: number) => {
    words[0] = passCode;
    const p = desc(words);
    const parts = threads > 1 ? Math.min(count, 4 * threads) : 1;
    if (parts > 1) pool!.run('attentionPart', [p], parts, ws, wsPart);
    else K.attentionPart(p, ws, 0, 1);
  };
  try {
    if (!grad) run(0, rows);
    else {
      // a block of bh per part when there are blocks enough for the threads (each score once), else rows and keys
      if (cmd.bh >= threads) run(4, cmd.bh);
      else {
        run(1, 1);
        run(2, rows);
        if (cmd.S) run(3, cmd.bh * cmd.S);
      }
    }
  } finally {
    freeRange(ws, wsPart * threads);
    if (D) freeRange(D, dBytes);
    releaseScratch(scratch);
  }
}
