/**
 * The optimizers' fused step on the cpu worker (the `optimStep` command; the kernel is
 * assembly/kernels/optim.ts): one call for the group, or one per part where the table outgrows
 * the scratch area. The header is wgsl/optim.ts's, so that both backends read the same scalars.
 */
import { OPTIM_ALGO, OPTIM_FLAGS, OPTIM_HEADER, OPTIM_HEADER_WORDS } from '../../../wgsl/optim.js';
import { StorageCode } from '../../dtype.js';
import type { OptimStepCommand } from '../../ir/commands.js';
import { K, at, scratchWords } from './core.js';

/** Words per parameter in the cpu table: p, g, s0, s1, s2 (byte addresses), n, stepSize, invSqrtBc2 (f32 bits), first, step (byte address, 0: on the host). */
const ENTRY = 10;
const PER_CALL = Math.floor((4096 - OPTIM_HEADER_WORDS) / ENTRY);

const f32 = new Float32Array(1), i32 = new Int32Array(f32.buffer);
const bits = (x: number): number => ((f32[0] = x), i32[0]);

export function runOptimStep(cmd: OptimStepCommand): void {
  const { h } = cmd, adam = cmd.algo === 'adam', H = OPTIM_HEADER, F = OPTIM_FLAGS;
  const params = cmd.params.filter((q) => q.n > 0);
  for (let first = 0; first < params.length; first += PER_CALL) {
    const part = params.slice(first, first + PER_CALL), w = scratchWords();
    w.fill(0, 0, OPTIM_HEADER_WORDS + ENTRY * part.length);
    w[H.algo] = adam ? OPTIM_ALGO.adam : OPTIM_ALGO.sgd;
    w[H.flags] = (h.maximize ? F.maximize : 0) | (h.decoupled ? F.decoupled : 0) | (h.amsgrad ? F.amsgrad : 0) |
      (h.nesterov ? F.nesterov : 0) | (h.momentum ? F.momentum : 0) | (h.weightDecay ? F.weightDecay : 0) |
      (params.some((q) => q.step) ? F.deviceStep : 0);
    w[H.lr] = bits(h.lr);
    w[H.wd] = bits(h.weightDecay);
    w[H.a] = bits(adam ? h.beta1 : h.momentum);
    w[H.b] = bits(h.beta2);
    w[H.eps] = bits(h.eps);
    w[H.oneMinusA] = bits(1 - h.beta1);
    w[H.oneMinusB] = bits(adam ? 1 - h.beta2 : 1 - h.dampening);
    w[H.decay] = bits(1 - h.lr * h.weightDecay);
    w[H.lnA] = bits(adam ? Math.log(h.beta1) : 0);
    w[H.lnB] = bits(adam ? Math.log(h.beta2) : 0);
    part.forEach((q, i) => {
      const e = OPTIM_HEADER_WORDS + ENTRY * i;
      w[e] = at(q.p, StorageCode.F32);
      w[e + 1] = at(q.g, StorageCode.F32);
      q.s.forEach((s, k) => (w[e + 2 + k] = at(s, StorageCode.F32)));
      w[e + 5] = q.n;
      w[e + 6] = bits(q.stepSize);
      w[e + 7] = bits(q.invSqrtBc2);
      w[e + 8] = q.first ? 1 : 0;
      if (q.step) w[e + 9] = at(q.step, StorageCode.F32);
    });
    const base = w.byteOffset;
    K.optimStep(base + 4 * OPTIM_HEADER_WORDS, part.length, base);
  }
}
