/**
 * GradScaler's fused check on a GPU (the `ampUnscale` command; the kernel is wgsl/amp.ts).
 *
 * All of a device's gradients go into one dispatch: each segment is bound once and a table in
 * the params says where each gradient is. Past the binding limit (maxStorageBuffersPerShaderStage,
 * less one for the params) the gradients go into the fewest dispatches that fit, the scale's and
 * the flag's segments bound in each (`planAmp`); so do 16-bit gradients that share a word. A
 * gradient in a segment larger than one binding (maxStorageBufferBindingSize) runs alone, in
 * windows of that segment (ts/worker/split.ts), one dispatch per window.
 */
import { StorageCode } from '../../dtype.js';
import { AMP_ENTRY_WORDS, AMP_HEADER_WORDS, ampPerWord, ampShader, ampUnits, planAmp, type AmpEntry } from '../../../wgsl/amp.js';
import type { AmpUnscaleCommand } from '../../ir/commands.js';
import { chunks, tooLarge } from '../split.js';
import { buf, device, dispatchAt, grid1d, maxBinding, paramAlign, paramWords, reserveParams, setWindow } from './core.js';

/** Queues one dispatch of the kernel over `segments` (fixed first) and `entries`. */
function one(cmd: AmpUnscaleCommand, segments: number[], entries: AmpEntry[]): void {
  const slot = (id: number): number => segments.indexOf(id);
  const words = AMP_HEADER_WORDS + AMP_ENTRY_WORDS * entries.length;
  const at = reserveParams(words);
  let units = 0;
  entries.forEach((e, i) => {
    paramWords.set([slot(e.id), e.dt, e.offset, e.n, units], at + AMP_HEADER_WORDS + AMP_ENTRY_WORDS * i);
    units += ampUnits(e.dt, e.offset, e.n);
  });
  paramWords.set([entries.length, units, slot(cmd.invScale.id), cmd.invScale.offset, slot(cmd.found.id), cmd.found.offset], at);
  const bind = segments.map(buf);
  dispatchAt(`amp|${bind.length}`, () => ampShader(bind.length), bind, at, words, grid1d(units));
}

/** Runs an `ampUnscale` command (see the file's note). */
export function runAmpUnscale(cmd: AmpUnscaleCommand): void {
  const fixed = [cmd.invScale.id, cmd.found.id];
  for (const id of fixed) if (buf(id).size > maxBinding) throw tooLarge('ampUnscale (the scale or the flag)', buf(id).size, maxBinding);
  const small: AmpEntry[] = [], large: AmpEntry[] = [];
  for (const g of cmd.grads) {
    if (g.dt !== StorageCode.F32 && g.dt !== StorageCode.F16 && g.dt !== StorageCode.BF16) throw new TypeError(`ampUnscale: gradients must be float32, float16 or bfloat16 (storage code ${g.dt})`);
    if (!g.n) continue;
    (buf(g.at.id).size > maxBinding ? large : small).push({ id: g.at.id, dt: g.dt, offset: g.at.offset, n: g.n });
  }
  for (const d of planAmp(small, fixed, device.limits.maxStorageBuffersPerShaderStage - 1)) one(cmd, d.segments, d.entries);
  for (const e of large) {
    if (fixed.includes(e.id)) throw tooLarge('ampUnscale (a gradient in the segment of the scale or the flag)', buf(e.id).size, maxBinding);
    const b = buf(e.id), per = ampPerWord(e.dt), w0 = Math.floor(e.offset / per);
    for (const c of chunks(ampUnits(e.dt, e.offset, e.n), [{ b, start: w0 }], maxBinding, paramAlign)) {
      const lo = Math.max(e.offset, (w0 + c.first) * per), hi = Math.min(e.offset + e.n, (w0 + c.first + c.count) * per);
      setWindow(c.window);
      try {
        one(cmd, [...new Set(fixed), e.id], [{ ...e, offset: lo - (c.window.get(b)! / 4) * per, n: hi - lo }]);
      } finally {
        setWindow(null);
      }
    }
  }
}
