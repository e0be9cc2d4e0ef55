/** The conv windows family of the gpu worker (wgsl/window.ts). */
import { WINDOW_PARAMS, WINDOW_WG, windowKey, windowShader } from '../../../wgsl/window.js';
import type { Command } from '../../ir/commands.js';
import { buf, dispatch, grid1d, slotsOf } from './core.js';

/** Sliding windows with their padding in one dispatch (wgsl/window.ts); the output is f32 words. */
export function runWindows(cmd: Extract<Command, { k: 'windows' }>): void {
  const [N, C, H, W] = cmd.shape, [kh, kw] = cmd.kernel, [oh, ow] = cmd.size;
  const rows = cmd.kernelLast ? N * C * oh : N * C * kh * kw * oh;
  if (!rows || !ow) return;
  const { bind, slot } = slotsOf(buf(cmd.out.id), [buf(cmd.x.id)]);
  const p = new Uint32Array(WINDOW_PARAMS);
  p.set([rows, C, H, W, kh, kw, oh, ow, ...cmd.stride, ...cmd.dilation, ...cmd.padding, cmd.x.offset, ...cmd.x.strides, cmd.out.offset]);
  new Float32Array(p.buffer, 80, 1)[0] = cmd.value;
  dispatch(windowKey(cmd.kernelLast, slot[0], bind.length), () => windowShader(cmd.kernelLast, slot[0], bind.length), bind, p.buffer,
    grid1d(rows, WINDOW_WG));
}